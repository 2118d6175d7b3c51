"""Thin estimators, one module each; the numerics live in :mod:`iokr.linalg` and :mod:`iokr.decoding`."""

from .iokr import IOKR

__all__ = ["IOKR"]

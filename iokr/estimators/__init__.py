"""Thin estimators, one module each; the numerics live in :mod:`iokr.linalg` and :mod:`iokr.decoding`."""

from .conditional_ranking import ConditionalRankRLS
from .iokr import IOKR
from .kron import KronRLS
from .mpiokr import MPIOKR
from .rankrls import PreferenceRankRLS, RankRLS
from .rls import RLS
from .sketched import SketchedIOKR
from .two_step import TwoStepRLS

__all__ = ["IOKR", "MPIOKR", "RLS", "ConditionalRankRLS", "KronRLS", "PreferenceRankRLS", "RankRLS", "SketchedIOKR", "TwoStepRLS"]

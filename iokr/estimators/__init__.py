"""Thin estimators, one module each; the numerics live in :mod:`iokr.linalg` and :mod:`iokr.decoding`."""

from ._protocols import InputSideProtocol, OutputSideProtocol
from ._sides import InputSide, OutputSide, check_output_features, gram_norms
from .iokr import IOKR
from .kron import ConditionalRankRLS, KronRLS, TwoStepRLS
from .mpiokr import MPIOKR
from .rankrls import PreferenceRankRLS, RankRLS
from .rls import RLS
from .sketched import SketchedIOKR

__all__ = ["IOKR", "MPIOKR", "RLS", "ConditionalRankRLS", "KronRLS", "PreferenceRankRLS", "RankRLS", "SketchedIOKR", "TwoStepRLS",
           # The building blocks of the estimators, for model selection and applications composing them.
           "InputSide", "InputSideProtocol", "OutputSide", "OutputSideProtocol", "check_output_features", "gram_norms"]

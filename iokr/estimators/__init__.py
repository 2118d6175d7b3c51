"""Thin estimators, one module each; the numerics live in :mod:`iokr.linalg` and :mod:`iokr.decoding`."""

from ._mp_sides import GroupedInput
from ._protocols import InputSideProtocol, OutputSideProtocol
from ._sides import InputSide, OutputSide, check_output_features, gram_norms
from .conditional_ranking import ConditionalRankRLS
from .iokr import IOKR
from .kron import KronRLS
from .mpiokr import MPIOKR
from .rankrls import PreferenceRankRLS, RankRLS
from .rls import RLS
from .sketched import SketchedIOKR
from .two_step import TwoStepRLS

# Besides the estimators, their building blocks (the sides and their protocols) for model selection and applications.
__all__ = [
    "IOKR",
    "MPIOKR",
    "RLS",
    "ConditionalRankRLS",
    "GroupedInput",
    "InputSide",
    "InputSideProtocol",
    "KronRLS",
    "OutputSide",
    "OutputSideProtocol",
    "PreferenceRankRLS",
    "RankRLS",
    "SketchedIOKR",
    "TwoStepRLS",
    "check_output_features",
    "gram_norms",
]

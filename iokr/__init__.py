"""iokr: structured-output prediction and ranking with least-squares kernel methods."""

from ._config import config_context, get_config, set_config
from .decoding import CandidateFile, CandidateFileWriter, CandidateSets, PackedBinaryFeatures, write_candidate_file
from .estimators import (
    IOKR,
    MPIOKR,
    RLS,
    ConditionalRankRLS,
    KronRLS,
    PreferenceRankRLS,
    RankRLS,
    SketchedIOKR,
    TwoStepRLS,
)
from .model_selection import IOKRCV, RLSCV
from .strings import SegmentedStringKDE, StringKDE
from .text import ContextFeaturizer, ContextRLSClassifier

__version__ = "0.1.0"

__all__ = [
    "IOKR",
    "IOKRCV",
    "MPIOKR",
    "RLS",
    "RLSCV",
    "CandidateFile",
    "CandidateFileWriter",
    "CandidateSets",
    "ConditionalRankRLS",
    "ContextFeaturizer",
    "ContextRLSClassifier",
    "KronRLS",
    "PackedBinaryFeatures",
    "PreferenceRankRLS",
    "RankRLS",
    "SegmentedStringKDE",
    "SketchedIOKR",
    "StringKDE",
    "TwoStepRLS",
    "__version__",
    "config_context",
    "get_config",
    "set_config",
    "write_candidate_file",
]

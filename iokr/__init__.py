"""iokr: structured-output prediction and ranking with least-squares kernel methods."""

from ._config import config_context, get_config, set_config
from .decoding import CandidateSets, PackedBinaryFeatures
from .estimators import IOKR

__version__ = "0.1.0"

__all__ = [
    "IOKR",
    "CandidateSets",
    "PackedBinaryFeatures",
    "__version__",
    "config_context",
    "get_config",
    "set_config",
]

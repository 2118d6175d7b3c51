"""iokr: structured-output prediction and ranking with least-squares kernel methods.

The public names are loaded on first access (PEP 562), so ``import iokr`` (and the ``iokr`` command's ``--help``)
does not pay for importing scipy, scikit-learn or the estimators. ``from iokr import IOKR`` works as usual.
"""

from importlib import import_module as _import_module
from typing import TYPE_CHECKING

__version__ = "0.1.0"

# Public name -> submodule defining it (relative to this package).
_LAZY = {
    "config_context": "_config",
    "get_config": "_config",
    "set_config": "_config",
    "CandidateFile": "decoding",
    "CandidateFileWriter": "decoding",
    "CandidateSets": "decoding",
    "CountFeatures": "decoding",
    "PackedBinaryFeatures": "decoding",
    "write_candidate_file": "decoding",
    "IOKR": "estimators",
    "MPIOKR": "estimators",
    "RLS": "estimators",
    "ConditionalRankRLS": "estimators",
    "KronRLS": "estimators",
    "PreferenceRankRLS": "estimators",
    "RankRLS": "estimators",
    "SketchedIOKR": "estimators",
    "TwoStepRLS": "estimators",
    "ConditionalRankRLSCV": "model_selection",
    "IOKRCV": "model_selection",
    "KronRLSCV": "model_selection",
    "MPIOKRCV": "model_selection",
    "RLSCV": "model_selection",
    "RankRLSCV": "model_selection",
    "TwoStepRLSCV": "model_selection",
    "SegmentedStringKDE": "strings",
    "StringKDE": "strings",
    "ContextFeaturizer": "text",
    "ContextRLSClassifier": "text",
}

# Subpackages reachable as attributes after a bare ``import iokr`` (as they were when everything was imported eagerly).
_SUBMODULES = frozenset({"apps", "cli", "datasets", "decoding", "distributed", "estimators", "exceptions", "io",
                         "kernels", "linalg", "metrics", "model_selection", "strings", "text"})

__all__ = [
    "IOKR",
    "IOKRCV",
    "MPIOKR",
    "MPIOKRCV",
    "RLS",
    "RLSCV",
    "CandidateFile",
    "CandidateFileWriter",
    "CandidateSets",
    "ConditionalRankRLS",
    "ConditionalRankRLSCV",
    "ContextFeaturizer",
    "ContextRLSClassifier",
    "CountFeatures",
    "KronRLS",
    "KronRLSCV",
    "PackedBinaryFeatures",
    "PreferenceRankRLS",
    "RankRLS",
    "RankRLSCV",
    "SegmentedStringKDE",
    "SketchedIOKR",
    "StringKDE",
    "TwoStepRLS",
    "TwoStepRLSCV",
    "__version__",
    "config_context",
    "get_config",
    "set_config",
    "write_candidate_file",
]


def __getattr__(name):
    module = _LAZY.get(name)
    if module is not None:
        value = getattr(_import_module(f"{__name__}.{module}"), name)
        globals()[name] = value  # later accesses skip this function
        return value
    if name in _SUBMODULES:
        return _import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:  # static analysers and IDEs see the eager imports
    from ._config import config_context, get_config, set_config
    from .decoding import (
        CandidateFile,
        CandidateFileWriter,
        CandidateSets,
        CountFeatures,
        PackedBinaryFeatures,
        write_candidate_file,
    )
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
    from .model_selection import (
        IOKRCV,
        MPIOKRCV,
        RLSCV,
        ConditionalRankRLSCV,
        KronRLSCV,
        RankRLSCV,
        TwoStepRLSCV,
    )
    from .strings import SegmentedStringKDE, StringKDE
    from .text import ContextFeaturizer, ContextRLSClassifier

"""Model selection on top of the shared regularization paths and closed-form hold-out of :mod:`iokr.linalg`.

- :class:`RLSCV`, :class:`IOKRCV`, :class:`RankRLSCV`: alpha grids (and kernel parameters) chosen by exact
  leave-one-out (leave-query-out, leave-pair-out for ranking), k-fold, grouped or any complement-training splitter,
  without retraining;
- :class:`AlignedKernelSum`: multiple kernel learning on inputs (UNIMKL, ALIGN, ALIGNF).
"""

from ._iokrcv import IOKRCV
from ._mkl import MKL_METHODS, AlignedKernelSum, alignf_weights, learn_weights
from ._rankrlscv import RankRLSCV
from ._scoring import HoldoutResult
from ._search import RLSCV
from ._splits import holdout_splits

__all__ = [
    "IOKRCV",
    "MKL_METHODS",
    "RLSCV",
    "AlignedKernelSum",
    "HoldoutResult",
    "RankRLSCV",
    "alignf_weights",
    "holdout_splits",
    "learn_weights",
]

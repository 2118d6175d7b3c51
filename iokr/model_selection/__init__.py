"""Model selection on top of the shared regularization paths and closed-form hold-out of :mod:`iokr.linalg`.

- :class:`RLSCV`, :class:`IOKRCV`, :class:`MPIOKRCV`: alpha grids (and kernel parameters) chosen by exact leave-one-out, k-fold,
  grouped or any complement-training splitter, without retraining;
- :class:`AlignedKernelSum`: multiple kernel learning on inputs (UNIMKL, ALIGN, ALIGNF).
"""

from ._iokrcv import IOKRCV
from ._mkl import MKL_METHODS, AlignedKernelSum, alignf_weights, learn_weights
from ._mpiokrcv import MPIOKRCV
from ._scoring import HoldoutResult
from ._search import RLSCV
from ._splits import holdout_splits

__all__ = [
    "MKL_METHODS",
    "AlignedKernelSum",
    "HoldoutResult",
    "IOKRCV",
    "MPIOKRCV",
    "RLSCV",
    "alignf_weights",
    "holdout_splits",
    "learn_weights",
]

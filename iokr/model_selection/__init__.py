"""Model selection on top of the shared regularization paths and closed-form hold-out of :mod:`iokr.linalg`.

- :class:`RLSCV`, :class:`IOKRCV`, :class:`MPIOKRCV`, :class:`RankRLSCV`: alpha grids (and kernel parameters)
  chosen by exact leave-one-out (leave-query-out, leave-pair-out for ranking), k-fold, grouped or any
  complement-training splitter, without retraining (MP-IOKR's approximated candidate inputs: by refits);
- :class:`KronRLSCV`, :class:`ConditionalRankRLSCV`, :class:`TwoStepRLSCV`: the pairwise (Kronecker) estimators
  tuned under a prediction setting A-D (:func:`pairwise_splits`), in closed form where one exists;
- :class:`AlignedKernelSum`: multiple kernel learning on inputs (UNIMKL, ALIGN, ALIGNF).
"""

from ..linalg._pairwise_splits import pairwise_splits
from ._conditional_rankcv import ConditionalRankRLSCV
from ._fold_candidates import fold_candidate_sets
from ._iokrcv import IOKRCV
from ._kroncv import KronRLSCV
from ._mkl import MKL_METHODS, AlignedKernelSum, alignf_gram_weights, alignf_weights, learn_weights
from ._mpiokrcv import MPIOKRCV
from ._rankrlscv import RankRLSCV
from ._scoring import HoldoutResult
from ._search import RLSCV
from ._splits import holdout_splits
from ._two_stepcv import TwoStepRLSCV

__all__ = [
    "IOKRCV",
    "MKL_METHODS",
    "MPIOKRCV",
    "RLSCV",
    "AlignedKernelSum",
    "ConditionalRankRLSCV",
    "HoldoutResult",
    "KronRLSCV",
    "RankRLSCV",
    "TwoStepRLSCV",
    "alignf_gram_weights",
    "fold_candidate_sets",
    "alignf_weights",
    "holdout_splits",
    "learn_weights",
    "pairwise_splits",
]

"""Plumbing of :mod:`iokr.linalg` for code that extends iokr (new estimators, model selection, scoring).

Users solve, decompose and hold out through the names of :mod:`iokr.linalg`; an estimator or a CV routine written
on top of them also needs the pieces below, which are stable but not part of the user-facing surface:

- memory-budgeted chunking: :func:`chunk_rows`, :func:`row_slices`;
- validation of shared arguments: :func:`check_alphas`, :func:`check_holdouts`, :func:`check_pairs`,
  :func:`check_loo_tol`;
- the regularization path's routing and its per-alpha shifted solvers (what :class:`~iokr.linalg.RegularizationPath`
  and :class:`~iokr.linalg.ProductShiftPath` hand out): :data:`PATH_METHODS`, :data:`PRODUCT_PATH_METHODS`,
  :data:`EIGEN_MIN_ALPHAS`, :func:`choose_path_method`, :class:`CholeskyShift`, :class:`EigenShift`,
  :class:`InterceptShift`, :class:`LUShift`, :class:`ProductEigenShift`, :func:`ridge_solution`;
- internals of the leave-one-out path (:func:`~iokr.linalg.loo_squared_errors`): :class:`AlphaSkeleton`,
  :class:`LooErrorBounds`;
- small building blocks: :class:`BlockCentering` (per-group centering operator of the rankers),
  :func:`sq_norms_in_kernel`, :func:`subsample_indices` (rows of a sub-sampling sketch), :func:`commutation_matrix`
  (dense, for tests and small sizes).
"""

from ._chunks import chunk_rows, row_slices
from ._holdout import check_holdouts, check_pairs, sq_norms_in_kernel
from ._kronecker import commutation_matrix
from ._loo_path import AlphaSkeleton, LooErrorBounds, check_loo_tol
from ._path import (
    EIGEN_MIN_ALPHAS,
    PATH_METHODS,
    CholeskyShift,
    EigenShift,
    InterceptShift,
    check_alphas,
    choose_path_method,
    ridge_solution,
)
from ._product_path import PRODUCT_PATH_METHODS, LUShift, ProductEigenShift
from ._ranking_holdout import BlockCentering
from ._sketch import subsample_indices

__all__ = [
    "EIGEN_MIN_ALPHAS",
    "PATH_METHODS",
    "PRODUCT_PATH_METHODS",
    "AlphaSkeleton",
    "BlockCentering",
    "CholeskyShift",
    "EigenShift",
    "InterceptShift",
    "LUShift",
    "LooErrorBounds",
    "ProductEigenShift",
    "check_alphas",
    "check_holdouts",
    "check_loo_tol",
    "check_pairs",
    "choose_path_method",
    "chunk_rows",
    "commutation_matrix",
    "ridge_solution",
    "row_slices",
    "sq_norms_in_kernel",
    "subsample_indices",
]

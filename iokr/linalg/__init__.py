"""Shared numerics, knowing nothing about kernels or estimators.

Every estimator solves its linear systems through these functions: shifted Cholesky solves with jitter retry,
eigendecomposition paths for many regularization values, closed-form hold-out and leave-one-out values, and block
conjugate gradient on operators.
"""

from ._cg import CGInfo, block_cg
from ._cholesky import CholeskyFactor, cholesky_shifted, solve_shifted
from ._chunks import chunk_rows, row_slices
from ._eigen import EigenPath
from ._holdout import (
    check_holdouts,
    holdout_coefficients,
    holdout_predictions,
    holdout_residual_coefficients,
    holdout_residuals,
    loo_coefficients,
    loo_residuals,
    sq_norms_in_kernel,
)
from ._kron_holdout import kron_ridge_dual, kron_ridge_holdout, kron_ridge_leave_edge_out, leave_row_and_column_out
from ._loo_path import AlphaSkeleton, loo_squared_errors
from ._minres import minres
from ._kronecker import (
    KroneckerEigen,
    KroneckerOperator,
    SampledKroneckerOperator,
    SymmetricKroneckerOperator,
    WeightedKroneckerSum,
    commutation_matrix,
)
from ._path import (
    EIGEN_MIN_ALPHAS,
    PATH_METHODS,
    CholeskyShift,
    EigenShift,
    InterceptShift,
    RegularizationPath,
    check_alphas,
    choose_path_method,
)
from ._product_path import (
    PRODUCT_PATH_METHODS,
    LUShift,
    ProductEigenShift,
    ProductShiftPath,
    mixing_holdout_coefficients,
)

__all__ = [
    "AlphaSkeleton",
    "CGInfo",
    "CholeskyFactor",
    "CholeskyShift",
    "EIGEN_MIN_ALPHAS",
    "EigenPath",
    "KroneckerEigen",
    "KroneckerOperator",
    "SampledKroneckerOperator",
    "SymmetricKroneckerOperator",
    "WeightedKroneckerSum",
    "EigenShift",
    "InterceptShift",
    "LUShift",
    "PRODUCT_PATH_METHODS",
    "ProductEigenShift",
    "ProductShiftPath",
    "PATH_METHODS",
    "RegularizationPath",
    "block_cg",
    "check_alphas",
    "check_holdouts",
    "cholesky_shifted",
    "commutation_matrix",
    "choose_path_method",
    "chunk_rows",
    "holdout_coefficients",
    "holdout_predictions",
    "holdout_residual_coefficients",
    "holdout_residuals",
    "kron_ridge_dual",
    "kron_ridge_holdout",
    "kron_ridge_leave_edge_out",
    "leave_row_and_column_out",
    "loo_coefficients",
    "loo_residuals",
    "loo_squared_errors",
    "minres",
    "mixing_holdout_coefficients",
    "row_slices",
    "solve_shifted",
    "sq_norms_in_kernel",
]

"""Shared numerics, knowing nothing about kernels or estimators.

Every estimator solves its linear systems through these functions: shifted Cholesky solves with jitter retry,
eigendecomposition paths for many regularization values, closed-form hold-out and leave-one-out values (of kernel
ridge regression, with or without intercept, of least-squares ranking, and of the Kronecker, conditional-ranking
and two-step pairwise models in settings A-D), and block conjugate gradient on operators.

Plumbing for code that extends iokr (chunking, argument checks, per-alpha shifted solvers) is in
:mod:`iokr.linalg.developer`.
"""

from ._cg import CGInfo, block_cg
from ._cholesky import CholeskyFactor, cholesky_shifted, solve_shifted
from ._eigen import EigenPath
from ._holdout import (
    holdout_coefficients,
    holdout_predictions,
    holdout_residual_coefficients,
    holdout_residuals,
    loo_coefficients,
    loo_residuals,
    pair_holdout_predictions,
)
from ._kron_holdout import (
    kron_leverages,
    kron_ridge_dual,
    kron_ridge_holdout,
    kron_ridge_leave_edge_out,
    kron_ridge_symmetric_dual,
    leave_row_and_column_out,
)
from ._kron_ranking import (
    kron_ranking_factors,
    kron_ranking_holdout,
    kron_ranking_leave_row_and_column_out,
)
from ._kronecker import (
    KroneckerEigen,
    KroneckerOperator,
    SampledKroneckerOperator,
    SymmetricKroneckerOperator,
    WeightedKroneckerSum,
    sampled_kron_features,
)
from ._loo_path import loo_squared_errors
from ._minres import minres
from ._path import (
    RegularizationPath,
)
from ._product_path import (
    ProductShiftPath,
    mixing_holdout_coefficients,
)
from ._ranking_holdout import (
    complete_graph_holdout,
    complete_graph_pair_holdout,
    query_holdout_predictions,
)
from ._sketch import (
    NystromPreconditioner,
    falkon_solve,
    greedy_landmarks,
    nystrom_whitening,
    pivoted_cholesky_landmarks,
    ridge_primal,
    sparse_sketch,
)
from ._two_step import two_step_dual, two_step_holdout

__all__ = [
    "CGInfo",
    "CholeskyFactor",
    "EigenPath",
    "KroneckerEigen",
    "KroneckerOperator",
    "RegularizationPath",
    "SampledKroneckerOperator",
    "SymmetricKroneckerOperator",
    "WeightedKroneckerSum",
    "NystromPreconditioner",
    "ProductShiftPath",
    "block_cg",
    "cholesky_shifted",
    "complete_graph_holdout",
    "complete_graph_pair_holdout",
    "falkon_solve",
    "greedy_landmarks",
    "holdout_coefficients",
    "holdout_predictions",
    "holdout_residual_coefficients",
    "holdout_residuals",
    "kron_leverages",
    "kron_ranking_factors",
    "kron_ranking_holdout",
    "kron_ranking_leave_row_and_column_out",
    "kron_ridge_dual",
    "kron_ridge_holdout",
    "kron_ridge_leave_edge_out",
    "kron_ridge_symmetric_dual",
    "leave_row_and_column_out",
    "loo_coefficients",
    "loo_residuals",
    "loo_squared_errors",
    "minres",
    "nystrom_whitening",
    "pair_holdout_predictions",
    "pivoted_cholesky_landmarks",
    "query_holdout_predictions",
    "ridge_primal",
    "mixing_holdout_coefficients",
    "sampled_kron_features",
    "solve_shifted",
    "sparse_sketch",
    "two_step_dual",
    "two_step_holdout",
]


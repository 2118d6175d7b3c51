"""Shared numerics, knowing nothing about kernels or estimators.

Every estimator solves its linear systems through these functions: shifted Cholesky solves with jitter retry,
eigendecomposition paths for many regularization values, and block conjugate gradient on operators.
"""

from ._cg import CGInfo, block_cg
from ._cholesky import CholeskyFactor, cholesky_shifted, solve_shifted
from ._chunks import chunk_rows, row_slices
from ._eigen import EigenPath

__all__ = [
    "CGInfo",
    "CholeskyFactor",
    "EigenPath",
    "block_cg",
    "cholesky_shifted",
    "chunk_rows",
    "row_slices",
    "solve_shifted",
]

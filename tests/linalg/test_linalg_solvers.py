"""Shared solvers (Cholesky with jitter, eigen paths, block CG, row chunking) vs dense numpy references."""

import warnings

import numpy as np
import pytest

from iokr import config_context, get_config
from iokr.exceptions import ConvergenceWarning, NumericalStabilityWarning
from iokr.linalg import CholeskyFactor, EigenPath, block_cg, cholesky_shifted, solve_shifted
from iokr.linalg.developer import chunk_rows, row_slices


def _spd(rng, n, rank=None, dtype=np.float64):
    """Random PSD matrix (rank-deficient when ``rank < n``)."""
    F = rng.normal(size=(n, rank or n))
    return (F @ F.T / (rank or n)).astype(dtype)


# -- Cholesky ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n, k", [(1, 1), (7, 1), (30, 4)])
@pytest.mark.parametrize("alpha", [1e-3, 0.5, 10.0])
def test_solve_shifted_matches_numpy(rng, dtype, n, k, alpha):
    K = _spd(rng, n, dtype=dtype)
    B = rng.normal(size=(n, k)).astype(dtype)
    K_copy, B_copy = K.copy(), B.copy()
    expected = np.linalg.solve(K.astype(np.float64) + alpha * np.eye(n), B.astype(np.float64))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no jitter needed on a well-posed system
        X = solve_shifted(K, B, alpha)
        factor = cholesky_shifted(K, alpha)
    assert X.dtype == np.float64
    np.testing.assert_allclose(X, expected, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(factor.solve(B[:, 0]), expected[:, 0], rtol=1e-9, atol=1e-12)
    assert factor.jitter == 0.0
    np.testing.assert_allclose(factor.lower @ factor.lower.T, K.astype(np.float64) + alpha * np.eye(n),
                               rtol=1e-12, atol=1e-12)
    sign, logdet = np.linalg.slogdet(K.astype(np.float64) + alpha * np.eye(n))
    assert sign > 0 and factor.logdet() == pytest.approx(logdet, rel=1e-10, abs=1e-10)
    np.testing.assert_array_equal(K, K_copy)
    np.testing.assert_array_equal(B, B_copy)


def test_cholesky_jitter_retry_warns_with_jitter(rng):
    K = _spd(rng, 12, rank=3)  # singular PSD: factorization without shift fails
    K_copy = K.copy()
    with pytest.warns(NumericalStabilityWarning, match=r"jitter (\d|\.)+") as record:
        factor = cholesky_shifted(K, 0.0, name="gram")
    assert factor.jitter > 0
    message = str(record[0].message)
    assert "'gram'" in message and f"{factor.jitter:.3g}" in message
    expected_jitter = _first_working_jitter(K)
    assert factor.jitter == pytest.approx(expected_jitter, rel=1e-12)
    np.testing.assert_allclose(factor.lower @ factor.lower.T, K + factor.jitter * np.eye(12), atol=1e-12)
    np.testing.assert_array_equal(K, K_copy)


def _first_working_jitter(K):
    """The first entry of the schedule (times mean diagonal) with which numpy's Cholesky succeeds."""
    scale = np.mean(np.abs(np.diag(K)))
    for relative in get_config()["jitter_schedule"]:
        try:
            np.linalg.cholesky(K + relative * scale * np.eye(K.shape[0]))
            return relative * scale
        except np.linalg.LinAlgError:
            continue
    raise AssertionError("no jitter works")


def test_cholesky_jitter_schedule_exhausted_raises(rng):
    K = -np.eye(4)  # negative definite: no small jitter helps
    with pytest.raises(np.linalg.LinAlgError, match="not positive definite"):
        cholesky_shifted(K, 0.0)
    with config_context(jitter_schedule=(1e-12,)), pytest.raises(np.linalg.LinAlgError, match="'K'"):
        cholesky_shifted(np.diag([1.0, 1.0, -1e-3]), 0.0)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_cholesky_rejects_non_finite(rng, bad):
    K = _spd(rng, 5)
    K[1, 2] = K[2, 1] = bad
    with pytest.raises(ValueError, match="'Kx' contains NaN or infinity"):
        cholesky_shifted(K, 1.0, name="Kx")
    with pytest.raises(ValueError, match="NaN or infinity"):
        EigenPath(K)


def test_cholesky_rejects_non_square():
    with pytest.raises(ValueError, match=r"square.*\(3, 4\)"):
        cholesky_shifted(np.zeros((3, 4)), 1.0)
    with pytest.raises(ValueError, match="square"):
        EigenPath(np.zeros((3, 4)))


# -- eigen path --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n, rank", [(15, None), (15, 4), (1, None)])
def test_eigen_path_against_dense(rng, n, rank):
    K = _spd(rng, n, rank=rank)
    K_copy = K.copy()
    path = EigenPath(K)
    B = rng.normal(size=(n, 3))
    rows = np.array([0, n - 1, n // 2]) if n > 2 else np.array([0])
    for alpha in [1e-4, 0.1, 1.0, 100.0]:
        shifted = K + alpha * np.eye(n)
        dense_inverse = np.linalg.solve(shifted, np.eye(n))
        np.testing.assert_allclose(path.solve(B, alpha), np.linalg.solve(shifted, B), rtol=1e-8, atol=1e-10)
        np.testing.assert_allclose(path.solve(B[:, 0], alpha), np.linalg.solve(shifted, B[:, 0]),
                                   rtol=1e-8, atol=1e-10)
        projected = path.project(B)
        np.testing.assert_allclose(path.solve_projected(projected, alpha), np.linalg.solve(shifted, B),
                                   rtol=1e-8, atol=1e-10)
        hat = np.linalg.solve(shifted, K)  # (K + aI)^-1 K = K (K + aI)^-1: same diagonal
        np.testing.assert_allclose(path.hat_diagonal(alpha), np.diag(hat), rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(path.shifted_inverse_block(rows, alpha), dense_inverse[np.ix_(rows, rows)],
                                   rtol=1e-8, atol=1e-10)
    np.testing.assert_array_equal(K, K_copy)
    assert (path.eigenvalues >= 0).all()


@pytest.mark.parametrize("deflate", [False, True])
@pytest.mark.parametrize("alpha", [1e-6, 1e-2, 10.0])
def test_solve_without_intercept_is_the_plain_ridge_solve(rng, deflate, alpha):
    # A Gram that does not annihilate the constant vector (normalized after centering, as IOKR's input side does):
    # the bordered step recovers (K + alpha I)^{-1} B from the deflated decomposition.
    F = rng.normal(size=(30, 60))  # full rank: the dense reference stays accurate at alpha = 1e-6
    F -= F.mean(axis=0)
    F /= np.linalg.norm(F, axis=1, keepdims=True)
    K = F @ F.T
    assert np.abs(K @ np.ones(30)).max() > 1e-3
    B = rng.normal(size=(30, 4))
    before = B.copy()
    path = EigenPath(K, deflate_constant=deflate)
    expected = np.linalg.solve(K + alpha * np.eye(30), B)
    got = path.solve_without_intercept(K, B, alpha)
    np.testing.assert_allclose(got, expected, rtol=1e-8, atol=1e-10 * np.abs(expected).max())
    np.testing.assert_allclose(path.solve_without_intercept(K, B, alpha, projected=path.project(B)), got, rtol=1e-12)
    np.testing.assert_array_equal(B, before)


def test_eigen_path_rejects_indefinite():
    K = np.diag([1.0, 2.0, -1.0])
    with pytest.raises(ValueError, match="not positive semidefinite"):
        EigenPath(K, name="Kx")


# -- block CG ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("k", [None, 1, 5])
@pytest.mark.parametrize("precondition", [False, True])
def test_block_cg_matches_direct_solve(rng, k, precondition):
    n = 40
    A = _spd(rng, n) + 0.5 * np.eye(n)
    A[np.diag_indices(n)] *= np.linspace(1, 20, n)  # uneven diagonal: Jacobi preconditioning matters
    A = 0.5 * (A + A.T)
    B = rng.normal(size=(n,) if k is None else (n, k))
    B_copy = B.copy()
    diag = np.diag(A).copy()
    preconditioner = (lambda R: R / diag[:, None]) if precondition else None
    seen = []
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        X, info = block_cg(lambda V: A @ V, B, rtol=1e-12, preconditioner=preconditioner,
                           callback=lambda it, X: seen.append(it))
    assert X.shape == B.shape
    np.testing.assert_allclose(X, np.linalg.solve(A, B), rtol=1e-8, atol=1e-10)
    assert info.converged.all() and info.n_iter == len(seen) == seen[-1]
    true_residual = np.linalg.norm((B if k else B[:, None]) - A @ (X if k else X[:, None]), axis=0)
    np.testing.assert_array_less(true_residual, 1e-10 * np.linalg.norm(B if k else B[:, None], axis=0))
    np.testing.assert_array_equal(B, B_copy)


def test_block_cg_x0_and_zero_rhs(rng):
    n = 20
    A = _spd(rng, n) + np.eye(n)
    B = rng.normal(size=(n, 3))
    B[:, 1] = 0.0
    x_exact = np.linalg.solve(A, B)
    X, info = block_cg(lambda V: A @ V, B, x0=x_exact + 1e-3, rtol=1e-12)
    np.testing.assert_allclose(X, x_exact, rtol=1e-8, atol=1e-10)
    assert info.converged.all()


def test_block_cg_warns_when_max_iter_too_small(rng):
    n = 50
    A = _spd(rng, n) + 1e-2 * np.eye(n)
    B = rng.normal(size=(n, 2))
    with pytest.warns(ConvergenceWarning, match=r"stopped after 2 iterations.*2 of 2"):
        X, info = block_cg(lambda V: A @ V, B, rtol=1e-10, max_iter=2)
    assert info.n_iter == 2 and not info.converged.any()
    np.testing.assert_allclose(info.relative_residuals,
                               np.linalg.norm(B - A @ X, axis=0) / np.linalg.norm(B, axis=0), rtol=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        block_cg(lambda V: A @ V, B, rtol=1e-10, max_iter=2, warn=False)


# -- chunking ----------------------------------------------------------------------------------------------------


def test_chunk_rows_and_row_slices():
    # 1 MiB budget and 1 KiB per row: 1024 rows per chunk, capped by the number of rows.
    assert chunk_rows(10_000, 1024, working_memory=1) == 1024
    assert chunk_rows(10, 1024, working_memory=1) == 10
    slices = list(row_slices(2500, 1024, working_memory=1))
    assert [(s.start, s.stop) for s in slices] == [(0, 1024), (1024, 2048), (2048, 2500)]
    assert list(row_slices(0, 8, working_memory=1)) == []
    with config_context(working_memory=2):
        assert chunk_rows(10_000, 1024) == 2048


def test_chunk_rows_memory_error_when_budget_too_small():
    with pytest.raises(MemoryError, match=r"needs 4194304 bytes.*budget of 1048576 bytes"):
        chunk_rows(10, 4 * 2**20, working_memory=1)
    with config_context(working_memory=1e-6), pytest.raises(MemoryError, match="working-memory"):
        chunk_rows(10, 8)
    with pytest.raises(ValueError, match="'working_memory'"):
        chunk_rows(10, 8, working_memory=-1)


@pytest.mark.parametrize("n", [0, 1, 7])
def test_packed_cholesky_factor_round_trips_exactly(n):
    rng = np.random.default_rng(n)
    A = rng.normal(size=(n, n + 2))
    factor = cholesky_shifted(A @ A.T, 0.1)
    packed = factor.packed()
    assert packed.shape == (n * (n + 1) // 2,)
    back = CholeskyFactor.from_packed(packed, n, factor.alpha, factor.jitter)
    np.testing.assert_array_equal(back.lower, factor.lower)
    assert (back.alpha, back.jitter) == (factor.alpha, factor.jitter)
    b = rng.normal(size=n)
    np.testing.assert_array_equal(back.solve(b), factor.solve(b))


@pytest.mark.parametrize("damage", ["nan", "short", "float32", "diagonal", "jitter"])
def test_a_damaged_packed_factor_is_refused(damage):
    A = np.random.default_rng(0).normal(size=(4, 6))
    packed, alpha, jitter = cholesky_shifted(A @ A.T, 0.1).packed(), 0.1, 0.0
    if damage == "nan":
        packed[4] = np.nan
    elif damage == "short":
        packed = packed[:-1]
    elif damage == "float32":
        packed = packed.astype(np.float32)
    elif damage == "diagonal":
        packed[2] = 0.0  # L[1, 1]
    else:
        jitter = -1.0
    with pytest.raises(ValueError, match="packed Cholesky factor|shift and jitter"):
        CholeskyFactor.from_packed(packed, 4, alpha, jitter)

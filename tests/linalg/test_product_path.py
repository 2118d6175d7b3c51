"""ProductShiftPath and the MP-IOKR hold-out formula against dense solves and explicit retraining."""

import numpy as np
import pytest
from scipy import sparse

from iokr.linalg import ProductShiftPath, mixing_holdout_coefficients


def _psd(rng, n, rank=None):
    A = rng.normal(size=(n, rank or n))
    return A @ A.T / (rank or n)


def _blocks(rng, n_examples, n_units):
    """Per-example mixing blocks B_i = P_i P_i^T, P_i = columns (e_i - e_c) / sqrt(n_i) (or e_i when empty)."""
    blocks = []
    for i in range(n_examples):
        size = int(rng.integers(0, 4))
        cands = rng.choice(np.arange(n_examples, n_units), size=size, replace=True)
        P = np.zeros((n_units, max(size, 1)))
        if size == 0:
            P[i, 0] = 1.0
        for k, c in enumerate(cands):
            P[i, k] += 1.0 / np.sqrt(size)
            P[c, k] -= 1.0 / np.sqrt(size)
        blocks.append(sparse.csr_matrix(P @ P.T))
    return blocks


@pytest.mark.parametrize("method", ["eigen", "lu"])
@pytest.mark.parametrize("singular_gram", [False, True])
def test_product_path_solves_match_dense(method, singular_gram):
    rng = np.random.default_rng(0)
    n = 12
    K = _psd(rng, n, rank=5 if singular_gram else None)
    B = _psd(rng, n, rank=7)
    path = ProductShiftPath(K, B, [0.01, 0.3, 2.0], method=method)
    X = rng.normal(size=(n, 3))
    for alpha, shift in zip(path.alphas, path, strict=True):
        M = alpha * np.eye(n) + K @ B
        np.testing.assert_allclose(shift.solve(X), np.linalg.solve(M, X), rtol=1e-9, atol=1e-10)
        np.testing.assert_allclose(shift.solve_transposed(X), np.linalg.solve(M.T, X), rtol=1e-9, atol=1e-10)


def test_product_path_auto_route_and_errors():
    K, B = np.eye(3), np.eye(3)
    assert ProductShiftPath(K, B, [1.0, 2.0]).method == "lu"
    assert ProductShiftPath(K, B, np.logspace(-2, 2, 9)).method == "eigen"
    with pytest.raises(ValueError, match="'method' parameter of ProductShiftPath"):
        ProductShiftPath(K, B, [1.0], method="cholesky")


@pytest.mark.parametrize("method", ["eigen", "lu"])
@pytest.mark.parametrize("holdouts", [[[0], [3], [5]], [[0, 2], [1, 4, 5]]])
def test_mixing_holdout_equals_retraining_without_the_blocks(method, holdouts):
    rng = np.random.default_rng(1)
    n_examples, n_units = 6, 14
    K = _psd(rng, n_units)
    blocks = _blocks(rng, n_examples, n_units)
    B = sum(blocks).toarray()
    alpha = 0.2
    shift = ProductShiftPath(K, B, [alpha], method=method).shift(alpha)
    held = [sum(blocks[i] for i in h) for h in holdouts]
    got = mixing_holdout_coefficients(shift, K, sparse.csr_matrix(B), held, [np.array(h) for h in holdouts])
    for h, c in zip(holdouts, got, strict=True):
        B_c = B - sum(blocks[i] for i in h).toarray()
        # explicit retraining: c_C(u) = B_C (alpha I + K B_C)^{-1} k(u)
        expected = (B_c @ np.linalg.solve(alpha * np.eye(n_units) + K @ B_c, K[:, h])).T
        np.testing.assert_allclose(c, expected, rtol=1e-8, atol=1e-10)


def test_product_path_overwrite_serves_one_solver():
    rng = np.random.default_rng(2)
    K, B = _psd(rng, 6), _psd(rng, 6, rank=3)
    X = rng.normal(size=(6, 2))
    path = ProductShiftPath(K, B, [0.4], method="lu", overwrite=True)
    np.testing.assert_allclose(path.shift(0.4).solve(X), np.linalg.solve(0.4 * np.eye(6) + K @ B, X), rtol=1e-10)
    with pytest.raises(RuntimeError, match="already served"):
        path.shift(0.4)
    with pytest.raises(ValueError, match="overwrite=True"):
        ProductShiftPath(K, B, [0.4, 1.0], method="lu", overwrite=True)

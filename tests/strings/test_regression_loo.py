"""Leave-one-out outputs of the string estimators' kernel ridge (``KernelRidgeOutputs.fit(loo=True)``) against
explicit retraining without each example, down to near-interpolating alphas (leverages close to 1)."""

import numpy as np
import pytest

from iokr.strings._regression import KernelRidgeOutputs


@pytest.mark.parametrize("alpha", [1e-9, 1e-3, 1.0])
def test_loo_outputs_vs_retraining(rng, alpha):
    X = rng.normal(size=(15, 4))
    K = np.exp(-0.5 * np.sum((X[:, None] - X[None]) ** 2, axis=-1))
    Y = rng.integers(0, 3, size=(15, 6)).astype(np.float64)
    held_out = KernelRidgeOutputs("precomputed", alpha).fit(K, Y, loo=True)
    scale = np.linalg.cond(K + alpha * np.eye(15)) * np.finfo(np.float64).eps
    for i in range(15):
        train = np.setdiff1d(np.arange(15), [i])
        expected = K[i, train] @ np.linalg.solve(K[np.ix_(train, train)] + alpha * np.eye(14), Y[train])
        np.testing.assert_allclose(held_out[i], expected, rtol=0, atol=max(1e-10, 100 * scale))


def test_loo_is_exact_where_leverage_rounds_to_one(rng):
    # A well-conditioned Gram (eigenvalues in [1, 4]) and alpha = 1e-14: every leverage is 1 - O(1e-14), where a
    # clip of h at 1 - 1e-12 (or 1 - h formed in floating point) loses everything, while retraining stays exact
    # (condition number about 4). The complement computed as alpha G_ii keeps the closed form exact.
    B = rng.normal(size=(12, 12))
    K = np.eye(12) + B @ B.T / np.linalg.norm(B, 2) ** 2 * 3.0
    Y = rng.normal(size=(12, 2))
    alpha = 1e-14
    held_out = KernelRidgeOutputs("precomputed", alpha).fit(K, Y, loo=True)
    for i in range(12):
        train = np.setdiff1d(np.arange(12), [i])
        expected = K[i, train] @ np.linalg.solve(K[np.ix_(train, train)] + alpha * np.eye(11), Y[train])
        np.testing.assert_allclose(held_out[i], expected, rtol=1e-9, atol=1e-9 * np.abs(Y).max())

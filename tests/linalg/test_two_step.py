"""Two-step kernel ridge regression against brute force: dual coefficients by dense solves, hold-out settings B-D by
explicit retraining, setting A by the self-consistent imputation that defines it."""

import numpy as np
import pytest

from iokr.linalg import EigenPath, two_step_dual, two_step_holdout


def _psd(rng, n, rank=None):
    F = rng.normal(size=(n, rank or n + 2))
    return F @ F.T / F.shape[1]


def _dense_two_step(K1, K2, Y, a1, a2):
    """``(K1 + a1 I)^{-1} Y (K2 + a2 I)^{-1}`` by two dense solves."""
    return np.linalg.solve(K2 + a2 * np.eye(K2.shape[0]), np.linalg.solve(K1 + a1 * np.eye(K1.shape[0]), Y).T).T


@pytest.fixture
def problem(rng):
    K1, K2 = _psd(rng, 5), _psd(rng, 4, rank=2)  # rank-deficient K2 on purpose
    return K1, K2, rng.normal(size=(5, 4)), 0.3, 0.8


def test_dual_matches_dense_solves(problem):
    K1, K2, Y, a1, a2 = problem
    np.testing.assert_allclose(two_step_dual(EigenPath(K1), EigenPath(K2), Y, a1, a2), _dense_two_step(K1, K2, Y, a1, a2),
                               rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("setting", ["B", "C", "D"])
def test_holdout_matches_explicit_retraining(problem, setting):
    K1, K2, Y, a1, a2 = problem
    got = two_step_holdout(EigenPath(K1), EigenPath(K2), Y, a1, a2, setting)
    expected = np.empty(Y.shape)
    for i in range(Y.shape[0]):
        for j in range(Y.shape[1]):
            R = np.delete(np.arange(Y.shape[0]), i) if setting in "BD" else np.arange(Y.shape[0])
            C = np.delete(np.arange(Y.shape[1]), j) if setting in "CD" else np.arange(Y.shape[1])
            A = _dense_two_step(K1[np.ix_(R, R)], K2[np.ix_(C, C)], Y[np.ix_(R, C)], a1, a2)
            expected[i, j] = K1[i, R] @ A @ K2[C, j]
    np.testing.assert_allclose(got, expected, rtol=1e-8, atol=1e-10 * np.abs(expected).max())


def test_setting_a_is_the_self_consistent_imputation(problem):
    """Replacing ``Y[i, j]`` by the hold-out value ``F[i, j]`` and refitting reproduces ``F[i, j]``, for every pair."""
    K1, K2, Y, a1, a2 = problem
    F = two_step_holdout(EigenPath(K1), EigenPath(K2), Y, a1, a2, "A")
    for i in range(Y.shape[0]):
        for j in range(Y.shape[1]):
            Y2 = Y.copy()
            Y2[i, j] = F[i, j]
            assert (K1 @ _dense_two_step(K1, K2, Y2, a1, a2) @ K2)[i, j] == pytest.approx(F[i, j], rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("setting", ["A", "B", "C", "D"])
def test_stable_when_leverage_is_one(rng, setting):
    # Identity kernels and alpha = 1e-20: leverages round to 1, so 1 - h must come from alpha / (s + alpha).
    Y = rng.normal(size=(4, 5))
    got = two_step_holdout(EigenPath(np.eye(4)), EigenPath(np.eye(5)), Y, 1e-20, 1e-20, setting)
    np.testing.assert_allclose(got, 0.0, atol=1e-12)

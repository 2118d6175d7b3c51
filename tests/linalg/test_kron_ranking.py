"""Conditional-ranking closed forms against brute force: the centered loss, the Kronecker factors, and the hold-out
predictions of settings A-D against explicit retraining of the dense per-row centered system."""

import numpy as np
import pytest

from iokr.linalg import (
    EigenPath,
    kron_ranking_factors,
    kron_ranking_holdout,
    kron_ranking_leave_row_and_column_out,
    kron_ridge_dual,
)


def _psd(rng, n, rank=None):
    F = rng.normal(size=(n, rank or n + 2))
    return F @ F.T / F.shape[1]


def _centering_matrix(groups):
    """The loss matrix L of eq. 31: identity minus the per-group averaging, built entry by entry."""
    L = np.eye(groups.size)
    for g in np.unique(groups):
        idx = np.flatnonzero(groups == g)
        L[np.ix_(idx, idx)] -= 1.0 / idx.size
    return L


def _dense_ranking_refit(K1, K2, mask, Y, alpha, i, j):
    """Retrain on the labelled entries ``mask`` by a dense solve of ``(L Kq + alpha I) a = L y`` and score
    ``(i, j)``; a row with training labels gets its least-squares intercept (the mean training residual)."""
    r, c = np.nonzero(mask)
    Kq = K1[np.ix_(r, r)] * K2[np.ix_(c, c)]
    a = np.linalg.solve(_centering_matrix(r) @ Kq + alpha * np.eye(r.size), _centering_matrix(r) @ Y[r, c])
    resid = Y[r, c] - Kq @ a
    offset = resid[r == i].mean() if (r == i).any() else 0.0
    return (K1[i, r] * K2[j, c]) @ a + offset


def test_factors_give_the_dense_ranking_solution(rng):
    K1, K2, Y, alpha = _psd(rng, 5), _psd(rng, 4), rng.normal(size=(5, 4)), 0.4
    K2c, Yc = kron_ranking_factors(K2, Y)
    C = np.eye(4) - 1.0 / 4
    np.testing.assert_allclose(K2c, C @ K2 @ C, atol=1e-14)
    np.testing.assert_allclose(Yc, Y @ C, atol=1e-14)
    e1, e2 = EigenPath(K1), EigenPath(K2c)
    A = kron_ridge_dual(e1.eigenvectors, e1.eigenvalues, e2.eigenvectors, e2.eigenvalues, Yc, alpha)
    r, c = (x.ravel() for x in np.indices(Y.shape))
    L = _centering_matrix(r)
    dense = np.linalg.solve(L @ (K1[np.ix_(r, r)] * K2[np.ix_(c, c)]) + alpha * np.eye(r.size), L @ Y.ravel())
    np.testing.assert_allclose(A.ravel(), dense, rtol=1e-9, atol=1e-11)


def _holdout(K1, K2, Y, alpha, setting):
    K2c = kron_ranking_factors(K2, Y)[0]
    e1, e2 = EigenPath(K1), EigenPath(K2c)
    if setting == "D":
        return kron_ranking_leave_row_and_column_out(K1, K2, e2, Y, alpha)
    return kron_ranking_holdout(e1.eigenvectors, e1.eigenvalues, e2.eigenvectors, e2.eigenvalues, Y, alpha, setting)


@pytest.mark.parametrize("setting", ["A", "B", "C", "D"])
@pytest.mark.parametrize("shape", [(5, 4), (3, 6)])
def test_holdout_matches_explicit_retraining(rng, setting, shape):
    K1, K2 = _psd(rng, shape[0]), _psd(rng, shape[1], rank=3)  # rank-deficient C K2 C: extra null directions
    Y, alpha = rng.normal(size=shape), 0.3
    got = _holdout(K1, K2, Y, alpha, setting)
    expected = np.empty(shape)
    for i in range(shape[0]):
        for j in range(shape[1]):
            mask = np.ones(shape, bool)
            if setting == "A":
                mask[i, j] = False
            if setting in "BD":
                mask[i] = False
            if setting in "CD":
                mask[:, j] = False
            expected[i, j] = _dense_ranking_refit(K1, K2, mask, Y, alpha, i, j)
    if setting == "B":  # a whole row comes from one model: only its centered scores are defined
        got = got - got.mean(axis=1, keepdims=True)
        expected = expected - expected.mean(axis=1, keepdims=True)
    np.testing.assert_allclose(got, expected, rtol=1e-8, atol=1e-10 * np.abs(expected).max())

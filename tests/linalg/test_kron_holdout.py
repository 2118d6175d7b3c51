"""Setting-D (leave row and column out) Kronecker ridge predictions for a grid of alphas, against brute force."""

import numpy as np
import pytest

from iokr.estimators import KronRLS
from iokr.linalg import EigenPath, leave_row_and_column_out
from iokr.metrics import concordance_index
from tests.reference import kron_ridge_leave_row_and_column_out

ALPHAS = [1e-3, 0.05, 0.3, 2.0, 40.0]


def _psd(rng, n, rank=None):
    F = rng.normal(size=(n, rank or n + 2))
    return F @ F.T / F.shape[1]


@pytest.mark.parametrize("shape, rank2", [((5, 4), None), ((4, 6), 3), ((6, 6), 2)])
def test_grid_matches_explicit_kronecker_retraining(rng, shape, rank2):
    K1, K2 = _psd(rng, shape[0]), _psd(rng, shape[1], rank=rank2)  # rank-deficient K2 on purpose
    Y = rng.normal(size=shape)
    P = leave_row_and_column_out(K1, EigenPath(K2), Y, ALPHAS)
    assert P.shape == (len(ALPHAS), *shape)
    for a, alpha in enumerate(ALPHAS):
        expected = kron_ridge_leave_row_and_column_out(K1, K2, Y, alpha)
        np.testing.assert_allclose(P[a], expected, rtol=1e-8, atol=1e-10 * np.abs(expected).max())


def test_grid_equals_one_alpha_at_a_time_and_chunks(rng):
    K1, K2, Y = _psd(rng, 7), _psd(rng, 5), rng.normal(size=(7, 5))
    eig2 = EigenPath(K2)
    P = leave_row_and_column_out(K1, eig2, Y, ALPHAS)
    for a, alpha in enumerate(ALPHAS):
        np.testing.assert_allclose(P[a], leave_row_and_column_out(K1, eig2, Y, [alpha])[0], rtol=1e-12, atol=1e-14)
    # One alpha per chunk (a budget below two alphas' temporaries) gives the same numbers.
    tiny = 6 * 8 * 6 * 5 * 1.5 / 2**20
    np.testing.assert_allclose(leave_row_and_column_out(K1, eig2, Y, ALPHAS, working_memory=tiny), P,
                               rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("shape", [(5, 7), (7, 4)])  # loops over rows, then over columns (the smaller domain)
def test_kronrls_cv_path_d_matches_retraining_and_per_alpha_route(rng, shape):
    K1, K2, Y = _psd(rng, shape[0]), _psd(rng, shape[1]), rng.normal(size=shape)
    model = KronRLS(alpha=1.0).fit(K1, K2, Y)

    def mse(y, p):  # continuous, so round-off cannot flip it
        return -np.mean((y - p) ** 2)

    scores = model.cv_path(ALPHAS, "D", scoring=mse)
    per_alpha = [mse(Y.ravel(), model.holdout_predictions("D", alpha=a).ravel()) for a in ALPHAS]
    brute = [mse(Y.ravel(), kron_ridge_leave_row_and_column_out(K1, K2, Y, a).ravel()) for a in ALPHAS]
    np.testing.assert_allclose(scores, per_alpha, rtol=1e-12)
    np.testing.assert_allclose(scores, brute, rtol=1e-8)
    default = model.cv_path(ALPHAS[:2], "D")
    expected = [concordance_index(Y.ravel(), kron_ridge_leave_row_and_column_out(K1, K2, Y, a).ravel())
                for a in ALPHAS[:2]]
    np.testing.assert_allclose(default, expected, rtol=1e-12)

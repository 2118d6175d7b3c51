"""RLS against scikit-learn's KernelRidge (same objective, no intercept) and the naive formula."""

import numpy as np
import pytest
from sklearn.kernel_ridge import KernelRidge

from iokr.estimators.rls import RLS
from iokr.kernels import Gaussian


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n_targets", [None, 3])
def test_rls_matches_kernel_ridge(rng, dtype, n_targets):
    X = rng.normal(size=(30, 4)).astype(dtype)
    y = rng.normal(size=(30,) if n_targets is None else (30, n_targets))
    X_test = rng.normal(size=(7, 4)).astype(dtype)
    ours = RLS(alpha=0.3, kernel=Gaussian(0.5)).fit(X, y)
    ref = KernelRidge(alpha=0.3, kernel="rbf", gamma=0.5).fit(X.astype(np.float64), y)
    rtol = 1e-8 if dtype == np.float64 else 1e-4
    np.testing.assert_allclose(ours.predict(X_test), ref.predict(X_test.astype(np.float64)), rtol=rtol, atol=rtol)


def test_rls_precomputed_and_chunked_predict(rng):
    X, y = rng.normal(size=(25, 3)), rng.normal(size=25)
    K = Gaussian(1.0)(X)
    ours = RLS(alpha=0.5, kernel="precomputed", working_memory=0.001).fit(K, y)
    naive = K @ np.linalg.solve(K + 0.5 * np.eye(25), y)
    np.testing.assert_allclose(ours.predict(K), naive, rtol=1e-10)


@pytest.mark.parametrize("alpha", [0.0, -1.0, np.nan, "a"])
def test_rls_rejects_bad_alpha(rng, alpha):
    with pytest.raises(ValueError, match="'alpha' parameter of RLS"):
        RLS(alpha=alpha).fit(rng.normal(size=(5, 2)), np.zeros(5))


def test_rls_rejects_mismatched_targets(rng):
    with pytest.raises(ValueError, match="'y' has 4"):
        RLS().fit(rng.normal(size=(5, 2)), np.zeros(4))

"""Properties of the regressors RLS, RLSCV and RankRLS on random and degenerate problems.

Invariants: finite predictions, training-order invariance, chunked == unchunked prediction under a shrunken budget,
float32 ~ float64, linearity in the targets (RLS), per-query shift invariance and query-id relabeling invariance
(RankRLS: its loss only sees differences within a query), closed-form CV consistent with a refit, no mutation.
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from prop_helpers import assert_finite, counting, make_matrix, problems, scale, share, smallest_budget_run, unchanged

import iokr.estimators._rank_scores as rankrls_module  # RankRLS scores (row_slices) live here
import iokr.estimators.rls as rls_module
from iokr import RLS, RLSCV, RankRLS
from iokr.kernels import Gaussian, Polynomial

RLS_CONFIGS = {
    "linear": dict(),
    "gaussian": dict(kernel=Gaussian(0.5)),
    "gaussian_centered_normalized": dict(kernel=Gaussian(0.5), center=True, normalize=True),
    "polynomial_normalized": dict(kernel=Polynomial(degree=2), normalize=True),
    "precomputed": dict(kernel="precomputed"),
}

ALPHAS = (0.05, 1.0, 10.0)


def _data(spec, n_targets):
    rng = np.random.default_rng(spec["seed"])
    X = make_matrix(rng, spec["n"], spec["d"], spec["degeneracy"], dtype=spec["dtype"])
    y = rng.normal(size=(spec["n"],) if n_targets == 0 else (spec["n"], n_targets))
    X_test = make_matrix(rng, 1 + spec["seed"] % 5, spec["d"], "none", dtype=spec["dtype"])
    return rng, X, y, X_test


def _inputs(config, X, X_test, order=None):
    """Features, or (for "precomputed") the training Gram and the test-by-train block of a linear kernel."""
    order = np.arange(X.shape[0]) if order is None else order
    if config.get("kernel") == "precomputed":
        X64, T64 = X.astype(np.float64)[order], X_test.astype(np.float64)
        return X64 @ X64.T, T64 @ X64.T
    return X[order], X_test


def _tol(magnitude, dtype=np.float64):
    """Tolerance of a comparison between two computations in ``dtype`` (float32 kernel blocks round differently
    when chunked or permuted)."""
    return (2e-3 if np.dtype(dtype) == np.float32 else 1e-9) * magnitude


@pytest.mark.parametrize("config", sorted(RLS_CONFIGS))
@share(0.6)
@given(spec=problems(max_n=10, max_d=4), alpha=st.sampled_from(ALPHAS), n_targets=st.integers(0, 3))
def test_rls_properties(config, spec, alpha, n_targets):
    params = RLS_CONFIGS[config]
    rng, X, y, X_test = _data(spec, n_targets)
    Xf, Tf = _inputs(params, X, X_test)
    with unchanged(Xf, y, Tf):
        model = RLS(alpha=alpha, **params).fit(Xf, y)
        P = model.predict(Tf)
    assert P.shape == (Tf.shape[0],) + y.shape[1:]
    assert_finite(P, "predictions")
    tol = _tol(scale(P, y, np.abs(model.dual_coef_).sum(axis=0)), spec["dtype"])

    perm = rng.permutation(X.shape[0])
    Xp, Tp = _inputs(params, X, X_test, perm)
    np.testing.assert_allclose(RLS(alpha=alpha, **params).fit(Xp, y[perm]).predict(Tp), P, rtol=0, atol=tol)

    with counting(rls_module, "row_slices") as chunks:
        P_chunked, _ = smallest_budget_run(lambda: model.predict(Tf))
    if Tf.shape[0] > 1:
        assert chunks[0] > 1
    np.testing.assert_allclose(P_chunked, P, rtol=0, atol=tol)

    # linear in the targets: two targets fitted together = each fitted alone, and scaling y scales f
    z = rng.normal(size=X.shape[0])
    both = RLS(alpha=alpha, **params).fit(Xf, np.column_stack([z, 3.0 * z])).predict(Tf)
    alone = RLS(alpha=alpha, **params).fit(Xf, z).predict(Tf)
    np.testing.assert_allclose(both[:, 0], alone, rtol=0, atol=_tol(scale(alone, z)))
    np.testing.assert_allclose(both[:, 1], 3.0 * alone, rtol=0, atol=3 * _tol(scale(alone, z)))

    # float32 inputs ~ the same values in float64
    if spec["dtype"] == np.float32:
        X64, T64 = _inputs(params, X.astype(np.float64), X_test.astype(np.float64))
        P64 = RLS(alpha=alpha, **params).fit(X64, y).predict(T64)
        np.testing.assert_allclose(P, P64, rtol=0, atol=_tol(scale(P64, y), np.float32))


@pytest.mark.parametrize("config", ["linear", "gaussian", "precomputed"])
@share(0.5)
@given(spec=problems(max_n=10, max_d=3), cv=st.sampled_from([None, 2, 3]))
def test_rlscv_properties(config, spec, cv):
    params = RLS_CONFIGS[config]
    rng, X, y, X_test = _data(spec, 0)
    Xf, Tf = _inputs(params, X, X_test)
    alphas = [0.1, 1.0, 10.0]
    n = X.shape[0]
    if n < 2 or (cv is not None and n < cv):
        with pytest.raises(ValueError):
            RLSCV(alphas=alphas, cv=cv, **params).fit(Xf, y)
        return
    with unchanged(Xf, y):
        search = RLSCV(alphas=alphas, cv=cv, **params).fit(Xf, y)
    scores = search.cv_results_["mean_test_score"]
    assert_finite(scores, "cv scores")
    P = search.predict(Tf)
    assert_finite(P, "predictions")
    np.testing.assert_allclose(P, RLS(alpha=search.alpha_, **params).fit(Xf, y).predict(Tf), rtol=0,
                               atol=_tol(scale(P)))
    if cv is None:  # leave-one-out does not depend on the training order
        perm = rng.permutation(n)
        Xp, _ = _inputs(params, X, X_test, perm)
        again = RLSCV(alphas=alphas, cv=cv, **params).fit(Xp, y[perm])
        rtol = 1e-4 if spec["dtype"] == np.float32 else 1e-8  # float32 kernel blocks round with the order
        np.testing.assert_allclose(again.cv_results_["mean_test_score"], scores, rtol=rtol, atol=rtol * 1e-2)
        # and equals explicit leave-one-out retraining
        for j, alpha in enumerate(alphas):
            errors = []
            for i in range(n):
                keep = np.arange(n) != i
                Xi, Ti = _inputs(params, X[keep], X[i:i + 1])
                errors.append((RLS(alpha=alpha, **params).fit(Xi, y[keep]).predict(Ti)[0] - y[i]) ** 2)
            if params.get("kernel") != "precomputed":
                np.testing.assert_allclose(scores[j], -np.mean(errors), rtol=100 * rtol, atol=rtol)


RANK_CONFIGS = {
    "linear": dict(),
    "linear_normalized_queries": dict(normalize_queries=True),
    "gaussian": dict(kernel=Gaussian(0.5)),
    "precomputed": dict(kernel="precomputed"),
}


@pytest.mark.parametrize("config", sorted(RANK_CONFIGS))
@share(0.6)
@given(spec=problems(max_n=10, max_d=4), alpha=st.sampled_from(ALPHAS), n_queries=st.integers(1, 3))
def test_rankrls_properties(config, spec, alpha, n_queries):
    params = RANK_CONFIGS[config]
    rng, X, y, X_test = _data(spec, 0)
    n = X.shape[0]
    qids = rng.integers(0, n_queries, size=n)
    Xf, Tf = _inputs(params, X, X_test)
    with unchanged(Xf, y, qids, Tf):
        model = RankRLS(alpha=alpha, **params).fit(Xf, y, qids)
        P = model.predict(Tf)
    assert P.shape == (Tf.shape[0],)
    assert_finite(P, "scores")
    tol = _tol(scale(P, y), spec["dtype"])

    # the loss sees only differences within a query: per-query shifts of y and relabeled query ids change nothing
    shifted = y + rng.normal(size=n_queries)[qids] * 10.0
    np.testing.assert_allclose(RankRLS(alpha=alpha, **params).fit(Xf, shifted, qids).predict(Tf), P, rtol=0,
                               atol=_tol(scale(P, shifted)))
    relabel = rng.permutation(n_queries) * 7 + 100
    np.testing.assert_allclose(RankRLS(alpha=alpha, **params).fit(Xf, y, relabel[qids]).predict(Tf), P, rtol=0,
                               atol=tol)
    np.testing.assert_allclose(RankRLS(alpha=alpha, **params).fit(Xf, 2.5 * y, qids).predict(Tf), 2.5 * P, rtol=0,
                               atol=2.5 * tol)

    perm = rng.permutation(n)
    Xp, Tp = _inputs(params, X, X_test, perm)
    np.testing.assert_allclose(RankRLS(alpha=alpha, **params).fit(Xp, y[perm], qids[perm]).predict(Tp), P, rtol=0,
                               atol=tol)

    with counting(rankrls_module, "row_slices") as chunks:
        P_chunked, _ = smallest_budget_run(lambda: model.predict(Tf))
    if params.get("kernel") not in (None, "precomputed") and Tf.shape[0] > 1:
        assert chunks[0] > 1  # only the non-linear kernel path evaluates kernel blocks at prediction
    np.testing.assert_allclose(P_chunked, P, rtol=0, atol=tol)

    if spec["dtype"] == np.float32:
        X64, T64 = _inputs(params, X.astype(np.float64), X_test.astype(np.float64))
        P64 = RankRLS(alpha=alpha, **params).fit(X64, y, qids).predict(T64)
        np.testing.assert_allclose(P, P64, rtol=0, atol=_tol(scale(P64, y), np.float32))

"""RankRLS against dense references: the system (L K + lambda I) a = L y, the linear primal, and leave-query-out /
leave-pair-out against explicit retraining."""

import numpy as np
import pytest

from iokr.estimators.rankrls import RankRLS
from iokr.kernels import Gaussian, Linear


def _laplacian(qids, normalize):
    n = qids.size
    L = np.zeros((n, n))
    for q in np.unique(qids):
        idx = np.flatnonzero(qids == q)
        block = np.eye(idx.size) * idx.size - 1.0
        L[np.ix_(idx, idx)] = block / idx.size if normalize else block
    return L


def _dense_dual(K, y, qids, alpha, normalize=False):
    L = _laplacian(qids, normalize)
    return np.linalg.solve(L @ K + alpha * np.eye(K.shape[0]), L @ y)


def _pair_loss(y, f, qids):
    """The loss by its definition: squared differences over all pairs within each query."""
    total = 0.0
    for q in np.unique(qids):
        idx = np.flatnonzero(qids == q)
        dy = y[idx][:, None] - y[idx][None, :]
        df = f[idx][:, None] - f[idx][None, :]
        total += 0.5 * np.sum((dy - df) ** 2)
    return total


@pytest.fixture
def ranking_data(rng):
    X = rng.normal(size=(24, 4))
    y = X @ np.array([1.0, -0.5, 0.0, 2.0]) + 0.3 * rng.normal(size=24)
    qids = np.repeat([3, 7, 1, 9], 6)
    return X, y, qids


@pytest.mark.parametrize("use_qids", [False, True])
@pytest.mark.parametrize("normalize", [False, True])
@pytest.mark.parametrize("alpha", [1e-2, 1.0, 10.0])
def test_kernel_rankrls_matches_dense_system(ranking_data, use_qids, normalize, alpha):
    X, y, qids = ranking_data
    qids = qids if use_qids else np.zeros(y.size, int)
    gauss = Gaussian(gamma=0.2)
    K = gauss(X)
    model = RankRLS(alpha=alpha, kernel=gauss, normalize_queries=normalize).fit(X, y, qids if use_qids else None)
    a = _dense_dual(K, y, qids, alpha, normalize)
    np.testing.assert_allclose(model.dual_coef_, a, rtol=1e-8, atol=1e-10)
    T = np.random.default_rng(1).normal(size=(5, 4))
    np.testing.assert_allclose(model.predict(T), gauss(T, X) @ a, rtol=1e-8, atol=1e-10)


def test_laplacian_is_the_pairwise_loss(ranking_data, rng):
    X, y, qids = ranking_data
    f = rng.normal(size=y.size)
    r = y - f
    assert r @ _laplacian(qids, False) @ r == pytest.approx(_pair_loss(y, f, qids), rel=1e-12)


@pytest.mark.parametrize("shape", [(30, 4), (6, 10)])
def test_linear_primal_equals_kernel_dual(rng, shape):
    X = rng.normal(size=shape)
    y = rng.normal(size=shape[0])
    primal = RankRLS(alpha=0.5).fit(X, y)
    dual = RankRLS(alpha=0.5, kernel=Linear()).fit(X, y)
    pre = RankRLS(alpha=0.5, kernel="precomputed").fit(X @ X.T, y)
    T = rng.normal(size=(3, shape[1]))
    np.testing.assert_allclose(primal.predict(T), dual.predict(T), rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(pre.predict(T @ X.T), dual.predict(T), rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("normalize", [False, True])
@pytest.mark.parametrize("kernel", ["linear", "gaussian"])
def test_leave_query_out_matches_retraining(ranking_data, normalize, kernel):
    X, y, qids = ranking_data
    kern = Gaussian(gamma=0.2) if kernel == "gaussian" else "linear"
    model = RankRLS(alpha=0.7, kernel=kern, normalize_queries=normalize).fit(X, y, qids)
    got = model.leave_query_out()
    for q in np.unique(qids):
        test = qids == q
        ref = RankRLS(alpha=0.7, kernel=kern, normalize_queries=normalize).fit(X[~test], y[~test], qids[~test])
        expected = ref.predict(X[test])
        np.testing.assert_allclose(got[test] - got[test].mean(), expected - expected.mean(), rtol=1e-7, atol=1e-9)
    # alpha override reuses the eigendecomposition and equals a refit
    refit = RankRLS(alpha=3.0, kernel=kern, normalize_queries=normalize).fit(X, y, qids)
    np.testing.assert_allclose(model.leave_query_out(alpha=3.0), refit.leave_query_out(), rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("normalize", [False, True])
@pytest.mark.parametrize("kernel", ["linear", "gaussian", "wide"])
def test_leave_pair_out_matches_retraining(rng, normalize, kernel):
    n = 12
    X = rng.normal(size=(n, 20 if kernel == "wide" else 3))
    y = rng.normal(size=n)
    kern = Gaussian(gamma=0.3) if kernel == "gaussian" else "linear"
    model = RankRLS(alpha=0.4, kernel=kern, normalize_queries=normalize).fit(X, y)
    first, second = np.triu_indices(n, k=1)
    got = model.leave_pair_out((first, second))
    for k, (i, j) in enumerate(zip(first, second)):
        keep = np.setdiff1d(np.arange(n), [i, j])
        ref = RankRLS(alpha=0.4, kernel=kern, normalize_queries=normalize).fit(X[keep], y[keep])
        p = ref.predict(X[[i, j]])
        np.testing.assert_allclose(got[k, 0] - got[k, 1], p[0] - p[1], rtol=1e-7, atol=1e-9)


def test_cv_path(ranking_data):
    X, y, qids = ranking_data
    scores = RankRLS(alpha=1.0).fit(X, y).cv_path([0.1, 1.0, 100.0], cv="lpo")
    assert scores.shape == (3,) and np.all((0 <= scores) & (scores <= 1))
    scores = RankRLS(alpha=1.0).fit(X, y, qids).cv_path([0.1, 1.0], cv="lqo")
    assert scores.shape == (2,) and np.all((0 <= scores) & (scores <= 1))
    with pytest.raises(ValueError, match="'cv'"):
        RankRLS().fit(X, y).cv_path([1.0], cv="kfold")


def test_bad_input(ranking_data):
    X, y, qids = ranking_data
    with pytest.raises(ValueError, match="'qids'"):
        RankRLS().fit(X, y, qids[:-1])
    with pytest.raises(ValueError, match="'y'"):
        RankRLS().fit(X, y[:-1])
    with pytest.raises(ValueError, match="'alpha' parameter"):
        RankRLS(alpha=0.0).fit(X, y)
    with pytest.raises(ValueError, match="two queries"):
        RankRLS().fit(X, y).leave_query_out()
    with pytest.raises(NotImplementedError):
        RankRLS().fit(X, y, qids).leave_pair_out((np.array([0]), np.array([1])))
    with pytest.raises(ValueError, match="different"):
        RankRLS().fit(X, y).leave_pair_out((np.array([0]), np.array([0])))
    with pytest.raises(ValueError, match="features"):
        RankRLS().fit(X, y).predict(X[:, :2])


def test_does_not_mutate(ranking_data):
    X, y, qids = ranking_data
    before = X.copy(), y.copy(), qids.copy()
    RankRLS(alpha=1.0).fit(X, y, qids).leave_query_out()
    for b, a in zip(before, (X, y, qids)):
        np.testing.assert_array_equal(b, a)


# --------------------------------------------------------------------------------- ranking measures (metrics.py)
def _naive_rank_loss(y, f, groups):
    losses = []
    for g in np.unique(groups):
        idx = np.flatnonzero(groups == g)
        bad = pairs = 0.0
        for a in idx:
            for b in idx:
                if y[a] > y[b]:
                    pairs += 1
                    bad += 1.0 if f[a] < f[b] else 0.5 if f[a] == f[b] else 0.0
        if pairs:
            losses.append(bad / pairs)
    return np.mean(losses)


def _naive_tau_b(x, y):
    n = x.size
    s = sum(np.sign(x[i] - x[j]) * np.sign(y[i] - y[j]) for i in range(n) for j in range(i + 1, n))
    n0 = n * (n - 1) / 2
    tx = sum(c * (c - 1) / 2 for c in np.unique(x, return_counts=True)[1])
    ty = sum(c * (c - 1) / 2 for c in np.unique(y, return_counts=True)[1])
    return s / np.sqrt((n0 - tx) * (n0 - ty))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_pairwise_rank_loss_and_tau_b_vs_naive(seed):
    from iokr.metrics import kendall_tau_b, pairwise_rank_loss

    rng = np.random.default_rng(seed)
    y = rng.integers(0, 4, size=40).astype(float)
    f = np.round(rng.normal(size=40), 1)  # ties in scores
    groups = rng.choice(["a", "b", "c"], size=40)
    assert pairwise_rank_loss(y, f, groups) == pytest.approx(_naive_rank_loss(y, f, groups), rel=1e-12)
    assert kendall_tau_b(y, f) == pytest.approx(_naive_tau_b(y, f), rel=1e-10)
    with pytest.raises(ValueError, match="same length"):
        pairwise_rank_loss(y, f[:-1], groups)
    with pytest.raises(ValueError, match="at least one group"):
        pairwise_rank_loss(np.ones(4), f[:4], groups[:4])


@pytest.mark.parametrize("n", [2, 7, 60])
@pytest.mark.parametrize("levels", [2, 5, 1000])
def test_fast_concordance_index_equals_reference(n, levels):
    from reference import concordance_pairs

    from iokr.metrics import concordance_index

    rng = np.random.default_rng(n * levels)
    y = rng.integers(0, levels, size=n).astype(float)
    y[0], y[-1] = 0.0, 1.0
    for s in (rng.integers(0, 3, size=n).astype(float), rng.normal(size=n), np.ones(n)):
        assert concordance_index(y, s) == pytest.approx(concordance_pairs(y, s), abs=1e-12)

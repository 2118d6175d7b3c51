"""RankRLS against dense references: the system (L K + lambda I) a = L y, the linear primal, and leave-query-out /
leave-pair-out against explicit retraining."""

import numpy as np
import pytest
from reference import concordance_pairs
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

from iokr.estimators.rankrls import PreferenceRankRLS, RankRLS
from iokr.kernels import Gaussian, Linear
from iokr.metrics import concordance_index, kendall_tau_b, pairwise_rank_loss


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
    for k, (i, j) in enumerate(zip(first, second, strict=True)):
        keep = np.setdiff1d(np.arange(n), [i, j])
        ref = RankRLS(alpha=0.4, kernel=kern, normalize_queries=normalize).fit(X[keep], y[keep])
        p = ref.predict(X[[i, j]])
        np.testing.assert_allclose(got[k, 0] - got[k, 1], p[0] - p[1], rtol=1e-7, atol=1e-9)


def test_cv_path(ranking_data):
    X, y, qids = ranking_data
    scores = RankRLS(alpha=1.0).fit(X, y).cv_path([0.1, 1.0, 100.0], cv="lpo")
    assert scores.shape == (3,) and np.all((scores >= 0) & (scores <= 1))
    scores = RankRLS(alpha=1.0).fit(X, y, qids).cv_path([0.1, 1.0], cv="lqo")
    assert scores.shape == (2,) and np.all((scores >= 0) & (scores <= 1))
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
    for b, a in zip(before, (X, y, qids), strict=True):
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
    rng = np.random.default_rng(n * levels)
    y = rng.integers(0, levels, size=n).astype(float)
    y[0], y[-1] = 0.0, 1.0
    for s in (rng.integers(0, 3, size=n).astype(float), rng.normal(size=n), np.ones(n)):
        assert concordance_index(y, s) == pytest.approx(concordance_pairs(y, s), abs=1e-12)


# ------------------------------------------------------------------------------ k-fold hold-out (global ranking)
@pytest.mark.parametrize("normalize", [False, True])
@pytest.mark.parametrize("kernel", ["linear", "gaussian", "wide"])
def test_holdout_matches_retraining(rng, normalize, kernel):
    n = 15
    X = rng.normal(size=(n, 20 if kernel == "wide" else 3))
    y = rng.normal(size=n)
    kern = Gaussian(gamma=0.3) if kernel == "gaussian" else "linear"
    model = RankRLS(alpha=0.4, kernel=kern, normalize_queries=normalize).fit(X, y)
    for fold in (np.array([3]), np.array([0, 7, 11]), np.array([14, 2, 5, 9, 1, 12])):
        keep = np.setdiff1d(np.arange(n), fold)
        for alpha in (0.4, 5.0):
            ref = RankRLS(alpha=alpha, kernel=kern, normalize_queries=normalize).fit(X[keep], y[keep])
            expected = ref.predict(X[fold])
            got = model.holdout(fold, alpha=alpha)
            # one model per fold: compare up to the shared offset the ranking loss does not see
            np.testing.assert_allclose(got - got.mean(), expected - expected.mean(), rtol=1e-8, atol=1e-10)


def test_kfold_cv_path_is_mean_fold_cindex(rng):
    X = rng.normal(size=(20, 3))
    y = X @ np.array([1.0, 0.5, -1.0]) + rng.normal(size=20)
    folds = np.array_split(rng.permutation(20), 4)
    model = RankRLS(alpha=1.0).fit(X, y)
    expected = []
    for alpha in (0.1, 10.0):
        per_fold = []
        for fold in folds:
            keep = np.setdiff1d(np.arange(20), fold)
            per_fold.append(concordance_index(y[fold], RankRLS(alpha=alpha).fit(X[keep], y[keep]).predict(X[fold])))
        expected.append(np.mean(per_fold))
    np.testing.assert_allclose(model.cv_path([0.1, 10.0], cv=folds), expected, rtol=1e-12)


def test_holdout_bad_input(ranking_data):
    X, y, qids = ranking_data
    model = RankRLS().fit(X, y)
    with pytest.raises(ValueError, match="distinct"):
        model.holdout(np.array([1, 1]))
    with pytest.raises(ValueError, match="between 1 and"):
        model.holdout(np.arange(y.size - 1))
    with pytest.raises(ValueError, match="integer"):
        model.holdout(np.array([0.5]))
    with pytest.raises(NotImplementedError, match="leave_query_out"):
        RankRLS().fit(X, y, qids).holdout(np.array([0]))


# ----------------------------------------------------------------------- RankRLS from explicit preference pairs
def _preference_reference(Phi_train, Phi_test, first, second, margins, alpha):
    """Brute-force minimizer of sum_k (m_k - (f_i - f_j))^2 + alpha ||w||^2 over explicit features: least squares on
    the stacked system [D; sqrt(alpha) I] w = [m; 0] with D the rows phi(x_i) - phi(x_j), one per listed pair."""
    D = Phi_train[first] - Phi_train[second]
    A = np.vstack([D, np.sqrt(alpha) * np.eye(D.shape[1])])
    b = np.concatenate([margins, np.zeros(D.shape[1])])
    w = np.linalg.lstsq(A, b, rcond=None)[0]
    return Phi_train @ w, Phi_test @ w


def _features(K):
    """Explicit feature map of a PSD Gram matrix (rows), ``Phi Phi^T = K``."""
    s, Q = np.linalg.eigh(K)
    return Q * np.sqrt(np.clip(s, 0, None))


@pytest.mark.parametrize("kernel", ["linear", "linear-wide", "gaussian", "precomputed"])
@pytest.mark.parametrize("n_pairs", [6, 40])  # fewer pairs than examples (pair-space solve) and more (n x n LU)
@pytest.mark.parametrize("alpha", [1e-2, 1.0])
def test_preference_rankrls_minimizes_pairwise_objective(rng, kernel, n_pairs, alpha):
    n, m = 12, 5
    d = 30 if kernel == "linear-wide" else 4
    X = rng.normal(size=(n + m, d))
    first = rng.integers(0, n, size=n_pairs)
    second = (first + rng.integers(1, n, size=n_pairs)) % n  # never equal to first
    first[1], second[1] = first[0], second[0]  # a repeated preference counts twice
    margins = rng.uniform(0.5, 2.0, size=n_pairs)
    if kernel == "gaussian":
        kern = Gaussian(gamma=0.2)
        K_all = kern(X)
    else:
        kern = "precomputed" if kernel == "precomputed" else "linear"
        K_all = X @ X.T
    Phi = _features(K_all) if kernel in ("gaussian", "precomputed") else X
    f_train, f_test = _preference_reference(Phi[:n], Phi[n:], first, second, margins, alpha)
    model = PreferenceRankRLS(alpha=alpha, kernel=kern)
    if kernel == "precomputed":
        model.fit(K_all[:n, :n], (first, second), margins)
        got_train, got_test = model.predict(K_all[:n, :n]), model.predict(K_all[n:, :n])
    else:
        model.fit(X[:n], np.column_stack([first, second]), margins)
        got_train, got_test = model.predict(X[:n]), model.predict(X[n:])
    scale = np.abs(f_train).max()
    np.testing.assert_allclose(got_train, f_train, rtol=1e-8, atol=1e-9 * scale)
    np.testing.assert_allclose(got_test, f_test, rtol=1e-8, atol=1e-9 * scale)
    if model.dual_coef_ is not None:
        # the closed form of the Notes: (L K + alpha I) a = C^T m
        C = np.zeros((n_pairs, n))
        C[np.arange(n_pairs), first] += 1.0
        C[np.arange(n_pairs), second] -= 1.0
        K = K_all[:n, :n]
        np.testing.assert_allclose((C.T @ C @ K + alpha * np.eye(n)) @ model.dual_coef_, C.T @ margins,
                                   rtol=1e-8, atol=1e-9 * np.abs(C.T @ margins).max())


def test_preference_rankrls_equals_rankrls_on_all_pairs(rng):
    """All ordered pairs with margins y_i - y_j (i < j once each) is global RankRLS's Laplacian loss."""
    X = rng.normal(size=(10, 3))
    y = rng.normal(size=10)
    i, j = np.triu_indices(10, k=1)
    pref = PreferenceRankRLS(alpha=0.3, kernel=Gaussian(gamma=0.5)).fit(X, (i, j), y[i] - y[j])
    rank = RankRLS(alpha=0.3, kernel=Gaussian(gamma=0.5)).fit(X, y)
    T = rng.normal(size=(4, 3))
    np.testing.assert_allclose(pref.predict(T), rank.predict(T), rtol=1e-9, atol=1e-11)


def test_preference_rankrls_bad_input(rng):
    X = rng.normal(size=(6, 2))
    ok = (np.array([0, 1]), np.array([2, 3]))
    with pytest.raises(ValueError, match=r"\[0, 6\)"):
        PreferenceRankRLS().fit(X, (np.array([0]), np.array([6])))
    with pytest.raises(ValueError, match="two different"):
        PreferenceRankRLS().fit(X, (np.array([1]), np.array([1])))
    with pytest.raises(ValueError, match="'margins'"):
        PreferenceRankRLS().fit(X, ok, margins=np.ones(3))
    with pytest.raises(ValueError, match="equal length"):
        PreferenceRankRLS().fit(X, (np.array([0, 1]), np.array([2])))
    with pytest.raises(ValueError, match="'pairs' must be a tuple"):
        PreferenceRankRLS().fit(X, np.arange(6))
    with pytest.raises(ValueError, match="at least one"):
        PreferenceRankRLS().fit(X, (np.array([], int), np.array([], int)))
    with pytest.raises(ValueError, match="'alpha'"):
        PreferenceRankRLS(alpha=-1.0).fit(X, ok)
    with pytest.raises(ValueError, match="features"):
        PreferenceRankRLS().fit(X, ok).predict(X[:, :1])


def test_preference_rankrls_estimator_contract(rng):
    X = rng.normal(size=(8, 3))
    pairs = (np.array([0, 2, 4]), np.array([1, 3, 5]))
    before = X.copy(), pairs[0].copy(), pairs[1].copy()
    model = PreferenceRankRLS(alpha=0.5, kernel=Gaussian(gamma=0.1))
    with pytest.raises(NotFittedError):
        model.predict(X)
    assert model.fit(X, pairs) is model
    assert clone(model).get_params()["alpha"] == 0.5
    for b, a in zip(before, (X, *pairs), strict=True):
        np.testing.assert_array_equal(b, a)

"""RankRLSCV against RankRLS's own hold-out (cv_path, leave_query_out, leave_pair_out) and against explicit refits
of RankRLS on every training side."""

import numpy as np
import pytest
from scipy.stats import rankdata
from sklearn.model_selection import GroupKFold, KFold

from iokr import RankRLS, RankRLSCV
from iokr.kernels import Gaussian
from iokr.metrics import concordance_index, pairwise_rank_loss

ALPHAS = [0.05, 1.0, 20.0]


@pytest.fixture
def data(rng):
    X = rng.normal(size=(28, 3))
    y = X @ np.array([1.0, -0.5, 0.8]) + 0.7 * rng.normal(size=28)
    qids = np.repeat([5, 2, 9, 4, 7, 1, 3], 4)
    return X, y, qids


def _centered(values, groups):
    out = np.array(values, dtype=np.float64)
    for q in np.unique(groups):
        out[groups == q] -= out[groups == q].mean()
    return out


@pytest.mark.parametrize("normalize", [False, True])
def test_leave_query_out_equals_rankrls_and_refits(data, normalize):
    X, y, qids = data
    kern = Gaussian(gamma=0.3)
    search = RankRLSCV(alphas=ALPHAS, kernel=kern, normalize_queries=normalize, store_cv_results=True).fit(X, y, qids)
    assert search.cv_scheme_ == "leave-query-out" and search.n_splits_ == 7
    model = RankRLS(kernel=kern, normalize_queries=normalize).fit(X, y, qids)
    np.testing.assert_allclose(search.cv_results_["mean_test_score"], model.cv_path(ALPHAS, cv="lqo"), rtol=1e-12)
    for k, alpha in enumerate(ALPHAS):
        stored = search.cv_results_["holdout_predictions"][k]
        np.testing.assert_allclose(stored, model.leave_query_out(alpha), rtol=1e-10, atol=1e-12)
        for q in np.unique(qids):  # brute force: the ranker retrained without query q
            test = qids == q
            ref = RankRLS(alpha=alpha, kernel=kern, normalize_queries=normalize).fit(X[~test], y[~test], qids[~test])
            np.testing.assert_allclose(stored[test], _centered(ref.predict(X[test]), qids[test]), rtol=1e-7,
                                       atol=1e-9)
            split = list(np.unique(qids)).index(q)
            assert search.cv_results_["split_test_scores"][k, split] == pytest.approx(
                concordance_index(y[test], ref.predict(X[test])), abs=1e-12)
            np.testing.assert_array_equal(search.cv_results_["holdout_ranks"][k][test],
                                          rankdata(-stored[test], method="average"))


@pytest.mark.parametrize("kernel", ["linear", "gaussian"])
def test_leave_pair_out_equals_rankrls_and_refits(rng, kernel):
    n = 11
    X = rng.normal(size=(n, 3))
    y = np.round(X @ np.array([1.0, 0.5, -1.0]), 1)
    y[3] = y[4]  # a tie: that pair is not compared
    kern = Gaussian(gamma=0.4) if kernel == "gaussian" else "linear"
    search = RankRLSCV(alphas=ALPHAS, kernel=kern, store_cv_results=True).fit(X, y)
    model = RankRLS(kernel=kern).fit(X, y)
    higher, lower = search.holdout_pairs_
    assert search.cv_scheme_ == "leave-pair-out" and search.n_splits_ == higher.size == n * (n - 1) // 2 - 1
    assert np.all(y[higher] > y[lower])
    np.testing.assert_allclose(search.cv_results_["mean_test_score"], model.cv_path(ALPHAS, cv="lpo"), rtol=1e-12)
    for k, alpha in enumerate(ALPHAS):
        P = search.cv_results_["holdout_predictions"][k]
        np.testing.assert_allclose(P, model.leave_pair_out((higher, lower), alpha), rtol=1e-10, atol=1e-12)
        ranks = search.cv_results_["holdout_ranks"][k]
        np.testing.assert_array_equal(ranks, np.array([rankdata(-p, method="average") for p in P]))
        for p in range(0, higher.size, 9):  # brute force on every ninth pair
            keep = np.setdiff1d(np.arange(n), [higher[p], lower[p]])
            f = RankRLS(alpha=alpha, kernel=kern).fit(X[keep], y[keep]).predict(X[[higher[p], lower[p]]])
            np.testing.assert_allclose(P[p, 0] - P[p, 1], f[0] - f[1], rtol=1e-7, atol=1e-9)
            assert search.cv_results_["split_test_scores"][k, p] == (1.0 if f[0] > f[1] else 0.0)


def test_kfold_global_and_grouped_by_query_vs_refits(data):
    X, y, qids = data
    folds = KFold(4, shuffle=True, random_state=1)
    search = RankRLSCV(alphas=ALPHAS, cv=folds).fit(X, y)
    grouped = RankRLSCV(alphas=ALPHAS, cv=3, store_cv_results=True).fit(X, y, qids)
    assert grouped.cv_scheme_ == "GroupKFold(3)" and grouped.n_splits_ == 3
    group_folds = [test for _, test in GroupKFold(3).split(X, y, qids)]
    for k, alpha in enumerate(ALPHAS):
        for s, (train, test) in enumerate(folds.split(X)):
            f = RankRLS(alpha=alpha).fit(X[train], y[train]).predict(X[test])
            assert search.cv_results_["split_test_scores"][k, s] == pytest.approx(concordance_index(y[test], f),
                                                                                  abs=1e-12)
        for s, test in enumerate(group_folds):
            train = np.setdiff1d(np.arange(y.size), test)
            f = RankRLS(alpha=alpha).fit(X[train], y[train], qids[train]).predict(X[test])
            assert grouped.cv_results_["split_test_scores"][k, s] == pytest.approx(
                1.0 - pairwise_rank_loss(y[test], f, qids[test]), abs=1e-12)
            np.testing.assert_allclose(grouped.cv_results_["holdout_predictions"][k][test],
                                       _centered(f, qids[test]), rtol=1e-7, atol=1e-9)
    cv_path = RankRLS().fit(X, y).cv_path(ALPHAS, cv=[test for _, test in folds.split(X)])
    np.testing.assert_allclose(search.cv_results_["mean_test_score"], cv_path, rtol=1e-12)


def test_param_grid_and_refit(data):
    X, y, qids = data
    search = RankRLSCV(alphas=ALPHAS, kernel="gaussian", param_grid={"kernel__gamma": [0.05, 1.0]}).fit(X, y, qids)
    assert len(search.cv_results_["params"]) == 6
    assert list(search.cv_results_["param_kernel__gamma"]) == [0.05] * 3 + [1.0] * 3
    for gamma, part in ((0.05, slice(0, 3)), (1.0, slice(3, 6))):
        single = RankRLSCV(alphas=ALPHAS, kernel=Gaussian(gamma=gamma)).fit(X, y, qids)
        np.testing.assert_allclose(search.cv_results_["mean_test_score"][part], single.cv_results_["mean_test_score"],
                                   rtol=1e-12)
    best = search.best_params_
    assert search.best_score_ == search.cv_results_["mean_test_score"].max()
    assert search.alpha_ == best["alpha"] == search.best_estimator_.alpha == search.best_estimator_.alpha_
    ref = RankRLS(alpha=best["alpha"], kernel=Gaussian(gamma=best["kernel__gamma"])).fit(X, y, qids)
    T = np.random.default_rng(3).normal(size=(5, 3))
    np.testing.assert_allclose(search.predict(T), ref.predict(T), rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(search.decision_function(T), ref.decision_function(T), rtol=1e-8, atol=1e-10)
    assert "holdout_predictions" not in search.cv_results_ and search.holdout_pairs_ is None


def test_global_refit_through_the_deflated_decomposition(rng):
    X = rng.normal(size=(15, 20))  # wider than tall: the linear kernel goes through the dual
    y = rng.normal(size=15)
    search = RankRLSCV(alphas=ALPHAS).fit(X, y)
    ref = RankRLS(alpha=search.alpha_).fit(X, y)
    np.testing.assert_allclose(search.best_estimator_.dual_coef_, ref.dual_coef_, rtol=1e-8, atol=1e-10)


def test_callable_scoring_and_skipped_splits(data):
    X, y, qids = data
    y = y.copy()
    y[qids == 9] = 1.0  # a query without two different scores: no concordance to count
    search = RankRLSCV(alphas=ALPHAS).fit(X, y, qids)
    assert search.n_splits_ == 6
    model = RankRLS().fit(X, y, qids)
    np.testing.assert_allclose(search.cv_results_["mean_test_score"], model.cv_path(ALPHAS, cv="lqo"), rtol=1e-12)
    calls = []

    def top_is_best(y_true, y_pred):
        calls.append(y_true.size)
        return float(np.argmax(y_pred) == np.argmax(y_true))

    custom = RankRLSCV(alphas=ALPHAS, scoring=top_is_best).fit(X, y, qids)
    assert custom.n_splits_ == 7 and calls == [4] * 21
    lqo = model.leave_query_out(ALPHAS[0])
    first = np.flatnonzero(qids == 1)  # the first split is the query with the smallest id
    assert custom.cv_results_["split_test_scores"][0, 0] == float(np.argmax(lqo[first]) == np.argmax(y[first]))


@pytest.mark.filterwarnings("ignore:The groups parameter is ignored")
def test_bad_input(data):
    X, y, qids = data
    with pytest.raises(ValueError, match="part of a query"):
        RankRLSCV(alphas=ALPHAS, cv=KFold(3)).fit(X, y, qids)
    with pytest.raises(ValueError, match="two different scores"):
        RankRLSCV(alphas=ALPHAS).fit(X, np.ones(y.size))
    with pytest.raises(ValueError, match="'scoring'"):
        RankRLSCV(scoring="mse").fit(X, y)
    with pytest.raises(ValueError, match="'alphas'"):
        RankRLSCV(alphas=[0.0]).fit(X, y)
    with pytest.raises(ValueError, match="param_grid"):
        RankRLSCV(param_grid={"gamma": [1.0]}).fit(X, y)
    with pytest.raises(ValueError, match="no split"):
        RankRLSCV(alphas=ALPHAS).fit(X, np.repeat(np.arange(7.0), 4), qids)

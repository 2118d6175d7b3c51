"""KronRLSCV, ConditionalRankRLSCV and TwoStepRLSCV: the same scores as the estimators' cv_path, the same hold-out
predictions as explicit dense refits on small data, and a best estimator equal to a fresh fit."""

import numpy as np
import pytest

import iokr
from iokr.estimators import ConditionalRankRLS, KronRLS, TwoStepRLS
from iokr.kernels import Gaussian
from iokr.metrics import concordance_index, pairwise_rank_loss
from iokr.model_selection import ConditionalRankRLSCV, KronRLSCV, TwoStepRLSCV

ALPHAS = [0.03, 0.4, 5.0]


def _psd(rng, n, rank=None):
    F = rng.normal(size=(n, rank or n + 2))
    return F @ F.T / F.shape[1]


def _held_out(setting, rows, cols, i, j):
    return {"A": (rows == i) & (cols == j), "B": rows == i, "C": cols == j, "D": (rows == i) | (cols == j)}[setting]


def _brute_holdout(K1, K2, Y, alpha, setting, ranking):
    """Leave-one-group-out predictions by a dense solve of ``(L Kq + alpha I) a = L y`` on the training pairs of
    every pair (``L`` the per-row centering for ranking); ranking rows with labels get their mean residual."""
    rows, cols = (a.ravel() for a in np.indices(Y.shape))
    y = Y.ravel()
    out = np.empty(y.size)
    for e, (i, j) in enumerate(zip(rows, cols, strict=True)):
        train = ~_held_out(setting, rows, cols, i, j)
        r, c, v = rows[train], cols[train], y[train]
        Kq = K1[np.ix_(r, r)] * K2[np.ix_(c, c)]
        L = np.eye(r.size)
        if ranking:
            for g in np.unique(r):
                idx = np.flatnonzero(r == g)
                L[np.ix_(idx, idx)] -= 1.0 / idx.size
        a = np.linalg.solve(L @ Kq + alpha * np.eye(r.size), L @ v)
        out[e] = (K1[i, r] * K2[j, c]) @ a
        if ranking and (r == i).any():
            out[e] += (v - Kq @ a)[r == i].mean()
    return out.reshape(Y.shape)


@pytest.fixture
def data(rng):
    return _psd(rng, 5), _psd(rng, 4, rank=3), rng.normal(size=(5, 4))


@pytest.mark.parametrize("setting", ["A", "B", "C", "D"])
def test_kronrlscv_matches_cv_path_and_dense_refits(data, setting):
    K1, K2, Y = data
    search = KronRLSCV(alphas=ALPHAS, setting=setting, store_cv_results=True).fit(K1, K2, Y)
    path = KronRLS(alpha=1.0).fit(K1, K2, Y).cv_path(ALPHAS, setting)
    np.testing.assert_allclose(search.cv_results_["mean_test_score"], path, rtol=1e-12)
    brute = [_brute_holdout(K1, K2, Y, a, setting, ranking=False) for a in ALPHAS]
    for got, expected in zip(search.cv_results_["holdout_predictions"], brute, strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-7, atol=1e-9 * np.abs(expected).max())
    scores = [concordance_index(Y.ravel(), P.ravel()) for P in brute]
    assert search.best_index_ == int(np.argmax(scores)) and search.alpha_ == ALPHAS[search.best_index_]
    assert search.best_score_ == pytest.approx(max(scores), rel=1e-9)
    refit = KronRLS(alpha=search.alpha_).fit(K1, K2, Y)
    np.testing.assert_allclose(search.best_estimator_.dual_coef_, refit.dual_coef_, rtol=1e-10, atol=1e-12)
    assert search.best_estimator_.alpha == search.alpha_
    np.testing.assert_allclose(search.predict(K1[:2], K2), refit.predict(K1[:2], K2), rtol=1e-10, atol=1e-12)
    assert search.n_splits_ == {"A": 20, "B": 5, "C": 4, "D": 20}[setting]
    assert search.cv_results_["split_test_scores"].shape == (3, 1)


@pytest.mark.parametrize("setting", ["A", "C", "D"])
def test_conditional_rank_cv_matches_cv_path_and_dense_refits(data, setting):
    K1, K2, Y = data
    search = ConditionalRankRLSCV(alphas=ALPHAS, setting=setting, store_cv_results=True).fit(K1, K2, Y)
    path = ConditionalRankRLS(alpha=1.0).fit(K1, K2, Y).cv_path(ALPHAS, setting)
    np.testing.assert_allclose(search.cv_results_["mean_test_score"], path, rtol=1e-12)
    rows = np.repeat(np.arange(5), 4)
    brute = [_brute_holdout(K1, K2, Y, a, setting, ranking=True) for a in ALPHAS]
    for got, expected in zip(search.cv_results_["holdout_predictions"], brute, strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-7, atol=1e-9 * np.abs(expected).max())
    # The default score is one minus the per-row pairwise rank loss of the pooled hold-out predictions.
    np.testing.assert_allclose(search.cv_results_["mean_test_score"],
                               [1.0 - pairwise_rank_loss(Y.ravel(), P.ravel(), rows) for P in brute], rtol=1e-9)
    refit = ConditionalRankRLS(alpha=search.alpha_).fit(K1, K2, Y)
    np.testing.assert_allclose(search.best_estimator_.dual_coef_, refit.dual_coef_, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("cls, model_cls", [(KronRLSCV, KronRLS), (ConditionalRankRLSCV, ConditionalRankRLS)])
def test_incomplete_labels_and_folds_match_cv_path(rng, cls, model_cls):
    K1, K2 = _psd(rng, 6), _psd(rng, 5)
    rows, cols, values = rng.integers(0, 6, size=18), rng.integers(0, 5, size=18), rng.normal(size=18)
    Y = (rows, cols, values)
    search = cls(alphas=ALPHAS, setting="B", n_folds=2, random_state=3, tol=1e-13, scoring="mse",
                 store_cv_results=True).fit(K1, K2, Y)
    model = model_cls(alpha=1.0, tol=1e-13).fit(K1, K2, Y)
    mse = model.cv_path(ALPHAS, "B", scoring=lambda y, p: -np.mean((y - p) ** 2), n_folds=2, random_state=3)
    np.testing.assert_allclose(search.cv_results_["mean_test_score"], mse, rtol=1e-9)
    assert search.cv_results_["holdout_predictions"][0].shape == (18,)
    assert search.n_splits_ == 2 and search.cv_scheme_ == "setting B: 2-fold over each row"
    refit = model_cls(alpha=search.alpha_, tol=1e-13).fit(K1, K2, Y)
    np.testing.assert_allclose(search.best_estimator_.dual_coef_, refit.dual_coef_, rtol=1e-8, atol=1e-10)


def test_param_grid_equals_separate_precomputed_searches(rng):
    F1, F2, Y = rng.normal(size=(6, 2)), rng.normal(size=(4, 3)), rng.normal(size=(6, 4))
    gammas = [0.2, 1.5]
    search = KronRLSCV(alphas=ALPHAS, setting="C", param_grid={"kernel1__gamma": gammas}, kernel1=Gaussian(),
                       kernel2=Gaussian(gamma=0.5), scoring="mse").fit(F1, F2, Y)
    K2 = Gaussian(gamma=0.5)(F2)
    expected = np.concatenate([KronRLSCV(alphas=ALPHAS, setting="C", scoring="mse").fit(
        Gaussian(gamma=g)(F1), K2, Y).cv_results_["mean_test_score"] for g in gammas])
    np.testing.assert_allclose(search.cv_results_["mean_test_score"], expected, rtol=1e-10)
    assert list(search.cv_results_["param_kernel1__gamma"]) == [g for g in gammas for _ in ALPHAS]
    best_gamma = search.best_params_["kernel1__gamma"]
    refit = KronRLS(alpha=search.alpha_, kernel1=Gaussian(gamma=best_gamma), kernel2=Gaussian(gamma=0.5)).fit(F1, F2, Y)
    T1, T2 = rng.normal(size=(3, 2)), rng.normal(size=(2, 3))
    np.testing.assert_allclose(search.predict(T1, T2), refit.predict(T1, T2), rtol=1e-10, atol=1e-12)


def test_one_domain_search_matches_cv_path(rng):
    K, Y = _psd(rng, 5), rng.normal(size=(5, 5))
    search = KronRLSCV(alphas=ALPHAS, setting="A", symmetry="symmetric").fit(K, None, Y)
    path = KronRLS(symmetry="symmetric").fit(K, None, Y).cv_path(ALPHAS, "A")
    np.testing.assert_allclose(search.cv_results_["mean_test_score"], path, rtol=1e-12)
    assert search.n_splits_ == 15  # unordered edges {i, j}, self-pairs included
    np.testing.assert_allclose(search.best_estimator_.dual_coef_,
                               KronRLS(alpha=search.alpha_, symmetry="symmetric").fit(K, None, Y).dual_coef_,
                               rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("setting", ["A", "B", "C", "D"])
def test_two_step_cv_matches_holdout_and_dense_refits(data, setting):
    K1, K2, Y = data
    alphas2 = [0.1, 2.0]
    search = TwoStepRLSCV(alphas=ALPHAS, alphas2=alphas2, setting=setting, scoring="mse",
                          store_cv_results=True).fit(K1, K2, Y)
    assert [(p["alpha"], p["alpha2"]) for p in search.cv_results_["params"]] == [(a, b) for a in ALPHAS for b in alphas2]
    model = TwoStepRLS().fit(K1, K2, Y)
    for p, P, score in zip(search.cv_results_["params"], search.cv_results_["holdout_predictions"],
                           search.cv_results_["mean_test_score"], strict=True):
        np.testing.assert_allclose(P, model.holdout_predictions(setting, p["alpha"], p["alpha2"]), rtol=1e-12)
        assert score == pytest.approx(-np.mean((Y - P) ** 2), rel=1e-12)
        if setting == "D":  # explicit refits without row i and column j
            for i, j in [(0, 0), (3, 2)]:
                R, C = np.delete(np.arange(5), i), np.delete(np.arange(4), j)
                m = TwoStepRLS(alpha1=p["alpha"], alpha2=p["alpha2"]).fit(K1[np.ix_(R, R)], K2[np.ix_(C, C)],
                                                                          Y[np.ix_(R, C)])
                assert P[i, j] == pytest.approx(m.predict(K1[np.ix_([i], R)], K2[np.ix_([j], C)])[0, 0], rel=1e-8)
    refit = TwoStepRLS(alpha1=search.alpha_, alpha2=search.alpha2_).fit(K1, K2, Y)
    np.testing.assert_allclose(search.best_estimator_.dual_coef_, refit.dual_coef_, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(search.predict(K1, K2), refit.predict(K1, K2), rtol=1e-10, atol=1e-12)


def test_argument_errors(data):
    K1, K2, Y = data
    with pytest.raises(ValueError, match="'setting' must be one of"):
        KronRLSCV(alphas=ALPHAS, setting="E").fit(K1, K2, Y)
    with pytest.raises(ValueError, match="'n_folds'"):
        KronRLSCV(alphas=ALPHAS, n_folds=1).fit(K1, K2, Y)
    with pytest.raises(ValueError, match="The 'scoring' parameter of ConditionalRankRLSCV"):
        ConditionalRankRLSCV(alphas=ALPHAS, scoring="auc").fit(K1, K2, Y)
    with pytest.raises(ValueError, match="The 'alphas' parameter of TwoStepRLSCV"):
        TwoStepRLSCV(alphas=[-1.0]).fit(K1, K2, Y)
    with pytest.raises(ValueError, match="The 'alphas2' parameter of TwoStepRLSCV"):
        TwoStepRLSCV(alphas2=[0.0]).fit(K1, K2, Y)


def test_exported_from_the_package():
    assert iokr.KronRLSCV is KronRLSCV and iokr.ConditionalRankRLSCV is ConditionalRankRLSCV
    assert iokr.TwoStepRLSCV is TwoStepRLSCV
    assert {"KronRLSCV", "ConditionalRankRLSCV", "TwoStepRLSCV"} <= set(iokr.__all__)

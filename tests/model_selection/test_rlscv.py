"""RLSCV: closed-form hold-out scores against explicit retraining on every split (and against RidgeCV)."""

import numpy as np
import pytest
from model_selection._tolerance_checks import assert_tolerance_route_within_bounds
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import Ridge, RidgeCV
from sklearn.model_selection import GroupKFold, KFold, RepeatedKFold, ShuffleSplit

from iokr.estimators.rls import RLS
from iokr.exceptions import NumericalStabilityWarning
from iokr.kernels import Gaussian, KernelTransform
from iokr.linalg import RegularizationPath, loo_squared_errors
from iokr.model_selection import IOKRCV, RLSCV

ALPHAS = [1e-2, 0.3, 3.0]


def make_data(rng, shape, n_targets, dtype):
    n, d = shape
    X = rng.normal(size=(n, d)).astype(dtype)
    y = rng.normal(size=(n,) if n_targets is None else (n, n_targets)).astype(dtype)
    return X, y


def retrained_scores(gram, y, holdouts, alpha):
    """Per-split negated MSE of RLS retrained on the complement (Gram given, transforms held fixed)."""
    scores = []
    for test in holdouts:
        train = np.setdiff1d(np.arange(gram.shape[0]), test)
        model = RLS(alpha=alpha, kernel="precomputed").fit(gram[np.ix_(train, train)], y[train])
        pred = model.predict(gram[np.ix_(test, train)])
        scores.append(-np.mean((np.asarray(y[test], dtype=np.float64) - pred) ** 2))
    return np.array(scores)


def cv_and_holdouts(kind, n, rng):
    if kind == "loo":
        return None, None, [np.array([i]) for i in range(n)]
    if kind == "kfold":
        return 4, None, [test for _, test in KFold(4).split(np.zeros((n, 1)))]
    groups = rng.integers(0, 6, size=n)
    return 3, groups, [test for _, test in GroupKFold(3).split(np.zeros((n, 1)), groups=groups)]


@pytest.mark.parametrize("path_method", ["eigen", "cholesky"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("shape", [(28, 4), (16, 40)], ids=["tall", "wide"])
@pytest.mark.parametrize("n_targets", [None, 3])
@pytest.mark.parametrize("kind", ["loo", "kfold", "grouped"])
def test_rlscv_scores_vs_retraining(rng, path_method, dtype, shape, n_targets, kind):
    X, y = make_data(rng, shape, n_targets, dtype)
    cv, groups, holdouts = cv_and_holdouts(kind, X.shape[0], rng)
    kernel = Gaussian(gamma=0.5 / X.shape[1])
    search = RLSCV(alphas=ALPHAS, kernel=kernel, cv=cv, groups=groups, path_method=path_method).fit(X, y)
    assert search.path_methods_ == [path_method]
    gram = np.asarray(kernel(X), dtype=np.float64)  # the (float32) Gram the estimator sees, solved in float64
    gram = (gram + gram.T) / 2
    # float32: the eigen route clips the float32 Gram's round-off negative eigenvalues (relative size 1e-7).
    rtol = 1e-8 if dtype == np.float64 else 1e-4
    for j, alpha in enumerate(ALPHAS):
        expected = retrained_scores(gram, y, holdouts, alpha)
        np.testing.assert_allclose(search.cv_results_["split_test_scores"][j], expected, rtol=rtol,
                                   atol=rtol * 1e-2 * np.abs(expected).max())
        np.testing.assert_allclose(search.cv_results_["mean_test_score"][j], expected.mean(), rtol=rtol)
    best = int(np.argmax(search.cv_results_["mean_test_score"]))
    assert search.alpha_ == ALPHAS[best] and search.best_index_ == best
    assert search.cv_results_["rank_test_score"][best] == 1


def refit_scores(X, y, holdouts, alpha, **params):
    """Per-split negated MSE of ``RLS(**params)`` refitted from raw inputs on each complement (transforms too)."""
    scores = []
    for test in holdouts:
        train = np.setdiff1d(np.arange(X.shape[0]), test)
        pred = RLS(alpha=alpha, **params).fit(X[train], y[train]).predict(X[test])
        scores.append(-np.mean((y[test] - pred) ** 2))
    return np.array(scores)


@pytest.mark.parametrize("path_method", ["eigen", "cholesky"])
@pytest.mark.parametrize("n_targets", [None, 2])
@pytest.mark.parametrize("kind", ["loo", "kfold", "grouped"])
def test_center_is_an_intercept_refitted_on_every_training_side(rng, path_method, n_targets, kind):
    """center=True: hold-out values equal RLS(center=True) retrained from raw inputs on every complement (the
    centering of inputs and targets and the intercept all refitted without the held-out examples)."""
    X, y = make_data(rng, (26, 3), n_targets, np.float64)
    y = 5.0 + 3.0 * y  # far from zero mean: a model without intercept (or a leaking one) is far off
    cv, groups, holdouts = cv_and_holdouts(kind, X.shape[0], rng)
    alphas = [1e-3, 0.3, 3.0]
    search = RLSCV(alphas=alphas, kernel=Gaussian(0.4), center=True, cv=cv, groups=groups,
                   path_method=path_method).fit(X, y)
    for j, alpha in enumerate(alphas):
        expected = refit_scores(X, y, holdouts, alpha, kernel=Gaussian(0.4), center=True)
        np.testing.assert_allclose(search.cv_results_["split_test_scores"][j], expected, rtol=1e-8, atol=1e-10)
    refit = RLS(alpha=search.alpha_, kernel=Gaussian(0.4), center=True).fit(X, y)
    np.testing.assert_allclose(search.predict(X[:5] + 0.1), refit.predict(X[:5] + 0.1), rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(search.best_estimator_.intercept_, refit.intercept_, rtol=1e-8, atol=1e-10)


def test_center_linear_rls_is_ridge_with_intercept(rng):
    X, y = make_data(rng, (30, 4), 2, np.float64)
    y = y + np.array([4.0, -7.0])
    ours = RLS(alpha=0.7, center=True).fit(X, y)
    ref = Ridge(alpha=0.7, fit_intercept=True).fit(X, y)
    T = rng.normal(size=(6, 4))
    np.testing.assert_allclose(ours.predict(T), ref.predict(T), rtol=1e-10, atol=1e-10)


def test_center_normalize_holds_the_normalization_fixed(rng):
    """center and normalize: retraining the intercept model with the whole-set normalization held fixed."""
    X, y = make_data(rng, (25, 3), None, np.float64)
    y = y + 2.0
    search = RLSCV(alphas=ALPHAS, kernel="gaussian", center=True, normalize=True, cv=5).fit(X, y)
    gram = KernelTransform(True, True).fit_transform(Gaussian()(X))
    holdouts = [test for _, test in KFold(5).split(X)]
    for j, alpha in enumerate(ALPHAS):
        scores = []
        for test in holdouts:
            train = np.setdiff1d(np.arange(25), test)
            model = RLS(alpha=alpha, kernel="precomputed", center=True).fit(gram[np.ix_(train, train)], y[train])
            scores.append(-np.mean((y[test] - model.predict(gram[np.ix_(test, train)])) ** 2))
        np.testing.assert_allclose(search.cv_results_["split_test_scores"][j], scores, rtol=1e-8)


def test_linear_loo_matches_ridgecv(rng):
    X, y = make_data(rng, (40, 6), None, np.float64)
    alphas = np.logspace(-3, 2, 12)
    ours = RLSCV(alphas=alphas, kernel="linear").fit(X, y)
    ref = RidgeCV(alphas=alphas, fit_intercept=False, store_cv_results=True).fit(X, y)
    assert ours.alpha_ == pytest.approx(ref.alpha_)
    np.testing.assert_allclose(-ours.cv_results_["mean_test_score"], ref.cv_results_.mean(axis=0), rtol=1e-8)
    np.testing.assert_allclose(ours.predict(X), ref.predict(X), rtol=1e-8, atol=1e-12)


def test_repeated_splits_and_callable_scoring(rng):
    X, y = make_data(rng, (20, 3), None, np.float64)
    splitter = RepeatedKFold(n_splits=4, n_repeats=2, random_state=0)
    calls = []

    def neg_mae(y_true, y_pred):
        calls.append(y_true.shape)
        return -float(np.mean(np.abs(y_true - y_pred)))

    search = RLSCV(alphas=ALPHAS, kernel="gaussian", cv=splitter, scoring=neg_mae).fit(X, y)
    assert search.n_splits_ == 8 and len(calls) == 8 * len(ALPHAS)
    gram = Gaussian()(X)
    for j, alpha in enumerate(ALPHAS):
        for k, (train, test) in enumerate(splitter.split(X)):
            pred = RLS(alpha=alpha, kernel="precomputed").fit(gram[np.ix_(train, train)], y[train]).predict(
                gram[np.ix_(test, train)])
            assert search.cv_results_["split_test_scores"][j, k] == pytest.approx(-np.mean(np.abs(y[test] - pred)),
                                                                                  rel=1e-8)


def test_kernel_parameter_grid_and_best_estimator(rng):
    X, y = make_data(rng, (30, 3), None, np.float64)
    kernel = Gaussian(gamma=1.0)
    search = RLSCV(alphas=ALPHAS, kernel=kernel, param_grid={"kernel__gamma": [0.1, 1.0]}).fit(X, y)
    assert kernel.gamma == 1.0  # the caller's kernel is not mutated
    assert len(search.cv_results_["params"]) == 6
    for gamma in (0.1, 1.0):
        single = RLSCV(alphas=ALPHAS, kernel=Gaussian(gamma=gamma)).fit(X, y)
        mask = search.cv_results_["param_kernel__gamma"] == gamma
        np.testing.assert_allclose(search.cv_results_["mean_test_score"][mask], single.cv_results_["mean_test_score"],
                                   rtol=1e-12)
    best = RLS(alpha=search.alpha_, kernel=Gaussian(gamma=search.best_params_["kernel__gamma"])).fit(X, y)
    np.testing.assert_allclose(search.predict(X), best.predict(X), rtol=1e-10)


def test_groups_given_in_fit_or_constructor(rng):
    X, y = make_data(rng, (18, 3), None, np.float64)
    groups = np.repeat(np.arange(6), 3)
    a = RLSCV(alphas=ALPHAS, groups=groups).fit(X, y)
    b = RLSCV(alphas=ALPHAS).fit(X, y, groups=groups)
    assert a.cv_scheme_ == "leave-one-group-out" and a.n_splits_ == 6
    np.testing.assert_array_equal(a.cv_results_["mean_test_score"], b.cv_results_["mean_test_score"])
    with pytest.raises(ValueError, match="both to the constructor and to fit"):
        RLSCV(alphas=ALPHAS, groups=groups).fit(X, y, groups=groups)


@pytest.mark.parametrize("params, fit_kwargs, match", [
    ({"alphas": []}, {}, "empty grid"),
    ({"alphas": [1.0, 0.0]}, {}, "finite floats > 0"),
    ({"alphas": [-1.0]}, {}, "finite floats > 0"),
    ({"groups": np.zeros(5)}, {}, "one label per training example"),
    ({"groups": np.zeros(12)}, {}, "at least 2 distinct groups"),
    ({"cv": 1}, {}, "int >= 2"),
    ({"cv": 20}, {}, "at least 20 examples"),
    ({"cv": ShuffleSplit(2, train_size=0.5, test_size=0.2, random_state=0)}, {}, "complement"),
    ({"cv": [(np.arange(12), np.array([], dtype=int))]}, {}, "empty test side"),
    ({"cv": [(np.array([], dtype=int), np.arange(12))]}, {}, "training side empty"),
    ({"cv": "five"}, {}, "'cv' parameter"),
    ({"scoring": "top1"}, {}, "'scoring' parameter"),
    ({"param_grid": {"gamma": [1.0]}}, {}, "must be one of"),
    ({"path_method": "qr"}, {}, "'path_method'"),
])
def test_bad_input_is_rejected(rng, params, fit_kwargs, match):
    X, y = make_data(rng, (12, 2), None, np.float64)
    with pytest.raises(ValueError, match=match):
        RLSCV(**params).fit(X, y, **fit_kwargs)


def test_ill_conditioned_tiny_alphas_stay_finite(rng):
    X = rng.normal(size=(30, 2))
    y = X[:, 0] + 0.1 * rng.normal(size=30)
    with pytest.warns(NumericalStabilityWarning):
        search = RLSCV(alphas=[1e-14, 1e-3, 1.0], kernel="linear", path_method="cholesky").fit(X * 1e3, y)
    assert np.isfinite(search.cv_results_["mean_test_score"]).all()
    assert search.path_methods_ == ["eigen"]


def test_estimator_contract_basics(rng):
    for est in (RLSCV(), RLSCV(alphas=np.array([0.1, 1.0])), IOKRCV(), IOKRCV(alphas=np.logspace(-2, 1, 4))):
        assert type(est).__name__ in repr(est)
        assert clone(est).get_params()["alphas"] is not None
    X, y = make_data(rng, (10, 2), None, np.float64)
    alphas = np.array([0.1, 1.0])
    RLSCV(alphas=alphas).fit(X, y)
    np.testing.assert_array_equal(alphas, [0.1, 1.0])  # parameters are not mutated by fit

    with pytest.raises(NotFittedError):
        RLSCV().predict(X)


def test_skeleton_route_is_recorded_and_matches_per_alpha_route(rng):
    """The grid route (skeleton alphas) and the per-alpha Cholesky route give the same LOO scores."""
    X, y = rng.normal(size=(80, 4)), rng.normal(size=(80, 2))
    alphas = np.logspace(-4, 2, 31)
    grid = RLSCV(alphas=alphas, kernel=Gaussian(gamma=0.3), path_method="eigen", tol=0.0).fit(X, y)
    per_alpha = RLSCV(alphas=alphas, kernel=Gaussian(gamma=0.3), path_method="cholesky").fit(X, y)
    assert grid.skeleton_alphas_[0] is not None and per_alpha.skeleton_alphas_ == [None]
    assert set(grid.skeleton_alphas_[0]) <= set(alphas)
    np.testing.assert_allclose(grid.cv_results_["mean_test_score"], per_alpha.cv_results_["mean_test_score"],
                               rtol=1e-8)
    np.testing.assert_allclose(grid.best_estimator_.dual_coef_, per_alpha.best_estimator_.dual_coef_, rtol=1e-7,
                               atol=1e-10)


@pytest.mark.parametrize("center", [False, True])
@pytest.mark.parametrize("n_targets", [None, 2])
@pytest.mark.parametrize("kind", ["loo", "kfold", "repeated"])
def test_store_cv_results_holds_every_holdout_prediction(rng, center, n_targets, kind):
    X, y = make_data(rng, (18, 3), n_targets, np.float64)
    cv = {"loo": None, "kfold": KFold(3, shuffle=True, random_state=0),
          "repeated": RepeatedKFold(n_splits=3, n_repeats=2, random_state=0)}[kind]
    kernel = Gaussian(gamma=0.4)
    search = RLSCV(alphas=ALPHAS, kernel=kernel, center=center, cv=cv, store_cv_results=True).fit(X, y)
    plain = RLSCV(alphas=ALPHAS, kernel=kernel, center=center, cv=cv).fit(X, y)
    np.testing.assert_allclose(search.cv_results_["mean_test_score"], plain.cv_results_["mean_test_score"],
                               rtol=1e-10)
    assert "holdout_predictions" not in plain.cv_results_
    tests = [np.array([i]) for i in range(18)] if cv is None else [test for _, test in cv.split(X)]
    stored = search.cv_results_["holdout_predictions"]
    assert len(stored) == len(ALPHAS)
    for j, alpha in enumerate(ALPHAS):
        # every example once: one row per example; repeated splits: stacked in split order
        expected_shape = ((18 if kind != "repeated" else 36),) + y.shape[1:]
        assert stored[j].shape == expected_shape
        offset = 0
        for test in tests:
            train = np.setdiff1d(np.arange(18), test)
            pred = RLS(alpha=alpha, kernel=kernel, center=center).fit(X[train], y[train]).predict(X[test])
            got = stored[j][test] if kind != "repeated" else stored[j][offset:offset + test.size]
            np.testing.assert_allclose(got, pred, rtol=1e-8, atol=1e-10)
            offset += test.size
        mse = np.mean((stored[j] - y[np.concatenate(tests)] if kind == "repeated" else stored[j] - y) ** 2)
        if kind == "loo":
            assert -search.cv_results_["mean_test_score"][j] == pytest.approx(mse, rel=1e-10)


@pytest.mark.parametrize("center", [False, True])
def test_tolerance_route_selects_the_exact_alpha_within_its_bounds(rng, center):
    X = rng.normal(size=(150, 6))
    y = np.sin(X[:, 0]) + 0.3 * rng.normal(size=150)
    alphas = np.logspace(-6, 2, 31)
    exact = RLSCV(alphas=alphas, kernel=Gaussian(gamma=0.2), center=center, tol=0.0).fit(X, y)
    loose = RLSCV(alphas=alphas, kernel=Gaussian(gamma=0.2), center=center, tol=1e-2).fit(X, y)
    assert_tolerance_route_within_bounds(loose, exact, 1e-2)
    results = loose.cv_results_
    # Explicit retraining without example 0 at the selected alpha, within the certified bound.
    model = RLS(alpha=loose.alpha_, kernel=Gaussian(gamma=0.2), center=center).fit(X[1:], y[1:])
    retrained = (y[0] - model.predict(X[:1])[0]) ** 2
    row = loose.best_index_
    assert abs(-results["split_test_scores"][row, 0] - retrained) <= (results["split_test_score_bound"][row, 0]
                                                                       + 1e-8 * retrained)


def test_zero_tolerance_keeps_the_exact_route(rng):
    X, y = rng.normal(size=(90, 4)), rng.normal(size=90)
    alphas = np.logspace(-6, 2, 31)
    search = RLSCV(alphas=alphas, kernel=Gaussian(gamma=0.3), tol=0.0).fit(X, y)
    path = RegularizationPath(Gaussian(gamma=0.3)(X, X), alphas, method="eigen")
    errors, _ = loo_squared_errors(path.eigen, y, alphas)  # the exact route as it was: skeleton at 1e-12
    np.testing.assert_array_equal(search.cv_results_["split_test_scores"], -errors)
    assert np.all(search.cv_results_["mean_test_score_bound"] <= 1e-9 * np.abs(search.cv_results_["mean_test_score"]))


@pytest.mark.parametrize("tol", [-0.1, 1.0, "1e-3", None])
def test_tolerance_is_validated(rng, tol):
    with pytest.raises(ValueError, match=r"The 'tol' parameter of RLSCV must be a float in the range \[0, 1\)"):
        RLSCV(tol=tol).fit(rng.normal(size=(10, 2)), rng.normal(size=10))

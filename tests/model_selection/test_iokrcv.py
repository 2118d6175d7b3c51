"""IOKRCV: closed-form hold-out errors and candidate ranks against explicit retraining with the transforms held fixed."""

import numpy as np
import pytest
from model_selection._tolerance_checks import assert_tolerance_route_within_bounds
from sklearn.model_selection import GroupKFold, KFold

from iokr import IOKR
from iokr.decoding import CandidateSets
from iokr.estimators._sides import InputSide, OutputSide
from iokr.kernels import Gaussian, GaussianTanimoto
from iokr.metrics import true_candidate_rank
from iokr.model_selection import IOKRCV, HoldoutResult

ALPHAS = [1e-2, 0.3, 3.0]


def make_data(rng, shape, p, dtype, binary=False):
    n, d = shape
    X = rng.normal(size=(n, d)).astype(dtype)
    Y = (rng.random(size=(n, p)) < 0.4).astype(dtype) if binary else rng.normal(size=(n, p)).astype(dtype)
    return X, Y


def splits(kind, n, rng):
    if kind == "loo":
        return None, None, [np.array([i]) for i in range(n)]
    if kind == "kfold":
        return 4, None, [t for _, t in KFold(4).split(np.zeros((n, 1)))]
    groups = rng.integers(0, 6, size=n)
    return 3, groups, [t for _, t in GroupKFold(3).split(np.zeros((n, 1)), groups=groups)]


def fixed_transform_sides(X, Y, input_kernel, output_kernel):
    """Transformed Grams / features fitted once on all training data (the documented convention)."""
    inp = InputSide(input_kernel, True, True)
    gram = inp.fit_gram(X)
    out = OutputSide(output_kernel, True, True).fit(Y)
    return gram, out


def retrained_coefficients(gram, test, alpha, intercept=True):
    """Combination weights of the training outputs for the model retrained on the complement: (|H|, n).

    With ``intercept`` (both sides centered, the default) the retrained model has an unpenalized intercept, solved
    through its KKT system ``[[K + alpha I, 1], [1^T, 0]]``: what refitting the centering on the training side gives.
    """
    n = gram.shape[0]
    train = np.setdiff1d(np.arange(n), test)
    m = train.size
    W = np.zeros((test.size, n))
    if not intercept:
        W[:, train] = np.linalg.solve(gram[np.ix_(train, train)] + alpha * np.eye(m), gram[np.ix_(train, test)]).T
        return W
    S = np.zeros((m + 1, m + 1))
    S[:m, :m] = gram[np.ix_(train, train)] + alpha * np.eye(m)
    S[:m, m] = S[m, :m] = 1.0
    maps = np.linalg.solve(S, np.vstack([np.eye(m), np.zeros((1, m))]))  # [c; b] as linear maps of Y_train
    W[:, train] = gram[np.ix_(test, train)] @ maps[:m] + maps[m]
    return W


def retrained_sq_errors(gram, out, test, alpha):
    W = retrained_coefficients(gram, test, alpha)
    if out.explicit:
        F = out.train_features
        return ((W @ F - F[test]) ** 2).sum(axis=1)
    Ky = out.train_gram
    E = np.zeros_like(W)
    E[np.arange(test.size), test] = 1.0
    D = W - E
    return np.einsum("ij,ij->i", D @ Ky, D)


@pytest.mark.parametrize("path_method", ["eigen", "cholesky"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("shape", [(26, 4), (16, 40)], ids=["tall", "wide"])
@pytest.mark.parametrize("p", [1, 5, 60], ids=["p1", "p5", "p_wider_than_n"])
@pytest.mark.parametrize("kind", ["loo", "kfold", "grouped"])
def test_mse_vs_retraining_explicit_outputs(rng, path_method, dtype, shape, p, kind):
    X, Y = make_data(rng, shape, p, dtype)
    cv, groups, holdouts = splits(kind, X.shape[0], rng)
    kernel = Gaussian(gamma=0.5 / X.shape[1])
    search = IOKRCV(alphas=ALPHAS, input_kernel=kernel, output_kernel="linear", cv=cv, groups=groups,
                    path_method=path_method).fit(X, Y)
    gram, out = fixed_transform_sides(X, Y, kernel, "linear")
    rtol = 1e-8 if dtype == np.float64 else 1e-4
    for j, alpha in enumerate(ALPHAS):
        expected = np.array([-retrained_sq_errors(gram, out, t, alpha).mean() for t in holdouts])
        np.testing.assert_allclose(search.cv_results_["split_test_scores"][j], expected, rtol=rtol,
                                   atol=rtol * 1e-2 * np.abs(expected).max())


@pytest.mark.parametrize("path_method", ["eigen", "cholesky"])
@pytest.mark.parametrize("kind", ["loo", "kfold", "grouped"])
def test_mse_vs_retraining_kernel_outputs(rng, path_method, kind):
    X, Y = make_data(rng, (22, 3), 12, np.float64, binary=True)
    cv, groups, holdouts = splits(kind, 22, rng)
    out_kernel = GaussianTanimoto(gamma=0.7)
    search = IOKRCV(alphas=ALPHAS, input_kernel="gaussian", output_kernel=out_kernel, cv=cv, groups=groups,
                    path_method=path_method).fit(X, Y)
    gram, out = fixed_transform_sides(X, Y, Gaussian(), out_kernel)
    assert not out.explicit
    for j, alpha in enumerate(ALPHAS):
        expected = np.array([-retrained_sq_errors(gram, out, t, alpha).mean() for t in holdouts])
        np.testing.assert_allclose(search.cv_results_["split_test_scores"][j], expected, rtol=1e-8)


def candidate_lists(rng, Y, n_extra=6):
    """Per example: its own output plus random other training outputs and random decoys, shuffled."""
    n = Y.shape[0]
    sets = []
    for i in range(n):
        others = Y[rng.choice(np.delete(np.arange(n), i), size=n_extra, replace=False)]
        decoys = (rng.random(size=(3, Y.shape[1])) < 0.4).astype(Y.dtype)
        block = np.vstack([Y[i:i + 1], others, decoys])
        sets.append(block[rng.permutation(block.shape[0])])
    return sets


def reference_ranks(gram, out, sets, Y, holdouts, alpha, decoding, return_best=False):
    ranks, best = [], []
    for t in holdouts:
        W = retrained_coefficients(gram, t, alpha)
        H = W @ out.train_features if out.explicit else W
        Q = out.query_representation(H, decoding)
        for row, i in enumerate(t):
            R, offset = out.candidate_block(sets[i], decoding)
            scores = R @ Q[row] + (0.0 if offset is None else offset)
            truth = int(np.flatnonzero((sets[i] == Y[i]).all(axis=1))[0])
            ranks.append(true_candidate_rank(scores, truth, ties="average"))
            best.append(int(np.argmax(scores)))
    return (np.array(ranks), np.array(best)) if return_best else np.array(ranks)


@pytest.mark.parametrize("output_kernel, p", [("linear", 10), ("linear", 40), (GaussianTanimoto(gamma=0.5), 10)],
                         ids=["explicit", "explicit_wider_than_n", "kernel"])
@pytest.mark.parametrize("decoding", ["distance", "inner", "cosine"])
@pytest.mark.parametrize("kind", ["loo", "kfold"])
def test_ranking_scores_vs_retraining(rng, output_kernel, p, decoding, kind):
    X, Y = make_data(rng, (24, 5), p, np.float64, binary=True)
    cv, groups, holdouts = splits(kind, 24, rng)
    sets = candidate_lists(rng, Y)
    seen = []

    def capture(result):
        seen.append(result)
        return 0.0

    gram, out = fixed_transform_sides(X, Y, "gaussian", output_kernel)
    for scoring in (("top1", "mrr") if kind == "loo" else ("top3", "mrr")):
        search = IOKRCV(alphas=ALPHAS, input_kernel="gaussian", output_kernel=output_kernel, decoding=decoding,
                        cv=cv, scoring=scoring).fit(X, Y, candidate_sets=sets)
        for j, alpha in enumerate(ALPHAS):
            ranks = reference_ranks(gram, out, sets, Y, holdouts, alpha, decoding)
            bounds = np.cumsum([0] + [t.size for t in holdouts])
            per_split = [ranks[bounds[k]:bounds[k + 1]] for k in range(len(holdouts))]
            if scoring == "mrr":
                expected = [np.mean(1.0 / r) for r in per_split]
            else:
                expected = [np.mean(r <= int(scoring[3:])) for r in per_split]
            np.testing.assert_allclose(search.cv_results_["split_test_scores"][j], expected, rtol=1e-10)
    pooled = CandidateSets.from_arrays(sets)
    IOKRCV(alphas=ALPHAS[:1], input_kernel="gaussian", output_kernel=output_kernel, decoding=decoding, cv=cv,
           scoring=capture).fit(X, Y, candidate_sets=pooled)
    assert all(isinstance(r, HoldoutResult) for r in seen) and len(seen) == len(holdouts)
    ranks, best = reference_ranks(gram, out, sets, Y, holdouts, ALPHAS[0], decoding, return_best=True)
    np.testing.assert_allclose(np.concatenate([r.ranks for r in seen]), ranks)
    if out.explicit:  # hold-out predictions as output features, also when handled in the dual form
        features = np.vstack([r.features for r in seen])
        expected = np.vstack([retrained_coefficients(gram, t, ALPHAS[0]) for t in holdouts]) @ out.train_features
        np.testing.assert_allclose(features, expected, rtol=1e-8, atol=1e-12)
    order = np.concatenate(holdouts)
    np.testing.assert_array_equal(np.concatenate([r.top_candidates for r in seen]),
                                  [pooled.indices[i][b] for i, b in zip(order, best, strict=True)])


def test_best_estimator_and_public_api(rng):
    X, Y = make_data(rng, (30, 4), 6, np.float64, binary=True)
    alphas = np.logspace(-3, 1, 9)
    cv = IOKRCV(alphas=alphas, input_kernel=Gaussian(0.3), output_kernel="linear", cv=None, groups=None,
                scoring="mse")
    cv.fit(X, Y, candidate_sets=None)
    assert cv.path_methods_ == ["eigen"] and cv.cv_scheme_ == "leave-one-out" and cv.n_splits_ == 30
    assert cv.alpha_ == alphas[int(np.argmax(cv.cv_results_["mean_test_score"]))]
    assert cv.best_score_ == pytest.approx(cv.cv_results_["mean_test_score"].max())
    ref = IOKR(alpha=cv.alpha_, input_kernel=Gaussian(0.3)).fit(X, Y)
    assert isinstance(cv.best_estimator_, IOKR) and cv.best_estimator_.alpha == cv.alpha_
    np.testing.assert_allclose(cv.decision_function(X[:5], Y), ref.decision_function(X[:5], Y), rtol=1e-10)
    sets = candidate_lists(rng, Y)
    np.testing.assert_array_equal(cv.predict(X[:4], sets[:4]), ref.predict(X[:4], sets[:4]))


@pytest.mark.parametrize("center_input, normalize_input, center_output, normalize_output",
                         [(True, True, True, True), (True, False, True, False), (False, True, False, True),
                          (True, True, False, True)])
def test_refit_from_the_path_equals_a_cholesky_refit(rng, monkeypatch, center_input, normalize_input,
                                                       center_output, normalize_output):
    # One input setting on the eigen grid route: the refit reuses the decomposition (IOKR.fit is never called) and
    # gives the plain model's dual coefficients, also when the path was deflated for the intercept.
    X, Y = make_data(rng, (40, 4), 7, np.float64, binary=True)
    flags = dict(center_input=center_input, normalize_input=normalize_input, center_output=center_output,
                 normalize_output=normalize_output)
    cv = IOKRCV(alphas=np.logspace(-3, 1, 9), input_kernel=Gaussian(0.3), cv=None, scoring="mse", **flags)
    calls = []
    monkeypatch.setattr(IOKR, "fit", lambda self, X, Y: calls.append(1) or self)
    cv.fit(X, Y)
    assert calls == []
    monkeypatch.undo()
    ref = IOKR(alpha=cv.alpha_, input_kernel=Gaussian(0.3), **flags).fit(X, Y)
    np.testing.assert_allclose(cv.best_estimator_.dual_coef_, ref.dual_coef_, rtol=1e-9,
                               atol=1e-11 * np.abs(ref.dual_coef_).max())
    assert cv.best_estimator_.jitter_ == 0.0 and cv.best_estimator_.factor_ is None
    assert cv.best_estimator_.n_output_features_ == ref.n_output_features_ == 7
    np.testing.assert_allclose(cv.decision_function(X[:5], Y), ref.decision_function(X[:5], Y), rtol=1e-9)


def test_output_kernel_grid_reuses_input_decomposition(rng):
    X, Y = make_data(rng, (20, 3), 8, np.float64, binary=True)
    in_kernel, out_kernel = Gaussian(1.0), GaussianTanimoto(1.0)
    grid = {"input_kernel__gamma": [0.2, 1.0], "output_kernel__gamma": [0.5, 2.0]}
    search = IOKRCV(alphas=ALPHAS, input_kernel=in_kernel, output_kernel=out_kernel, param_grid=grid,
                    path_method="eigen").fit(X, Y)
    assert in_kernel.gamma == 1.0 and out_kernel.gamma == 1.0
    assert len(search.path_methods_) == 2  # one decomposition per input setting, shared by output settings
    results = search.cv_results_
    for g_in in (0.2, 1.0):
        for g_out in (0.5, 2.0):
            single = IOKRCV(alphas=ALPHAS, input_kernel=Gaussian(g_in), output_kernel=GaussianTanimoto(g_out)).fit(X, Y)
            mask = (results["param_input_kernel__gamma"] == g_in) & (results["param_output_kernel__gamma"] == g_out)
            np.testing.assert_allclose(results["mean_test_score"][mask], single.cv_results_["mean_test_score"],
                                       rtol=1e-9)
    assert search.best_estimator_.input_kernel.gamma == search.best_params_["input_kernel__gamma"]


@pytest.mark.parametrize("working_memory", [None, 0.02], ids=["cached_pool", "streamed_pool"])
@pytest.mark.parametrize("scoring", ["top1", "mrr"])
def test_without_transforms_equals_refitting_iokr(rng, scoring, working_memory):
    """With no centering/normalization there is nothing to hold fixed: the closed form equals refitted IOKR models.

    (With transforms, refitting them on each training side changes scores slightly; the size of that difference on
    real data is measured by ``experiments/model_selection.py``.)
    """
    X, Y = make_data(rng, (30, 4), 10, np.float64, binary=True)
    sets = candidate_lists(rng, Y)
    flags = dict(center_input=False, normalize_input=False, center_output=False, normalize_output=False)
    search = IOKRCV(alphas=ALPHAS, input_kernel="gaussian", cv=5, scoring=scoring, working_memory=working_memory,
                    **flags).fit(X, Y, candidate_sets=sets)
    for j, alpha in enumerate(ALPHAS):
        expected = []
        for train, test in KFold(5).split(X):
            model = IOKR(alpha=alpha, input_kernel="gaussian", **flags).fit(X[train], Y[train])
            rankings = model.rank(X[test], [sets[i] for i in test])
            ranks = []
            for i, ranking in zip(test, rankings, strict=True):
                truth = int(np.flatnonzero((sets[i] == Y[i]).all(axis=1))[0])
                ranks.append(true_candidate_rank(ranking.scores[np.argsort(ranking.order)], truth))
            ranks = np.array(ranks)
            expected.append(np.mean(1.0 / ranks) if scoring == "mrr" else np.mean(ranks <= 1))
        np.testing.assert_allclose(search.cv_results_["split_test_scores"][j], expected, rtol=1e-10)


@pytest.mark.parametrize("output_kernel", ["linear", GaussianTanimoto(gamma=0.5)], ids=["explicit", "kernel"])
@pytest.mark.parametrize("cv", [None, 4], ids=["loo", "kfold"])
def test_centering_refitted_per_split_is_exact(rng, output_kernel, cv):
    """Both sides centered, no normalization: closed form == IOKR refitted (with its own centering) on each split."""
    X, Y = make_data(rng, (20, 3), 8, np.float64, binary=True)
    sets = candidate_lists(rng, Y)
    flags = dict(center_input=True, normalize_input=False, center_output=True, normalize_output=False)
    holdouts = [np.array([i]) for i in range(20)] if cv is None else [t for _, t in KFold(4).split(X)]
    for scoring in ("mse", "mrr"):
        search = IOKRCV(alphas=[1e-3, 0.5], input_kernel="gaussian", output_kernel=output_kernel, cv=cv,
                        scoring=scoring, **flags).fit(X, Y, candidate_sets=sets)
        for j, alpha in enumerate([1e-3, 0.5]):
            expected = []
            for test in holdouts:
                train = np.setdiff1d(np.arange(20), test)
                model = IOKR(alpha=alpha, input_kernel="gaussian", output_kernel=output_kernel, **flags)
                model.fit(X[train], Y[train])
                if scoring == "mse":
                    # ||h(x) - psi(y)||^2 = k(y, y) - (2 <h, psi(y)> - ||h||^2) from the "distance" scores (+ ||h||^2).
                    inner = IOKR(alpha=alpha, input_kernel="gaussian", output_kernel=output_kernel, decoding="inner",
                                 **flags).fit(X[train], Y[train])
                    errors = []
                    for i in test:
                        h_y = inner.decision_function(X[i:i + 1], Y[i:i + 1])[0, 0]
                        h_h = np.sum(inner._coefficients(inner.input_.test_block(X[i:i + 1], slice(None))) *
                                     (inner._coefficients(inner.input_.test_block(X[i:i + 1], slice(None))) @
                                      inner.output_.train_gram if not inner.output_.explicit else
                                      inner._coefficients(inner.input_.test_block(X[i:i + 1], slice(None)))))
                        k_yy = inner.output_.candidate_block(Y[i:i + 1], "distance")[1][0] * -1.0
                        errors.append(k_yy - 2 * h_y + h_h)
                    expected.append(-np.mean(errors))
                else:
                    ranks = []
                    for i, ranking in zip(test, model.rank(X[test], [sets[i] for i in test]), strict=True):
                        truth = int(np.flatnonzero((sets[i] == Y[i]).all(axis=1))[0])
                        ranks.append(true_candidate_rank(ranking.scores[np.argsort(ranking.order)], truth))
                    expected.append(np.mean(1.0 / np.array(ranks)))
            np.testing.assert_allclose(search.cv_results_["split_test_scores"][j], expected, rtol=1e-7)


def test_bad_input(rng):
    X, Y = make_data(rng, (12, 3), 4, np.float64, binary=True)
    with pytest.raises(ValueError, match="pass candidate_sets"):
        IOKRCV(alphas=ALPHAS, scoring="top1").fit(X, Y)
    sets = [np.zeros((2, 4)) + 5 for _ in range(12)]
    with pytest.raises(ValueError, match="does not contain training example 0"):
        IOKRCV(alphas=ALPHAS, scoring="mrr").fit(X, Y, candidate_sets=sets)
    with pytest.raises(ValueError, match="'scoring' parameter"):
        IOKRCV(alphas=ALPHAS, scoring="accuracy").fit(X, Y)
    with pytest.raises(ValueError, match="empty grid"):
        IOKRCV(alphas=[]).fit(X, Y)
    with pytest.raises(ValueError, match="one label per training example"):
        IOKRCV(alphas=ALPHAS, groups=[0, 1]).fit(X, Y)
    with pytest.raises(ValueError, match="'Y' has 11"):
        IOKRCV(alphas=ALPHAS).fit(X, Y[:11])
    with pytest.raises(ValueError, match="holds 3 sets"):
        IOKRCV(alphas=ALPHAS, scoring="top1").fit(X, Y, candidate_sets=[Y[:2]] * 3)


def test_tolerance_route_selects_the_exact_alpha_within_its_bounds(rng):
    X, Y = make_data(rng, (160, 8), 40, np.float64, binary=True)
    Y[:, :5] = (X[:, :5] > 0).astype(float)  # outputs that depend on the inputs
    alphas = np.logspace(-6, 2, 31)
    kwargs = {"alphas": alphas, "input_kernel": Gaussian(0.1)}
    exact = IOKRCV(tol=0.0, **kwargs).fit(X, Y)
    loose = IOKRCV(tol=1e-2, **kwargs).fit(X, Y)
    assert_tolerance_route_within_bounds(loose, exact, 1e-2)
    reference = exact.cv_results_
    # The exact route's bounds are round-off only; routes computed alpha by alpha report zero.
    assert np.all(reference["mean_test_score_bound"] <= 1e-9 * np.abs(reference["mean_test_score"]))
    kfold = IOKRCV(cv=3, **kwargs).fit(X, Y)
    np.testing.assert_array_equal(kfold.cv_results_["mean_test_score_bound"], 0.0)
    assert kfold.cv_results_["split_test_score_bound"].shape == (31, 3)


def test_tolerance_route_within_bounds_of_retraining(rng):
    """The tolerance route's LOO errors at every alpha are within their certified bound of explicit retraining."""
    X, Y = make_data(rng, (120, 5), 12, np.float64)
    alphas = np.logspace(-6, 2, 31)
    kernel = Gaussian(0.2)
    search = IOKRCV(alphas=alphas, input_kernel=kernel, tol=1e-2).fit(X, Y)
    gram, out = fixed_transform_sides(X, Y, kernel, "linear")
    for j in (0, 12, search.best_index_, 30):
        retrained = np.array([retrained_sq_errors(gram, out, np.array([i]), alphas[j])[0] for i in (0, 57)])
        ours = -search.cv_results_["split_test_scores"][j, [0, 57]]
        assert np.all(np.abs(ours - retrained) <= search.cv_results_["split_test_score_bound"][j, [0, 57]]
                      + 1e-8 * retrained)


@pytest.mark.parametrize("tol", [-1e-3, 1.5, "0", False])
def test_tolerance_is_validated(rng, tol):
    X, Y = make_data(rng, (10, 2), 3, np.float64)
    with pytest.raises(ValueError, match=r"The 'tol' parameter of IOKRCV must be a float in the range \[0, 1\)"):
        IOKRCV(tol=tol).fit(X, Y)


def test_kernel_output_grid_ranks_equal_one_search_per_output_setting(rng):
    # The hold-out coefficients are shared by the output settings of one alpha and consumed in place by the last
    # one: every setting's ranks equal those of a search over that setting alone.
    X, Y = make_data(rng, (36, 3), 8, np.float64, binary=True)
    sets = candidate_lists(rng, Y)
    common = dict(alphas=ALPHAS, input_kernel=Gaussian(0.5), cv=KFold(3), scoring="mrr")
    grid = IOKRCV(output_kernel=GaussianTanimoto(1.0), param_grid={"output_kernel__gamma": [0.5, 2.0]},
                  **common).fit(X, Y, candidate_sets=sets)
    scores = grid.cv_results_["split_test_scores"]
    for k, gamma in enumerate([0.5, 2.0]):
        alone = IOKRCV(output_kernel=GaussianTanimoto(gamma), **common).fit(X, Y, candidate_sets=sets)
        np.testing.assert_array_equal(scores[k * len(ALPHAS):(k + 1) * len(ALPHAS)],
                                      alone.cv_results_["split_test_scores"])

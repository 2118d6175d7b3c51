"""Multi-label model selection: the closed-form fold scores against explicit refits, the preprocessing choice by refit
CV, grid-edge warnings and the fold-wise candidate label sets."""

import numpy as np
import pytest
from sklearn.model_selection import KFold
from sklearn.preprocessing import StandardScaler

from iokr.apps.multilabel import GridEdgeWarning, evaluate_multilabel, select_multilabel
from iokr.apps.multilabel._selection import (
    closed_form_search,
    fold_label_sets,
    label_pool,
    median_sq_distance,
    refit_cv_f1,
)
from iokr.decoding import CandidateSets
from iokr.estimators import IOKR
from iokr.kernels import Gaussian
from iokr.metrics import example_f1
from iokr.model_selection import IOKRCV

EXACT = {"normalize_input": False, "normalize_output": False}  # the closed form is then exactly a refit


def make_data(rng, n=48, d=5, n_labels=4):
    X = rng.normal(size=(n, d))
    W = rng.normal(size=(d, n_labels))
    Y = (X @ W + 0.8 * rng.normal(size=(n, n_labels)) > 0.3).astype(np.float64)
    return X, Y


@pytest.mark.parametrize("normalize_output", [False, True])
@pytest.mark.parametrize("kind", ["kfold", "loo"])
def test_closed_form_fold_f1_equals_explicit_refits(rng, kind, normalize_output):
    """Every (alpha, kernel) split score of the closed form = example-F1 of IOKR refitted on the training side and
    decoded over that side's label sets (centering refitted on each side, no normalization)."""
    X, Y = make_data(rng)
    n = X.shape[0]
    folds = list(KFold(4, shuffle=True, random_state=1).split(X)) if kind == "kfold" else [
        (np.delete(np.arange(n), i), np.array([i])) for i in range(n)]
    alphas = [1e-2, 0.3, 10.0]
    kernels = ["linear", Gaussian(gamma=0.3)]
    if normalize_output:  # decoding of the closed form's own predictions = IOKR's decoder, with global statistics
        check_scores_match_the_decoder(X, Y, folds, alphas, kernels)
        return
    search = closed_form_search(X, Y, folds, alphas=alphas, kernels=kernels, iokr_params=EXACT)
    for row, params in enumerate(search.cv_results_["params"]):
        expected = []
        for train, valid in folds:
            model = IOKR(alpha=params["alpha"], input_kernel=params["input_kernel"], **EXACT).fit(X[train], Y[train])
            pool = label_pool(Y[train])
            scores = model.decision_function(X[valid], pool)
            expected.append(example_f1(Y[valid], pool[np.argmax(scores, axis=1)]))
        np.testing.assert_allclose(search.cv_results_["split_test_scores"][row], expected, rtol=0, atol=1e-12)
    # and the refit-CV helper is that same brute force
    best = search.best_params_
    np.testing.assert_allclose(
        refit_cv_f1(X, Y, folds, "none", best["alpha"], best["input_kernel"], EXACT),
        search.cv_results_["split_test_scores"][search.best_index_], rtol=0, atol=1e-12)


def check_scores_match_the_decoder(X, Y, folds, alphas, kernels):
    """With output normalization the closed form is not a refit (normalization statistics of the whole training
    set); its decoding must still be IOKR's: a model refitted with those global statistics held fixed."""
    params = {"normalize_input": False, "normalize_output": True}
    search = closed_form_search(X, Y, folds, alphas=alphas, kernels=kernels, iokr_params=params)
    pool, masks, fold_of = fold_label_sets(Y, folds)
    calls = []

    def rank_scoring(result):  # the generic (slow) IOKRCV route: ranks through the candidate-set scorer
        calls.append(1)
        return example_f1(Y[result.indices], pool[result.top_candidates])

    sets = CandidateSets(pool, [np.flatnonzero(masks[fold_of[i]]) for i in range(len(Y))])
    decreasing = sorted(alphas, reverse=True)  # the order closed_form_search searches (ties to the larger alpha)
    slow = IOKRCV(alphas=decreasing, input_kernel=kernels[0], param_grid={"input_kernel": list(kernels)},
                  cv=list(folds), scoring=rank_scoring, path_method="eigen", **params).fit(X, Y, candidate_sets=sets)
    assert calls
    np.testing.assert_allclose(search.cv_results_["split_test_scores"], slow.cv_results_["split_test_scores"],
                               rtol=0, atol=1e-12)


def test_fold_label_sets_are_the_training_sides_label_sets(rng):
    X, Y = make_data(rng, n=30)
    Y[0] = 1.0  # a label set (all labels) that, held out, is absent from its training side
    folds = list(KFold(3, shuffle=True, random_state=0).split(X))
    pool, masks, fold_of = fold_label_sets(Y, folds)
    np.testing.assert_array_equal(pool, label_pool(Y))
    for k, (train, valid) in enumerate(folds):
        np.testing.assert_array_equal(pool[masks[k]], label_pool(Y[train]))
        assert (fold_of[valid] == k).all()
    assert not any(np.array_equal(row, Y[0]) for row in pool[masks[fold_of[0]]])


def test_standardization_is_chosen_by_refit_cv_and_fitted_per_fold(rng):
    """A huge-scale noise feature swamps the raw linear kernel: the standardized arm must win the refit CV, and its
    refit score is the brute-force one with the scaler refitted on each fold's training side."""
    X, Y = make_data(rng, n=80)
    X = np.column_stack([X, 1e4 * rng.normal(size=80)])
    _, scaler, record = select_multilabel(X, Y, alphas=[0.1, 1.0, 10.0], input_kernels=["linear"], cv=4)
    assert len(record["arms"]) == 4  # scaling x output normalization
    assert record["best"]["scaling"] == "standard" and scaler is not None
    best_by_scaling = {s: max(a["refit_cv_f1"] for a in record["arms"] if a["scaling"] == s) for s in ("none",
                                                                                                       "standard")}
    assert best_by_scaling["standard"] > best_by_scaling["none"]
    arm = next(a for a in record["arms"] if a["scaling"] == "standard" and a["normalize_output"])
    folds = list(KFold(4, shuffle=True, random_state=0).split(X))

    brute = []
    for train, valid in folds:
        s = StandardScaler().fit(X[train])
        m = IOKR(alpha=arm["alpha"], input_kernel="linear").fit(s.transform(X[train]), Y[train])
        pool = label_pool(Y[train])
        brute.append(example_f1(Y[valid], pool[np.argmax(m.decision_function(s.transform(X[valid]), pool), axis=1)]))
    assert arm["refit_cv_f1"] == pytest.approx(100 * np.mean(brute), abs=1e-10)
    np.testing.assert_allclose(scaler.mean_, X.mean(axis=0))


def test_grid_edge_warning_and_record(rng):
    X, Y = make_data(rng)
    with pytest.warns(GridEdgeWarning, match="edge of the alpha grid"):
        result = evaluate_multilabel(X[:36], Y[:36], X[36:], Y[36:], alphas=[1e-9, 2e-9], scalings=("none",), cv=3)
    assert result["grid_edge"] and result["best"]["scaling"] == "none"
    assert set(result) >= {"f1", "hamming", "exact_match", "arms", "cv_results", "ranks", "timings_s"}


def test_default_gaussian_widths_follow_the_median_distance(rng):
    X, _ = make_data(rng)
    median = median_sq_distance(X)
    d2 = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    assert median == pytest.approx(np.median(d2[np.triu_indices(X.shape[0], 1)]))
    assert median_sq_distance(np.ones((5, 2))) == 1.0

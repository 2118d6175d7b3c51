"""IOKRCV(store_cv_results=True): stored hold-out predictions and ranks against explicit refits and the scorer."""

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import KFold

from iokr import IOKR
from iokr.decoding import CandidateSets
from iokr.estimators._sides import OutputSide
from iokr.kernels import GaussianTanimoto
from iokr.metrics import true_candidate_rank
from iokr.model_selection import IOKRCV

ALPHAS = [1e-2, 0.3, 3.0]


def _data(rng, n=24, p=5):
    X = rng.normal(size=(n, 4))
    Y = (rng.random(size=(n, p)) < 0.4).astype(float)
    sets = CandidateSets(Y, [np.concatenate([[i], rng.choice(n, 6, replace=False)]) for i in range(n)])
    return X, Y, sets


@pytest.mark.parametrize("cv", [None, 3])
def test_stored_values_equal_refits_without_transforms(rng, cv):
    X, Y, sets = _data(rng)
    flags = {"center_input": False, "normalize_input": False, "center_output": False, "normalize_output": False}
    search = IOKRCV(alphas=ALPHAS, cv=cv, scoring="top1", store_cv_results=True, **flags).fit(X, Y, sets)
    splits = ([(np.delete(np.arange(len(X)), i), np.array([i])) for i in range(len(X))] if cv is None
              else list(KFold(cv).split(X)))
    preds, ranks = search.cv_results_["holdout_predictions"], search.cv_results_["holdout_ranks"]
    assert len(preds) == len(ranks) == len(ALPHAS)
    for j, alpha in enumerate(search.cv_results_["param_alpha"]):
        assert preds[j].shape == Y.shape and ranks[j].shape == (len(X),)
        for tr, te in splits:
            model = IOKR(alpha=alpha, **flags).fit(X[tr], Y[tr])
            np.testing.assert_allclose(preds[j][te], model.predict_features(X[te]), rtol=1e-8, atol=1e-10)
            sub = CandidateSets(Y, [sets.indices[i] for i in te])
            for i, r in zip(te, model.rank(X[te], sub), strict=True):
                s = np.full(r.n_candidates, -np.inf)
                s[r.order] = r.scores
                assert ranks[j][i] == pytest.approx(true_candidate_rank(s, 0, ties="average"))


def test_stored_values_match_what_the_scoring_receives(rng):
    X, Y, sets = _data(rng)
    seen = []

    def scoring(result):
        seen.append(result)
        return -float(np.mean(result.ranks))

    for kernel, field in [("linear", "features"), (GaussianTanimoto(gamma=0.5), "coefficients")]:
        seen.clear()
        search = IOKRCV(alphas=ALPHAS, cv=4, output_kernel=kernel, scoring=scoring, store_cv_results=True)
        search.fit(X, Y, sets)
        assert len(seen) == 4 * len(ALPHAS)
        for j in range(len(ALPHAS)):
            for result in seen[4 * j:4 * (j + 1)]:
                np.testing.assert_array_equal(search.cv_results_["holdout_predictions"][j][result.indices],
                                              getattr(result, field))
                np.testing.assert_array_equal(search.cv_results_["holdout_ranks"][j][result.indices], result.ranks)


def test_mse_store_without_sets_has_no_ranks_and_same_scores(rng):
    X, Y, _ = _data(rng)
    plain = IOKRCV(alphas=np.logspace(-2, 1, 9), path_method="eigen").fit(X, Y)
    stored = IOKRCV(alphas=np.logspace(-2, 1, 9), path_method="eigen", store_cv_results=True).fit(X, Y)
    assert "holdout_ranks" not in stored.cv_results_ and "holdout_predictions" not in plain.cv_results_
    np.testing.assert_allclose(stored.cv_results_["mean_test_score"], plain.cv_results_["mean_test_score"],
                               rtol=1e-9)
    for j, pred in enumerate(stored.cv_results_["holdout_predictions"]):
        # mse is the mean output-space squared error of the stored predictions (explicit, transformed outputs)
        psi = OutputSide("linear", True, True).fit(Y).train_features
        assert -np.mean(np.sum((pred - psi) ** 2, axis=1)) == pytest.approx(
            stored.cv_results_["mean_test_score"][j], rel=1e-9)


def test_search_without_refit_has_the_same_results_and_no_estimator(rng):
    X, Y, sets = _data(rng)
    full = IOKRCV(alphas=ALPHAS, cv=3, scoring="top1", store_cv_results=True).fit(X, Y, sets)
    lean = IOKRCV(alphas=ALPHAS, cv=3, scoring="top1", store_cv_results=True, refit=False).fit(X, Y, sets)
    assert lean.best_params_ == full.best_params_ and not hasattr(lean, "best_estimator_")
    np.testing.assert_array_equal(lean.cv_results_["mean_test_score"], full.cv_results_["mean_test_score"])
    for a, b in zip(lean.cv_results_["holdout_ranks"], full.cv_results_["holdout_ranks"], strict=True):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(NotFittedError):
        lean.predict(X, sets)


def test_refit_must_be_a_bool(rng):
    X, Y, sets = _data(rng)
    with pytest.raises(ValueError, match="'refit' parameter of IOKRCV must be a bool. Got 'no'"):
        IOKRCV(alphas=ALPHAS, cv=3, refit="no").fit(X, Y, sets)

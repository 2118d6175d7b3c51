"""MPIOKRCV: hold-out values against explicit MPIOKR refits on each training side."""

import numpy as np
import pytest
from sklearn.model_selection import KFold

from iokr import MPIOKR
from iokr.decoding import CandidateSets
from iokr.kernels import Gaussian, Precomputed, WeightedSum
from iokr.metrics import true_candidate_rank
from iokr.model_selection import MPIOKRCV

pytestmark = pytest.mark.filterwarnings("ignore::iokr.exceptions.EmptyCandidateSetWarning")

ALPHAS = [0.05, 0.5, 5.0]
RAW = {"center_input": False, "normalize_input": False, "center_output": False, "normalize_output": False}


def _data(rng, n=18, d=3, p=4, pool=30):
    X, Y = rng.normal(size=(n, d)), rng.normal(size=(n, p))
    pool_X, pool_Y = rng.normal(size=(pool, d)), rng.normal(size=(pool, p))
    idx = [rng.choice(pool, int(rng.integers(0, 5)), replace=True) for _ in range(n)]
    # some candidates repeat a training example (merged units of the known variant)
    pool_X[:3], pool_Y[:3] = X[:3], Y[:3]
    return X, Y, CandidateSets(pool_Y, idx), pool_X


def _splits(cv, n):
    if cv is None:
        return [(np.delete(np.arange(n), i), np.array([i])) for i in range(n)]
    return list(KFold(cv).split(np.zeros((n, 1))))


def _restricted(sets, rows):
    return CandidateSets(sets.pool, [sets.indices[i] for i in rows])


def _refit_ranks(model, X_test, sets):
    out = []
    for r in model.rank(X_test, sets):
        s = np.full(r.n_candidates, -np.inf)
        s[r.order] = r.scores
        out.append(true_candidate_rank(s, 0, ties="average"))
    return np.array(out)


def _scores_from_coefficients(coefficients, basis, kernel, C):
    """Distance-decoding scores ``2 <h, psi(c)> - ||psi(c)||^2`` of ``h = sum_u beta_u psi(b_u)`` (raw kernel)."""
    return 2.0 * np.nan_to_num(coefficients) @ kernel(basis, C) - kernel.diag(C)[None, :]


def _ranking_sets(rng, Y, n_extra=5):
    n = Y.shape[0]
    return CandidateSets(Y, [np.concatenate([[i], rng.choice(n, n_extra, replace=False)]) for i in range(n)])


@pytest.mark.parametrize("cv", [None, 3])
@pytest.mark.parametrize("path_method", ["eigen", "cholesky"])
def test_known_closed_form_equals_refits_explicit_outputs(rng, cv, path_method):
    X, Y, sets, pool_X = _data(rng)
    ranking = _ranking_sets(rng, Y)
    search = MPIOKRCV(alphas=ALPHAS, cv=cv, scoring="top1", store_cv_results=True, path_method=path_method, **RAW)
    search.fit(X, Y, sets, pool_X, scoring_sets=ranking)
    assert search.holdout_method_ == "closed_form"
    for j, alpha in enumerate(search.cv_results_["param_alpha"]):
        preds = search.cv_results_["holdout_predictions"][j]
        for tr, te in _splits(cv, len(X)):
            model = MPIOKR(alpha=alpha, **RAW).fit(X[tr], Y[tr], _restricted(sets, tr), pool_X)
            np.testing.assert_allclose(preds[te], model.predict_features(X[te]), rtol=1e-7, atol=1e-9)
            np.testing.assert_array_equal(search.cv_results_["holdout_ranks"][j][te],
                                          _refit_ranks(model, X[te], _restricted(ranking, te)))


def test_known_closed_form_equals_refits_kernel_outputs_and_mse(rng):
    X, Y, sets, pool_X = _data(rng)
    kernel = Gaussian(gamma=0.3)
    search = MPIOKRCV(alphas=ALPHAS, cv=3, output_kernel=kernel, store_cv_results=True, **RAW)
    search.fit(X, Y, sets, pool_X)
    basis = np.concatenate([Y, sets.pool])
    for j, alpha in enumerate(search.cv_results_["param_alpha"]):
        coefficients = search.cv_results_["holdout_predictions"][j]
        assert coefficients.shape == (len(X), len(X) + sets.pool.shape[0])
        split_mse = []
        for tr, te in _splits(3, len(X)):
            model = MPIOKR(alpha=alpha, output_kernel=kernel, **RAW).fit(X[tr], Y[tr], _restricted(sets, tr), pool_X)
            got = _scores_from_coefficients(coefficients[te], basis, kernel, Y)
            np.testing.assert_allclose(got, model.decision_function(X[te], Y), rtol=1e-7, atol=1e-8)
            # ||h - psi(y_i)||^2 = ||h||^2 - score(y_i); ||h||^2 from the coefficients through the basis Gram
            beta = coefficients[te]
            norms = np.einsum("ij,ij->i", beta @ kernel(basis), beta)
            split_mse.append(np.mean(norms - got[np.arange(te.size), te]))
        np.testing.assert_allclose(search.cv_results_["split_test_scores"][j], -np.array(split_mse), rtol=1e-7)


@pytest.mark.parametrize("approximation, gammas", [("joint", [0.5, 2.0]), ("separate", [[0.5, 2.0], [1.0, 1.0]])])
def test_refit_variants_equal_mpiokr_refits(rng, approximation, gammas):
    X, Y, sets, _ = _data(rng)
    inputs = WeightedSum([Gaussian(gamma=0.2), Gaussian(gamma=1.0)], [0.6, 0.4])
    params = {"input_kernel": inputs, "approximation": approximation}
    search = MPIOKRCV(alphas=ALPHAS, gammas=gammas, cv=3, scoring="mrr", store_cv_results=True, **params)
    search.fit(X, Y, sets, scoring_sets=_ranking_sets(rng, Y))
    assert search.holdout_method_ == "refit" and len(search.cv_results_["params"]) == len(gammas) * len(ALPHAS)
    for j, setting in enumerate(search.cv_results_["params"]):
        preds = search.cv_results_["holdout_predictions"][j]
        for tr, te in _splits(3, len(X)):
            model = MPIOKR(alpha=setting["alpha"], gamma=setting["gamma"], **params)
            model.fit(X[tr], Y[tr], _restricted(sets, tr))
            np.testing.assert_allclose(preds[te], model.predict_features(X[te]), rtol=1e-8, atol=1e-10)
    best = MPIOKR(alpha=search.alpha_, gamma=search.best_params_["gamma"], **params).fit(X, Y, sets)
    np.testing.assert_allclose(search.decision_function(X[:4], Y), best.decision_function(X[:4], Y), rtol=1e-10)


def test_refit_kernel_outputs_precomputed_inputs(rng):
    """Kernel outputs (scattered coefficients) and a precomputed input Gram (sliced per split)."""
    X, Y, sets, _ = _data(rng)
    K = Gaussian(gamma=0.2)(X)
    out = Gaussian(gamma=0.3)
    params = dict(input_kernel="precomputed", output_kernel=out, approximation="joint", gamma=0.7, **RAW)
    search = MPIOKRCV(alphas=ALPHAS, cv=3, store_cv_results=True, **params).fit(K, Y, sets)
    basis = np.concatenate([Y, sets.pool])
    for j, alpha in enumerate(search.cv_results_["param_alpha"]):
        for tr, te in _splits(3, len(X)):
            model = MPIOKR(alpha=alpha, **params).fit(K[np.ix_(tr, tr)], Y[tr], _restricted(sets, tr))
            expected = model.decision_function(K[np.ix_(te, tr)], Y)
            got = _scores_from_coefficients(search.cv_results_["holdout_predictions"][j][te], basis, out, Y)
            np.testing.assert_allclose(got, expected, rtol=1e-8, atol=1e-9)


@pytest.mark.parametrize("output_kernel", ["linear", Gaussian(gamma=0.3)])
def test_known_best_estimator_reuses_the_fit(rng, output_kernel):
    X, Y, sets, pool_X = _data(rng)
    search = MPIOKRCV(alphas=ALPHAS, cv=3, output_kernel=output_kernel).fit(X, Y, sets, pool_X)
    best = MPIOKR(alpha=search.alpha_, output_kernel=output_kernel).fit(X, Y, sets, pool_X)
    assert search.best_estimator_.alpha == search.alpha_
    np.testing.assert_allclose(search.decision_function(X[:5], Y), best.decision_function(X[:5], Y), rtol=1e-8,
                               atol=1e-10)
    assert not hasattr(search.best_estimator_, "_system")


def test_callable_scoring_and_precomputed_known_inputs(rng):
    X, Y, sets, pool_X = _data(rng)
    seen = []

    def scoring(result):
        seen.append(result)
        return -float(np.mean(result.sq_errors))

    a = MPIOKRCV(alphas=ALPHAS, cv=3, scoring=scoring).fit(X, Y, sets, pool_X)
    b = MPIOKRCV(alphas=ALPHAS, cv=3).fit(X, Y, sets, pool_X)
    assert len(seen) == 3 * len(ALPHAS) and seen[0].features is not None and seen[0].coefficients is None
    np.testing.assert_allclose(a.cv_results_["mean_test_score"], b.cv_results_["mean_test_score"], rtol=1e-12)
    full = np.concatenate([X, pool_X])
    index = Precomputed(Gaussian(gamma=0.2)(full))
    c = MPIOKRCV(alphas=ALPHAS, cv=3, input_kernel=index).fit(np.arange(len(X))[:, None], Y, sets,
                                                                 (len(X) + np.arange(len(pool_X)))[:, None])
    assert np.isfinite(c.cv_results_["mean_test_score"]).all()


def test_bad_parameters(rng):
    X, Y, sets, pool_X = _data(rng)
    with pytest.raises(ValueError, match="'gammas' parameter of MPIOKRCV is only used"):
        MPIOKRCV(alphas=ALPHAS, gammas=[1.0]).fit(X, Y, sets, pool_X)
    with pytest.raises(ValueError, match="'gammas' parameter of MPIOKRCV must be a non-empty"):
        MPIOKRCV(alphas=ALPHAS, gammas=[], approximation="joint").fit(X, Y, sets)
    with pytest.raises(ValueError, match="'scoring' parameter of MPIOKRCV"):
        MPIOKRCV(alphas=ALPHAS, scoring="f1").fit(X, Y, sets, pool_X)
    with pytest.raises(ValueError, match="does not contain training example"):
        MPIOKRCV(alphas=ALPHAS, scoring="top1").fit(X, Y, sets, pool_X)


def test_known_closed_form_with_dense_mixing(rng):
    """One candidate set shared by all examples: MP-IOKR's mixing matrix is dense (the dense branch of the fit)."""
    X, Y, _, _ = _data(rng)
    shared = CandidateSets(rng.normal(size=(6, Y.shape[1])), [np.arange(6)] * len(X))
    inputs = rng.normal(size=(6, X.shape[1]))
    search = MPIOKRCV(alphas=ALPHAS, cv=4, store_cv_results=True, **RAW).fit(X, Y, shared, inputs)
    for j, alpha in enumerate(search.cv_results_["param_alpha"]):
        for tr, te in _splits(4, len(X)):
            model = MPIOKR(alpha=alpha, **RAW).fit(X[tr], Y[tr], _restricted(shared, tr), inputs)
            np.testing.assert_allclose(search.cv_results_["holdout_predictions"][j][te], model.predict_features(X[te]),
                                       rtol=1e-7, atol=1e-9)

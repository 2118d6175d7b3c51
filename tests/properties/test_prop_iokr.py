"""Properties of the IOKR family (IOKR, MPIOKR, SketchedIOKR, IOKRCV) on random and degenerate problems.

Invariants: finite scores (or a typed error), candidate permutation equivariance, training-order invariance where
the model is exact, chunked == unchunked scoring / ranking / top-k under a shrunken budget (with more than one block
observed), float32 ~ float64, rankings consistent with decision_function for candidate sets of mixed sizes (0, 1,
several), predict returning each query's best candidate, and inputs never mutated.
"""

import copy
import warnings

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from prop_helpers import (
    assert_finite,
    counting,
    make_matrix,
    problems,
    scale,
    scoring_blocks,
    share,
    smallest_budget_run,
    unchanged,
)

import iokr.decoding._scoring as scoring
from iokr import IOKR, IOKRCV, MPIOKR, SketchedIOKR
from iokr.exceptions import EmptyCandidateSetWarning
from iokr.kernels import Gaussian, GaussianTanimoto, Tanimoto, make_kernel


def _mp_fit(model, X, Y, rng):
    """MP-IOKR needs training candidate sets: random subsets of the training outputs plus perturbed copies."""
    n = X.shape[0]
    sets, inputs = [], []
    for i in range(n):
        rows = rng.choice(n, size=min(n, 1 + i % 3), replace=False)
        sets.append(Y[rows])
        inputs.append(X[rows])
    if model.approximation == "known":
        return model.fit(X, Y, sets, inputs)
    return model.fit(X, Y, sets)


# name -> (factory(alpha, decoding), binary outputs, exact (training-order invariant), fit function)
MODELS = {
    "iokr": (lambda a, dec: IOKR(alpha=a, decoding=dec), False, True, None),
    "iokr_raw": (lambda a, dec: IOKR(alpha=a, decoding=dec, center_input=False, normalize_input=False,
                                     center_output=False, normalize_output=False), False, True, None),
    "iokr_tanimoto": (lambda a, dec: IOKR(alpha=a, decoding=dec, input_kernel=Gaussian(0.5),
                                          output_kernel=Tanimoto()), True, True, None),
    "iokr_kernel_output": (lambda a, dec: IOKR(alpha=a, decoding=dec, input_kernel=Gaussian(0.5),
                                               output_kernel=GaussianTanimoto(1.0)), True, True, None),
    "mpiokr_joint": (lambda a, dec: MPIOKR(alpha=a, decoding=dec, approximation="joint"), False, True, _mp_fit),
    "mpiokr_known": (lambda a, dec: MPIOKR(alpha=a, decoding=dec, approximation="known",
                                           input_kernel=Gaussian(0.3)), False, True, _mp_fit),
    "sketched_nystrom": (lambda a, dec: SketchedIOKR(alpha=a, decoding=dec, n_components=40, random_state=0),
                         False, True, None),
    "sketched_rff": (lambda a, dec: SketchedIOKR(alpha=a, decoding=dec, solver="rff", input_kernel=Gaussian(0.5),
                                                 n_components=8, random_state=0), False, True, None),
    "sketched_falkon": (lambda a, dec: SketchedIOKR(alpha=a, decoding=dec, solver="falkon", n_components=3,
                                                    input_kernel=Gaussian(0.5), max_iter=200, tol=1e-12,
                                                    random_state=0), False, False, None),
    "iokrcv": (lambda a, dec: IOKRCV(alphas=[a, 10 * a], decoding=dec), False, True, None),
}

ALPHAS = (0.05, 1.0, 10.0)
DECODINGS = ("distance", "inner", "cosine")


def _problem(spec, binary, m=None, c=None):
    rng = np.random.default_rng(spec["seed"])
    n, d, p, degeneracy = spec["n"], spec["d"], spec["p"], spec["degeneracy"]
    X = make_matrix(rng, n, d, degeneracy)
    Y = make_matrix(rng, n, p, degeneracy if degeneracy != "zero_rows" or binary else "none", binary=binary)
    X_test = make_matrix(rng, m or 1 + spec["seed"] % 4, d, "none")
    C = make_matrix(rng, c or 1 + spec["seed"] % 6, p, "none", binary=binary)
    C[: min(len(C), n)] = Y[: min(len(C), n)]  # some candidates are training outputs
    return rng, X, Y, X_test, C


def _fit(name, alpha, decoding, X, Y, rng):
    factory, _, _, fit = MODELS[name]
    model = factory(alpha, decoding)
    if isinstance(model, IOKRCV) and X.shape[0] < 2:
        with pytest.raises(ValueError):
            model.fit(X, Y)
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # e.g. CG not converged in max_iter: still finite scores
        return fit(model, X, Y, rng) if fit is not None else model.fit(X, Y)


def _tol(magnitude, dtype=np.float64, loose=False):
    base = 2e-3 if np.dtype(dtype) == np.float32 else (1e-6 if loose else 1e-9)
    return base * magnitude




@pytest.mark.parametrize("name", sorted(MODELS))
@share(0.5)
@given(spec=problems(max_n=9, max_d=4, max_p=5), alpha=st.sampled_from(ALPHAS),
       decoding=st.sampled_from(DECODINGS))
def test_scores_finite_equivariant_and_inputs_unchanged(name, spec, alpha, decoding):
    binary = MODELS[name][1]
    rng, X, Y, X_test, C = _problem(spec, binary)
    with unchanged(X, Y):
        model = _fit(name, alpha, decoding, X, Y, rng)
    if model is None:
        return
    with unchanged(X_test, C):
        S = model.decision_function(X_test, C)
    assert S.shape == (X_test.shape[0], C.shape[0])
    assert_finite(S)
    perm = rng.permutation(C.shape[0])
    np.testing.assert_allclose(model.decision_function(X_test, C[perm]), S[:, perm], rtol=0,
                               atol=_tol(scale(S)))
    queries = rng.permutation(X_test.shape[0])
    np.testing.assert_allclose(model.decision_function(X_test[queries], C), S[queries], rtol=0,
                               atol=_tol(scale(S)))
    # a single candidate and a single query are scored like any other
    np.testing.assert_allclose(model.decision_function(X_test[:1], C[-1:]), S[:1, -1:], rtol=0,
                               atol=_tol(scale(S)))


@pytest.mark.parametrize("name", sorted(n for n, m in MODELS.items() if m[2] and not n.startswith("mpiokr")))
@share(0.5)
@given(spec=problems(max_n=9, max_d=4, max_p=5),
       alpha=st.sampled_from(ALPHAS), decoding=st.sampled_from(DECODINGS))
def test_training_order_invariance(name, spec, alpha, decoding):
    binary = MODELS[name][1]
    rng, X, Y, X_test, C = _problem(spec, binary)
    perm = rng.permutation(X.shape[0])
    first = _fit(name, alpha, decoding, X, Y, np.random.default_rng(1))
    if first is None:
        return
    second = _fit(name, alpha, decoding, X[perm], Y[perm], np.random.default_rng(1))
    if isinstance(first, IOKRCV):
        np.testing.assert_allclose(second.cv_results_["mean_test_score"], first.cv_results_["mean_test_score"],
                                   rtol=1e-8, atol=1e-10)
        if first.best_index_ != second.best_index_:
            return  # a tie between alphas broken differently by rounding
    S1, S2 = first.decision_function(X_test, C), second.decision_function(X_test, C)
    rows = _well_defined_queries(first, X_test, C) if decoding == "cosine" else slice(None)
    np.testing.assert_allclose(S2[rows], S1[rows], rtol=0, atol=_tol(scale(S1), loose=name.startswith("sketched")))


def _well_defined_queries(model, X_test, C):
    """Queries whose prediction h(x) is not zero up to rounding (seen through inner-product scores).

    Cosine decoding divides by ||h(x)||: when h(x) is 0 in exact arithmetic (e.g. symmetric degenerate data) the
    scores are the signs of rounding noise, which depend on the training order. Such queries are skipped.
    """
    inner = copy.deepcopy(getattr(model, "best_estimator_", model)).set_params(decoding="inner")
    S = inner.decision_function(X_test, C)
    return np.abs(S).max(axis=1) > 1e-7 * scale(S)


@given(spec=problems(max_n=8, max_d=3, max_p=4), alpha=st.sampled_from(ALPHAS),
       approximation=st.sampled_from(["known", "joint"]))
def test_mpiokr_invariant_to_training_order_with_its_sets(spec, alpha, approximation):
    rng, X, Y, X_test, C = _problem(spec, False)
    n = X.shape[0]
    sets_rows = [rng.choice(n, size=min(n, 1 + i % 3), replace=False) for i in range(n)]
    kwargs = dict(alpha=alpha, approximation=approximation, input_kernel=Gaussian(0.3))

    def fit(order):
        sets = [Y[sets_rows[i]] for i in order]
        inputs = [X[sets_rows[i]] for i in order] if approximation == "known" else None
        return MPIOKR(**kwargs).fit(X[order], Y[order], sets, inputs)

    S1 = fit(np.arange(n)).decision_function(X_test, C)
    S2 = fit(rng.permutation(n)).decision_function(X_test, C)
    assert_finite(S1)
    np.testing.assert_allclose(S2, S1, rtol=0, atol=_tol(scale(S1), loose=True))


@st.composite
def candidate_structure(draw):
    # two queries at least: the smallest budget then gives one row per block on the binding side (query or
    # candidate), so more than one block is guaranteed when the pool has two candidates or more
    return {"sizes": draw(st.lists(st.integers(0, 4), min_size=2, max_size=5)),
            "top_k": draw(st.integers(1, 4)), "n_pool": draw(st.integers(1, 9))}


@pytest.mark.parametrize("name", sorted(MODELS))
@share(0.5)
@given(spec=problems(max_n=8, max_d=3, max_p=4), alpha=st.sampled_from(ALPHAS),
       decoding=st.sampled_from(DECODINGS), structure=candidate_structure())
def test_chunked_scoring_ranking_and_top_k_equal_unchunked(name, spec, alpha, decoding, structure):
    binary = MODELS[name][1]
    sizes, n_pool = structure["sizes"], structure["n_pool"]
    rng, X, Y, X_test, pool = _problem(spec, binary, m=len(sizes), c=n_pool)
    model = _fit(name, alpha, decoding, X, Y, rng)
    if model is None:
        return
    sets = [pool[rng.choice(n_pool, size=min(s, n_pool), replace=False)] for s in sizes]
    m, k = len(sizes), structure["top_k"]
    if decoding == "cosine":
        assume(_well_defined_queries(model, X_test, pool).all())

    S = model.decision_function(X_test, pool)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EmptyCandidateSetWarning)
        rankings = model.rank(X_test, sets)
        best = model.predict(X_test, sets)
    magnitude = scale(S)

    # rankings agree with decision_function on each query's own set, best first; predict returns the best
    for q, (ranking, C_q) in enumerate(zip(rankings, sets, strict=True)):
        assert ranking.n_candidates == C_q.shape[0] and len(ranking.order) == C_q.shape[0]
        if C_q.shape[0] == 0:
            assert np.isnan(best[q]).all()
            continue
        expected = model.decision_function(X_test[q:q + 1], C_q)[0]
        np.testing.assert_allclose(ranking.scores, expected[ranking.order], rtol=0, atol=_tol(magnitude))
        assert np.all(np.diff(ranking.scores) <= _tol(magnitude))
        assert np.isclose(model.decision_function(X_test[q:q + 1], best[q:q + 1])[0, 0], expected.max(),
                          rtol=0, atol=_tol(magnitude))

    with counting(scoring, "_plan") as plans:
        S_chunked, _ = smallest_budget_run(lambda: model.decision_function(X_test, pool))
    if n_pool > 1:
        assert scoring_blocks(plans, m, n_pool) > 1
    np.testing.assert_allclose(S_chunked, S, rtol=0, atol=_tol(magnitude))

    def rank_and_predict():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", EmptyCandidateSetWarning)
            return model.rank(X_test, sets), model.predict(X_test, sets)

    (rankings_chunked, best_chunked), _ = smallest_budget_run(rank_and_predict)
    for ranking, chunked in zip(rankings, rankings_chunked, strict=True):
        np.testing.assert_allclose(np.sort(chunked.scores), np.sort(ranking.scores), rtol=0, atol=_tol(magnitude))
    if not _near_ties(rankings, magnitude):  # otherwise rounding may pick the other of two tied candidates
        np.testing.assert_array_equal(best_chunked, best)

    # top-k over a shared pool: the k best scores of the dense matrix, in order, whatever the chunking
    with counting(scoring, "_plan") as plans:
        top, _ = smallest_budget_run(lambda: model.rank(X_test, [pool] * m, top_k=k))
    if n_pool > 1:
        assert scoring_blocks(plans, m, n_pool) > 1
    kk = min(k, n_pool)
    for q, ranking in enumerate(top):
        expected = -np.sort(-S[q])[:kk]
        np.testing.assert_allclose(ranking.scores, expected, rtol=0, atol=_tol(magnitude))
        np.testing.assert_allclose(S[q, ranking.order], ranking.scores, rtol=0, atol=_tol(magnitude))


def _near_ties(rankings, magnitude):
    return any(r.scores.size > 1 and r.scores[0] - r.scores[1] <= _tol(magnitude) for r in rankings)


@pytest.mark.parametrize("name", sorted(MODELS))
@share(0.5)
@given(spec=problems(max_n=8, max_d=3, max_p=4), alpha=st.sampled_from((0.5, 10.0)),
       decoding=st.sampled_from(DECODINGS))
def test_float32_close_to_float64(name, spec, alpha, decoding):
    binary = MODELS[name][1]
    _, X, Y, X_test, C = _problem(spec, binary)
    X32, Y32, X_test32, C32 = (a.astype(np.float32) for a in (X, Y, X_test, C))
    model64 = _fit(name, alpha, decoding, X32.astype(np.float64), Y32.astype(np.float64), np.random.default_rng(1))
    if model64 is None:
        return
    model32 = _fit(name, alpha, decoding, X32, Y32, np.random.default_rng(1))
    if isinstance(model64, IOKRCV):
        assume(model32.alpha_ == model64.alpha_)  # else a near tie of the CV scores was broken by rounding
    if decoding == "cosine":
        assume(_well_defined_queries(model64, X_test32.astype(np.float64), C32.astype(np.float64)).all())
    assume(_resolved_in_float32(model64.get_params(), X32, Y32, X_test32, C32))
    S64 = model64.decision_function(X_test32.astype(np.float64), C32.astype(np.float64))
    S32 = model32.decision_function(X_test32, C32)
    assert S32.dtype == np.float32  # float32 candidates are scored with float32 BLAS
    assert_finite(S32)
    np.testing.assert_allclose(S32, S64, rtol=0, atol=_tol(scale(S64), np.float32))


def _resolved_in_float32(params, X, Y, X_test, C):
    """False when normalization must turn a point closer to the training mean than float32 resolves into a unit
    vector: the float64 model then follows a direction that float32 rounding decides (float32 Grams treat such points
    as zero vectors, see iokr.kernels._transform.ZERO_NORM_RTOL_FLOAT32), so the two cannot be compared."""
    sides = ((params["input_kernel"], X, X_test, params["center_input"], params["normalize_input"]),
             (params["output_kernel"], Y, C, params["center_output"], params["normalize_output"]))
    for kernel, train, test, center, normalize in sides:
        if not (center and normalize):
            continue
        kernel = make_kernel(kernel)
        train, test = train.astype(np.float64), test.astype(np.float64)
        K = kernel(train)
        row, mu = K.mean(axis=1), K.mean()
        centered = np.concatenate([np.diag(K) - 2 * row + mu, kernel.diag(test) - 2 * kernel(test, train).mean(1) + mu])
        relative = centered / max(float(np.abs(np.diag(K)).mean()), 1e-300)
        if np.any((relative > 1e-10) & (relative < 1e-3)):
            return False
    return True


"""IOKR against the brief's closed form, primal ridge regression and explicit feature maps; contract and bad input."""

import warnings

import numpy as np
import pytest
from reference import (
    IOKR_LIKE_SKLEARN_CHECKS,
    assert_close_to_scale,
    assert_rankings_agree,
    center_normalize,
    gaussian_pair,
    gaussian_tanimoto_pair,
    iokr_inner_scores,
    linear_pair,
    naive_gram,
    polynomial2_features,
    polynomial_pair,
    ridge_primal,
    stable_order,
    tanimoto_inner_pair,
)
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.utils import estimator_checks

from iokr import IOKR, MPIOKR, CandidateSets, SketchedIOKR, config_context
from iokr.exceptions import EmptyCandidateSetWarning
from iokr.kernels import Gaussian, GaussianTanimoto, Linear, Normalized, Polynomial, Precomputed, Tanimoto

NO_TRANSFORM = dict(center_input=False, normalize_input=False, center_output=False, normalize_output=False)
ALL_FLAGS = [
    dict(center_input=ci, normalize_input=ni, center_output=co, normalize_output=no)
    for ci, ni, co, no in [(False, False, False, False), (True, False, True, False), (False, True, False, True),
                           (True, True, True, True), (True, True, False, False), (False, False, True, True)]
]


def _data(seed=0, n=25, m=7, c=15, d=4, p=10):
    rng = np.random.default_rng(seed)
    X, X_test = rng.normal(size=(n, d)), rng.normal(size=(m, d))
    Y = (rng.random((n, p)) < 0.4).astype(float)
    C = (rng.random((c, p)) < 0.4).astype(float)
    C[:3] = Y[:3]  # some candidates are training outputs
    return X, Y, X_test, C


def _relative_close(actual, expected, rtol):
    scale = max(1.0, float(np.abs(expected).max()))
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=rtol * scale)


# -- the brief's formula -------------------------------------------------------------------------------------------

OUTPUT_KERNELS = [
    ("linear", Linear, linear_pair),
    ("tanimoto", Tanimoto, tanimoto_inner_pair),
    ("gaussian-tanimoto", lambda: GaussianTanimoto(gamma=0.8), lambda a, b: gaussian_tanimoto_pair(a, b, 0.8)),
    ("polynomial", lambda: Polynomial(degree=2, gamma=0.5, coef0=1.0), lambda a, b: polynomial_pair(a, b, 2, 0.5)),
]


@pytest.mark.parametrize("out_name, out_factory, out_pair", OUTPUT_KERNELS, ids=[o[0] for o in OUTPUT_KERNELS])
@pytest.mark.parametrize("input_kind", ["gaussian", "precomputed", "linear"])
@pytest.mark.parametrize("alpha", [1e-2, 1.0])
def test_inner_decoding_equals_brief_formula(out_name, out_factory, out_pair, input_kind, alpha):
    X, Y, X_test, C = _data()
    input_pair = linear_pair if input_kind == "linear" else (lambda a, b: gaussian_pair(a, b, 0.3))
    Kx, Kx_test = naive_gram(input_pair, X), naive_gram(input_pair, X_test, X)
    expected = iokr_inner_scores(Kx, Kx_test, naive_gram(out_pair, Y, C), alpha)
    if input_kind == "precomputed":
        model = IOKR(alpha=alpha, input_kernel="precomputed", output_kernel=out_factory(), decoding="inner",
                     **NO_TRANSFORM).fit(Kx, Y)
        S = model.decision_function(Kx_test, C)
    else:
        kernel = Linear() if input_kind == "linear" else Gaussian(gamma=0.3)
        model = IOKR(alpha=alpha, input_kernel=kernel, output_kernel=out_factory(), decoding="inner",
                     **NO_TRANSFORM).fit(X, Y)
        S = model.decision_function(X_test, C)
    assert S.shape == (7, 15) and S.dtype == np.float64
    _relative_close(S, expected, 1e-10)


@pytest.mark.parametrize("flags", ALL_FLAGS)
@pytest.mark.parametrize("alpha", [1e-3, 0.5, 20.0])
def test_linear_kernels_equal_primal_multi_output_ridge(flags, alpha):
    X, Y, X_test, C = _data(1, n=30, d=6, p=5)
    Y = Y + np.random.default_rng(2).normal(size=Y.shape)  # real-valued outputs
    F_train, F_test = center_normalize(X, X_test, center=flags["center_input"], normalize=flags["normalize_input"])
    P_train, P_cand = center_normalize(Y, C, center=flags["center_output"], normalize=flags["normalize_output"])
    W = ridge_primal(F_train, P_train, alpha)
    model = IOKR(alpha=alpha, input_kernel="linear", output_kernel=Linear(), decoding="inner", **flags).fit(X, Y)
    _relative_close(model.predict_features(X_test), F_test @ W, 1e-9)
    _relative_close(model.decision_function(X_test, C), F_test @ W @ P_cand.T, 1e-9)


# -- decoding rules and centering/normalization vs explicit feature maps ---------------------------------------------


def _explicit_scores(H, P_cand, decoding):
    """Scores from explicit ``h(x)`` (m, q) and transformed candidate features (c, q), by the definitions."""
    S = np.empty((H.shape[0], P_cand.shape[0]))
    for i, h in enumerate(H):
        for j, psi in enumerate(P_cand):
            if decoding == "inner":
                S[i, j] = h @ psi
            elif decoding == "distance":
                S[i, j] = -np.sum((h - psi) ** 2) + np.sum(h**2)
            else:
                norms = np.linalg.norm(h) * np.linalg.norm(psi)
                S[i, j] = 0.0 if norms == 0 else h @ psi / norms
    return S


def _poly(X):
    return polynomial2_features(X, gamma=0.5, coef0=1.0)


# Output kernels with an explicit reference feature map: Linear and Normalized(Linear) take the library's explicit
# path; Polynomial has no declared feature map, so the library takes its kernel path while the test uses _poly.
EXPLICIT_OUTPUTS = [
    ("linear", Linear, lambda Y: np.asarray(Y, dtype=np.float64)),
    ("normalized-linear", lambda: Normalized(Linear()),
     lambda Y: Y / np.maximum(np.linalg.norm(Y, axis=1, keepdims=True), 1e-300)),
    ("poly2", lambda: Polynomial(degree=2, gamma=0.5, coef0=1.0), _poly),
]


@pytest.mark.parametrize("decoding", ["inner", "distance", "cosine"])
@pytest.mark.parametrize("flags", ALL_FLAGS)
@pytest.mark.parametrize("out_name, out_factory, out_phi", EXPLICIT_OUTPUTS, ids=[o[0] for o in EXPLICIT_OUTPUTS])
def test_scores_match_explicit_feature_space(decoding, flags, out_name, out_factory, out_phi):
    X, Y, X_test, C = _data(3, n=20, d=3, p=4)
    C[-1] = 0.0  # an all-zero candidate
    F_train, F_test = center_normalize(_poly(X), _poly(X_test), center=flags["center_input"],
                                       normalize=flags["normalize_input"])
    P_train, P_cand = center_normalize(out_phi(Y), out_phi(C), center=flags["center_output"],
                                       normalize=flags["normalize_output"])
    alpha = 0.3
    H = F_test @ ridge_primal(F_train, P_train, alpha)
    expected = _explicit_scores(H, P_cand, decoding)
    model = IOKR(alpha=alpha, input_kernel=Polynomial(degree=2, gamma=0.5, coef0=1.0), output_kernel=out_factory(),
                 decoding=decoding, **flags).fit(X, Y)
    _relative_close(model.decision_function(X_test, C), expected, 1e-8)
    if out_name != "poly2":
        _relative_close(model.predict_features(X_test), H, 1e-8)
    else:
        with pytest.raises(ValueError, match="predict_features needs an output kernel with explicit features"):
            model.predict_features(X_test)


# -- ranking and prediction ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("output_kernel", [Linear(), Tanimoto()], ids=["explicit", "kernel"])
@pytest.mark.parametrize("decoding", ["inner", "distance", "cosine"])
def test_rank_and_predict_consistent_with_decision_function(output_kernel, decoding, rng):
    X, Y, X_test, C = _data(4)
    C[7] = C[2]  # duplicate candidate: a tie, broken in favour of the earlier position
    model = IOKR(alpha=0.5, input_kernel=Gaussian(0.3), output_kernel=output_kernel, decoding=decoding).fit(X, Y)
    S = model.decision_function(X_test, C)
    indices = [rng.choice(15, size=rng.integers(1, 15), replace=False) for _ in range(7)]
    indices[0] = np.array([2, 9, 7, 0])
    sets = CandidateSets(C, indices)
    rankings = model.rank(X_test, sets)
    per_query_arrays = model.rank(X_test, [C[idx] for idx in indices])
    best = model.predict(X_test, sets)
    for q, ranking in enumerate(rankings):
        own = S[q, indices[q]]
        np.testing.assert_array_equal(ranking.order, stable_order(own))
        np.testing.assert_array_equal(ranking.pool_indices, indices[q][ranking.order])
        _relative_close(ranking.scores, own[ranking.order], 1e-12)
        assert ranking.n_candidates == len(indices[q])
        np.testing.assert_array_equal(per_query_arrays[q].order, ranking.order)
        np.testing.assert_array_equal(best[q], C[indices[q][ranking.order[0]]])
    assert rankings[0].pool_indices[0] in (2, 9, 0)  # 7 duplicates 2 and is listed after it: never first
    if rankings[0].pool_indices[0] == 2:
        assert list(rankings[0].pool_indices).index(2) < list(rankings[0].pool_indices).index(7)
    top = model.rank(X_test, sets, top_k=2)
    for q in range(7):
        np.testing.assert_array_equal(top[q].order, rankings[q].order[:2])
    for top_k in (4, 100):  # 100 > pool size: the whole pool, sorted
        shared_top = model.rank(X_test, CandidateSets.shared(C, 7), top_k=top_k)
        for q in range(7):
            expected = stable_order(S[q])[:top_k]
            np.testing.assert_array_equal(shared_top[q].pool_indices, expected)
            np.testing.assert_array_equal(shared_top[q].order, expected)
            _relative_close(shared_top[q].scores, S[q, expected], 1e-12)


def test_empty_candidate_sets_warn_and_give_empty_rankings():
    X, Y, X_test, C = _data(5)
    model = IOKR(alpha=1.0, input_kernel=Gaussian(0.3)).fit(X, Y)
    indices = [np.array([0, 1]), np.zeros(0, dtype=int), np.array([3]), np.zeros(0, dtype=int)] + [np.arange(4)] * 3
    sets = CandidateSets(C, indices)
    with pytest.warns(EmptyCandidateSetWarning, match=r"2 query\(ies\) have no candidates \(queries 1, 3\)"):
        rankings = model.rank(X_test, sets)
    assert rankings[1].order.size == 0 and rankings[1].scores.size == 0 and rankings[3].n_candidates == 0
    assert rankings[0].order.size == 2
    with pytest.warns(EmptyCandidateSetWarning):
        best = model.predict(X_test, sets)
    assert np.isnan(best[[1, 3]]).all() and not np.isnan(best[[0, 2, 4, 5, 6]]).any()
    with pytest.warns(EmptyCandidateSetWarning):
        model.rank(X_test, [C[:2], np.zeros((0, 10))] + [C[:3]] * 5)
    for top_k in (None, 3):  # the shared-pool top-k path warns as well
        with pytest.warns(EmptyCandidateSetWarning, match=r"7 query\(ies\) have no candidates"):
            rankings = model.rank(X_test, CandidateSets.shared(np.zeros((0, 10)), 7), top_k=top_k)
        assert all(r.order.size == 0 for r in rankings)


# -- chunking, dtypes, mutation --------------------------------------------------------------------------------------


@pytest.mark.parametrize("output_kernel", [Linear(), Tanimoto()], ids=["explicit", "kernel"])
@pytest.mark.parametrize("decoding", ["inner", "distance", "cosine"])
def test_chunked_equals_unchunked(output_kernel, decoding):
    X, Y, X_test, C = _data(6, m=23, c=57)
    model = IOKR(alpha=0.2, input_kernel=Gaussian(0.3), output_kernel=output_kernel, decoding=decoding).fit(X, Y)
    S = model.decision_function(X_test, C)
    subsets = [np.arange(q % 5, 57, 1 + q % 3) for q in range(23)]
    sets = CandidateSets(C, subsets)
    ranked = [r.order for r in model.rank(X_test, sets)]
    # A budget of a few KiB forces chunks of a couple of queries and candidates.
    tiny = 8 * 25 * 40 / 2**20
    shared = CandidateSets.shared(C, 23)
    top = [r.order for r in model.rank(X_test, shared, top_k=5)]
    with config_context(working_memory=tiny):
        S_global = model.decision_function(X_test, C)
        ranked_global = [r.order for r in model.rank(X_test, sets)]
        top_global = [r.order for r in model.rank(X_test, shared, top_k=5)]
    model_tiny = clone(model).set_params(working_memory=tiny).fit(X, Y)
    S_param = model_tiny.decision_function(X_test, C)
    # Chunks are other block shapes: BLAS may round the last bits differently (tests/reference, BLOCK_SHAPE_RTOL),
    # so scores agree to rounding and rankings up to ties within that rounding (near-tied candidates may swap).
    for S_chunked in (S_global, S_param):
        assert_close_to_scale(S_chunked, S)
    for q, (a, b, t) in enumerate(zip(top, top_global, [stable_order(s)[:5] for s in S], strict=True)):
        assert_rankings_agree(a, b, S[q])
        assert_rankings_agree(a, t, S[q])
    for q, (a, b) in enumerate(zip(ranked, ranked_global, strict=True)):
        assert_rankings_agree(a, b, S[q, subsets[q]])
        assert_rankings_agree(a, stable_order(S[q, subsets[q]]), S[q, subsets[q]])
    assert_rankings_agree([r.order for r in model_tiny.rank(X_test, sets)][0], ranked[0], S[0, subsets[0]])


@pytest.mark.parametrize("output_kernel", [Linear(), Tanimoto()], ids=["explicit", "kernel"])
@pytest.mark.parametrize("decoding", ["inner", "distance", "cosine"])
def test_float32_agrees_with_float64(output_kernel, decoding):
    X, Y, X_test, C = _data(7)
    model = IOKR(alpha=0.5, input_kernel=Gaussian(0.3), output_kernel=output_kernel, decoding=decoding)
    S64 = clone(model).fit(X, Y).decision_function(X_test, C)
    fitted32 = clone(model).fit(X.astype(np.float32), Y.astype(np.float32))
    S32 = fitted32.decision_function(X_test.astype(np.float32), C.astype(np.float32))
    assert S32.dtype == np.float32
    _relative_close(S32, S64, 2e-4)
    S_mixed = fitted32.decision_function(X_test, C)  # float64 candidates are scored in float64
    assert S_mixed.dtype == np.float64
    _relative_close(S_mixed, S64, 2e-4)


def test_inputs_are_never_mutated():
    X, Y, X_test, C = _data(8)
    X32 = X_test.astype(np.float32)
    Kx = Gaussian(0.3)(X)
    arrays = [X, Y, X_test, C, X32, Kx]
    copies = [a.copy() for a in arrays]
    sets_arrays = [C[:4].copy(), C[3:9].copy()] + [C.copy()] * 5
    sets_copies = [s.copy() for s in sets_arrays]
    for flags in (ALL_FLAGS[0], ALL_FLAGS[3]):
        for output_kernel in (Linear(), Tanimoto()):
            model = IOKR(alpha=0.5, input_kernel=Gaussian(0.3), output_kernel=output_kernel, **flags).fit(X, Y)
            model.decision_function(X_test, C)
            model.decision_function(X32, C.astype(np.float32))
            model.rank(X_test, sets_arrays, top_k=3)
            model.predict(X_test, sets_arrays)
            if output_kernel.has_explicit_features:
                model.predict_features(X_test)
        pre = IOKR(alpha=0.5, input_kernel="precomputed", **flags).fit(Kx, Y)
        pre.decision_function(Gaussian(0.3)(X_test, X), C, input_diag=np.ones(7))
    for a, b in zip(arrays + sets_arrays, copies + sets_copies, strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("flags", ALL_FLAGS)
@pytest.mark.parametrize("decoding", ["inner", "distance", "cosine"])
def test_precomputed_input_equals_kernel_object(flags, decoding):
    X, Y, X_test, C = _data(9)
    kernel = Gaussian(gamma=0.3)
    reference = IOKR(alpha=0.4, input_kernel=kernel, output_kernel=Tanimoto(), decoding=decoding, **flags).fit(X, Y)
    expected = reference.decision_function(X_test, C)
    model = IOKR(alpha=0.4, input_kernel="precomputed", output_kernel=Tanimoto(), decoding=decoding, **flags)
    model.fit(kernel(X), Y)
    S = model.decision_function(kernel(X_test, X), C, input_diag=kernel.diag(X_test))
    _relative_close(S, expected, 1e-10)
    # A Precomputed kernel object over all objects (training first) takes integer indices as inputs.
    everything = Precomputed(kernel(np.vstack([X, X_test])))
    by_index = IOKR(alpha=0.4, input_kernel=everything, output_kernel=Tanimoto(), decoding=decoding, **flags)
    by_index.fit(np.arange(25)[:, None], Y)
    _relative_close(by_index.decision_function(np.arange(25, 32)[:, None], C), expected, 1e-10)


# -- bad input -------------------------------------------------------------------------------------------------------


def _with(array, value, index=(1, 2)):
    out = np.array(array, dtype=float, copy=True)
    out[index] = value
    return out


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_inputs_are_rejected(bad):
    X, Y, X_test, C = _data(10)
    Kx = Gaussian(0.3)(X)
    with pytest.raises(ValueError, match="'X' contains NaN or infinity"):
        IOKR().fit(_with(X, bad), Y)
    with pytest.raises(ValueError, match="'Y' contains NaN or infinity"):
        IOKR().fit(X, _with(Y, bad))
    with pytest.raises(ValueError, match="'X' contains NaN or infinity"):
        IOKR(input_kernel="precomputed").fit(_with(Kx, bad, (2, 2)), Y)
    model = IOKR(output_kernel=Tanimoto()).fit(X, Y)
    with pytest.raises(ValueError, match="'X' contains NaN or infinity"):
        model.decision_function(_with(X_test, bad), C)
    with pytest.raises(ValueError, match="'C' contains NaN or infinity"):
        model.decision_function(X_test, _with(C, bad))
    with pytest.raises(ValueError, match="'candidate_sets' contains NaN or infinity"):
        model.rank(X_test, CandidateSets(_with(C, bad), [np.arange(15)] * 7))
    with pytest.raises(ValueError, match="'candidate_sets' contains NaN or infinity"):
        model.predict(X_test, [_with(C, bad)] * 7)
    pre = IOKR(input_kernel="precomputed").fit(Kx, Y)
    with pytest.raises(ValueError, match="'input_diag' contains NaN or infinity"):
        pre.decision_function(Gaussian(0.3)(X_test, X), C, input_diag=_with(np.ones((1, 7)), bad, (0, 1))[0])


def test_shape_and_feature_count_errors():
    X, Y, X_test, C = _data(11)
    model = IOKR().fit(X, Y)
    with pytest.raises(ValueError, match="X has 3 features, but IOKR is expecting 4 features as input"):
        model.decision_function(X_test[:, :3], C)
    with pytest.raises(ValueError, match=r"'C' must have shape \(n_candidates, 10\), got \(15, 9\)"):
        model.decision_function(X_test, C[:, :9])
    with pytest.raises(ValueError, match="'candidate_sets' has candidates with 9 features, but the model was fitted "
                                         "on outputs with 10 features"):
        model.rank(X_test, [C[:, :9]] * 7)
    with pytest.raises(ValueError, match="'candidate_sets' holds 6 sets, but 7 queries were given"):
        model.predict(X_test, [C] * 6)
    with pytest.raises(ValueError, match="'X' has 25 examples but 'Y' has 24"):
        IOKR().fit(X, Y[:24])
    with pytest.raises(ValueError, match=r"'Y' must be a 2-D array of output features \(n, p\), got shape \(25,\)"):
        IOKR().fit(X, Y[:, 0])
    with pytest.raises(ValueError, match="'X' must be a 2-D array"):
        IOKR().fit(X[:, 0], Y)
    with pytest.raises(ValueError, match="'top_k' must be a positive int or None, got 0"):
        model.rank(X_test, [C] * 7, top_k=0)


def test_precomputed_gram_errors():
    X, Y, X_test, C = _data(12)
    Kx = Gaussian(0.3)(X)
    with pytest.raises(ValueError, match=r"'X' must be a square Gram matrix, got shape \(25, 24\)"):
        IOKR(input_kernel="precomputed").fit(Kx[:, :24], Y)
    asymmetric = Kx.copy()
    asymmetric[0, 1] += 0.5
    with pytest.raises(ValueError, match="'X' must be symmetric"):
        IOKR(input_kernel="precomputed").fit(asymmetric, Y)
    model = IOKR(input_kernel="precomputed").fit(Kx, Y)
    with pytest.raises(ValueError, match=r"'X' must be the \(n_test, n_train\) kernel.*got 24 columns for 25"):
        model.decision_function(Gaussian(0.3)(X_test, X)[:, :24], C, input_diag=np.ones(7))
    with pytest.raises(ValueError, match="pass 'input_diag'"):
        model.decision_function(Gaussian(0.3)(X_test, X), C)
    with pytest.raises(ValueError, match=r"'input_diag' must have shape \(7,\), got \(6,\)"):
        model.decision_function(Gaussian(0.3)(X_test, X), C, input_diag=np.ones(6))
    with pytest.raises(ValueError, match="'output_kernel' parameter cannot be 'precomputed'"):
        IOKR(output_kernel="precomputed").fit(X, Y)


@pytest.mark.parametrize(
    "params, error, match",
    [
        (dict(alpha=0.0), ValueError, r"The 'alpha' parameter of IOKR must be a float in the range \(0, inf\). Got 0"),
        (dict(alpha=-1), ValueError, "'alpha' parameter of IOKR"),
        (dict(alpha=np.nan), ValueError, "'alpha' parameter of IOKR"),
        (dict(alpha="1"), ValueError, "'alpha' parameter of IOKR"),
        (dict(input_kernel="gauss"), ValueError, "Unknown input_kernel 'gauss'; expected a Kernel object"),
        (dict(output_kernel="jaccard"), ValueError, "Unknown output_kernel 'jaccard'"),
        (dict(input_kernel=3), TypeError, "'input_kernel' parameter must be a Kernel object"),
        (dict(decoding="argmax"), ValueError, r"'decoding' parameter of IOKR must be one of"),
        (dict(working_memory=0), ValueError, "'working_memory' must be a positive number of MiB"),
        (dict(input_kernel=Gaussian(gamma=-1.0)), ValueError, "'gamma' parameter of Gaussian"),
    ],
)
def test_invalid_parameters_fail_in_fit(params, error, match):
    X, Y, _, _ = _data(13)
    model = IOKR(**params)  # __init__ never validates
    with pytest.raises(error, match=match):
        model.fit(X, Y)


@pytest.mark.parametrize("method", ["decision_function", "rank", "predict", "predict_features"])
def test_calling_before_fit_raises_not_fitted(method):
    X, Y, X_test, C = _data(14)
    args = {"decision_function": (X_test, C), "rank": (X_test, [C] * 7), "predict": (X_test, [C] * 7),
            "predict_features": (X_test,)}[method]
    with pytest.raises(NotFittedError, match="IOKR instance is not fitted yet"):
        getattr(IOKR(), method)(*args)


def test_singular_input_gram_is_regularized_without_warning():
    X, Y, X_test, C = _data(15)
    X = np.repeat(X[:5], 5, axis=0)  # duplicated inputs: singular Gram, alpha > 0 keeps the system definite
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = IOKR(alpha=1e-3, input_kernel=Gaussian(0.3), **NO_TRANSFORM).fit(X, Y)
    assert model.jitter_ == 0.0


# -- scikit-learn estimator contract ---------------------------------------------------------------------------------


SKLEARN_CHECKS = IOKR_LIKE_SKLEARN_CHECKS
# Not applicable (IOKR predicts by decoding over candidates, predict(X, candidate_sets), and decision_function(X, C)
# needs candidates): every check that calls predict(X) / decision_function(X) / score, e.g. check_estimators_unfitted,
# the predict half of check_estimators_nan_inf, check_estimators_dtypes, check_estimators_pickle, check_fit_idempotent,
# check_fit2d_predict1d, check_methods_subset_invariance, check_methods_sample_order_invariance,
# check_n_features_in_after_fitting, check_regressor_multioutput, check_dict_unchanged; check_complex_data passes a
# 1-D y (complex X is tested below); check_dtype_object (object arrays are refused on purpose);
# check_param_validation (no _parameter_constraints yet); check_dataframe_column_names_consistency (no
# feature_names_in_). The properties behind them (NotFittedError, NaN/inf at prediction, dtypes, feature-count
# checks, chunking invariance) are tested directly in this module.


@pytest.mark.parametrize("check_name", SKLEARN_CHECKS)
@pytest.mark.parametrize(
    "estimator",
    [IOKR(), IOKR(input_kernel=Gaussian(0.5), output_kernel=Tanimoto(), decoding="cosine"),
     IOKR(input_kernel="precomputed", output_kernel=GaussianTanimoto(0.5))],
    ids=["default", "kernels", "precomputed"],
)
def test_sklearn_estimator_checks(check_name, estimator):
    getattr(estimator_checks, check_name)(type(estimator).__name__, clone(estimator))


def test_complex_inputs_are_rejected():
    X, Y, X_test, C = _data(17)
    with pytest.raises(ValueError, match="'X' must be real-valued; Complex data not supported"):
        IOKR().fit(X + 1j, Y)
    with pytest.raises(ValueError, match="'Y' must be real-valued"):
        IOKR().fit(X, Y + 0j)
    with pytest.raises(ValueError, match="'C' must be real-valued"):
        IOKR(output_kernel=Tanimoto()).fit(X, Y).decision_function(X_test, C + 1j)


def test_clone_and_nested_params():
    model = IOKR(alpha=0.3, input_kernel=Gaussian(gamma=0.1), output_kernel=GaussianTanimoto(gamma=2.0))
    params = model.get_params()
    assert params["input_kernel__gamma"] == 0.1 and params["output_kernel__gamma"] == 2.0
    copy = clone(model).set_params(input_kernel__gamma=0.7)
    assert copy.input_kernel.gamma == 0.7 and model.input_kernel.gamma == 0.1
    X, Y, X_test, C = _data(16)
    model.fit(X, Y)
    assert model.get_params()["input_kernel__gamma"] == 0.1  # fit does not touch parameters
    assert model.n_features_in_ == 4 and model.n_output_features_ == 10


@pytest.mark.parametrize("output_kernel", ["linear", Polynomial(degree=1, gamma=1.0, coef0=0.0)],
                         ids=["explicit", "kernel"])  # the same linear kernel, with and without explicit features
def test_cosine_scores_of_a_zero_prediction_do_not_depend_on_the_batch(output_kernel):
    # Regression (found by tests/properties/test_prop_iokr.py): with one centered and normalized input feature every
    # input is +-1 and h(x) cancels to rounding noise (~1e-15); cosine decoding normalized that noise to scores of
    # +-1 that changed with the batch (-0.99633 alone, -0.99902 with another query), the chunking and the training
    # order. Such h(x) are now scored as the zero vector.
    X = np.array([[0.34558419], [0.82161814], [0.33043708], [-1.30315723]])
    u = np.array([[0.1], [-0.7], [-2.0], [-0.6]])
    Y = u @ np.array([[-0.03, 1.0, -4.7]])
    X_test = np.array([[1.00672432], [-2.71116248]])
    model = IOKR(alpha=0.05, decoding="cosine", output_kernel=output_kernel).fit(X, Y)
    both = model.decision_function(X_test, Y[:2])
    alone = model.decision_function(X_test[:1], Y[1:2])
    np.testing.assert_array_equal(both, 0.0)
    np.testing.assert_array_equal(alone, 0.0)


def test_rank_candidate_term_adds_a_function_of_the_raw_output_kernel_block():
    """``candidate_term`` sees ``k_y(C, Y_train)`` untransformed and its values are added to the scores, whatever
    the chunking; explicit output kernels refuse it."""
    rng = np.random.default_rng(3)
    X, Y = rng.normal(size=(20, 4)), rng.integers(0, 3, size=(20, 7)).astype(np.float64)
    C = rng.integers(0, 3, size=(11, 7)).astype(np.float64)
    model = IOKR(alpha=0.5, output_kernel=Tanimoto(), decoding="distance").fit(X, Y)
    seen = []

    def term(block):
        seen.append(block.copy())
        return block.max(axis=1) ** 2

    expected_term = np.array([max(float(c @ y) / float(c @ c + y @ y - c @ y) for y in Y) ** 2 for c in C])
    for budget in (None, 0.002):  # 0.002 MiB: a few candidates per block
        model.set_params(working_memory=budget)
        plain = model.rank(X[:3], [C, C[2:], C[:1]])
        with_term = model.rank(X[:3], [C, C[2:], C[:1]], candidate_term=term)
        for q, rows in enumerate((np.arange(11), np.arange(2, 11), np.arange(1))):
            a = np.empty(rows.size)
            a[plain[q].order] = plain[q].scores
            b = np.empty(rows.size)
            b[with_term[q].order] = with_term[q].scores
            np.testing.assert_allclose(b, a + expected_term[rows], rtol=1e-10, atol=1e-12)
    assert all(block.shape[1] == 20 for block in seen) and min(block.shape[0] for block in seen) < 9  # chunked
    linear = IOKR(alpha=0.5).fit(X, Y)
    with pytest.raises(ValueError, match="'candidate_term' needs a kernel output side"):
        linear.rank(X[:2], [C, C], candidate_term=term)


@pytest.mark.parametrize("decoding", ["inner", "distance"])
@pytest.mark.parametrize("bad_term", [lambda K: K.max(), lambda K: K.max(axis=1, keepdims=True), lambda K: K,
                                      lambda K: K.max(axis=1)[1:]])
def test_candidate_term_of_the_wrong_shape_is_refused_by_name(decoding, bad_term):
    """A term that is not one value per candidate (a scalar, a column, the block itself, too short) was broadcast:
    a scalar silently shifted every score, the others failed deep in the scoring with numpy broadcasting errors."""
    rng = np.random.default_rng(4)
    X, Y = rng.normal(size=(12, 3)), rng.integers(0, 3, size=(12, 5)).astype(np.float64)
    C = rng.integers(0, 3, size=(12, 5)).astype(np.float64)  # as many candidates as training outputs
    model = IOKR(alpha=0.5, output_kernel=Tanimoto(), decoding=decoding).fit(X, Y)
    with pytest.raises(ValueError, match=r"'candidate_term' must return one value per candidate, shape \(12,\)"):
        model.rank(X[:2], [C, C], candidate_term=bad_term)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
@pytest.mark.parametrize("top_k", [None, 3])
def test_non_finite_candidate_term_is_refused_by_name(bad, top_k):
    """One NaN term made a shared pool's top-k skip the candidate's whole block (its row maximum is NaN): every
    query came back with no candidates (-1 rows, -inf scores) and no error, while the full ranking kept them."""
    rng = np.random.default_rng(5)
    X, Y = rng.normal(size=(15, 3)), rng.integers(0, 3, size=(15, 6)).astype(np.float64)
    C = rng.integers(0, 3, size=(10, 6)).astype(np.float64)
    model = IOKR(alpha=0.5, output_kernel=Tanimoto()).fit(X, Y)

    def term(block):
        values = block.max(axis=1)
        values[0] = bad
        return values

    with pytest.raises(ValueError, match="'candidate_term' returned non-finite values"):
        model.rank(X[:2], CandidateSets.shared(C, 2), top_k=top_k, candidate_term=term)


def test_candidate_term_cannot_modify_the_block_the_scores_are_computed_from():
    """The term reads the raw block before the scoring transforms a copy of it: a term that changed the block in
    place (``block **= 2``) silently changed every candidate's score as well; the block is handed over read-only."""
    rng = np.random.default_rng(6)
    X, Y = rng.normal(size=(15, 3)), rng.integers(0, 3, size=(15, 6)).astype(np.float64)
    C = rng.integers(0, 3, size=(10, 6)).astype(np.float64)
    model = IOKR(alpha=0.5, output_kernel=Tanimoto(), decoding="inner").fit(X, Y)

    def term(block):
        block **= 2
        return block.max(axis=1)

    with pytest.raises(ValueError, match="read-only"):
        model.rank(X[:2], [C, C], candidate_term=term)


@pytest.mark.parametrize("decoding", ["inner", "distance", "cosine"])
@pytest.mark.parametrize("transform", [(False, False), (True, True)])
@pytest.mark.parametrize("pool_kind", ["float64", "float32", "packed"])
def test_candidate_term_equals_brute_force_on_every_scoring_path(decoding, transform, pool_kind):
    """Scores with the term = scores without it + f(k_y(C, Y)) from an explicitly computed raw block, for every
    decoding, with the output transforms on and off, on dense, float32 and bit-packed (binary Tanimoto counts)
    pools, through per-query sets (repeated and empty ones) and a shared pool's top-k, in blocks of a few rows."""
    from iokr.decoding import PackedBinaryFeatures, top_mean  # noqa: PLC0415 - only here

    rng = np.random.default_rng(8)
    X, Y = rng.normal(size=(18, 4)), (rng.random((18, 12)) < 0.3).astype(np.float64)
    Y[3] = 0.0
    bits = rng.random((11, 12)) < 0.3
    bits[0], bits[5] = False, Y[2]
    pool = {"float64": bits.astype(np.float64), "float32": bits.astype(np.float32),
            "packed": PackedBinaryFeatures.from_dense(bits)}[pool_kind]
    center, normalize = transform
    model = IOKR(alpha=0.3, output_kernel=GaussianTanimoto(gamma=1.5), decoding=decoding, center_output=center,
                 normalize_output=normalize, working_memory=0.003).fit(X, Y)

    def term(block):
        return 0.4 * top_mean(block, 2) + block[:, 0]

    expected = term(GaussianTanimoto(gamma=1.5).compute(bits.astype(np.float64), Y))
    tol = 1e-10 if pool_kind == "float64" else 2e-5
    lists = [np.arange(11), np.array([3, 3, 5, 0]), np.array([], dtype=np.intp)]
    sets = CandidateSets(pool, lists)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EmptyCandidateSetWarning)
        plain, with_term = model.rank(X[:3], sets), model.rank(X[:3], sets, candidate_term=term)
    for a, b, rows in zip(plain, with_term, lists, strict=True):
        sa, sb = np.empty(rows.size), np.empty(rows.size)
        sa[a.order], sb[b.order] = a.scores, b.scores
        np.testing.assert_allclose(sb, sa + expected[rows], rtol=tol, atol=tol)
    full = model.decision_function(X[:3], bits.astype(np.float64)) + expected
    for q, r in enumerate(model.rank(X[:3], CandidateSets.shared(pool, 3), top_k=4, candidate_term=term)):
        np.testing.assert_allclose(r.scores, np.sort(full[q])[::-1][:4], rtol=tol, atol=tol)
        np.testing.assert_allclose(full[q][r.pool_indices], r.scores, rtol=tol, atol=tol)


@pytest.mark.parametrize("output_kernel", ["linear", "gaussian"])
def test_prediction_norms_against_the_naive_closed_form(output_kernel):
    """``||h(x)||`` of IOKR's predictions, by the naive formulas: explicit ``h = k(x)^T (K + alpha I)^{-1} Y`` for a
    linear output kernel, ``c^T K_y c`` with ``c = (K + alpha I)^{-1} k(x)`` for a Gaussian one; blocks of any size
    (the working-memory budget) give the same norms."""
    rng = np.random.default_rng(3)
    X, Y, X_test = rng.normal(size=(30, 4)), rng.normal(size=(30, 6)), rng.normal(size=(7, 4))
    out = Linear() if output_kernel == "linear" else Gaussian(gamma=0.2)
    model = IOKR(alpha=0.5, input_kernel=Gaussian(gamma=0.3), output_kernel=out, center_input=False,
                 normalize_input=False, center_output=False, normalize_output=False).fit(X, Y)
    K = np.exp(-0.3 * ((X[:, None] - X[None]) ** 2).sum(-1))
    k = np.exp(-0.3 * ((X_test[:, None] - X[None]) ** 2).sum(-1))
    C = np.linalg.solve(K + 0.5 * np.eye(30), k.T)  # (n, m) dual coefficients
    if output_kernel == "linear":
        expected = np.linalg.norm(C.T @ Y, axis=1)
    else:
        K_y = np.exp(-0.2 * ((Y[:, None] - Y[None]) ** 2).sum(-1))
        expected = np.sqrt(np.einsum("im,ij,jm->m", C, K_y, C))
    np.testing.assert_allclose(model.prediction_norms(X_test), expected, rtol=1e-10)
    small = clone(model).set_params(working_memory=1e-3).fit(X, Y)
    np.testing.assert_allclose(small.prediction_norms(X_test), expected, rtol=1e-10)


@pytest.mark.parametrize("estimator", ["IOKR", "MPIOKR", "SketchedIOKR"])
def test_prediction_norms_are_those_of_the_distance_scorer(estimator):
    """Every IOKR-family estimator: ``prediction_norms`` is the norm of the distance rule's query representation
    ``2 h(x)`` halved, as the scorer forms it."""
    rng = np.random.default_rng(4)
    X, Y, X_test = rng.normal(size=(25, 3)), rng.integers(0, 2, size=(25, 8)).astype(float), rng.normal(size=(5, 3))
    params = {"alpha": 0.3, "input_kernel": Gaussian(gamma=0.5), "output_kernel": Tanimoto()}
    if estimator == "MPIOKR":
        model = MPIOKR(**params, approximation="joint").fit(X, Y, CandidateSets(Y, [np.arange(25)] * 25))
    else:
        model = {"IOKR": IOKR, "SketchedIOKR": SketchedIOKR}[estimator](**params).fit(X, Y)
    scorer = model.scorer(X_test)
    expected = model.output_.query_norms(0.5 * scorer.query_block(slice(0, 5)))
    np.testing.assert_allclose(model.prediction_norms(X_test), expected, rtol=1e-12)

"""Brute-force references for the test suite: naive formulas written independently of the library.

Everything here is deliberately slow and obvious (double loops over pairs, explicit feature maps, dense
``np.linalg.solve``), so that each fast path in ``iokr`` can be checked against a formula a reader can verify by eye.
Import from any test module as ``from reference import ...`` (``tests/`` is on ``sys.path`` through
``tests/conftest.py``).
"""

from __future__ import annotations

import itertools

import numpy as np

# -- kernels, one pair at a time ---------------------------------------------------------------------------------


def linear_pair(a, b):
    return float(np.dot(a, b))


def polynomial_pair(a, b, degree=2, gamma=1.0, coef0=1.0):
    return float((gamma * np.dot(a, b) + coef0) ** degree)


def gaussian_pair(a, b, gamma=1.0):
    return float(np.exp(-gamma * np.sum((a - b) ** 2)))


def tanimoto_inner_pair(a, b):
    """``<a,b> / (|a|^2 + |b|^2 - <a,b>)``, with two all-zero vectors counted as identical (1)."""
    dot = float(np.dot(a, b))
    den = float(np.dot(a, a) + np.dot(b, b) - dot)
    return 1.0 if den == 0 else dot / den


def tanimoto_minmax_pair(a, b):
    """``sum min(a, b) / sum max(a, b)`` for non-negative vectors; 1 for two all-zero vectors."""
    den = float(np.sum(np.maximum(a, b)))
    return 1.0 if den == 0 else float(np.sum(np.minimum(a, b))) / den


def gaussian_tanimoto_pair(a, b, gamma=1.0, form="inner"):
    t = tanimoto_inner_pair(a, b) if form == "inner" else tanimoto_minmax_pair(a, b)
    return float(np.exp(-gamma * (2.0 - 2.0 * t)))


def naive_gram(pair, A, B=None, **params):
    """``K[i, j] = pair(A[i], B[j])`` by a double loop, in float64."""
    A = np.asarray(A, dtype=np.float64)
    B = A if B is None else np.asarray(B, dtype=np.float64)
    K = np.empty((A.shape[0], B.shape[0]))
    for i in range(A.shape[0]):
        for j in range(B.shape[0]):
            K[i, j] = pair(A[i], B[j], **params)
    return K


def naive_normalized(K_ab, diag_a, diag_b):
    """Cosine normalization by a double loop; zero-diagonal points get similarity 0."""
    out = np.zeros_like(K_ab, dtype=np.float64)
    for i in range(K_ab.shape[0]):
        for j in range(K_ab.shape[1]):
            if diag_a[i] > 0 and diag_b[j] > 0:
                out[i, j] = K_ab[i, j] / np.sqrt(diag_a[i] * diag_b[j])
    return out


# -- explicit feature maps ---------------------------------------------------------------------------------------


def polynomial2_features(X, gamma=1.0, coef0=1.0):
    """Explicit map with ``<f(a), f(b)> = (gamma <a, b> + coef0) ** 2``.

    ``(g <a,b> + c)^2 = c^2 + 2 g c <a,b> + g^2 sum_{i,j} a_i a_j b_i b_j``, hence the features
    ``[c, sqrt(2 g c) a, g vec(a a^T)]``.
    """
    X = np.asarray(X, dtype=np.float64)
    n, d = X.shape
    rows = []
    for x in X:
        outer = [gamma * x[i] * x[j] for i, j in itertools.product(range(d), range(d))]
        rows.append(np.concatenate([[coef0], np.sqrt(2.0 * gamma * coef0) * x, outer]))
    return np.array(rows).reshape(n, 1 + d + d * d)


def center_normalize(train, *others, center=True, normalize=True):
    """Explicit feature-space transform: subtract the training mean, then scale each row to unit norm.

    Returns the transformed ``train`` followed by every array of ``others`` transformed with the training mean.
    Zero rows stay zero.
    """
    train = np.asarray(train, dtype=np.float64)
    mean = train.mean(axis=0) if center else np.zeros(train.shape[1])
    out = []
    for F in (train, *others):
        F = np.asarray(F, dtype=np.float64) - mean
        if normalize:
            G = np.zeros_like(F)
            for i in range(F.shape[0]):
                norm = np.sqrt(np.dot(F[i], F[i]))
                if norm > 0:
                    G[i] = F[i] / norm
            F = G
        out.append(F)
    return out


# -- IOKR closed forms -------------------------------------------------------------------------------------------


def iokr_inner_scores(Kx_train, Kx_test, Ky_train_cand, alpha):
    """The brief's ``alpha_x(x)^T (K_x + lambda I)^{-1} alpha_y(y)`` for all queries and candidates.

    Kx_train : (n, n); Kx_test : (m, n) = k_x(x_test, x_train); Ky_train_cand : (n, c) = k_y(y_train, y_cand).
    """
    n = Kx_train.shape[0]
    M_alpha_y = np.linalg.solve(Kx_train + alpha * np.eye(n), Ky_train_cand)
    S = np.empty((Kx_test.shape[0], Ky_train_cand.shape[1]))
    for q in range(Kx_test.shape[0]):
        for c in range(Ky_train_cand.shape[1]):
            S[q, c] = np.dot(Kx_test[q], M_alpha_y[:, c])
    return S


def ridge_primal(Phi, Psi, alpha):
    """Multi-output ridge regression in the primal: ``W = (Phi^T Phi + alpha I)^{-1} Phi^T Psi``, shape (d, p)."""
    d = Phi.shape[1]
    return np.linalg.solve(Phi.T @ Phi + alpha * np.eye(d), Phi.T @ Psi)


# -- ranking -----------------------------------------------------------------------------------------------------


def stable_order(scores):
    """Positions by decreasing score, ties by increasing position, by a plain Python sort."""
    return np.array(sorted(range(len(scores)), key=lambda i: (-float(scores[i]), i)), dtype=np.intp)


#: Agreement of float64 results computed through different block shapes, chunkings or code paths, relative to the
#: scale of the results (their largest magnitude). BLAS kernels (OpenBLAS's Haswell, SkylakeX, Zen, Prescott...) sum
#: a GEMM's products in an order that depends on the block shape, and GEMV differs from GEMM; the last bits of the
#: same score then differ by a few ulp of the terms summed (about 1e-15 of the scale), never by 1e-13.
BLOCK_SHAPE_RTOL = 1e-13


def assert_close_to_scale(actual, expected, rtol=BLOCK_SHAPE_RTOL, err_msg=""):
    """``|actual - expected| <= rtol * max|expected|`` elementwise: equality up to rounding at the results' scale.

    For results that are mathematically equal but computed through different block shapes or code paths; a plain
    ``rtol`` would demand more of scores near zero than their terms' rounding allows.
    """
    actual, expected = np.asarray(actual, dtype=np.float64), np.asarray(expected, dtype=np.float64)
    assert actual.shape == expected.shape, f"shapes differ: {actual.shape} != {expected.shape}. {err_msg}"
    scale = float(np.abs(expected).max()) if expected.size else 0.0
    np.testing.assert_allclose(actual, expected, rtol=0.0, atol=rtol * max(scale, np.finfo(np.float64).tiny),
                               err_msg=err_msg)


def assert_rankings_agree(order_a, order_b, scores, rtol=BLOCK_SHAPE_RTOL):
    """Two rankings (candidate positions, best first) of the same scores agree up to ties within ``rtol``.

    Both must be orders by decreasing ``scores`` up to the tolerance, and wherever they differ the two candidates'
    scores must be within ``rtol * max|scores|`` of each other: only candidates whose scores are equal to rounding
    may change places (computed through other block shapes, near-ties may swap; a real difference may not).
    """
    scores = np.asarray(scores, dtype=np.float64)
    a, b = np.asarray(order_a), np.asarray(order_b)
    assert a.shape == b.shape, f"rankings of different lengths: {a.shape} != {b.shape}"
    tol = rtol * max(float(np.abs(scores).max()) if scores.size else 0.0, np.finfo(np.float64).tiny)
    for name, order in (("first", a), ("second", b)):
        assert np.all(np.diff(scores[order]) <= tol), f"the {name} ranking is not by decreasing score"
    gap = np.abs(scores[a] - scores[b])
    assert np.all(gap <= tol), (f"rankings differ beyond ties: position {int(np.argmax(gap))} holds candidates "
                                f"{a[np.argmax(gap)]} and {b[np.argmax(gap)]}, scores differ by {gap.max():.3g} "
                                f"> {tol:.3g}")


def rank_of_true(scores, true_index, ties):
    """1-based rank counting candidates one by one."""
    higher = sum(1 for s in scores if s > scores[true_index])
    equal = sum(1 for i, s in enumerate(scores) if s == scores[true_index] and i != true_index)
    if ties == "optimistic":
        return higher + 1.0
    if ties == "pessimistic":
        return higher + 1.0 + equal
    return higher + 1.0 + equal / 2.0


# -- metrics -----------------------------------------------------------------------------------------------------


def concordance_pairs(y_true, y_score):
    """O(n^2) concordance index: pairs with different y_true, score ties count 1/2."""
    num = 0.0
    den = 0
    for i in range(len(y_true)):
        for j in range(len(y_true)):
            if y_true[i] > y_true[j]:
                den += 1
                if y_score[i] > y_score[j]:
                    num += 1.0
                elif y_score[i] == y_score[j]:
                    num += 0.5
    return num / den


def example_f1_loop(Y_true, Y_pred):
    total = 0.0
    for t, p in zip(Y_true, Y_pred, strict=True):
        t_set = {j for j, v in enumerate(t) if v}
        p_set = {j for j, v in enumerate(p) if v}
        total += 1.0 if not t_set and not p_set else 2.0 * len(t_set & p_set) / (len(t_set) + len(p_set))
    return total / len(Y_true)


def hamming_loop(Y_true, Y_pred):
    wrong = 0
    count = 0
    for t, p in zip(Y_true, Y_pred, strict=True):
        for a, b in zip(t, p, strict=True):
            wrong += bool(a) != bool(b)
            count += 1
    return wrong / count


def kron_ridge_leave_row_and_column_out(K1, K2, Y, alpha):
    """Setting D by brute force: for each ``(i, j)`` solve the explicit Kronecker ridge system on the other rows
    and columns, ``(K2_CC kron K1_RR + alpha I) vec(A) = vec(Y_RC)``, and predict ``K1[i, R] A K2[C, j]``."""
    n1, n2 = Y.shape
    out = np.empty(Y.shape)
    for i in range(n1):
        R = np.delete(np.arange(n1), i)
        for j in range(n2):
            C = np.delete(np.arange(n2), j)
            Kbar = np.kron(K2[np.ix_(C, C)], K1[np.ix_(R, R)])
            a = np.linalg.solve(Kbar + alpha * np.eye(Kbar.shape[0]), Y[np.ix_(R, C)].ravel(order="F"))
            out[i, j] = K1[i, R] @ a.reshape((R.size, C.size), order="F") @ K2[C, j]
    return out


# scikit-learn contract checks that apply to IOKR-like estimators (predict needs candidates, so the checks that
# call predict(X) or decision_function(X) without them do not; see tests/estimators/test_iokr.py).
IOKR_LIKE_SKLEARN_CHECKS = [
    "check_parameters_default_constructible",
    "check_no_attributes_set_in_init",
    "check_estimators_overwrite_params",
    "check_dont_overwrite_parameters",
    "check_get_params_invariance",
    "check_set_params",
    "check_do_not_raise_errors_in_init_or_set_params",
    "check_estimator_cloneable",
    "check_estimator_repr",
    "check_estimator_tags_renamed",
    "check_valid_tag_types",
    "check_fit_score_takes_y",
    "check_estimators_fit_returns_self",
    "check_fit_check_is_fitted",
    "check_n_features_in",
    "check_fit1d",
    "check_fit2d_1sample",
    "check_fit2d_1feature",
    "check_estimators_empty_data_messages",
    "check_requires_y_none",
    "check_supervised_y_no_nan",
    "check_positive_only_tag_during_fit",
    "check_estimator_sparse_array",
    "check_estimator_sparse_matrix",
    "check_estimator_sparse_tag",
    "check_nonsquare_error",
    "check_readonly_memmap_input",
    "check_inplace_ensure_writeable",
]


# -- scikit-learn checks that cannot apply, with the reason (tests/test_sklearn_contract.py xfails them) -------------

_NEEDS_CANDIDATES = (
    "predict(X, candidate_sets) and decision_function(X, C) need candidates; the check calls them with X alone. "
    "The property behind it is tested directly (tests/estimators/test_iokr.py, tests/properties/test_prop_iokr.py)"
)
_OBJECT_ARRAYS = (
    "object arrays are refused on purpose with a TypeError naming the parameter: an object array may hide strings, "
    "dicts or mixed types, so the library never converts one element by element (convert with X.astype(float))"
)
_FIT_CHECKS = [  # checks that call fit(X, y) with a 2-D numeric X and a numeric y (legacy + API sets, sklearn 1.9)
    "check_complex_data", "check_dict_unchanged", "check_dont_overwrite_parameters", "check_dtype_object",
    "check_estimator_sparse_array", "check_estimator_sparse_matrix", "check_estimator_sparse_tag",
    "check_estimators_dtypes", "check_estimators_empty_data_messages", "check_estimators_fit_returns_self",
    "check_estimators_nan_inf", "check_estimators_overwrite_params", "check_estimators_pickle",
    "check_f_contiguous_array_estimator", "check_fit1d", "check_fit2d_1feature", "check_fit2d_1sample",
    "check_fit2d_predict1d", "check_fit_check_is_fitted", "check_fit_idempotent", "check_fit_score_takes_y",
    "check_methods_sample_order_invariance", "check_methods_subset_invariance", "check_n_features_in",
    "check_n_features_in_after_fitting", "check_pipeline_consistency", "check_positive_only_tag_during_fit",
    "check_readonly_memmap_input",
]


def _all(checks, reason, **overrides):
    return {**{check: reason for check in checks}, **overrides}


# IOKR, SketchedIOKR, IOKRCV: fit(X, Y) follows the contract; decoding needs candidates. Together with
# IOKR_LIKE_SKLEARN_CHECKS (the checks that apply) this covers every check sklearn generates for them.
IOKR_LIKE_NOT_APPLICABLE = {
    **{check: _NEEDS_CANDIDATES for check in [
        "check_estimators_unfitted", "check_n_features_in_after_fitting", "check_estimators_dtypes",
        "check_estimators_pickle", "check_f_contiguous_array_estimator", "check_methods_sample_order_invariance",
        "check_methods_subset_invariance", "check_dict_unchanged", "check_fit_idempotent", "check_fit2d_predict1d",
        "check_estimators_nan_inf"]},
    "check_complex_data": "the check passes a 1-D y, but Y must be a 2-D array of output features (complex X and Y "
                          "are refused with 'Complex data not supported': test_iokr.py::test_complex_inputs_are_rejected)",
    "check_dtype_object": _OBJECT_ARRAYS,
}

SKLEARN_NOT_APPLICABLE = {
    "IOKR": IOKR_LIKE_NOT_APPLICABLE,
    "SketchedIOKR": IOKR_LIKE_NOT_APPLICABLE,
    "IOKRCV": IOKR_LIKE_NOT_APPLICABLE,
    "MPIOKR": _all(_FIT_CHECKS + ["check_requires_y_none"],
                   "fit(X, Y, candidate_sets) needs the candidate set of every training example (the "
                   "magnitude-preserving loss compares each output with its candidates); the check calls fit(X, y)",
                   check_estimators_unfitted=_NEEDS_CANDIDATES),
    "KronRLS": _all(_FIT_CHECKS, "pairwise learning: fit(X1, X2, Y) takes the objects of two domains and an "
                                 "(n1, n2) label matrix or (rows, cols, values) triplets; the check calls fit(X, y)"),
    "ConditionalRankRLS": _all(_FIT_CHECKS, "pairwise learning: fit(X1, X2, Y) as KronRLS; the check calls fit(X, y)"),
    "TwoStepRLS": _all(_FIT_CHECKS + ["check_estimators_unfitted"],
                       "pairwise learning: fit(X1, X2, Y) and predict(X1_test, X2_test) take both domains; the check "
                       "calls fit(X, y) and predict(X)"),
    "StringKDE": _all(_FIT_CHECKS, "y are output strings (sequences of symbols) and X what the input kernel takes "
                                   "(strings by default); the check passes numeric y"),
    "SegmentedStringKDE": _all([c for c in _FIT_CHECKS if c != "check_fit1d"],
                               "X is a list of (L_i, n_features) segment arrays and y strings with one symbol per "
                               "segment; the check passes a 2-D array and numeric y"),
    "ContextRLSClassifier": _all(
        [c for c in _FIT_CHECKS if c not in ("check_fit1d", "check_estimators_empty_data_messages",
                                               "check_complex_data")]
        + ["check_classifier_data_not_an_array", "check_classifiers_classes", "check_classifiers_one_label",
           "check_classifiers_regression_target", "check_classifiers_train", "check_requires_y_none",
           "check_supervised_y_2d"],
        "X must be the sparse word-position matrices of ContextFeaturizer (n_words x 2 window columns) for the "
        "context kernel; the check passes dense arrays with arbitrary columns, refused before y is looked at",
        check_dtype_object=_OBJECT_ARRAYS),
    "RLS": {"check_dtype_object": _OBJECT_ARRAYS},
    "RLSCV": {"check_dtype_object": _OBJECT_ARRAYS},
    "RankRLS": {"check_dtype_object": _OBJECT_ARRAYS},
    "RankRLSCV": {"check_dtype_object": _OBJECT_ARRAYS},
}
# The searches take the fit arguments of the estimator they tune, so the same checks cannot apply to them.
SKLEARN_NOT_APPLICABLE.update({
    "MPIOKRCV": SKLEARN_NOT_APPLICABLE["MPIOKR"],
    "KronRLSCV": SKLEARN_NOT_APPLICABLE["KronRLS"],
    "ConditionalRankRLSCV": SKLEARN_NOT_APPLICABLE["ConditionalRankRLS"],
    "TwoStepRLSCV": SKLEARN_NOT_APPLICABLE["TwoStepRLS"],
})

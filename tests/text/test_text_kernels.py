"""Context featurizer and kernels against dense word-position matrices and explicit transformation matrices."""

import numpy as np
import pytest
import scipy.sparse as sp
from text_reference import (
    dense_context,
    kernel_matrix,
    position_similarity,
    positional_transformation,
    word_transformation,
)

from iokr import config_context
from iokr.text import (
    BagOfWordsKernel,
    ContextFeaturizer,
    ContextualWeightingKernel,
    TransformedContextKernel,
    WordPositionKernel,
    psd_factor,
    tokenize,
)

WORDS = ["the", "a", "than", "then", "more", "is", ",", ".", "it", "rather", "and", "of"]


def random_texts(rng, n_texts, max_len=14, extra=()):
    words = WORDS + list(extra)
    return [[words[i] for i in rng.integers(0, len(words), rng.integers(1, max_len + 1))] for _ in range(n_texts)]


def occurrences_of(texts, rng, n):
    picks = rng.integers(0, len(texts), n)
    return [(texts[k], int(rng.integers(0, len(texts[k])))) for k in picks]


def unit_rows(rng, n, r):
    E = rng.standard_normal((n, r))
    return E / np.linalg.norm(E, axis=1, keepdims=True)


KERNELS = [
    ("bow", {}, lambda w, E: BagOfWordsKernel(window=w)),
    ("cw", dict(decay=1.5, floor=0.025), lambda w, E: ContextualWeightingKernel(window=w, decay=1.5, floor=0.025)),
    ("cw", dict(decay=0.0, floor=0.3), lambda w, E: ContextualWeightingKernel(window=w, decay=0.0, floor=0.3)),
    ("wp", dict(decay=1.0, floor=0.1, theta=0.5), lambda w, E: WordPositionKernel(w, 1.0, 0.1, 0.5)),
    ("wp", dict(decay=1.0, floor=0.1, theta=0.0), lambda w, E: WordPositionKernel(w, 1.0, 0.1, 0.0)),
    ("wp", dict(decay=2.0, floor=0.0, theta=np.inf), lambda w, E: WordPositionKernel(w, 2.0, 0.0, np.inf)),
    ("one", dict(theta=0.3), lambda w, E: TransformedContextKernel(window=w, theta=0.3)),
    ("one", dict(theta=0.0), lambda w, E: TransformedContextKernel(window=w, theta=0.0)),
    ("one", dict(theta=0.7, mix=0.4), lambda w, E: TransformedContextKernel(w, 0.7, word_embedding=E, word_mix=0.4)),
    ("one", dict(theta=0.2, mix=1.0), lambda w, E: TransformedContextKernel(w, 0.2, word_embedding=E, word_mix=1.0)),
]


def reference_transformations(kind, params, window, n_words, E):
    pos = {k: v for k, v in params.items() if k != "mix"}
    P = positional_transformation(kind, window, **pos)
    W = word_transformation(n_words, E, params.get("mix", 0.0))
    return W, P


@pytest.mark.parametrize("window", [1, 3])
@pytest.mark.parametrize("mark_boundaries", [True, False])
def test_featurizer_matches_dense_word_position_matrices(rng, window, mark_boundaries):
    train = random_texts(rng, 10)
    f = ContextFeaturizer(window=window, mark_boundaries=mark_boundaries).fit(train)
    test = random_texts(rng, 6, extra=["unseen", "words"]) + [["than"]]
    occ = occurrences_of(test, rng, 15) + [(["than"], 0), (test[0], 0), (test[0], len(test[0]) - 1)]
    X = f.transform(occ)
    assert sp.isspmatrix_csr(X) and X.shape == (len(occ), f.n_words_ * 2 * window)
    for i, (tokens, index) in enumerate(occ):
        expected = dense_context(tokens, index, window, f.vocabulary_, mark_boundaries)
        np.testing.assert_array_equal(X[i].toarray().reshape(f.n_words_, 2 * window), expected)


@pytest.mark.parametrize("window", [1, 2, 4])
@pytest.mark.parametrize("kind, params, make", KERNELS)
def test_kernel_matches_explicit_transformations(rng, window, kind, params, make):
    texts = random_texts(rng, 12)
    f = ContextFeaturizer(window=window).fit(texts)
    E = unit_rows(rng, f.n_words_, 3)
    occ_a, occ_b = occurrences_of(texts, rng, 9), occurrences_of(random_texts(rng, 5, extra=["new"]), rng, 6)
    A, B = f.transform(occ_a), f.transform(occ_b)
    W, P = reference_transformations(kind, params, window, f.n_words_, E)
    dense_a = [dense_context(t, i, window, f.vocabulary_) for t, i in occ_a]
    dense_b = [dense_context(t, i, window, f.vocabulary_) for t, i in occ_b]
    kernel = make(window, E)

    expected = kernel_matrix(dense_a, dense_b, W, P)
    scale = max(np.abs(expected).max(), 1.0)
    np.testing.assert_allclose(kernel(A, B), expected, rtol=0, atol=1e-12 * scale)
    np.testing.assert_allclose(kernel.diag(A), np.diag(kernel_matrix(dense_a, dense_a, W, P)), rtol=0,
                               atol=1e-12 * scale)
    FA, FB = kernel.features(A), kernel.features(B)
    assert sp.issparse(FA)
    np.testing.assert_allclose((FA @ FB.T).toarray(), expected, rtol=0, atol=1e-11 * scale)
    # Dense input is the same context set.
    np.testing.assert_allclose(kernel(A.toarray(), B), expected, rtol=0, atol=1e-12 * scale)


def test_bag_of_words_is_count_inner_product(rng):
    texts = random_texts(rng, 8)
    f = ContextFeaturizer(window=3, mark_boundaries=False).fit(texts)
    occ = occurrences_of(texts, rng, 7)
    counts = np.array([dense_context(t, i, 3, f.vocabulary_, False).sum(axis=1) for t, i in occ])
    np.testing.assert_allclose(BagOfWordsKernel(3)(f.transform(occ)), counts @ counts.T, rtol=0, atol=1e-12)


@pytest.mark.parametrize("kind, params, make", KERNELS)
def test_chunked_blocks_equal_whole_block(rng, kind, params, make):
    texts = random_texts(rng, 20)
    f = ContextFeaturizer(window=2).fit(texts)
    E = unit_rows(rng, f.n_words_, 4)
    X = f.transform(occurrences_of(texts, rng, 40))
    kernel = make(2, E)
    whole = kernel(X)
    with config_context(working_memory=40 * 8 * 3 * 3 / 2**20):  # a few rows per chunk
        np.testing.assert_allclose(kernel(X), whole, rtol=0, atol=1e-13 * max(1.0, np.abs(whole).max()))


@pytest.mark.parametrize("kind, params, make", KERNELS)
@pytest.mark.parametrize("n_targets", [None, 3])
def test_primal_weights_equal_dual_predictions(rng, kind, params, make, n_targets):
    texts = random_texts(rng, 15)
    f = ContextFeaturizer(window=3).fit(texts)
    E = unit_rows(rng, f.n_words_, 5)
    X = f.transform(occurrences_of(texts, rng, 25))
    # New contexts with unknown words, boundaries and a bare target.
    X_new = f.transform(occurrences_of(random_texts(rng, 6, extra=["zzz", "qq"]), rng, 10) + [(["then"], 0)])
    kernel = make(3, E)
    a = rng.standard_normal(25 if n_targets is None else (25, n_targets))
    w = kernel.primal_weights(X, a)
    assert w.shape == ((X.shape[1],) if n_targets is None else (X.shape[1], n_targets))
    dual = kernel(X_new, X) @ a
    np.testing.assert_allclose(X_new @ w, dual, rtol=0, atol=1e-12 * max(1.0, np.abs(dual).max()))


def test_word_position_kernel_reduces_to_contextual_weighting_at_theta_zero(rng):
    texts = random_texts(rng, 10)
    f = ContextFeaturizer(window=4).fit(texts)
    X = f.transform(occurrences_of(texts, rng, 12))
    np.testing.assert_allclose(WordPositionKernel(4, 1.2, 0.05, 0.0)(X), ContextualWeightingKernel(4, 1.2, 0.05)(X),
                               rtol=1e-14, atol=0)
    np.testing.assert_allclose(TransformedContextKernel(4, theta=0.0)(X), BagOfWordsKernel(4)(X), rtol=1e-14, atol=0)


def test_explicit_positional_matrix_in_framework(rng):
    texts = random_texts(rng, 10)
    f = ContextFeaturizer(window=2).fit(texts)
    X = f.transform(occurrences_of(texts, rng, 10))
    G = position_similarity("wp", 2, decay=1.0, floor=0.2, theta=0.4)
    np.testing.assert_allclose(TransformedContextKernel(2, positional=G)(X), WordPositionKernel(2, 1.0, 0.2, 0.4)(X),
                               rtol=1e-13, atol=1e-13)


def test_position_grams_are_psd_and_factor_reproduces_them():
    for kind, params in [("bow", {}), ("cw", dict(decay=1.5, floor=0.025)), ("wp", dict(decay=1, floor=0.1, theta=2)),
                         ("one", dict(theta=0.25))]:
        G = position_similarity(kind, 5, **params)
        P = psd_factor(G)
        np.testing.assert_allclose(P @ P.T, G, rtol=0, atol=1e-12 * np.abs(G).max())
        assert np.linalg.eigvalsh(G).min() > -1e-10


# -- bad input: defined behaviour, no crash ------------------------------------------------------------------------
def test_empty_context_gives_zero_kernel_row_and_intercept_only_prediction(rng):
    texts = random_texts(rng, 10)
    f = ContextFeaturizer(window=3, mark_boundaries=False).fit(texts)
    X = f.transform(occurrences_of(texts, rng, 5) + [(["than"], 0)])
    assert X[5].nnz == 0
    for kernel in (BagOfWordsKernel(3), WordPositionKernel(3), TransformedContextKernel(3)):
        K = kernel(X)
        np.testing.assert_array_equal(K[5], 0.0)
        assert kernel.diag(X)[5] == 0.0
        np.testing.assert_array_equal(X[5] @ kernel.primal_weights(X[:5], np.ones(5)), 0.0)


def test_target_at_text_boundary_and_window_longer_than_text():
    f = ContextFeaturizer(window=4).fit([["a", "than", "b"]])
    X = f.transform([(["a", "than", "b"], 0), (["a", "than", "b"], 2), (["than"], 0)])
    dense = X.toarray().reshape(3, f.n_words_, 8)
    s, e = f.vocabulary_["<s>"], f.vocabulary_["</s>"]
    assert dense[0, s, 3] == 1 and dense[0, e, 6] == 1          # <s> at offset -1, </s> at +3
    assert dense[1, s, 1] == 1 and dense[1, e, 4] == 1          # <s> at offset -3, </s> at +1
    assert dense[2].sum() == 2                                   # only the two boundary marks
    assert np.isfinite(WordPositionKernel(4)(X)).all()


def test_unknown_words_map_to_unk():
    f = ContextFeaturizer(window=1, min_count=2).fit([["a", "a", "b"]])
    X = f.transform([(["zz", "a", "b"], 1)])
    dense = X.toarray().reshape(f.n_words_, 2)
    assert "b" not in f.vocabulary_  # rarer than min_count
    assert dense[f.vocabulary_["<unk>"]].tolist() == [1.0, 1.0]


@pytest.mark.parametrize("occurrence, error", [
    ((["a", "b"], 2), ValueError), ((["a", "b"], -1), ValueError), ((["a"], 0.5), ValueError),
    (("a b", 0), TypeError), ((["a"],), TypeError),
])
def test_featurizer_rejects_bad_occurrences(occurrence, error):
    f = ContextFeaturizer(window=2).fit([["a", "b"]])
    with pytest.raises(error, match="occurrences"):
        f.transform([occurrence])


def test_featurizer_parameter_errors():
    with pytest.raises(ValueError, match="'window'"):
        ContextFeaturizer(window=0).fit([["a"]])
    with pytest.raises(ValueError, match="'min_count'"):
        ContextFeaturizer(min_count=0).fit([["a"]])
    with pytest.raises(TypeError, match="tokenize"):
        ContextFeaturizer().fit("a text")
    with pytest.raises(TypeError, match="'text'"):
        tokenize(["a"])


def test_kernel_input_errors(rng):
    f = ContextFeaturizer(window=2).fit([["a", "b", "c", "d"]])  # 7 words x 4 positions: not a multiple of 6
    X = f.transform([(["a", "b", "c"], 1)])
    with pytest.raises(ValueError, match="n_positions"):
        BagOfWordsKernel(window=3)(X)
    bad = X.copy()
    bad.data[0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        BagOfWordsKernel(window=2)(bad)
    with pytest.raises(ValueError, match="'theta'"):
        WordPositionKernel(2, theta=-1.0)(X)
    with pytest.raises(ValueError, match="'decay'"):
        ContextualWeightingKernel(2, decay=np.nan)(X)
    with pytest.raises(ValueError, match="word_embedding"):
        TransformedContextKernel(2, word_mix=0.5)(X)
    with pytest.raises(ValueError, match="rows"):
        TransformedContextKernel(2, word_embedding=np.ones((3, 2)), word_mix=0.5)(X)
    with pytest.raises(ValueError, match="'word_mix'"):
        TransformedContextKernel(2, word_embedding=np.ones((f.n_words_, 2)), word_mix=1.5)(X)
    with pytest.raises(ValueError, match="positive semidefinite"):
        TransformedContextKernel(2, positional=-np.eye(4))(X)
    with pytest.raises(ValueError, match="dual_coef"):
        BagOfWordsKernel(2).primal_weights(X, np.ones(3))


def test_inputs_are_not_mutated(rng):
    texts = random_texts(rng, 6)
    f = ContextFeaturizer(window=2).fit(texts)
    X = f.transform(occurrences_of(texts, rng, 6))
    X.data *= 2.0
    before = X.copy()
    E = unit_rows(rng, f.n_words_, 2)
    E0 = E.copy()
    kernel = TransformedContextKernel(2, 0.3, word_embedding=E, word_mix=0.5)
    kernel(X), kernel.diag(X), kernel.features(X), kernel.primal_weights(X, np.ones(6))
    assert (before != X).nnz == 0 and np.array_equal(E, E0)

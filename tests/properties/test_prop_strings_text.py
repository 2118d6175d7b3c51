"""Properties of the string and text estimators: StringKDE, SegmentedStringKDE, ContextFeaturizer and
ContextRLSClassifier.

Invariants: predictions over the training alphabet, one per query and independent of the batch (query permutation
equivariance, duplicates predicted alike), finite regression outputs, segmented predictions of the segment count,
chunked kernel evaluation giving the same model, primal == dual scores, no mutation of the inputs.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st
from prop_helpers import assert_finite, share, smallest_budget_run

from iokr import ContextFeaturizer, ContextRLSClassifier, SegmentedStringKDE, StringKDE
from iokr.kernels import Gaussian
from iokr.strings import NgramKernel
from iokr.text import BagOfWordsKernel, WordPositionKernel

words = st.text(alphabet="abcd", min_size=1, max_size=5)


@st.composite
def string_problems(draw):
    train = draw(st.lists(words, min_size=1, max_size=8))
    outputs = draw(st.sampled_from(["identity", "reverse", "first_doubled"]))
    queries = draw(st.lists(st.text(alphabet="abcde", min_size=0, max_size=5), min_size=1, max_size=5))
    return train, outputs, queries


def _outputs(train, rule):
    if rule == "identity":
        return list(train)
    if rule == "reverse":
        return [w[::-1] for w in train]
    return [w[0] + w for w in train]


@pytest.mark.parametrize("params", [dict(n=2, alpha=1e-2), dict(n=3, alpha=1.0, rounding="nearest"),
                                    dict(n=2, alpha=0.1, lm_weight=0.5, max_alternatives=4),
                                    dict(n=2, alpha=0.1, basis="greedy", n_basis=3)],
                         ids=["bigram", "trigram-nearest", "lm", "greedy-basis"])
@share(0.7)
@given(problem=string_problems())
def test_string_kde_properties(params, problem):
    train, rule, queries = problem
    targets = _outputs(train, rule)
    train_copy, targets_copy, queries_copy = list(train), list(targets), list(queries)
    model = StringKDE(input_kernel=NgramKernel(n=2), **params).fit(train, targets)
    predictions = model.predict(queries)
    assert (train, targets, queries) == (train_copy, targets_copy, queries_copy)
    assert len(predictions) == len(queries) and all(isinstance(p, str) for p in predictions)
    alphabet = set("".join(targets))
    assert all(set(p) <= alphabet for p in predictions)
    assert_finite(model.predict_counts(queries), "predicted counts")

    perm = np.random.default_rng(len(queries)).permutation(len(queries))
    assert model.predict([queries[i] for i in perm]) == [predictions[i] for i in perm]
    assert model.predict(queries[:1] * 3) == [predictions[0]] * 3
    # kernel blocks chunked one row at a time give the same model and predictions
    chunked, _ = smallest_budget_run(lambda: StringKDE(input_kernel=NgramKernel(n=2), **params)
                                     .fit(train, targets).predict(queries), start=5e-5)
    assert chunked == predictions


@st.composite
def segmented_problems(draw):
    seed = draw(st.integers(0, 2**16))
    train = draw(st.lists(st.text(alphabet="abc", min_size=1, max_size=4), min_size=1, max_size=6))
    test_lengths = draw(st.lists(st.integers(0, 4), min_size=1, max_size=4))
    noise = draw(st.sampled_from([0.0, 0.3]))
    return seed, train, test_lengths, noise


def _segments(rng, word, centers, noise):
    if not word:
        return np.zeros((0, centers.shape[1]))
    return np.stack([centers["abc".index(c)] for c in word]) + noise * rng.normal(size=(len(word), centers.shape[1]))


@pytest.mark.parametrize("params", [dict(), dict(lm_order=None), dict(lm_order=2, lm_weight=3.0),
                                    dict(kernel=Gaussian(0.5), basis="random", n_basis=2, random_state=0)],
                         ids=["default", "no-lm", "bigram-lm", "gaussian-random-basis"])
@share(0.7)
@given(problem=segmented_problems())
def test_segmented_string_kde_properties(params, problem):
    seed, train, test_lengths, noise = problem
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(3, 4))
    X = [_segments(rng, w, centers, noise) for w in train]
    X_test = [rng.normal(size=(L, 4)) for L in test_lengths]
    copies = [x.copy() for x in X + X_test]
    model = SegmentedStringKDE(**params).fit(X, train)
    predictions = model.predict(X_test)
    for original, copy in zip(X + X_test, copies, strict=True):
        np.testing.assert_array_equal(original, copy)
    assert [len(p) for p in predictions] == test_lengths
    assert all(set(p) <= set(model.alphabet_) for p in predictions)
    for S in model.segment_scores(X_test):
        assert_finite(S, "segment scores")
    perm = rng.permutation(len(X_test))
    assert model.predict([X_test[i] for i in perm]) == [predictions[i] for i in perm]
    assert model.predict(X_test[:1] * 2) == [predictions[0]] * 2


# -- text ---------------------------------------------------------------------------------------------------------


@st.composite
def text_problems(draw):
    seed = draw(st.integers(0, 2**16))
    n_texts = draw(st.integers(1, 3))
    length = draw(st.integers(3, 12))
    window = draw(st.integers(1, 3))
    return seed, n_texts, length, window


def _texts(rng, n_texts, length):
    vocabulary = np.array(["bank", "river", "money", "water", "loan", "fish", "the", "a"])
    return [list(rng.choice(vocabulary, size=length)) for _ in range(n_texts)]


@share(0.7)
@given(problem=text_problems(), min_count=st.integers(1, 3), mark_boundaries=st.booleans())
def test_context_featurizer_properties(problem, min_count, mark_boundaries):
    seed, n_texts, length, window = problem
    rng = np.random.default_rng(seed)
    texts = _texts(rng, n_texts, length)
    copies = [list(t) for t in texts]
    featurizer = ContextFeaturizer(window=window, min_count=min_count, mark_boundaries=mark_boundaries).fit(texts)
    occurrences = [(t, int(i)) for t in texts for i in rng.integers(0, length, size=2)]
    X = featurizer.transform(occurrences)
    assert texts == copies
    assert sp.issparse(X) and X.shape == (len(occurrences), featurizer.n_words_ * 2 * window)
    # at most one word per context position; values are indicators
    per_row = np.diff(X.tocsr().indptr)
    assert per_row.max() <= 2 * window and np.all(X.data == 1.0)
    perm = rng.permutation(len(occurrences))
    np.testing.assert_array_equal(featurizer.transform([occurrences[i] for i in perm]).toarray(), X.toarray()[perm])


@pytest.mark.parametrize("kernel", [BagOfWordsKernel(window=2), WordPositionKernel(window=2, theta=0.5)],
                         ids=["bag-of-words", "word-position"])
@share(0.7)
@given(problem=text_problems(), fit_intercept=st.booleans(), scoring=st.sampled_from(["accuracy", "auc"]))
def test_context_classifier_properties(kernel, problem, fit_intercept, scoring):
    seed, n_texts, length, _ = problem
    rng = np.random.default_rng(seed)
    texts = _texts(rng, n_texts, max(length, 6))
    featurizer = ContextFeaturizer(window=2).fit(texts)
    occurrences = [(t, i) for t in texts for i in range(len(t))]
    X = featurizer.transform(occurrences)
    y = np.array(["finance" if t[i] in ("bank", "money", "loan") else "nature" for t, i in occurrences])
    if min(np.sum(y == c) for c in ("finance", "nature")) < 2:  # both classes in both folds
        y = np.where(np.arange(y.size) % 2 == 0, "finance", "nature")
    X_before, y_before = X.toarray(), y.copy()
    model = ContextRLSClassifier(kernel=kernel, alphas=[0.1, 10.0], cv=2, scoring=scoring,
                                 fit_intercept=fit_intercept).fit(X, y)
    np.testing.assert_array_equal(X.toarray(), X_before)
    np.testing.assert_array_equal(y, y_before)
    scores = model.decision_function(X)
    assert_finite(scores, "decision values")
    np.testing.assert_allclose(scores, model.decision_function(X, path="dual"), rtol=0,
                               atol=1e-9 * max(1.0, float(np.abs(scores).max())))
    predictions = model.predict(X)
    assert set(predictions) <= set(model.classes_)
    perm = rng.permutation(y.size)
    np.testing.assert_allclose(model.decision_function(X[perm]), scores[perm], rtol=0, atol=1e-12)

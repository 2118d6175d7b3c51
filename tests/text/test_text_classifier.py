"""RLS classification on context kernels: primal == dual, the fit equals explicit RLS, model selection, LSA words."""

import numpy as np
import pytest
from scipy import linalg

from iokr.datasets import load_parallel_text
from iokr.estimators.rls import RLS
from iokr.model_selection import RLSCV
from iokr.text import (
    BagOfWordsKernel,
    ContextFeaturizer,
    ContextRLSClassifier,
    CooccurrenceLSA,
    TransformedContextKernel,
    WordPositionKernel,
    tokenize,
)


def synthetic_task(rng, n):
    """'than' follows 'more'/'rather'; 'then' follows ',' / 'and'; the rest is noise words."""
    noise = ["the", "a", "it", "is", "of", "to", "was", "he", "she", "we"]
    texts, occ, labels = [], [], []
    for i in range(n):
        label = i % 2
        cue = rng.choice(["more", "rather"]) if label else rng.choice([",", "and"])
        left = list(rng.choice(noise, rng.integers(0, 5)))
        right = list(rng.choice(noise, rng.integers(0, 5)))
        if rng.random() < 0.15:  # label noise: the cue of the other class
            cue = rng.choice([",", "and"]) if label else rng.choice(["more", "rather"])
        tokens = left + [cue, "than" if label else "then"] + right
        texts.append(tokens)
        occ.append((tokens, len(left) + 1))
        labels.append("than" if label else "then")
    return texts, occ, np.array(labels)


@pytest.fixture
def task(rng):
    texts, occ, y = synthetic_task(rng, 120)
    f = ContextFeaturizer(window=3).fit(texts)
    X = f.transform(occ)
    groups = np.arange(len(y)) // 2
    return f, X, y, groups


@pytest.mark.parametrize("kernel, grid", [
    (BagOfWordsKernel(3), None),
    (WordPositionKernel(3), {"theta": [0.0, 1.0]}),
    (TransformedContextKernel(3), {"theta": [0.1, 1.0]}),
])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_primal_prediction_equals_dual_and_explicit_rls(rng, task, kernel, grid, fit_intercept):
    f, X, y, groups = task
    clf = ContextRLSClassifier(kernel, param_grid=grid, alphas=np.logspace(-1, 2, 4), cv=3,
                               fit_intercept=fit_intercept).fit(X[:90], y[:90], groups=groups[:90])
    X_new = f.transform([(["zzz", "more", "than", "qq"], 2), (["then"], 0)])
    X_test = X[90:]
    for Z in (X_test, X_new):
        dual = clf.decision_function(Z, path="dual")
        np.testing.assert_allclose(clf.decision_function(Z), dual, rtol=0, atol=1e-10 * max(1, np.abs(dual).max()))
    # The fitted coefficients are RLS with the chosen alpha on the (offset) Gram, solved directly.
    K = clf.kernel_(X[:90]) + (1.0 if fit_intercept else 0.0)
    y_pm = np.where(y[:90] == clf.classes_[1], 1.0, -1.0)
    expected = linalg.solve(K + clf.alpha_ * np.eye(90), y_pm, assume_a="pos")
    np.testing.assert_allclose(clf.dual_coef_, expected, rtol=1e-8, atol=1e-10)
    assert set(clf.predict(X_test)) <= set(clf.classes_)


def test_classifier_learns_the_cue_and_selects_by_training_cv(task):
    f, X, y, groups = task
    clf = ContextRLSClassifier(WordPositionKernel(3), param_grid={"theta": [0.0, 2.0]}, cv=4, scoring="auc")
    clf.fit(X[:90], y[:90], groups=groups[:90])
    assert len(clf.cv_results_) == 2 and clf.best_score_ == max(r["score"] for r in clf.cv_results_)
    assert clf.kernel_.theta == [r["params"]["theta"] for r in clf.cv_results_
                                 if r["score"] == clf.best_score_][0]
    accuracy = np.mean(clf.predict(X[90:]) == y[90:])
    assert accuracy >= 0.75  # ~85 % of the cues are right; chance is 0.5


def test_classifier_errors(task):
    f, X, y, groups = task
    with pytest.raises(ValueError, match="two classes"):
        ContextRLSClassifier(BagOfWordsKernel(3)).fit(X, np.array(["a"] * X.shape[0]))
    with pytest.raises(ValueError, match="'scoring'"):
        ContextRLSClassifier(BagOfWordsKernel(3), scoring="f1").fit(X, y)
    with pytest.raises(TypeError, match="ContextKernel"):
        ContextRLSClassifier(kernel="linear").fit(X, y)
    clf = ContextRLSClassifier(BagOfWordsKernel(3), alphas=[1.0], cv=2).fit(X[:40], y[:40])
    with pytest.raises(ValueError, match="features"):
        clf.decision_function(X[:, :-6])
    with pytest.raises(ValueError, match="'path'"):
        clf.decision_function(X, path="other")


def test_cooccurrence_lsa_relates_words_with_shared_neighbours():
    texts = [["more", "x", "than", "y"], ["rather", "x", "than", "z"], ["more", "x", "than", "z"],
             ["rather", "x", "than", "y"], ["and", "w", "then", "v"], [",", "w", "then", "v"]] * 5
    f = ContextFeaturizer(window=2).fit(texts)
    lsa = CooccurrenceLSA(n_components=4, window=1).fit(texts, f.vocabulary_)
    E = lsa.embedding_
    assert E.shape == (f.n_words_, 4)
    norms = np.linalg.norm(E, axis=1)
    np.testing.assert_allclose(norms[norms > 0], 1.0, rtol=1e-12)
    np.testing.assert_array_equal(E[:3], 0.0)  # reserved words
    v = f.vocabulary_
    sim = E @ E.T
    assert sim[v["more"], v["rather"]] > sim[v["more"], v["and"]]
    again = CooccurrenceLSA(n_components=4, window=1).fit(texts, f.vocabulary_).embedding_
    np.testing.assert_array_equal(again, E)


def test_cooccurrence_lsa_errors():
    with pytest.raises(ValueError, match="'n_components'"):
        CooccurrenceLSA(n_components=0).fit([["a", "b"]], {"a": 0, "b": 1})
    with pytest.raises(ValueError, match="co-occur"):
        CooccurrenceLSA().fit([["a"], ["b"]], {"<unk>": 0, "a": 1, "b": 2})


def test_fixed_folds_are_accepted_and_bad_cv_rejected(task):
    f, X, y, groups = task
    folds = [(np.arange(0, 60), np.arange(60, 90)), (np.arange(30, 90), np.arange(0, 30))]
    bad = [(np.arange(0, 60), np.arange(60, 90)), (np.arange(60, 90), np.arange(0, 30))]
    clf = ContextRLSClassifier(BagOfWordsKernel(3), alphas=[0.1, 1.0], cv=folds).fit(X[:90], y[:90])
    assert clf.alpha_ in (0.1, 1.0)
    with pytest.raises(ValueError, match="complement"):
        ContextRLSClassifier(BagOfWordsKernel(3), alphas=[1.0], cv=bad).fit(X[:90], y[:90])
    with pytest.raises(ValueError, match="'cv'"):
        ContextRLSClassifier(BagOfWordsKernel(3), cv="five").fit(X[:90], y[:90])


def test_real_text_their_there_on_bundled_bible_subset():
    """KJV chapters shipped with iokr.datasets (public domain): their/there from context beats the majority class."""
    ids, english, _ = load_parallel_text()
    texts = [tokenize(chapter) for chapter in english]
    occ = [(k, i) for k, tokens in enumerate(texts) for i, t in enumerate(tokens) if t in ("their", "there")]
    occ = [occ[i] for i in np.random.default_rng(0).choice(len(occ), 400, replace=False)]
    f = ContextFeaturizer(window=4).fit(texts)
    X = f.transform([(texts[k], i) for k, i in occ])
    y = np.array([texts[k][i] for k, i in occ])
    chapter = np.array([k for k, _ in occ])
    train = chapter < int(0.7 * len(texts))
    clf = ContextRLSClassifier(WordPositionKernel(4), alphas=np.logspace(-1, 3, 9), cv=3)
    clf.fit(X[train], y[train], groups=chapter[train])
    majority = max(np.mean(y[~train] == w) for w in ("their", "there"))
    accuracy = np.mean(clf.predict(X[~train]) == y[~train])
    assert accuracy > majority + 0.1, (accuracy, majority)


def test_core_rls_and_rlscv_take_sparse_contexts_through_the_kernel(task):
    f, X, y, groups = task
    y_pm = np.where(y == "than", 1.0, -1.0)
    kernel = WordPositionKernel(3, theta=1.0)
    model = RLS(alpha=1.0, kernel=kernel).fit(X[:90], y_pm[:90])
    expected = X[90:] @ kernel.primal_weights(X[:90], model.dual_coef_)
    np.testing.assert_allclose(model.predict(X[90:]), expected, rtol=0, atol=1e-12 * np.abs(expected).max())
    search = RLSCV(alphas=[0.1, 1.0, 10.0], kernel=kernel, param_grid={"kernel__theta": [0.0, 1.0]}).fit(X, y_pm)
    assert search.best_params_["kernel__theta"] in (0.0, 1.0)

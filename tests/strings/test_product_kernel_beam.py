"""SequenceProductKernel against its explicit tensor feature map; beam-search pre-images against brute force."""

import itertools
import math

import numpy as np
import pytest

from iokr import config_context
from iokr.kernels import Gaussian, Linear, Polynomial
from iokr.strings import (
    NgramKernel,
    NgramLanguageModel,
    OutputSpace,
    SequencePolynomialKernel,
    SequenceProductKernel,
    StringKDE,
    letter_accuracy,
    load_ocr_letters,
)
from iokr.strings._beam_search import BeamSearch


# -- kernel -------------------------------------------------------------------------------------------------------
def _explicit_features(x, orders, weights, pad_value):
    """sum_i phi~(x~_i) (x) ... (x) phi~(x~_{i+n-1}) per order, phi~(item) = (item, 0), phi~(pad) = (0, sqrt(c))."""
    d = x.shape[1]
    pad = np.r_[np.zeros(d), math.sqrt(pad_value)]
    parts = []
    for n, w in zip(orders, weights, strict=True):
        items = [pad] * (n - 1) + [np.r_[row, 0.0] for row in x] + [pad] * (n - 1)
        f = 0.0
        for i in range(len(items) - n + 1):
            v = np.ones(1)
            for t in range(n):
                v = np.kron(v, items[i + t])
            f = f + v
        parts.append(math.sqrt(w) * f)
    return np.concatenate(parts)


@pytest.mark.parametrize("orders, weights", [((1,), None), ((2,), None), ((1, 2, 3), (1.0, 0.5, 2.0)), ((3,), None),
                                             ((2, 4), (0.3, 1.0))])
@pytest.mark.parametrize("pad_value", [1.0, 0.7])
def test_product_kernel_matches_explicit_tensor_features(orders, weights, pad_value, rng):
    X = [rng.normal(size=(L, 3)) for L in (1, 2, 4, 3, 5)]
    kernel = SequenceProductKernel(Linear(), n=orders, weights=weights, pad_value=pad_value)
    w = weights or (1.0,) * len(orders)
    F = np.array([_explicit_features(x, orders, w, pad_value) for x in X])
    np.testing.assert_allclose(kernel(X, X[:3]), F @ F[:3].T, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(kernel.diag(X), (F * F).sum(axis=1), rtol=1e-12)


def test_product_kernel_is_a_double_sum_of_products_for_nonlinear_bases(rng):
    # Brute-force double sum with pads as a separate symbol, for a base kernel without explicit features.
    X = [rng.random(size=(L, 4)) for L in (2, 3, 1)]
    base = Gaussian(gamma=0.3)

    def b(u, v):
        if u is None or v is None:
            return 0.8 if u is None and v is None else 0.0
        return float(np.exp(-0.3 * np.sum((u - v) ** 2)))

    def naive(x, y, n):
        px = [None] * (n - 1) + list(x) + [None] * (n - 1)
        py = [None] * (n - 1) + list(y) + [None] * (n - 1)
        return sum(math.prod(b(px[i + t], py[j + t]) for t in range(n))
                   for i in range(len(px) - n + 1) for j in range(len(py) - n + 1))

    K = SequenceProductKernel(base, n=3, pad_value=0.8)(X)
    expected = np.array([[sum(naive(x, y, n) for n in (1, 2, 3)) for y in X] for x in X])
    np.testing.assert_allclose(K, expected, rtol=1e-12)


def test_product_kernel_chunked_normalized_and_order_one_is_the_summed_base_kernel(rng):
    X = [rng.normal(size=(L, 5)) for L in (3, 1, 6, 2, 4, 2)]
    kernel = SequenceProductKernel(Polynomial(degree=2, gamma=0.1), n=(1, 3))
    K = kernel(X)
    with config_context(working_memory=0.012):  # about one sequence per chunk
        np.testing.assert_allclose(kernel(X), K, rtol=1e-13)
    Kn = SequenceProductKernel(Polynomial(degree=2, gamma=0.1), n=(1, 3), normalize=True)(X)
    d = np.sqrt(np.diag(K))
    np.testing.assert_allclose(Kn, K / d[:, None] / d[None, :], rtol=1e-12)
    P = Polynomial(degree=2, gamma=0.1)
    K1 = SequenceProductKernel(P, n=(1,))(X[:3], X[3:])
    np.testing.assert_allclose(K1, [[P(x, y).sum() for y in X[3:]] for x in X[:3]], rtol=1e-12)


def test_product_kernel_bad_parameters():
    X = [np.ones((2, 3))]
    with pytest.raises(TypeError, match="'base' parameter of SequenceProductKernel"):
        SequenceProductKernel(None)(X)
    with pytest.raises(ValueError, match="'weights' parameter of SequenceProductKernel must hold 2"):
        SequenceProductKernel(Linear(), n=2, weights=(1.0,))(X)
    with pytest.raises(ValueError, match="pad_value"):
        SequenceProductKernel(Linear(), n=2, pad_value=0.0)(X)
    with pytest.raises(ValueError, match="features"):
        SequenceProductKernel(Linear(), n=2)(X, [np.ones((2, 4))])


# -- beam search --------------------------------------------------------------------------------------------------
WORDS = [tuple(w) for w in ["ab", "ba", "aab", "bba", "abc", "c", "cab"]]


def _prefix_objective(ids, space, g, lm, lm_weight):
    """||Phi||^2 - 2 <Phi, g> over the n-grams ending at a symbol of ``ids`` (no stop n-grams), plus LM cost."""
    counts = {}
    for o in range(1, space.n + 1):
        p = (space.start_id,) * (o - 1) + tuple(ids)
        for i in range(len(p) - o + 1):
            gram = p[i : i + o]
            counts[(o, gram)] = counts.get((o, gram), 0) + 1
    total = 0.0
    for (o, gram), c in counts.items():
        col = space.vocab[o].get(gram, -1)
        total += c * c - (2.0 * c * g[col] if col >= 0 else 0.0)
    if lm is not None and lm_weight:
        k = lm.order - 1
        p = (space.start_id,) * k + tuple(ids)
        total -= lm_weight * sum(math.log(lm.prob(p[i], p[i - k : i])) for i in range(k, len(p)))
    return total


@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("lm_weight", [0.0, 0.7])
def test_exhaustive_beam_scores_every_string_exactly(n, lm_weight, rng):
    space = OutputSpace(WORDS, n)
    lm = NgramLanguageModel(3, start=space.start_id, stop=space.stop_id).fit([space.encode(w) for w in WORDS])
    g = rng.normal(scale=0.7, size=space.n_columns)
    A = len(space.alphabet)
    search = BeamSearch(space, lm)
    cands, scores = search.search(g, [0, 2, 4], beam_width=A**4, lm_weight=lm_weight, return_scores=True)
    expected = {ids for L in (0, 2, 4) for ids in itertools.product(range(A), repeat=L)}
    assert set(cands) == expected and len(cands) == len(expected)
    for ids, s in zip(cands, scores, strict=True):
        assert s == pytest.approx(_prefix_objective(ids, space, g, lm, lm_weight), abs=1e-10)


def test_narrow_beam_keeps_the_best_prefixes(rng):
    space = OutputSpace(WORDS, 2)
    g = rng.normal(size=space.n_columns)
    search = BeamSearch(space)
    cands, scores = search.search(g, [3], beam_width=5, return_scores=True)
    assert len(cands) == 5 and all(len(c) == 3 for c in cands)
    assert scores == sorted(scores)
    # width 1 is greedy: the first symbol is the argmin of the one-step objective.
    one = search.search(g, [1], beam_width=1)
    best = min(range(len(space.alphabet)), key=lambda a: _prefix_objective((a,), space, g, None, 0.0))
    assert one == [(best,)]


# -- estimator options ----------------------------------------------------------------------------------------------
def _full_objective(model, ids, g):
    space = model.output_space_
    s = space.squared_distance(ids, g, float(g @ g))
    if model.language_model_ is not None and model.lm_weight > 0:
        s -= model.lm_weight * model.language_model_.log_prob(ids)
    return s


@pytest.mark.parametrize("length, slack", [("predicted", 0), ("predicted", 1), ("free", 0)])
def test_exhaustive_beam_prediction_is_the_brute_force_minimizer(length, slack):
    words = ["ab", "ba", "abc", "cab", "bca", "acb", "ccab"]
    inputs = ["abc", "ba", "cabb", "acab"]
    model = StringKDE(NgramKernel(n=2), n=2, alpha=0.3, lm_order=2, lm_weight=0.4, beam_width=3**5,
                      length=length, length_slack=slack, max_alternatives=4).fit(words, words)
    G = model.predict_counts(inputs)
    pred = model.predict(inputs)
    for g, p in zip(G, pred, strict=True):
        if length == "predicted":
            L = int(model.predicted_length(g)[0])
            lengths = range(max(L - slack, 0), L + slack + 1)
        else:
            lengths = range(4 + 1)
        best = min((ids for L in lengths for ids in itertools.product(range(3), repeat=L)),
                   key=lambda ids: (round(_full_objective(model, ids, g), 9), ids))
        assert p == "".join("abc"[i] for i in best)


def test_predicted_length_is_the_rounded_unigram_total():
    model = StringKDE(NgramKernel(n=2), n=2, alpha=1e-6, length="predicted").fit(["abc", "ba", "c"], ["abc", "ba", "c"])
    G = model.predict_counts(["abc", "ba", "c"])
    np.testing.assert_array_equal(model.predicted_length(G), [3, 2, 1])
    assert [len(p) for p in model.predict(["abc", "ba", "c"])] == [3, 2, 1]


@pytest.mark.parametrize("params, match", [({"beam_width": -1}, "beam_width"), ({"beam_width": 2.5}, "beam_width"),
                                           ({"length": "exact"}, "'length' parameter"),
                                           ({"length_slack": -1}, "length_slack")])
def test_beam_and_length_bad_parameters(params, match):
    with pytest.raises(ValueError, match=match):
        StringKDE(**params).fit(["ab"], ["ab"])


def test_product_kernel_with_beam_on_ocr_subset_beats_eq15():
    data = load_ocr_letters()
    rng = np.random.default_rng(0)
    train = rng.choice(np.flatnonzero(data["folds"] == 0), 100, replace=False)
    test = rng.choice(np.flatnonzero(data["folds"] == 1), 60, replace=False)
    Xtr, ytr = [data["images"][i] for i in train], [data["words"][i] for i in train]
    Xte, yte = [data["images"][i] for i in test], [data["words"][i] for i in test]
    product = StringKDE(SequenceProductKernel(Gaussian(gamma=1 / 512), n=(5,)), n=3, alpha=1e-2, lm_order=5,
                        lm_weight=1.0, beam_width=16, length="predicted").fit(Xtr, ytr)
    eq15 = StringKDE(SequencePolynomialKernel(n=2, degree=3, gamma=1 / 16), n=3, alpha=10.0, lm_order=5,
                     lm_weight=1.0, beam_width=16, length="predicted").fit(Xtr, ytr)
    acc_product = letter_accuracy(yte, product.predict(Xte))
    acc_eq15 = letter_accuracy(yte, eq15.predict(Xte))
    assert acc_product > acc_eq15 + 0.1, (acc_product, acc_eq15)

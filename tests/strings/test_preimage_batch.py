"""Batch pre-images (``ngram_preimage_batch``) equal the per-string ``ngram_preimage``; its fast path equals the
general path (``DeBruijnGraph`` walk) on random counts, with and without pre-images."""

import itertools
from types import MappingProxyType

import numpy as np
import pytest
from scipy import sparse

from iokr.strings import load_ocr_letters, ngram_counts, ngram_preimage, ngram_preimage_batch


def _random_words(rng, alphabet, n_words, max_len):
    return ["".join(rng.choice(list(alphabet), size=rng.integers(0, max_len + 1))) for _ in range(n_words)]


def _random_counts(rng, n, n_maps, alphabet="ab^$"):
    """Arbitrary count mappings: most admit no pre-image, many graphs are disconnected or miss the start."""
    grams = ["".join(g) for g in itertools.product(alphabet, repeat=n)]
    out = []
    for _ in range(n_maps):
        keys = rng.choice(grams, size=rng.integers(0, 6), replace=True)
        out.append({k: float(rng.choice([0.0, 0.4, 0.5, 1.0, 1.6, 2.0, 3.0, -1.0])) for k in keys})
    return out


def _general(counts, n, **kw):
    """The general (reference) path: a read-only mapping is not a dict, so the fast path declines it."""
    return ngram_preimage(MappingProxyType(dict(counts)), n, **kw)


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_batch_equals_per_string_on_random_words(rng, n):
    words = _random_words(rng, "abcd", 300, 12) + [""]
    counts = [ngram_counts(w, n) for w in words]
    got = ngram_preimage_batch(counts, n)
    assert got == [ngram_preimage(c, n) for c in counts]
    assert all(ngram_counts(s, n) == c for s, c in zip(got, counts, strict=True))


@pytest.mark.parametrize("n", [1, 2, 3])
def test_batch_equals_per_string_without_preimages(rng, n):
    counts = _random_counts(rng, n, 400)
    got = ngram_preimage_batch(counts, n)
    assert got == [ngram_preimage(c, n) for c in counts]
    assert got == [_general(c, n) for c in counts]


@pytest.mark.parametrize("n", [2, 3])
def test_batch_equals_per_string_on_ocr_words(n):
    words = load_ocr_letters()["words"]
    counts = [ngram_counts(w, n) for w in words]
    got = ngram_preimage_batch(counts, n)
    assert got == [ngram_preimage(c, n) for c in counts]
    assert all(ngram_counts(s, n) == c for s, c in zip(got, counts, strict=True))


def test_batch_symbol_sequences_and_mixed_rows():
    seqs = [("AH", "BB", "K0", "BB"), ("K0",), ()]
    counts = [ngram_counts(s, 2) for s in seqs] + [ngram_counts("abba", 2), {}]
    got = ngram_preimage_batch(counts, 2)
    assert got == [ngram_preimage(c, 2) for c in counts]
    assert isinstance(got[0], tuple) and got[3] == "abba" and got[4] == ""
    ints = [ngram_counts([3, 1, 2], 2, start=-1, stop=-2)]
    assert ngram_preimage_batch(ints, 2, start=-1, stop=-2) == [(3, 1, 2)]


def test_batch_merges_keys_spelling_one_ngram():
    counts = [{"^a": 1, ("a", "b"): 1, "ab": 1, "bb": 0, "b$": 1, ("b", "a"): 1}]
    assert ngram_preimage_batch(counts, 2) == [ngram_preimage(counts[0], 2)] == ["abab"]


@pytest.mark.parametrize("as_sparse", [False, True])
def test_matrix_input_equals_mappings(rng, as_sparse):
    words = _random_words(rng, "abc", 80, 9)
    vocabulary = sorted({g for w in words for g in ngram_counts(w, 3)})
    matrix = np.array([[ngram_counts(w, 3).get(g, 0) for g in vocabulary] for w in words], dtype=float)
    matrix[::7] += rng.normal(scale=0.3, size=matrix[::7].shape)  # regression-like outputs, rounded
    rows = [dict(zip(vocabulary, row.tolist(), strict=True)) for row in matrix]
    got = ngram_preimage_batch(sparse.csr_matrix(matrix) if as_sparse else matrix, 3, vocabulary=vocabulary)
    assert got == ngram_preimage_batch(rows, 3) == [ngram_preimage(r, 3) for r in rows]


def test_single_fast_path_equals_general_path(rng):
    for n in (1, 2, 3):
        for counts in _random_counts(rng, n, 200) + [ngram_counts(w, n) for w in _random_words(rng, "ab", 50, 8)]:
            assert ngram_preimage(counts, n) == _general(counts, n)
    assert ngram_preimage({"^a": 1, "a$": 1.5, "aa": 0.49}, 2) == _general({"^a": 1, "a$": 1.5, "aa": 0.49}, 2)


@pytest.mark.parametrize(
    "counts, match",
    [
        ([{"^a": 1}, {"abc": 1}], r"'counts\[1\]' has the key 'abc' of length 3"),
        ([{"^a": 1}, {"a$": float("nan")}], r"'counts\[1\]\['a\$'\]' must be a finite number"),
        ([{"^a": True}], r"'counts\[0\]\['\^a'\]' must be a finite number"),
        ([{"^a": "1"}], r"'counts\[0\]\['\^a'\]' must be a finite number"),
    ],
)
def test_batch_errors_name_the_mapping(counts, match):
    with pytest.raises(ValueError, match=match):
        ngram_preimage_batch(counts, 2)


def test_batch_rejects_bad_containers():
    with pytest.raises(TypeError, match=r"'counts\[1\]' must be a mapping"):
        ngram_preimage_batch([{"^a": 1}, [1, 2]], 2)
    with pytest.raises(TypeError, match="for one mapping call ngram_preimage"):
        ngram_preimage_batch({"^a": 1}, 2)
    with pytest.raises(ValueError, match="'vocabulary' naming the n-gram of every column"):
        ngram_preimage_batch(np.ones((2, 3)), 2)
    with pytest.raises(ValueError, match="finite real numbers"):
        ngram_preimage_batch(np.array([[np.inf]]), 2, vocabulary=["^a"])
    assert ngram_preimage_batch([], 3) == []


def test_matrix_input_rejects_complex_and_bool():
    with pytest.raises(ValueError, match="finite real numbers"):
        ngram_preimage_batch(np.array([[1 + 1j]]), 2, vocabulary=["^a"])
    with pytest.raises(ValueError, match="finite real numbers"):
        ngram_preimage_batch(np.array([[True]]), 2, vocabulary=["^a"])

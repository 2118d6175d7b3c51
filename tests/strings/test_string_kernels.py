"""n-gram features and kernels against explicit double sums."""

import numpy as np
import pytest

from iokr import config_context
from iokr.kernels import Gaussian
from iokr.strings import (
    NgramKernel,
    NgramVectorizer,
    SequenceNgramKernel,
    SequencePolynomialKernel,
    ngram_counts,
    ngram_features,
)

WORDS = ["banana", "bandana", "", "a", "nab", "xyz"]


def _naive_ngram_kernel(a, b, orders):
    total = 0
    for n in orders:
        ca, cb = ngram_counts(a, n), ngram_counts(b, n)
        total += sum(c * cb[u] for u, c in ca.items())
    return total


@pytest.mark.parametrize("n", [1, 2, 3, (2, 4)])
def test_ngram_kernel_matches_explicit_counts(n):
    orders = range(1, n + 1) if isinstance(n, int) else n
    K = NgramKernel(n=n)(WORDS, WORDS[:3])
    expected = np.array([[_naive_ngram_kernel(a, b, orders) for b in WORDS[:3]] for a in WORDS])
    np.testing.assert_array_equal(K, expected)
    np.testing.assert_array_equal(NgramKernel(n=n).diag(WORDS), np.diag(NgramKernel(n=n)(WORDS)))


def test_ngram_kernel_normalized_and_chunked():
    K = NgramKernel(n=3, normalize=True)(WORDS)
    np.testing.assert_allclose(np.diag(K), 1.0, atol=1e-12)
    with config_context(working_memory=3e-4):  # about 3 rows per chunk
        K_small = NgramKernel(n=3, normalize=True)(WORDS)
    np.testing.assert_allclose(K_small, K, atol=1e-14)


def test_hashed_features_equal_kernel_without_collisions():
    F = ngram_features(WORDS, orders=3, n_features=2**24)
    np.testing.assert_allclose((F @ F.T).toarray(), NgramKernel(n=3)(WORDS), atol=0)
    F2 = NgramKernel(n=3).features(WORDS, n_features=2**24)
    assert (F2 != F).nnz == 0


def test_vectorizer_counts_and_unknown_ngrams():
    vec = NgramVectorizer(orders=2).fit(["ab", "ba"])
    X = vec.transform(["abz", ""]).toarray()
    # 'abz': ^a a b z ... only n-grams seen in training are kept: a, b, ^a, ab
    assert X[0].sum() == 4
    assert X[1].sum() == 0  # the empty string's only bigram '^$' was not seen in training
    assert vec.transform(["ab"]).toarray().sum() == 5  # a, b, ^a, ab, b$


def test_reserved_symbols_and_bad_input():
    with pytest.raises(ValueError, match="reserved pad symbol"):
        NgramKernel(n=2)(["a^b"])
    with pytest.raises(TypeError, match="single str"):
        NgramKernel(n=2)("abc")
    with pytest.raises(ValueError, match="'n' parameter"):
        NgramKernel(n=0)(["ab"])
    with pytest.raises(ValueError, match="at least one string"):
        NgramKernel(n=2)([])


def _naive_sequence_kernel(xa, xb, n, base, pad):
    def grams(x):
        if pad and n > 1:
            z = np.zeros((n - 1, x.shape[1]))
            x = np.vstack([z, x, z])
        return [x[i : i + n].ravel() for i in range(x.shape[0] - n + 1)]

    return sum(base(u, v) for u in grams(xa) for v in grams(xb))


@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("pad", [True, False])
def test_sequence_polynomial_kernel_matches_double_sum(n, pad, rng):
    A = [rng.random((L, 5)) for L in (1, 3, 4, 2)]
    B = [rng.random((L, 5)) for L in (2, 5)]
    kern = SequencePolynomialKernel(n=n, degree=3, gamma=0.5, coef0=1.0, pad=pad)
    base = lambda u, v: (1.0 + 0.5 * u @ v) ** 3  # noqa: E731
    expected = np.array([[_naive_sequence_kernel(a, b, n, base, pad) for b in B] for a in A])
    np.testing.assert_allclose(kern(A, B), expected, rtol=1e-12)
    np.testing.assert_allclose(kern.diag(A), [_naive_sequence_kernel(a, a, n, base, pad) for a in A], rtol=1e-12)
    with config_context(working_memory=2e-3):
        np.testing.assert_allclose(kern(A, B), expected, rtol=1e-12)


def test_sequence_gaussian_kernel_matches_double_sum(rng):
    A = [rng.random((L, 4)) for L in (1, 3, 2)]
    kern = SequenceNgramKernel(Gaussian(gamma=0.3), n=2)
    base = lambda u, v: np.exp(-0.3 * np.sum((u - v) ** 2))  # noqa: E731
    expected = np.array([[_naive_sequence_kernel(a, b, 2, base, True) for b in A] for a in A])
    np.testing.assert_allclose(kern(A), expected, rtol=1e-12)
    Kn = SequenceNgramKernel(Gaussian(gamma=0.3), n=2, normalize=True)(A)
    np.testing.assert_allclose(Kn, expected / np.sqrt(np.outer(np.diag(expected), np.diag(expected))), rtol=1e-12)


def test_sequence_kernel_bad_input(rng):
    kern = SequencePolynomialKernel(n=2)
    with pytest.raises(ValueError, match="2-D array"):
        kern([rng.random(5)])
    with pytest.raises(ValueError, match="features"):
        kern([rng.random((2, 5)), rng.random((2, 4))])
    with pytest.raises(ValueError, match="NaN"):
        kern([np.full((2, 3), np.nan)])
    with pytest.raises(ValueError, match="'gamma'"):
        SequencePolynomialKernel(gamma=-1.0)([rng.random((2, 3))])
    # an empty sequence has no unpadded unigrams: its row is zero
    K = SequencePolynomialKernel(n=1)([np.zeros((0, 3)), rng.random((2, 3))])
    assert np.all(K[0] == 0)

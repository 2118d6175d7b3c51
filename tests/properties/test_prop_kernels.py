"""Properties of every public kernel: symmetric PSD Grams, consistent blocks and diagonals, permutation equivariance,
chunked == unchunked under a shrunken working-memory budget, float32 ~ float64, explicit features, no mutation."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st
from prop_helpers import assert_finite, counting, make_matrix, problems, scale, smallest_budget_run, unchanged
from reference import center_normalize

import iokr.kernels._base as kernel_base
import iokr.strings._kernels as string_kernels
from iokr.kernels import (
    Gaussian,
    GaussianTanimoto,
    KernelTransform,
    Linear,
    Normalized,
    Polynomial,
    Precomputed,
    RandomFourierFeatures,
    Tanimoto,
    WeightedSum,
)
from iokr.strings import NgramKernel, SequenceNgramKernel, SequencePolynomialKernel
from iokr.text import BagOfWordsKernel, ContextualWeightingKernel, TransformedContextKernel, WordPositionKernel

# name -> (factory, needs non-negative inputs)
VECTOR_KERNELS = {
    "linear": (lambda: Linear(), False),
    "polynomial2": (lambda: Polynomial(degree=2, gamma=0.5, coef0=1.0), False),
    "polynomial3": (lambda: Polynomial(degree=3, gamma=1.0, coef0=0.0), False),
    "gaussian": (lambda: Gaussian(gamma=0.7), False),
    "normalized_linear": (lambda: Normalized(Linear()), False),
    "normalized_polynomial": (lambda: Normalized(Polynomial(degree=2)), False),
    "weighted_sum": (lambda: WeightedSum([Linear(), Gaussian(0.5)], [0.3, 0.7]), False),
    "rff": (lambda: RandomFourierFeatures(gamma=0.5, n_components=16, random_state=3), False),
    "tanimoto_inner": (lambda: Tanimoto("inner"), True),
    "tanimoto_minmax": (lambda: Tanimoto("minmax"), True),
    "gaussian_tanimoto": (lambda: GaussianTanimoto(gamma=1.5, form="inner"), True),
    "gaussian_tanimoto_minmax": (lambda: GaussianTanimoto(gamma=0.5, form="minmax"), True),
}


def _inputs(spec, nonnegative, binary=False):
    rng = np.random.default_rng(spec["seed"])
    A = make_matrix(rng, spec["n"], spec["d"], spec["degeneracy"], dtype=spec["dtype"], nonnegative=nonnegative,
                    binary=binary)
    B = make_matrix(rng, max(1, spec["p"]), spec["d"], "none", dtype=spec["dtype"], nonnegative=nonnegative,
                    binary=binary)
    return A, B


def _tol(dtype, magnitude):
    return (1e-4 if np.dtype(dtype) == np.float32 else 1e-10) * magnitude


def assert_symmetric_psd(K, dtype=np.float64):
    K = np.asarray(K, dtype=np.float64)
    assert_finite(K, "kernel values")
    magnitude = scale(K)
    np.testing.assert_allclose(K, K.T, rtol=0, atol=_tol(dtype, magnitude))
    eigenvalues = np.linalg.eigvalsh(0.5 * (K + K.T))
    assert eigenvalues.min() >= -_tol(dtype, magnitude) * K.shape[0] * 10, eigenvalues


@pytest.mark.parametrize("name", sorted(VECTOR_KERNELS))
@given(spec=problems(max_n=9, max_d=5, max_p=7), binary=st.booleans())
def test_vector_kernel_properties(name, spec, binary):
    factory, nonnegative = VECTOR_KERNELS[name]
    kernel = factory()
    A, B = _inputs(spec, nonnegative, binary=binary and nonnegative)
    dtype = spec["dtype"]
    with unchanged(A, B):
        K = kernel(A)
        K_ab = kernel(A, B)
        diag = kernel.diag(A)
    assert K.dtype == dtype and K_ab.dtype == dtype  # float32 stays float32
    assert K.shape == (A.shape[0], A.shape[0]) and K_ab.shape == (A.shape[0], B.shape[0])
    assert_symmetric_psd(K, dtype)
    assert_finite(K_ab)
    magnitude = scale(K, K_ab)
    tol = _tol(dtype, magnitude)
    np.testing.assert_allclose(diag, np.diag(K), rtol=0, atol=tol)
    np.testing.assert_allclose(kernel(B, A), K_ab.T, rtol=0, atol=tol)

    rng = np.random.default_rng(spec["seed"] + 1)
    pa, pb = rng.permutation(A.shape[0]), rng.permutation(B.shape[0])
    np.testing.assert_allclose(kernel(A[pa], B[pb]), K_ab[np.ix_(pa, pb)], rtol=0, atol=tol)

    # float32 ~ float64 (the float64 evaluation of the same values as reference)
    K64 = kernel(A.astype(np.float64), B.astype(np.float64))
    np.testing.assert_allclose(K_ab, K64, rtol=0, atol=_tol(np.float32, scale(K64)))

    # chunked == unchunked, with more than one chunk actually used
    with counting(kernel_base, "row_slices") as chunks:
        K_chunked, _ = smallest_budget_run(lambda: kernel(A, B))
    if A.shape[0] > 1:
        assert chunks[0] > 1
    np.testing.assert_allclose(K_chunked, K_ab, rtol=0, atol=tol)

    if kernel.has_explicit_features:
        F_a, F_b = kernel.features(A), kernel.features(B)
        np.testing.assert_allclose(F_a @ F_b.T, K_ab, rtol=0, atol=10 * tol)


@given(spec=problems(max_n=8, max_d=4, max_p=5))
def test_precomputed_kernel_indexes_its_gram(spec):
    rng = np.random.default_rng(spec["seed"])
    F = make_matrix(rng, spec["n"], spec["d"], spec["degeneracy"])
    gram = F @ F.T
    kernel = Precomputed(gram)
    a = rng.integers(0, spec["n"], size=spec["p"])
    with unchanged(gram, a):
        K = kernel(a[:, None])
        diag = kernel.diag(a[:, None])
    np.testing.assert_array_equal(K, gram[np.ix_(a, a)])
    np.testing.assert_array_equal(diag, gram[a, a])
    assert_symmetric_psd(K)


@pytest.mark.parametrize("center", [True, False])
@pytest.mark.parametrize("normalize", [True, False])
@given(spec=problems(max_n=9, max_d=4, max_p=5))
def test_kernel_transform_matches_explicit_features(center, normalize, spec):
    """Centering/normalization in kernel form equals the explicit feature-space transform (Linear kernel)."""
    rng = np.random.default_rng(spec["seed"])
    F = make_matrix(rng, spec["n"], spec["d"], spec["degeneracy"])
    G = make_matrix(rng, spec["p"], spec["d"], "none")
    gram, cross = F @ F.T, G @ F.T
    diag = np.einsum("ij,ij->i", G, G)
    transform = KernelTransform(center=center, normalize=normalize)
    with unchanged(gram, cross, diag):
        K_t = transform.fit_transform(gram)
        cross_t, diag_t = transform.transform(cross, diag)
    F_t, G_t = center_normalize(F, G, center=center, normalize=normalize)
    assert_symmetric_psd(K_t)
    assert_finite(cross_t)
    magnitude = scale(gram, cross)
    # Points at the training mean are zero vectors: the explicit transform keeps rounding noise there, the kernel
    # form zeroes them on purpose (see KernelTransform.fit_transform), so compare only the well-defined rows.
    ok_train = np.einsum("ij,ij->i", *(2 * [F - (F.mean(0) if center else 0)])) > 1e-8 * magnitude
    ok_test = np.einsum("ij,ij->i", *(2 * [G - (F.mean(0) if center else 0)])) > 1e-8 * magnitude
    expected = F_t @ F_t.T
    np.testing.assert_allclose(K_t[np.ix_(ok_train, ok_train)], expected[np.ix_(ok_train, ok_train)], atol=1e-7)
    np.testing.assert_allclose(cross_t[np.ix_(ok_test, ok_train)], (G_t @ F_t.T)[np.ix_(ok_test, ok_train)],
                               atol=1e-7 * magnitude)
    np.testing.assert_allclose(diag_t[ok_test], np.einsum("ij,ij->i", G_t, G_t)[ok_test], atol=1e-7 * magnitude)


# -- kernels on strings and on sequences of vectors ----------------------------------------------------------------


strings = st.lists(st.text(alphabet="abcd", min_size=0, max_size=6), min_size=1, max_size=7)


@pytest.mark.parametrize("n, normalize", [(1, False), (2, True), (3, False)])
@given(A=strings, B=strings)
def test_ngram_kernel_properties(n, normalize, A, B):
    kernel = NgramKernel(n=n, normalize=normalize)
    with unchanged(list(A), list(B)):
        K, K_ab, diag = kernel(A), kernel(A, B), kernel.diag(A)
    assert_symmetric_psd(K)
    np.testing.assert_allclose(diag, np.diag(K), atol=1e-12 * scale(K))
    np.testing.assert_allclose(kernel(B, A), K_ab.T, atol=1e-12 * scale(K_ab))
    perm = np.random.default_rng(len(A)).permutation(len(A))
    np.testing.assert_allclose(kernel([A[i] for i in perm], B), K_ab[perm], atol=1e-12 * scale(K_ab))
    with counting(string_kernels, "row_slices") as chunks:
        K_chunked, _ = smallest_budget_run(lambda: kernel(A, B))
    assert len(A) == 1 or chunks[0] > 1
    np.testing.assert_allclose(K_chunked, K_ab, atol=1e-12 * scale(K_ab))
    if not normalize:
        assert np.all(K_ab == np.round(K_ab)) and np.all(K_ab >= 0)  # counts of shared n-grams


@st.composite
def vector_sequences(draw, d):
    seed = draw(st.integers(0, 2**16))
    lengths = draw(st.lists(st.integers(0, 4), min_size=1, max_size=5))
    rng = np.random.default_rng(seed)
    return [rng.normal(size=(L, d)) for L in lengths]


@pytest.mark.parametrize("factory", [lambda: SequenceNgramKernel(Gaussian(0.5), n=1),
                                     lambda: SequenceNgramKernel(Linear(), n=2, pad=False),
                                     lambda: SequencePolynomialKernel(n=2, degree=2),
                                     lambda: SequencePolynomialKernel(n=1, degree=3, normalize=True)],
                         ids=["ngram1", "ngram2-nopad", "poly2", "poly3-normalized"])
@given(A=vector_sequences(3), B=vector_sequences(3))
def test_sequence_kernel_properties(factory, A, B):
    kernel = factory()
    with unchanged(A, B):
        K, K_ab = kernel(A), kernel(A, B)
    assert_symmetric_psd(K)
    magnitude = scale(K, K_ab)
    np.testing.assert_allclose(kernel.diag(A), np.diag(K), atol=1e-10 * magnitude)
    np.testing.assert_allclose(kernel(B, A), K_ab.T, atol=1e-10 * magnitude)
    perm = np.random.default_rng(len(A)).permutation(len(A))
    np.testing.assert_allclose(kernel([A[i] for i in perm], B), K_ab[perm], atol=1e-10 * magnitude)
    with counting(string_kernels, "row_slices") as chunks:
        K_chunked, _ = smallest_budget_run(lambda: kernel(A, B))
    assert len(A) == 1 or chunks[0] > 1
    np.testing.assert_allclose(K_chunked, K_ab, atol=1e-10 * magnitude)


# -- context kernels (text) ------------------------------------------------------------------------------------------


CONTEXT_KERNELS = {
    "bag_of_words": lambda window, n_words: BagOfWordsKernel(window=window),
    "contextual_weighting": lambda window, n_words: ContextualWeightingKernel(window=window, decay=1.2),
    "word_position": lambda window, n_words: WordPositionKernel(window=window, theta=0.4),
    "transformed": lambda window, n_words: TransformedContextKernel(
        window=window, theta=0.3, word_mix=0.5,
        word_embedding=np.random.default_rng(n_words).normal(size=(n_words, 2))),
}


@pytest.mark.parametrize("name", sorted(CONTEXT_KERNELS))
@given(n=st.integers(1, 7), m=st.integers(1, 4), window=st.integers(1, 3), n_words=st.integers(1, 5),
       density=st.sampled_from([0.0, 0.2, 0.6]), seed=st.integers(0, 2**16))
def test_context_kernel_properties(name, n, m, window, n_words, density, seed):
    kernel = CONTEXT_KERNELS[name](window, n_words)
    width = n_words * 2 * window
    A = sp.random(n, width, density=density, format="csr", random_state=seed)
    A.data[:] = 1.0  # word-position indicators
    B = sp.random(m, width, density=0.3, format="csr", random_state=seed + 1)
    A_before, B_before = A.toarray(), B.toarray()
    K, K_ab = kernel(A), kernel(A, B)
    np.testing.assert_array_equal(A.toarray(), A_before)
    np.testing.assert_array_equal(B.toarray(), B_before)
    assert_symmetric_psd(K)
    magnitude = scale(K, K_ab)
    np.testing.assert_allclose(kernel.diag(A), np.diag(K), atol=1e-10 * magnitude)
    np.testing.assert_allclose(kernel(B, A), K_ab.T, atol=1e-10 * magnitude)
    F_a, F_b = kernel.features(A), kernel.features(B)
    np.testing.assert_allclose((F_a @ F_b.T).toarray(), K_ab, atol=1e-10 * magnitude)
    dual = np.random.default_rng(seed).normal(size=n)
    w = kernel.primal_weights(A, dual)
    np.testing.assert_allclose(np.asarray(B @ w).ravel(), K_ab.T @ dual, atol=1e-9 * magnitude * (1 + np.abs(dual).sum()))
    with counting(kernel_base, "row_slices") as chunks:
        K_chunked, _ = smallest_budget_run(lambda: kernel(A, B))
    assert n == 1 or chunks[0] > 1
    np.testing.assert_allclose(K_chunked, K_ab, atol=1e-12 * magnitude)

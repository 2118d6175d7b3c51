"""Intersection-count Tanimoto (popcount and float32 BLAS) against the float Tanimoto kernel."""

import numpy as np
import pytest

from iokr import IOKR
from iokr.decoding import CandidateSets, PackedBinaryFeatures, _bits
from iokr.kernels import GaussianTanimoto, Tanimoto


def _bits_matrix(rng, n, p, density):
    B = (rng.random((n, p)) < density).astype(np.float64)
    B[0] = 0.0  # an empty fingerprint: T(0, 0) = 1, T(0, b) = 0
    return B


@pytest.mark.parametrize("p", [1, 7, 64, 65, 200, 2048])
@pytest.mark.parametrize("method", _bits.COUNT_METHODS)
def test_intersections_equal_dot_products(p, method):
    rng = np.random.default_rng(p)
    A, B = _bits_matrix(rng, 37, p, 0.3), _bits_matrix(rng, 45, p, 0.2)
    if method == "popcount":
        counts = _bits.popcount_intersections(_bits.pack_words(A), _bits.pack_words(B))
    else:
        counts = _bits.blas_intersections(A, B)
    np.testing.assert_array_equal(counts, (A @ B.T).astype(np.int64))
    np.testing.assert_array_equal(_bits.bit_counts(_bits.pack_words(A)), A.sum(axis=1).astype(np.int64))


def test_popcount_tiles_cover_odd_shapes(monkeypatch):
    monkeypatch.setattr(_bits, "_TILE_ROWS", 3)
    monkeypatch.setattr(_bits, "_TILE_COLS", 5)
    rng = np.random.default_rng(1)
    A, B = _bits_matrix(rng, 11, 130, 0.5), _bits_matrix(rng, 13, 130, 0.5)
    counts = _bits.popcount_intersections(_bits.pack_words(A), _bits.pack_words(B))
    np.testing.assert_array_equal(counts, (A @ B.T).astype(np.int64))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("method", _bits.COUNT_METHODS)
def test_popcount_tanimoto_equals_float_tanimoto(dtype, method):
    rng = np.random.default_rng(2)
    A, B = _bits_matrix(rng, 30, 300, 0.1).astype(dtype), _bits_matrix(rng, 25, 300, 0.15).astype(dtype)
    words = _bits.pack_words(B)
    T = _bits.binary_tanimoto(A, words, _bits.bit_counts(words), method=method, dtype=dtype)
    expected = Tanimoto()(A, B)
    assert T.dtype == expected.dtype
    np.testing.assert_array_equal(T, expected)  # same rationals, one correctly rounded division each


def test_words_from_packed_bytes_matches_pack_words():
    rng = np.random.default_rng(3)
    A = _bits_matrix(rng, 9, 2048, 0.1)
    packed = PackedBinaryFeatures.from_dense(A.astype(np.uint8))
    np.testing.assert_array_equal(_bits.words_from_packed_bytes(packed.packed), _bits.pack_words(A))
    np.testing.assert_array_equal(_bits.unpack_words(_bits.pack_words(A), 2048), A)


def test_is_binary():
    assert _bits.is_binary(np.array([[0.0, 1.0]]))
    assert not _bits.is_binary(np.array([[0.0, 0.5]]))


@pytest.mark.parametrize("kernel", [Tanimoto(), GaussianTanimoto(gamma=0.7)])
@pytest.mark.parametrize("decoding", ["distance", "cosine", "inner"])
def test_iokr_ranks_packed_candidates_like_float_path(kernel, decoding, monkeypatch):
    rng = np.random.default_rng(4)
    X = rng.normal(size=(40, 5))
    Y = (rng.random((40, 100)) < 0.2).astype(np.float64)
    pool = (rng.random((300, 100)) < 0.2).astype(np.uint8)
    model = IOKR(alpha=0.3, input_kernel="gaussian", output_kernel=kernel, decoding=decoding).fit(X, Y)
    assert model.output_.binary is not None
    packed = CandidateSets.shared(PackedBinaryFeatures.from_dense(pool), 6)
    fast, tops = {}, {}
    for method in _bits.COUNT_METHODS:
        monkeypatch.setattr(_bits, "DEFAULT_COUNT_METHOD", method)
        fast[method] = model.decision_function(X[:6], PackedBinaryFeatures.from_dense(pool))
        ranked = model.rank(X[:6], packed, top_k=20)
        tops[method] = np.array([r.pool_indices for r in ranked])
    # Brute force: the float kernel on explicit float64 candidates (the float path, no counts).
    model.output_.binary = None
    slow = model.decision_function(X[:6], pool.astype(np.float64))
    for method, S in fast.items():
        np.testing.assert_allclose(S, slow, rtol=1e-5, atol=1e-6, err_msg=method)
    np.testing.assert_array_equal(tops["popcount"], tops["blas"])

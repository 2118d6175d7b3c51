"""Fused scoring of bit-packed 0/1 candidates (``BinaryRule``) vs the direct path and a float64 explicit formula.

The direct path (the pool given as a dense float32 array) centers, normalizes and scales every candidate block before
the matrix product; the fused path multiplies the unpacked 0/1 block and applies centering and per-candidate factors
afterwards. Both are float32 computations of the same numbers: they must agree to float32 round-off (relative to the
score scale) and both must agree with the float64 formula ``(h' . (c - m) * s(c)) + offset(c)``.
"""

import numpy as np
import pytest

from iokr import IOKR, CandidateSets, config_context
from iokr.decoding import PackedBinaryFeatures, _bits, _scoring, dense_scores, top_k_scores, write_candidate_file
from iokr.kernels import Gaussian, Tanimoto

DECODINGS = ("inner", "distance", "cosine")
FLAGS = [(c, n) for c in (False, True) for n in (False, True)]


def _fit(decoding, center, normalize, p=37, n=60, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    Y = (rng.random((n, p)) < 0.3).astype(np.float64)
    model = IOKR(alpha=0.5, input_kernel=Gaussian(0.2), decoding=decoding, center_output=center,
                 normalize_output=normalize).fit(X, Y)
    return model, rng, Y


def _pool(rng, Y, n_pool=211):
    bits = (rng.random((n_pool, Y.shape[1])) < 0.3).astype(np.float32)
    bits[0] = 0.0  # the empty fingerprint
    bits[3] = bits[1]  # exact duplicates
    return bits


def _reference(model, X, C):
    """float64 explicit formula of the fitted model's scores (the definition of the decodings)."""
    out = model.output_
    H = model.predict_features(X)
    m = out.feature_transform.mean_ if out.center else np.zeros(C.shape[1])
    R = C.astype(np.float64) - m
    sq = np.einsum("ij,ij->i", R, R)
    inv = np.zeros_like(sq)
    inv[sq > 0] = 1 / np.sqrt(sq[sq > 0])
    if out.normalize:
        R = R * inv[:, None]
        sq = (sq > 0).astype(float)
    if model.decoding == "inner":
        return H @ R.T
    if model.decoding == "distance":
        return 2 * H @ R.T - sq[None, :]
    if not out.normalize:
        R = R * inv[:, None]
    h = np.linalg.norm(H, axis=1)
    return (H / np.where(h > 0, h, 1)[:, None]) @ R.T


def _scale(S):
    return max(float(np.abs(S).max()), 1.0)


@pytest.mark.parametrize("decoding", DECODINGS)
@pytest.mark.parametrize("center,normalize", FLAGS)
@pytest.mark.parametrize("working_memory", [None, 0.05])
def test_fused_equals_direct_and_reference(decoding, center, normalize, working_memory, tmp_path):
    model, rng, Y = _fit(decoding, center, normalize)
    X = rng.normal(size=(17, 5))
    bits = _pool(rng, Y)
    packed = PackedBinaryFeatures.from_dense(bits)
    on_disk = write_candidate_file(str(tmp_path / "pool.bin"), packed, block_rows=50)
    model.set_params(working_memory=working_memory)
    scorer = model._scorer(X, None)
    assert scorer.binary_rule is not None
    direct = model.decision_function(X, bits)  # dense float32 pool: the direct path
    reference = _reference(model, X, bits)
    tol = 2e-6 * _scale(reference)
    np.testing.assert_allclose(direct, reference, rtol=0, atol=tol)
    for pool in (packed, on_disk):
        assert _scoring.packed_reader(pool) is not None
        fused = model.decision_function(X, pool)
        assert fused.dtype == np.float32
        np.testing.assert_allclose(fused, direct, rtol=0, atol=tol)
        np.testing.assert_allclose(fused, reference, rtol=0, atol=tol)
    on_disk.close()


@pytest.mark.parametrize("decoding", DECODINGS)
@pytest.mark.parametrize("center,normalize", FLAGS)
def test_fused_chunked_equals_unchunked_and_top_k_is_exact(decoding, center, normalize):
    model, rng, Y = _fit(decoding, center, normalize, seed=1)
    X = rng.normal(size=(9, 5))
    packed = PackedBinaryFeatures.from_dense(_pool(rng, Y, n_pool=300))
    scorer = model._scorer(X, None)
    whole = dense_scores(scorer, packed, working_memory=64)
    for budget in (0.004, 0.02):
        assert _scoring._plan(scorer, 300, budget)[1] < 300  # really chunked
        chunked = dense_scores(scorer, packed, working_memory=budget)
        np.testing.assert_allclose(chunked, whole, rtol=0, atol=2e-6 * _scale(whole))
        idx, scores = top_k_scores(scorer, packed, 10, working_memory=budget)
        # Brute force on the scores of the same run: stable full sort of every row.
        S = dense_scores(scorer, packed, working_memory=budget)
        for q in range(X.shape[0]):
            order = np.lexsort((np.arange(S.shape[1]), -S[q].astype(np.float64)))[:10]
            np.testing.assert_array_equal(idx[q], order)
            np.testing.assert_array_equal(scores[q], S[q, order])


def test_rank_uses_fused_path_and_matches_dense_pool():
    model, rng, Y = _fit("cosine", True, False, seed=2)
    X = rng.normal(size=(6, 5))
    bits = _pool(rng, Y)
    packed = PackedBinaryFeatures.from_dense(bits)
    ranked = model.rank(X, CandidateSets.shared(packed, 6), top_k=15)
    reference = _reference(model, X, bits)
    for q, r in enumerate(ranked):
        np.testing.assert_allclose(r.scores, reference[q, r.pool_indices], atol=2e-6 * _scale(reference))
        kth = np.sort(reference[q])[::-1][14]
        assert reference[q, r.pool_indices].min() >= kth - 4e-6 * _scale(reference)


def test_candidate_equal_to_mean_has_zero_norm():
    """When every training output is the same row, that row is the mean: ``c - m = 0`` exactly, so its norm is 0
    (not round-off), its cosine/normalization factor is 0 and its distance offset is 0, as in the direct path."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(6, 5))
    row = (rng.random(16) < 0.5).astype(float)
    Y = np.tile(row, (6, 1))
    C = np.vstack([row, np.zeros(16), (rng.random((5, 16)) < 0.5)]).astype(np.float32)
    for decoding in DECODINGS:
        for normalize in (False, True):
            model = IOKR(alpha=1.0, input_kernel=Gaussian(0.2), decoding=decoding,
                         normalize_output=normalize).fit(X, Y)
            np.testing.assert_array_equal(model.output_.feature_transform.mean_, row)
            fused = model.decision_function(X, PackedBinaryFeatures.from_dense(C))
            direct = model.decision_function(X, C)
            assert np.all(np.isfinite(fused))
            np.testing.assert_allclose(fused, direct, rtol=0, atol=1e-6 * _scale(direct))
            assert np.all(fused[:, 0] == 0.0)


def test_padding_bits_are_ignored():
    model, rng, Y = _fit("distance", True, False, p=13)
    X = rng.normal(size=(5, 5))
    bits = _pool(rng, Y, n_pool=40)
    clean = PackedBinaryFeatures.from_dense(bits)
    dirty = clean.packed.copy()
    dirty[:, -1] |= np.uint8(0b111)  # 13 features: the 3 low bits of the last byte are padding
    fused = model.decision_function(X, PackedBinaryFeatures(dirty, 13))
    np.testing.assert_array_equal(fused, model.decision_function(X, clean))


def test_non_linear_output_kernel_has_no_binary_rule():
    rng = np.random.default_rng(4)
    X, Y = rng.normal(size=(20, 3)), (rng.random((20, 16)) < 0.4).astype(float)
    model = IOKR(output_kernel=Tanimoto(), input_kernel=Gaussian(0.3)).fit(X, Y)
    assert model._scorer(X[:2], None).binary_rule is None
    assert _scoring.packed_reader(np.zeros((3, 16))) is None


@pytest.mark.parametrize("p", [1, 7, 8, 9, 64, 2048 - 3])
def test_packed_helpers_match_brute_force(p):
    rng = np.random.default_rng(p)
    bits = (rng.random((23, p)) < 0.4).astype(np.uint8)
    packed = np.packbits(bits, axis=1)
    w = rng.normal(size=p)
    np.testing.assert_array_equal(_bits.packed_row_counts(packed, p), bits.sum(axis=1))
    np.testing.assert_allclose(_bits.packed_dot(packed, _bits.byte_dot_table(w)), bits @ w, rtol=1e-13, atol=1e-12)
    out = np.full((23, packed.shape[1] * 8), 7.0, dtype=np.float32)
    _bits.unpack_into(packed, out)
    np.testing.assert_array_equal(out[:, :p], bits)
    np.testing.assert_array_equal(out[:, p:], 0)


def test_fused_scoring_memory_stays_within_budget():
    """The fused path reuses two buffers of at most (candidate rows) x (width or queries) entries."""
    model, rng, Y = _fit("cosine", True, True, p=64, seed=5)
    X = rng.normal(size=(8, 5))
    packed = PackedBinaryFeatures.from_dense((rng.random((1000, 64)) < 0.3).astype(np.uint8))
    with config_context(working_memory=0.01):
        scorer = model._scorer(X, None)
        _, rows = _scoring._plan(scorer, 1000, None)
        blocks = [stop - start for start, stop, _ in _scoring._score_blocks(scorer, scorer.query_block(slice(0, 8)),
                                                                          packed, rows)]
    assert max(blocks) == rows < 1000 and sum(blocks) == 1000


@pytest.mark.parametrize("offset", [False, True])
def test_candidates_close_to_the_mean_keep_float32_accuracy(offset):
    """A mean within 1e-3 of a 0/1 candidate and dense unit queries: ``<q, c> - <q, m>`` cancels and the factor
    ``1 / ||c - m||`` (about 50 here) would magnify its float32 error; the score must still match the float64
    formula to float32 round-off of the score itself."""
    rng = np.random.default_rng(7)
    p, n_pool = 512, 40
    C = (rng.random((n_pool, p)) < 0.5).astype(np.float32)
    mean = C[0] + rng.choice([-1e-3, 1e-3], size=p) * (C[0] == 0) * (rng.random(p) < 0.5)
    mean = np.clip(mean, 0, 1)
    Q = rng.normal(size=(6, p))
    Q /= np.linalg.norm(Q, axis=1, keepdims=True)

    def terms(sq):
        inv = np.where(sq > 0, 1 / np.sqrt(np.where(sq > 0, sq, 1)), 0.0)
        return inv, (-sq if offset else None)

    scorer = _scoring.Scorer(6, p, lambda rows: Q[rows], None, binary_rule=_scoring.BinaryRule(mean, terms))
    fused = dense_scores(scorer, PackedBinaryFeatures.from_dense(C))
    R = C.astype(np.float64) - mean
    sq = np.einsum("ij,ij->i", R, R)
    reference = (Q @ R.T) / np.sqrt(sq)[None, :] - (sq[None, :] if offset else 0.0)
    assert 1 / np.sqrt(sq[0]) > 40
    np.testing.assert_allclose(fused, reference, rtol=0, atol=2e-6 * _scale(reference))


@pytest.mark.parametrize("shape", [(1, 1), (3, 7), (5, 64), (37, 101), (200, 333)])
@pytest.mark.parametrize("density", [0.0, 0.001, 0.02, 0.5, 1.0])
def test_sparse_nonzero_matches_numpy(shape, density):
    rng = np.random.default_rng(shape[0] * 1000 + shape[1])
    mask = rng.random(shape) < density
    rows, cols = _scoring._sparse_nonzero(mask, int(mask.sum()))
    ref_rows, ref_cols = np.nonzero(mask)
    np.testing.assert_array_equal(rows, ref_rows)
    np.testing.assert_array_equal(cols, ref_cols)

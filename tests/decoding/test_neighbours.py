import numpy as np
import pytest

from iokr.decoding import CountFeatures, PackedBinaryFeatures, neighbour_similarity, top_mean
from iokr.kernels import Tanimoto


def _brute(candidates, reference, k):
    """Each candidate's similarities to every reference row, sorted, the k largest averaged (one row at a time)."""
    out = []
    for c in candidates:
        sims = []
        for r in reference:
            dot = float(c @ r)
            denom = float(c @ c + r @ r - dot)
            sims.append(dot / denom if denom > 0 else 1.0)
        out.append(np.mean(sorted(sims)[::-1][:k]))
    return np.array(out)


@pytest.mark.parametrize("k", [1, 3, 7, 50])
def test_matches_brute_force_at_any_budget(k):
    rng = np.random.default_rng(0)
    C = rng.integers(0, 4, size=(23, 12)).astype(np.float64)
    R = rng.integers(0, 4, size=(9, 12)).astype(np.float64)
    expected = _brute(C, R, k)
    for budget in (None, 0.001):  # 0.001 MiB: a few rows per chunk
        got = neighbour_similarity(Tanimoto(), C, R, k, working_memory=budget)
        np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_a_sequence_of_neighbour_counts_gives_one_row_per_count():
    rng = np.random.default_rng(2)
    C = rng.integers(0, 4, size=(17, 8)).astype(np.float64)
    R = rng.integers(0, 4, size=(11, 8)).astype(np.float64)
    got = neighbour_similarity(Tanimoto(), C, R, (1, 4, 11, 30), working_memory=0.001)
    assert got.shape == (4, 17)
    for row, k in zip(got, (1, 4, 11, 30), strict=True):
        np.testing.assert_allclose(row, _brute(C, R, k), rtol=1e-12)


def test_compact_pools_give_the_dense_values():
    rng = np.random.default_rng(1)
    counts = rng.integers(0, 5, size=(15, 10)).astype(np.uint8)
    bits = (rng.random((15, 10)) < 0.4)
    R = rng.integers(0, 3, size=(6, 10)).astype(np.float64)
    np.testing.assert_allclose(neighbour_similarity(Tanimoto(), CountFeatures(counts), R, 2),
                               _brute(counts.astype(float), R, 2), rtol=1e-6)
    np.testing.assert_allclose(neighbour_similarity(Tanimoto(), PackedBinaryFeatures.from_dense(bits), R, 2),
                               _brute(bits.astype(float), R, 2), rtol=1e-6)


def test_a_candidate_equal_to_a_reference_row_has_similarity_one_with_one_neighbour():
    R = np.array([[1.0, 0, 2], [0, 1, 1]])
    assert neighbour_similarity(Tanimoto(), R[::-1], R, 1).tolist() == [1.0, 1.0]


def test_empty_inputs_and_bad_neighbours():
    R = np.ones((3, 4))
    assert neighbour_similarity(Tanimoto(), np.zeros((0, 4)), R, 2).shape == (0,)
    for bad in (0, -1, 1.5, True, "3", (2, 0)):
        with pytest.raises(ValueError, match="'n_neighbors' must be a positive int"):
            neighbour_similarity(Tanimoto(), R, R, bad)


def test_top_mean_is_the_mean_of_the_sorted_row_prefix():
    rng = np.random.default_rng(4)
    block = rng.normal(size=(6, 9))
    for k in (1, 2, 9, 20):
        np.testing.assert_allclose(top_mean(block, k), [np.mean(sorted(row)[::-1][:k]) for row in block])
    assert top_mean(np.zeros((3, 0)), (1, 2)).shape == (2, 3) and top_mean(np.zeros((0, 4)), 2).shape == (0,)
def test_an_empty_reference_is_refused_not_averaged_to_zero():
    # the mean of no similarities is undefined: 0 would silently read as "unlike every reference structure"
    with pytest.raises(ValueError, match="'reference' must have at least one row"):
        neighbour_similarity(Tanimoto(), np.ones((3, 4)), np.zeros((0, 4)), 2)


@pytest.mark.parametrize("n_candidates,n_ref", [(3, 5), (0, 5), (3, 0)])
def test_mismatched_feature_counts_are_refused_even_when_a_side_is_empty(n_candidates, n_ref):
    with pytest.raises(ValueError, match="4 features but 'reference' has 6"):
        neighbour_similarity(Tanimoto(), np.ones((n_candidates, 4)), np.ones((n_ref, 6)), 2)
    with pytest.raises(ValueError, match="4 features but 'reference' has 6"):
        neighbour_similarity(Tanimoto(), CountFeatures(np.ones((n_candidates, 4), np.uint8)), np.ones((n_ref, 6)), 2)


def test_an_empty_sequence_of_neighbour_counts_names_the_parameter():
    with pytest.raises(ValueError, match="'n_neighbors' must be a positive int"):
        neighbour_similarity(Tanimoto(), np.ones((2, 4)), np.ones((3, 4)), [])


class _RecordingTanimoto(Tanimoto):
    def __init__(self):
        super().__init__()
        self.chunks = []

    def __call__(self, A, B=None, *, working_memory=None):
        self.chunks.append(np.asarray(A).shape)
        return super().__call__(A, B, working_memory=working_memory)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_chunks_count_the_candidate_rows_not_only_the_kernel_block(dtype):
    # few reference rows, long fingerprints (a small training set, 2,215 features): the chunk's expanded
    # candidate rows dominate; sized by the kernel block alone, a 0.5 MiB budget took all 3,000 rows in one chunk
    # (26.6 MB in float32)
    rng = np.random.default_rng(0)
    C = rng.integers(0, 3, size=(3000, 2215)).astype(dtype)
    R = rng.integers(0, 3, size=(2, 2215)).astype(np.float64)
    kernel = _RecordingTanimoto()
    budget = 0.5
    got = neighbour_similarity(kernel, C, R, 1, working_memory=budget)
    assert max(rows * p * np.dtype(dtype).itemsize for rows, p in kernel.chunks) <= budget * 2**20
    np.testing.assert_allclose(got[:5], _brute(C[:5].astype(np.float64), R, 1), rtol=1e-6)

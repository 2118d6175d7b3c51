"""Candidate sets (pooling, deduplication, validation) and bit-packed binary features."""

import numpy as np
import pytest

import iokr
from iokr.decoding import CandidateSets, CountFeatures, PackedBinaryFeatures
from iokr.decoding._candidates import unique_rows
from iokr.decoding.developer import as_candidate_sets
from iokr.estimators import IOKR
from iokr.kernels import Tanimoto


@pytest.mark.parametrize("n_features", [1, 8, 13, 64])
def test_packed_binary_round_trip(rng, n_features):
    bits = (rng.random((17, n_features)) < 0.5).astype(np.uint8)
    bits[3] = 0
    bits[4] = 1
    packed = PackedBinaryFeatures.from_dense(bits)
    assert packed.shape == (17, n_features) and len(packed) == 17
    assert packed.packed.shape == (17, (n_features + 7) // 8)
    np.testing.assert_array_equal(packed[0:17], bits.astype(np.float32))
    assert packed[2:9].dtype == np.float32
    rows = np.array([16, 0, 4, 4])
    np.testing.assert_array_equal(packed[rows], bits[rows])
    again = PackedBinaryFeatures(np.packbits(bits, axis=1), n_features)
    np.testing.assert_array_equal(again[0:17], bits)


def test_packed_binary_validation():
    with pytest.raises(ValueError, match="'bits' must be a 2-D array of zeros and ones"):
        PackedBinaryFeatures.from_dense(np.array([[0, 2]]))
    with pytest.raises(ValueError, match="'packed' must be a 2-D uint8 array"):
        PackedBinaryFeatures(np.zeros((2, 2), dtype=np.int64), 16)
    with pytest.raises(ValueError, match="'n_features'=17 does not match packed rows of 2 bytes"):
        PackedBinaryFeatures(np.zeros((2, 2), dtype=np.uint8), 17)


def test_from_arrays_deduplicates_and_preserves_sets(rng):
    base = rng.integers(0, 2, size=(6, 5)).astype(float)
    base = np.unique(base, axis=0)
    sets = [base[[0, 1, 2]], base[[2, 0]], np.zeros((0, 5)), base[[1, 1, 3]], base[[len(base) - 1]]]
    copies = [s.copy() for s in sets]
    pooled = CandidateSets.from_arrays(sets)
    assert pooled.n_queries == len(sets) == len(pooled)
    assert pooled.pool.shape[0] == len(np.unique(np.concatenate(sets), axis=0))  # each distinct row once
    assert len({tuple(r) for r in pooled.pool}) == pooled.pool.shape[0]
    np.testing.assert_array_equal(pooled.sizes, [3, 2, 0, 3, 1])
    np.testing.assert_array_equal(pooled.empty_queries, [2])
    for q, s in enumerate(sets):
        np.testing.assert_array_equal(pooled.candidates(q), s)  # own order kept, duplicates kept
    assert pooled.indices[3][0] == pooled.indices[3][1]
    raw = CandidateSets.from_arrays(sets, deduplicate=False)
    assert raw.pool.shape[0] == 9
    for q, s in enumerate(sets):
        np.testing.assert_array_equal(raw.candidates(q), s)
    for s, c in zip(sets, copies, strict=True):
        np.testing.assert_array_equal(s, c)


def test_shared_sets():
    pool = np.arange(12.0).reshape(4, 3)
    sets = CandidateSets.shared(pool, 3)
    assert sets.n_queries == 3 and sets.n_features == 3
    for q in range(3):
        np.testing.assert_array_equal(sets.candidates(q), pool)


@pytest.mark.parametrize(
    "indices, match",
    [
        ([np.array([0, 4])], r"'indices\[0\]' references pool rows outside \[0, 4\): range \[0, 4\]"),
        ([np.array([1]), np.array([-1])], r"'indices\[1\]' references pool rows outside"),
        ([np.array([0.0, 1.0])], r"'indices\[0\]' must be a 1-D integer array"),
        ([np.array([[0, 1]])], r"'indices\[0\]' must be a 1-D integer array"),
    ],
)
def test_invalid_indices_are_rejected(indices, match):
    with pytest.raises(ValueError, match=match):
        CandidateSets(np.zeros((4, 2)), indices)


def test_invalid_pool_ids_and_arrays():
    with pytest.raises(ValueError, match="'pool' must be 2-D"):
        CandidateSets(np.zeros(4), [np.array([0])])
    with pytest.raises(ValueError, match=r"'ids' must have one entry per pool row \(3\), got 2"):
        CandidateSets(np.zeros((3, 2)), [np.array([0])], ids=["a", "b"])
    with pytest.raises(ValueError, match="same number of features"):
        CandidateSets.from_arrays([np.zeros((2, 3)), np.zeros((2, 4))])
    with pytest.raises(ValueError, match="at least one query"):
        CandidateSets.from_arrays([])


def test_as_candidate_sets_checks_queries_and_features():
    sets = CandidateSets(np.zeros((3, 2)), [np.array([0]), np.array([1, 2])])
    assert as_candidate_sets(sets, 2, 2) is sets
    converted = as_candidate_sets([np.zeros((1, 2)), np.ones((2, 2))], 2, 2)
    np.testing.assert_array_equal(converted.candidates(1), np.ones((2, 2)))
    with pytest.raises(ValueError, match="'candidate_sets' holds 2 sets, but 3 queries were given"):
        as_candidate_sets(sets, 3, 2)
    with pytest.raises(ValueError, match="'candidate_sets' has candidates with 2 features, but the model was fitted"):
        as_candidate_sets(sets, 2, 5)
    with pytest.raises(TypeError, match="'candidate_sets' must be a CandidateSets or a list"):
        as_candidate_sets(np.zeros((2, 2)), 2, 2)


def test_shared_sets_are_detected_from_indices():
    pool = np.eye(4)
    assert iokr.CandidateSets.shared(pool, 3).is_shared
    assert iokr.CandidateSets(pool, [np.arange(4), np.arange(4)]).is_shared
    assert not iokr.CandidateSets(pool, [np.arange(4), np.array([0, 1, 3, 2])]).is_shared
    assert not iokr.CandidateSets(pool, [np.arange(3)]).is_shared


def _unique_rows_reference(rows):
    """The former path: ``np.unique(axis=0)`` (sorts a structured dtype with one field per feature)."""
    unique, inverse = np.unique(np.ascontiguousarray(rows), axis=0, return_inverse=True)
    return unique, inverse.ravel()


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.uint8, bool])
@pytest.mark.parametrize("shape", [(300, 7), (40, 1), (1, 5), (200, 300)])
def test_unique_rows_matches_np_unique(rng, dtype, shape):
    n, width = shape
    base = rng.integers(-2, 3, size=(max(n // 4, 1), width)).astype(dtype)
    rows = base[rng.integers(0, base.shape[0], size=n)]  # many duplicates
    unique, inverse = unique_rows(rows)
    expected, expected_inverse = _unique_rows_reference(rows)
    assert unique.dtype == rows.dtype
    np.testing.assert_array_equal(unique, expected)
    np.testing.assert_array_equal(inverse, expected_inverse)
    np.testing.assert_array_equal(unique[inverse], rows)


def test_unique_rows_continuous_values_and_late_differences(rng):
    rows = rng.normal(size=(50, 20))
    rows[:, :19] = 0.5  # rows differ only in the last column: the refinement must reach it
    rows = rows[rng.integers(0, 50, size=200)]
    unique, inverse = unique_rows(rows)
    expected, expected_inverse = _unique_rows_reference(rows)
    np.testing.assert_array_equal(unique, expected)
    np.testing.assert_array_equal(inverse, expected_inverse)


def test_unique_rows_zero_and_nan_policy():
    rows = np.array([[0.0, 1.0], [-0.0, 1.0], [np.nan, 1.0], [-np.nan, 1.0], [np.nan, 2.0], [1.0, 1.0]])
    unique, inverse = unique_rows(rows)
    # -0.0 and 0.0 collapse (as np.unique does); NaN rows equal elsewhere collapse (np.unique keeps them apart).
    np.testing.assert_array_equal(inverse, [0, 0, 2, 2, 3, 1])
    assert unique.shape == (4, 2) and not np.signbit(unique[0, 0])
    np.testing.assert_array_equal(unique[:2], [[0.0, 1.0], [1.0, 1.0]])
    assert np.isnan(unique[2:, 0]).all()
    pooled = CandidateSets.from_arrays([rows[:3], rows[3:]])
    assert pooled.pool.shape == (4, 2)
    np.testing.assert_array_equal(pooled.indices[0], [0, 0, 2])


def test_unique_rows_rejects_object_arrays():
    with pytest.raises(TypeError, match="object arrays"):
        unique_rows(np.array([[1, "a"]], dtype=object))


def test_from_arrays_pool_equals_np_unique_path(rng):
    base = (rng.random((30, 64)) < 0.3).astype(np.float64)
    sets = [base[rng.integers(0, 30, size=rng.integers(0, 25))] for _ in range(20)]
    pooled = CandidateSets.from_arrays(sets)
    stacked = np.concatenate(sets)
    expected, inverse = _unique_rows_reference(stacked)
    np.testing.assert_array_equal(pooled.pool, expected)
    np.testing.assert_array_equal(np.concatenate(pooled.indices), inverse)


def test_count_features_score_exactly_like_their_float32_pool():
    """A uint8 count pool read as float32 blocks ranks every query exactly like the dense float32 pool."""
    rng = np.random.default_rng(5)
    Y = rng.integers(0, 4, size=(30, 12)).astype(np.float64)
    X = rng.normal(size=(30, 5))
    counts = rng.integers(0, 250, size=(40, 12)).astype(np.uint8)
    indices = [rng.choice(40, size=9, replace=False) for _ in range(6)]
    model = IOKR(alpha=0.5, output_kernel=Tanimoto(form="minmax")).fit(X, Y)
    dense = model.rank(X[:6], CandidateSets(counts.astype(np.float32), indices))
    compact = model.rank(X[:6], CandidateSets(CountFeatures(counts), indices))
    for a, b in zip(dense, compact, strict=True):
        np.testing.assert_array_equal(a.order, b.order)
        np.testing.assert_array_equal(a.scores, b.scores)
    with pytest.raises(ValueError, match="uint8 or uint16"):
        CountFeatures(counts.astype(np.int64))

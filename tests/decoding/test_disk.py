"""Candidate files on disk: round trips, scoring equal to the in-memory pool, and clear errors on damage/changes."""

import os
import pickle

import numpy as np
import pytest

from iokr import IOKR
from iokr.decoding import CandidateFile, CandidateFileWriter, CandidateSets, PackedBinaryFeatures, write_candidate_file
from iokr.exceptions import IOKRDataError


@pytest.fixture
def bits():
    rng = np.random.default_rng(0)
    return (rng.random((103, 70)) < 0.3).astype(np.uint8)


@pytest.mark.parametrize("packed", [True, False])
@pytest.mark.parametrize("block_rows", [1, 10, 103, 1000])
def test_round_trip_every_indexing(tmp_path, bits, packed, block_rows):
    pool = PackedBinaryFeatures.from_dense(bits) if packed else bits.astype(np.float64)
    f = write_candidate_file(tmp_path / "pool.bin", pool, block_rows=block_rows)
    dense = bits.astype(np.float32 if packed else np.float64)
    assert f.shape == bits.shape and len(f) == 103 and f.dtype == dense.dtype
    np.testing.assert_array_equal(f[:], dense)
    np.testing.assert_array_equal(f[5:77], dense[5:77])
    np.testing.assert_array_equal(f[-3], dense[-3])
    np.testing.assert_array_equal(f[::7], dense[::7])
    idx = np.array([100, 3, 3, 57, 0])
    np.testing.assert_array_equal(f[idx], dense[idx])
    np.testing.assert_array_equal(f[np.array([0, 102])], dense[[0, 102]])
    assert f[0:0].shape == (0, 70)
    assert f[np.array([], dtype=int)].shape == (0, 70)


def test_writer_streams_blocks(tmp_path, bits):
    with CandidateFileWriter(tmp_path / "p.bin", 70, packed=True, block_rows=16) as writer:
        for start in range(0, 103, 7):
            writer.append(bits[start:start + 7])
    np.testing.assert_array_equal(CandidateFile(tmp_path / "p.bin")[:], bits)
    assert len(CandidateFile(tmp_path / "p.bin").crc32) == 7


def test_scoring_from_file_equals_memory(tmp_path, bits):
    rng = np.random.default_rng(1)
    X, Y = rng.normal(size=(30, 4)), (rng.random((30, 70)) < 0.3).astype(np.float32)
    model = IOKR(alpha=0.5, input_kernel="gaussian", decoding="cosine", working_memory=0.05).fit(X, Y)
    memory = PackedBinaryFeatures.from_dense(bits)
    f = write_candidate_file(tmp_path / "pool.bin", memory, block_rows=9)
    ranked_mem = model.rank(X[:5], CandidateSets.shared(memory, 5), top_k=10)
    ranked_file = model.rank(X[:5], CandidateSets.shared(f, 5), top_k=10)
    for a, b in zip(ranked_mem, ranked_file, strict=True):
        np.testing.assert_array_equal(a.pool_indices, b.pool_indices)
        np.testing.assert_array_equal(a.scores, b.scores)
    np.testing.assert_array_equal(model.decision_function(X[:5], f), model.decision_function(X[:5], memory))


def test_truncated_file_is_refused_at_open(tmp_path, bits):
    write_candidate_file(tmp_path / "pool.bin", PackedBinaryFeatures.from_dense(bits), block_rows=10)
    with open(tmp_path / "pool.bin", "r+b") as fh:
        fh.truncate(500)
    with pytest.raises(IOKRDataError, match="truncated"):
        CandidateFile(tmp_path / "pool.bin")


def test_file_changed_underneath_fails_the_run(tmp_path, bits):
    rng = np.random.default_rng(2)
    X, Y = rng.normal(size=(30, 4)), (rng.random((30, 70)) < 0.3).astype(np.float32)
    model = IOKR(alpha=0.5, decoding="cosine", working_memory=0.02).fit(X, Y)
    f = write_candidate_file(tmp_path / "pool.bin", PackedBinaryFeatures.from_dense(bits), block_rows=10)
    f[0:10]
    with open(tmp_path / "pool.bin", "r+b") as fh:  # same size, new content and modification time
        fh.seek(0)
        fh.write(b"\xff" * 9)
    os.utime(tmp_path / "pool.bin", ns=(0, 12345))
    with pytest.raises(IOKRDataError, match="changed while it was in use"):
        model.rank(X[:3], CandidateSets.shared(f, 3), top_k=5)


def test_damaged_block_fails_checksum(tmp_path, bits):
    write_candidate_file(tmp_path / "pool.bin", PackedBinaryFeatures.from_dense(bits), block_rows=10)
    with open(tmp_path / "pool.bin", "r+b") as fh:  # damage before opening: size unchanged
        fh.seek(9 * 25 + 3)
        fh.write(b"\x55")
    f = CandidateFile(tmp_path / "pool.bin")
    f[0:20]  # blocks 0 and 1 are intact
    with pytest.raises(IOKRDataError, match="block 2 .*checksum"):
        f[18:30]


def test_truncated_after_open_is_an_error_not_a_crash(tmp_path, bits):
    f = write_candidate_file(tmp_path / "pool.bin", bits.astype(np.float32), block_rows=10)
    with open(tmp_path / "pool.bin", "r+b") as fh:
        fh.truncate(100)
    with pytest.raises(IOKRDataError):
        f[90:103]


def test_always_mode_rechecks_blocks(tmp_path, bits):
    f = write_candidate_file(tmp_path / "pool.bin", bits.astype(np.float32), block_rows=10)
    f = CandidateFile(tmp_path / "pool.bin", verify="always")
    np.testing.assert_array_equal(f[0:10], bits[:10])
    assert f._verified[0]


def test_pickle_reopens_and_detects_other_version(tmp_path, bits):
    f = write_candidate_file(tmp_path / "pool.bin", bits.astype(np.float32), block_rows=10)
    g = pickle.loads(pickle.dumps(f))
    np.testing.assert_array_equal(g[:], f[:])
    payload = pickle.dumps(f)
    os.utime(tmp_path / "pool.bin", ns=(0, 99))
    with pytest.raises(IOKRDataError, match="differs"):
        pickle.loads(payload)


def test_bad_manifest_and_parameters(tmp_path, bits):
    with pytest.raises(IOKRDataError, match="manifest"):
        CandidateFile(tmp_path / "missing.bin")
    write_candidate_file(tmp_path / "pool.bin", bits.astype(np.float32), block_rows=10)
    with pytest.raises(ValueError, match="verify"):
        CandidateFile(tmp_path / "pool.bin", verify="never")
    with pytest.raises(ValueError, match="0/1"), CandidateFileWriter(tmp_path / "q.bin", 70, packed=True) as writer:
        writer.append(bits * 2)

"""Dask runs (LocalCluster, 2 thread workers) against local runs: identical rankings and grid scores; failures
raise instead of returning partial results."""

import numpy as np
import pytest

pytest.importorskip("dask.distributed")

from iokr import IOKR  # noqa: E402
from iokr.decoding import CandidateSets, PackedBinaryFeatures, write_candidate_file  # noqa: E402
from iokr.distributed import (  # noqa: E402
    DistributedRunError,
    distributed_grid_search,
    distributed_rank,
    distributed_top_k,
    grid_search,
    local_client,
    plan_tasks,
)
from iokr.kernels import Gaussian  # noqa: E402


@pytest.fixture(scope="module")
def client():
    with local_client(n_workers=2, processes=False) as c:
        yield c


@pytest.fixture(scope="module")
def problem():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 5))
    Y = (rng.random((60, 64)) < 0.2).astype(np.float32)
    bits = (rng.random((1000, 64)) < 0.2).astype(np.uint8)
    bits[500] = bits[3]  # exact ties across candidate blocks
    bits[999] = bits[3]
    model = IOKR(alpha=0.5, input_kernel=Gaussian(0.1), decoding="cosine", working_memory=0.05).fit(X, Y)
    return model, rng.normal(size=(13, 5)), bits


def test_plan_tasks_covers_everything():
    queries, candidates = plan_tasks(10, 25, query_block=4, candidate_block=7)
    assert queries == [(0, 4), (4, 8), (8, 10)]
    assert candidates == [(0, 7), (7, 14), (14, 21), (21, 25)]
    queries, candidates = plan_tasks(10, 25, query_block=4, candidate_block=7, align=(3, 5))
    assert queries == [(0, 6), (6, 10)]
    assert candidates == [(0, 10), (10, 20), (20, 25)]
    with pytest.raises(ValueError, match="candidate_block"):
        plan_tasks(10, 25, candidate_block=0)


@pytest.mark.parametrize("query_block, candidate_block", [(None, None), (5, 300), (1, 77)])
@pytest.mark.parametrize("kind", ["array", "packed"])
def test_distributed_rank_identical_to_local(client, problem, query_block, candidate_block, kind):
    model, X_test, bits = problem
    pool = bits.astype(np.float32) if kind == "array" else PackedBinaryFeatures.from_dense(bits)
    local = model.rank(X_test, CandidateSets.shared(pool, len(X_test)), top_k=25)
    remote = distributed_rank(client, model, X_test, pool, 25, query_block=query_block,
                              candidate_block=candidate_block)
    for a, b in zip(local, remote, strict=True):
        np.testing.assert_array_equal(a.pool_indices, b.pool_indices)
        np.testing.assert_array_equal(a.scores, b.scores)


def test_distributed_candidate_file(client, problem, tmp_path):
    model, X_test, bits = problem
    f = write_candidate_file(tmp_path / "pool.bin", PackedBinaryFeatures.from_dense(bits), block_rows=128)
    local = model.rank(X_test, CandidateSets.shared(f, len(X_test)), top_k=10)
    idx, scores = distributed_top_k(client, model, X_test, f, 10, candidate_block=250)
    np.testing.assert_array_equal(idx, np.array([r.pool_indices for r in local]))
    np.testing.assert_array_equal(scores, np.array([r.scores for r in local]))


def test_changed_file_fails_the_whole_run(client, problem, tmp_path):
    model, X_test, bits = problem
    f = write_candidate_file(tmp_path / "pool.bin", PackedBinaryFeatures.from_dense(bits), block_rows=128)
    with open(tmp_path / "pool.bin", "r+b") as fh:
        fh.write(b"\x00" * 8)
    with pytest.raises(DistributedRunError, match="No partial result"):
        distributed_top_k(client, model, X_test, f, 10, candidate_block=250, retries=1)


class _FlakyPool:
    """A pool whose reads fail the first ``failures`` times (a worker lost mid-task, seen from the task)."""

    ndim = 2

    def __init__(self, data, failures):
        self.data, self.failures, self.calls = data, failures, 0
        self.shape, self.dtype = data.shape, data.dtype

    def __getitem__(self, rows):
        self.calls += 1
        if self.calls <= self.failures:
            raise OSError("simulated lost worker")
        return self.data[rows]


def test_failed_task_is_retried_or_fails_cleanly(client, problem):
    model, X_test, bits = problem
    pool = bits.astype(np.float32)
    expected, _ = distributed_top_k(client, model, X_test, pool, 10)
    idx, _ = distributed_top_k(client, model, X_test, _FlakyPool(pool, 1), 10, retries=2)
    np.testing.assert_array_equal(idx, expected)
    with pytest.raises(DistributedRunError, match="simulated lost worker"):
        distributed_top_k(client, model, X_test, _FlakyPool(pool, 100), 10, retries=1)


def test_grid_identical_to_local(client):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 3))
    Y = X @ rng.normal(size=(3, 8))
    grid = {"alpha": [0.01, 1.0], "input_kernel": [Gaussian(0.1), Gaussian(1.0)]}
    local = grid_search(IOKR(), grid, X, Y, cv=3)
    remote = distributed_grid_search(client, IOKR(), grid, X, Y, cv=3)
    np.testing.assert_array_equal(remote["split_scores"], local["split_scores"])
    assert remote["best_index"] == local["best_index"]
    assert remote["split_scores"].shape == (4, 3)


def test_repeated_calls_do_not_reuse_released_data(client, problem):
    # Content-hashed scatter keys made a second call reuse a key whose release was still in flight ("lost
    # dependencies"); every call must scatter under fresh keys.
    model, X_test, bits = problem
    pool = bits.astype(np.float32)
    results = [distributed_top_k(client, model, X_test, pool, 10)[0] for _ in range(4)]
    for idx in results[1:]:
        np.testing.assert_array_equal(idx, results[0])

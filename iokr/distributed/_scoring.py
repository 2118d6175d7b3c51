"""Streamed top-k scoring partitioned over query blocks x candidate blocks.

Each task runs the library's own :func:`~iokr.decoding.top_k_scores` on one query block and one contiguous range of
the pool, so scores are computed by the same code on the same rows as in a local run; the per-range top-k lists of a
query block are merged with the stable tie policy (equal scores: lower pool row first). The top-k of a union is the
top-k of the union of per-part top-k lists, so the merged result is exactly the local one.

The pool travels to workers as a reference, not as data: a :class:`~iokr.decoding.CandidateFile` pickles as its
path (every worker reopens and re-verifies it: all workers must see the same file system), an in-memory array is
sent once (a recomputable task, see ``_cluster.hold``).
"""

from __future__ import annotations

import numpy as np

from .._config import get_config
from ..decoding import CandidateFile, QueryRanking, top_k_scores
from ..decoding.developer import merge_top_k, packed_reader, plan_blocks
from ._cluster import DistributedRunError, gather_all, hold


class _PoolRange:
    """Rows ``[start, stop)`` of a pool, indexable like the pool itself (slices only)."""

    ndim = 2

    def __init__(self, pool, start, stop):
        self.pool, self.start, self.stop = pool, int(start), int(stop)

    @property
    def shape(self):
        return (self.stop - self.start, self.pool.shape[1])

    @property
    def dtype(self):
        return self.pool.dtype

    def __len__(self):
        return self.stop - self.start

    def _packed_reader(self):
        """Packed rows of the range when the pool is bit-packed, so tasks score it as a local run does."""
        read = packed_reader(self.pool)
        return None if read is None else (lambda a, b: read(self.start + a, self.start + b))

    def __getitem__(self, rows):
        if not isinstance(rows, slice):
            raise TypeError("A pool range is read by row slices only.")
        a, b, step = rows.indices(self.stop - self.start)
        return self.pool[self.start + a:self.start + b:step]


def plan_tasks(n_queries, n_candidates, query_block=None, candidate_block=None, align=(1, 1)):
    """Query and candidate ranges of the tasks: lists of ``(start, stop)``.

    ``query_block`` / ``candidate_block`` are rounded up to multiples of ``align`` = (query rows, candidate rows)
    of the local chunking, so that every task scores exactly the blocks a local run scores: BLAS results depend on
    block shapes in the last bit, and only equal blocks give bit-identical scores. Defaults: one aligned query
    chunk per task, candidate ranges of about ``1_000_000`` rows.
    """
    qa, ca = (max(int(a), 1) for a in align)
    for name, value in (("query_block", query_block), ("candidate_block", candidate_block)):
        if value is not None and (isinstance(value, bool) or int(value) < 1):
            raise ValueError(f"'{name}' must be a positive int or None, got {value!r}.")
    query_block = -(-int(query_block or qa) // qa) * qa
    candidate_block = -(-int(candidate_block or min(max(n_candidates, 1), 1_000_000)) // ca) * ca
    queries = [(s, min(s + query_block, n_queries)) for s in range(0, n_queries, query_block)]
    candidates = [(s, min(s + candidate_block, n_candidates)) for s in range(0, n_candidates, candidate_block)]
    return queries, candidates


def _task(model, X_block, pool, start, stop, k, working_memory):
    scorer = model.scorer(X_block, candidates_name="candidate_sets")
    idx, scores = top_k_scores(scorer, _PoolRange(pool, start, stop), k, working_memory)
    idx = np.where(idx >= 0, idx + start, idx)
    return idx, scores


def _merge(parts, k):
    best_idx, best_scores = parts[0]
    for idx, scores in parts[1:]:
        valid = idx >= 0
        rows, cols = np.nonzero(valid)
        best_idx, best_scores = merge_top_k(best_idx, best_scores, rows, idx[rows, cols], scores[rows, cols], k)
    return best_idx, best_scores


def distributed_top_k(client, model, X, pool, k, *, query_block=None, candidate_block=None, retries=2,
                      working_memory=None):
    """Top-``k`` pool rows per query computed on a Dask cluster; equal to ``top_k_scores`` run locally.

    Parameters
    ----------
    client : dask.distributed.Client
    model : fitted IOKR-like estimator
        Must provide ``scorer(X, candidates_name=...)`` (IOKR, SketchedIOKR ...).
    X : ndarray of shape (m, d)
    pool : ndarray, PackedBinaryFeatures or CandidateFile of shape (c, p)
    k : int
    query_block, candidate_block : int, optional
        Task sizes, rounded up to multiples of the local chunk sizes (see :func:`plan_tasks`).
    retries : int, default=2
        Times Dask reruns a task whose worker was lost or that raised.
    working_memory : float, optional
        Budget in MiB of each task's temporaries (per worker thread).

    Returns
    -------
    indices : ndarray of shape (m, min(k, c))
    scores : ndarray of shape (m, min(k, c))

    Raises
    ------
    DistributedRunError
        If any task failed after its retries; nothing partial is returned.
    """
    X = np.asarray(X)
    n_queries, n_pool = X.shape[0], pool.shape[0]
    k = int(min(k, n_pool))
    if working_memory is None:  # the client's setting: worker threads do not see its thread-local config
        working_memory = getattr(model, "working_memory", None) or get_config()["working_memory"]
    local_rows = plan_blocks(model.scorer(X, candidates_name="candidate_sets"), n_pool, working_memory)
    queries, candidates = plan_tasks(n_queries, n_pool, query_block, candidate_block, align=local_rows)
    try:
        model_f = hold(client, model)
        # A candidate file travels as its path; anything in memory is sent once and shared by the tasks.
        pool_f = pool if isinstance(pool, CandidateFile) else hold(client, pool)
        futures = []
        for q0, q1 in queries:
            X_f = hold(client, X[q0:q1])
            futures.append([client.submit(_task, model_f, X_f, pool_f, c0, c1, k, working_memory, retries=retries,
                                          pure=False) for c0, c1 in candidates])
    except Exception as exc:  # e.g. a worker lost while data was being sent to it
        raise DistributedRunError(f"distributed_top_k: sending data or tasks to the cluster failed: {exc!r}. "
                                  "No partial result is returned.") from exc
    flat = [f for row in futures for f in row]
    results = gather_all(client, flat, "distributed_top_k")
    merged, pos = [], 0
    for row in futures:
        merged.append(_merge(results[pos:pos + len(row)], k))
        pos += len(row)
    return np.concatenate([m[0] for m in merged]), np.concatenate([m[1] for m in merged])


def distributed_rank(client, model, X, pool, top_k, **kwargs):
    """``model.rank(X, CandidateSets.shared(pool, m), top_k)`` on a Dask cluster: a list of QueryRanking."""
    indices, scores = distributed_top_k(client, model, X, pool, top_k, **kwargs)
    return [QueryRanking(indices[q], scores[q], indices[q], pool.shape[0]) for q in range(indices.shape[0])]

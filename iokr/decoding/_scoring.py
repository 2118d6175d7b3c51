"""Chunked and streamed candidate scoring.

Scores always have the bilinear form ``S[q, c] = <Q[q], R[c]> + offset[c]``, where the estimator supplies the query
representation ``Q`` (e.g. ``h(x)`` in output feature space, or the dual coefficients ``alpha_x(x)^T M``) and the
candidate representation ``R`` (``psi(c)``, or ``k_y(Y_train, c)``), with the decoding rule folded into both.
The functions here only organize the blocks: queries and candidates are processed in row chunks sized to the
working-memory budget, so a candidate pool of any size (a memory map, bit-packed fingerprints) is read once per
query chunk and never materialized whole.

Tie policy: candidates with equal scores are ordered by their position (pool position for a shared pool, position
in the query's own set for per-query sets): the earlier one ranks first. This is deterministic and is the same in
chunked, unchunked and distributed runs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._config import working_memory_bytes
from ..linalg import chunk_rows

TIE_POLICY = "stable: among equal scores, the candidate earlier in the set ranks first"


@dataclass(frozen=True)
class Scorer:
    """Bilinear scoring rule supplied by an estimator.

    Attributes
    ----------
    n_queries : int
    query_width : int
        Width ``r`` of the query and candidate representations.
    query_block : callable
        ``query_block(rows: slice) -> ndarray (n_rows, r)``.
    candidate_block : callable
        ``candidate_block(features: ndarray (n_c, p)) -> (R: ndarray (n_c, r), offset: ndarray (n_c,) or None)``.
    candidate_bytes_per_row : int
        Temporary bytes ``candidate_block`` needs per candidate row (besides ``R``).
    """

    n_queries: int
    query_width: int
    query_block: object
    candidate_block: object
    candidate_bytes_per_row: int = 0


def _plan(scorer, n_candidates, working_memory, itemsize=8):
    """Split the budget: a quarter for the query block, the rest for candidate blocks and score blocks."""
    budget = working_memory_bytes(working_memory)
    width = max(scorer.query_width, 1)
    query_rows = chunk_rows(scorer.n_queries, width * itemsize, budget / 4 / 2**20)
    per_candidate = width * itemsize + scorer.candidate_bytes_per_row + query_rows * itemsize * 2
    candidate_rows = chunk_rows(n_candidates, per_candidate, budget * 3 / 4 / 2**20)
    return query_rows, candidate_rows


def _candidate_blocks(scorer, pool, candidate_rows):
    n = pool.shape[0]
    for start in range(0, n, candidate_rows):
        stop = min(start + candidate_rows, n)
        R, offset = scorer.candidate_block(pool[start:stop])
        yield start, stop, R, offset


def scoring_dtype(R):
    """Scores are computed in the candidates' precision: float32 candidates use float32 BLAS."""
    return np.float32 if R.dtype == np.float32 else np.float64


def _score_block(Q, R, offset):
    dtype = scoring_dtype(R)
    S = Q.astype(dtype, copy=False) @ R.T.astype(dtype, copy=False)
    if offset is not None:
        S += offset[None, :].astype(S.dtype, copy=False)
    return S


def dense_scores(scorer, pool, working_memory=None):
    """All scores ``S`` of shape (n_queries, n_pool); only the temporaries are chunked."""
    n_pool = pool.shape[0]
    query_rows, candidate_rows = _plan(scorer, n_pool, working_memory)
    out = None
    for q0 in range(0, scorer.n_queries, query_rows):
        rows = slice(q0, min(q0 + query_rows, scorer.n_queries))
        Q = scorer.query_block(rows)
        for start, stop, R, offset in _candidate_blocks(scorer, pool, candidate_rows):
            block = _score_block(Q, R, offset)
            if out is None:
                out = np.empty((scorer.n_queries, n_pool), dtype=block.dtype)
            out[rows, start:stop] = block
    if out is None:
        out = np.empty((scorer.n_queries, n_pool))
    return out


def _merge_top_k(best_idx, best_scores, new_rows, new_idx, new_scores, k):
    """Merge entries (row, index, score) into per-row top-k arrays with the stable tie policy."""
    m = best_idx.shape[0]
    have = best_idx >= 0
    rows = np.concatenate([np.nonzero(have)[0], new_rows])
    idx = np.concatenate([best_idx[have], new_idx])
    scores = np.concatenate([best_scores[have], new_scores])
    order = np.lexsort((idx, -scores.astype(np.float64), rows))
    rows, idx, scores = rows[order], idx[order], scores[order]
    starts = np.searchsorted(rows, np.arange(m))
    position = np.arange(rows.size) - starts[rows]
    keep = position < k
    best_idx = np.full((m, k), -1, dtype=np.intp)
    best_scores = np.full((m, k), -np.inf, dtype=best_scores.dtype)
    best_idx[rows[keep], position[keep]] = idx[keep]
    best_scores[rows[keep], position[keep]] = scores[keep]
    return best_idx, best_scores


def top_k_scores(scorer, pool, k, working_memory=None):
    """Top-``k`` candidates of the shared pool for every query, never forming the full score matrix.

    Returns
    -------
    indices : ndarray of shape (n_queries, min(k, n_pool))
        Pool rows, best first (stable tie policy).
    scores : ndarray of shape (n_queries, min(k, n_pool))
    """
    n_pool = pool.shape[0]
    k = int(min(k, n_pool))
    query_rows, candidate_rows = _plan(scorer, n_pool, working_memory)
    all_idx, all_scores = [], []
    for q0 in range(0, scorer.n_queries, query_rows):
        rows = slice(q0, min(q0 + query_rows, scorer.n_queries))
        Q = scorer.query_block(rows)
        mb = Q.shape[0]
        best_idx = np.full((mb, k), -1, dtype=np.intp)
        best_scores = None
        threshold = np.full(mb, -np.inf)
        for start, stop, R, offset in _candidate_blocks(scorer, pool, candidate_rows):
            S = _score_block(Q, R, offset)
            if best_scores is None:
                best_scores = np.full((mb, k), -np.inf, dtype=S.dtype)
            passing = S >= threshold[:, None].astype(S.dtype)
            if S.shape[1] > k and np.count_nonzero(passing) > 2 * k * mb:
                # Few entries pass once the running k-th best is known; only early blocks need a partition.
                kth = -np.partition(-S, k - 1, axis=1)[:, k - 1]
                passing = S >= np.maximum(threshold, kth)[:, None].astype(S.dtype)
            new_rows, new_cols = np.nonzero(passing)
            best_idx, best_scores = _merge_top_k(
                best_idx, best_scores, new_rows, new_cols + start, S[new_rows, new_cols], k
            )
            full = best_idx[:, -1] >= 0
            threshold = np.where(full, best_scores[:, -1], -np.inf)
        if best_scores is None:
            best_scores = np.full((mb, k), -np.inf)
        all_idx.append(best_idx)
        all_scores.append(best_scores)
    return np.concatenate(all_idx), np.concatenate(all_scores)


def set_scores(scorer, candidate_sets, working_memory=None):
    """Scores of every query's own candidates: a list of arrays, ``scores[q]`` aligned with ``indices[q]``.

    Each pool block is scored once for all queries that use it: densely (one matrix product) when the queries'
    candidates cover the block densely enough, by gathered dot products otherwise.
    """
    pool = candidate_sets.pool
    n_pool = pool.shape[0]
    sizes = candidate_sets.sizes
    query_of = np.repeat(np.arange(candidate_sets.n_queries), sizes)
    pool_row = np.concatenate(candidate_sets.indices) if sizes.sum() else np.zeros(0, dtype=np.intp)
    by_pool = np.argsort(pool_row, kind="stable")
    sorted_rows = pool_row[by_pool]
    flat_scores = None
    query_rows, candidate_rows = _plan(scorer, n_pool, working_memory)
    for q0 in range(0, scorer.n_queries, query_rows):
        q1 = min(q0 + query_rows, scorer.n_queries)
        if not sizes[q0:q1].any():
            continue
        Q = scorer.query_block(slice(q0, q1))
        for start in range(0, n_pool, candidate_rows):
            stop = min(start + candidate_rows, n_pool)
            lo, hi = np.searchsorted(sorted_rows, [start, stop])
            entries = by_pool[lo:hi]
            entries = entries[(query_of[entries] >= q0) & (query_of[entries] < q1)]
            if entries.size == 0:
                continue
            R, offset = scorer.candidate_block(pool[start:stop])
            dtype = scoring_dtype(R)
            if flat_scores is None:
                flat_scores = np.empty(pool_row.size, dtype=dtype)
            local_q = query_of[entries] - q0
            local_c = pool_row[entries] - start
            involved = np.unique(local_q)
            if involved.size * (stop - start) <= 16 * entries.size:
                S = _score_block(Q[involved], R, offset)
                flat_scores[entries] = S[np.searchsorted(involved, local_q), local_c]
            else:
                values = np.einsum("ij,ij->i", Q[local_q].astype(dtype, copy=False), R[local_c].astype(dtype, copy=False))
                if offset is not None:
                    values += offset[local_c]
                flat_scores[entries] = values
    if flat_scores is None:
        flat_scores = np.zeros(pool_row.size)
    bounds = np.cumsum(np.concatenate([[0], sizes]))
    return [flat_scores[bounds[q]:bounds[q + 1]] for q in range(candidate_sets.n_queries)]


def order_by_score(scores):
    """Positions sorted by decreasing score, ties by increasing position (the stable tie policy)."""
    scores = np.asarray(scores)
    return np.lexsort((np.arange(scores.size), -scores.astype(np.float64)))

"""Chunked and streamed candidate scoring.

Scores always have the bilinear form ``S[q, c] = <Q[q], R[c]> + offset[c]``, where the estimator supplies the query
representation ``Q`` (e.g. ``h(x)`` in output feature space, or the dual coefficients ``alpha_x(x)^T M``) and the
candidate representation ``R`` (``psi(c)``, or ``k_y(Y_train, c)``), with the decoding rule folded into both.
The functions here only organize the blocks: queries and candidates are processed in row chunks sized to the
working-memory budget, so a candidate pool of any size (a memory map, bit-packed fingerprints) is read once per
query chunk and never materialized whole.

Tie policy: candidates with equal scores are ordered by their position (pool position for a shared pool, position
in the query's own set for per-query sets): the earlier one ranks first. This is deterministic, and the same in
chunked, unchunked and distributed runs for scores that are equal as computed. Other chunkings are other BLAS block
shapes, whose scores agree to rounding only (a few ulp; ``docs/iokr.md``, "Reproducibility"): two candidates whose
scores differ by rounding alone may change places between chunkings. Distributed runs score the local blocks and
are bit-identical to local runs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._config import working_memory_bytes
from ..linalg.developer import chunk_rows
from . import _bits
from ._candidates import PackedBinaryFeatures
from ._disk import CandidateFile

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
    binary_rule : BinaryRule, optional
        The same rule in affine form for 0/1 candidates whose representation is the candidate itself (a linear output
        kernel): used for bit-packed pools, whose blocks are then scored without forming ``R`` (see
        :class:`BinaryRule`). ``None`` scores every pool through ``candidate_block``.
    """

    n_queries: int
    query_width: int
    query_block: object
    candidate_block: object
    candidate_bytes_per_row: int = 0
    binary_rule: object = None


@dataclass(frozen=True)
class BinaryRule:
    """A scoring rule ``S[q, c] = (<Q[q], c> - <Q[q], m>) * scale(c) + offset(c)`` for 0/1 candidates ``c``.

    This is the bilinear rule of :class:`Scorer` with ``R[c] = (c - m) * scale(c)`` (centering around ``m``, then the
    per-candidate factor of cosine decoding or output normalization) written so that the matrix product runs on the
    0/1 block itself: no centered copy, no scaled copy, no finiteness check (bits are finite by construction). The
    per-candidate terms depend on ``c`` only through ``||c - m||^2 = |c| - 2 <c, m> + ||m||^2``: ``|c|`` is a popcount
    of the packed bits and ``<c, m>`` one more row of the same sgemm, so a block costs one unpack and one sgemm.

    Accuracy: the float32 error of ``<q, c> - <q, m>`` is that of ``<q, c>``, magnified by ``||c|| / ||c - m||``
    after scaling (about 1.1 for fingerprints of density 1/8). Candidates with ``||c - m||^2 < (|c| + ||m||^2) / 4``
    are rare; their norms come from float64 byte lookup tables and their scores from ``c - m`` itself, as in the
    direct path.

    Attributes
    ----------
    mean : ndarray of shape (p,) or None
        Centering vector ``m`` (``None``: no centering).
    terms : callable
        ``terms(sq_norms: ndarray (n_c,) float64 or None) -> (scale, offset)``: per-candidate arrays (or ``None``)
        from the squared norms ``||c - m||^2`` (exact zeros where ``c == m``).
    needs_norms : bool, default=True
        False when ``terms`` ignores the norms (inner decoding without normalization): they are then not computed.
    """

    mean: object
    terms: object
    needs_norms: bool = True


#: Cap on the bytes of one candidate block with its score block, whatever the budget. Larger blocks only cost time
#: (fresh pages, cache misses) and resident memory (issue 18): scoring 60 queries against 15k candidates of the demo's
#: pool took 7.9-9.0 s in blocks sized to the default budget's 768 MiB and 4.8-5.0 s in blocks of 96-192 MiB, with
#: bit-identical scores (benchmarks/results/demo_memory.md).
MAX_CANDIDATE_BLOCK_MIB = 128


def _plan(scorer, n_candidates, working_memory, itemsize=8):
    """Split the budget: a quarter for the query block, the rest (at most :data:`MAX_CANDIDATE_BLOCK_MIB`) for
    candidate blocks and score blocks."""
    budget = working_memory_bytes(working_memory)
    width = max(scorer.query_width, 1)
    query_rows = chunk_rows(scorer.n_queries, width * itemsize, budget / 4 / 2**20)
    per_candidate = width * itemsize + scorer.candidate_bytes_per_row + query_rows * itemsize * 2
    candidate_rows = chunk_rows(n_candidates, per_candidate, min(budget * 3 / 4 / 2**20, MAX_CANDIDATE_BLOCK_MIB))
    return query_rows, candidate_rows


def plan_blocks(scorer, n_candidates, working_memory=None):
    """``(query rows, candidate rows)``: the chunk sizes every scoring function here uses for ``scorer``.

    A quarter of the budget goes to the query block, the rest (at most :data:`MAX_CANDIDATE_BLOCK_MIB`) to candidate
    blocks and score blocks. Runs that split the work elsewhere (:mod:`iokr.distributed`) align their tasks to these
    sizes to score exactly the same blocks.
    """
    return _plan(scorer, n_candidates, working_memory)


def _candidate_blocks(scorer, pool, candidate_rows):
    n = pool.shape[0]
    for start in range(0, n, candidate_rows):
        stop = min(start + candidate_rows, n)
        R, offset = scorer.candidate_block(pool[start:stop])
        yield start, stop, R, offset


def packed_reader(pool):
    """``read(start, stop) -> uint8 rows`` when ``pool`` stores 0/1 rows bit-packed, else ``None``.

    Bit-packed pools are :class:`~iokr.decoding.PackedBinaryFeatures`, packed
    :class:`~iokr.decoding.CandidateFile` and views of them that define ``_packed_reader()`` (a range of a pool).
    """
    if isinstance(pool, PackedBinaryFeatures):
        return lambda start, stop: np.asarray(pool.packed[start:stop])
    if isinstance(pool, CandidateFile):
        return pool.packed_rows if pool.packed else None
    view = getattr(pool, "_packed_reader", None)
    return view() if callable(view) else None


def _binary_score_blocks(rule, Q, read, shape, candidate_rows):
    """``(start, stop, S)`` for the blocks of a bit-packed pool under a :class:`BinaryRule`; S is float32.

    The unpacked block and the score block live in two buffers reused from block to block (the caller copies what
    it keeps), so the only per-block allocations are the packed rows and ``n_c``-sized vectors. The products
    ``<c, m>`` come from the same sgemm (the mean is one more query row); where ``||c - m||^2`` is small against
    ``|c| + ||m||^2`` (cancellation: a candidate close to the mean) they are recomputed exactly in float64 from the
    packed bits.
    """
    n_pool, p = shape
    n_bytes = (p + 7) // 8
    width = 8 * n_bytes
    mb = Q.shape[0]
    mean = None if rule.mean is None else np.asarray(rule.mean, dtype=np.float64)
    extra = 0 if mean is None or not rule.needs_norms else 1
    # Padding columns get zero weight, so the padding bits of the last byte never contribute.
    Q32 = np.zeros((mb + extra, width), dtype=np.float32)
    Q32[:mb, :p] = Q
    if mean is not None:
        shift = (Q32[:mb, :p].astype(np.float64) @ mean).astype(np.float32)[:, None]
        mean_sq = float(mean @ mean)
        table = None
        if extra:
            Q32[mb, :p] = mean
    rows = max(min(candidate_rows, n_pool), 1)
    bits_buffer = np.empty(rows * width, dtype=np.float32)
    score_buffer = np.empty((mb + extra) * rows, dtype=np.float32)
    for start in range(0, n_pool, candidate_rows):
        stop = min(start + candidate_rows, n_pool)
        n = stop - start
        packed = read(start, stop)
        B = _bits.unpack_into(packed, bits_buffer[:n * width].reshape(n, width))
        S_all = score_buffer[:(mb + extra) * n].reshape(mb + extra, n)
        np.matmul(Q32, B.T, out=S_all)
        S = S_all[:mb]
        sq_norms = None
        close = ()
        if rule.needs_norms:
            counts = _bits.packed_row_counts(packed, p).astype(np.float64)
            sq_norms = counts
            if mean is not None:
                sq_norms = counts - 2.0 * S_all[mb].astype(np.float64) + mean_sq
                close = np.flatnonzero(sq_norms < 0.25 * (counts + mean_sq))
                if close.size:
                    if table is None:
                        table = _bits.byte_dot_table(mean)
                    sq_norms[close] = counts[close] - 2.0 * _bits.packed_dot(packed[close], table) + mean_sq
                    # Round-off of the float64 sum is ~1e-16 (|c| + ||m||^2); below a safe multiple of it, c == m
                    # exactly (the direct path's c - m is then exactly zero, and so must be its norm).
                    tiny = sq_norms[close] <= 64 * np.finfo(np.float64).eps * (counts[close] + mean_sq)
                    sq_norms[close[tiny]] = 0.0
        if mean is not None:
            S -= shift
            if len(close):
                # <q, c> - <q, m> cancels for a candidate close to the mean, and the factor 1 / ||c - m|| would
                # magnify the float32 error: these few columns are computed from c - m directly, as the direct path.
                centered = B[close, :p] - Q32[mb, :p]
                S[:, close] = Q32[:mb, :p] @ centered.T
        scale, offset = rule.terms(sq_norms)
        if scale is not None:
            S *= scale.astype(np.float32)[None, :]
        if offset is not None:
            S += offset.astype(np.float32)[None, :]
        yield start, stop, S


def _score_blocks(scorer, Q, pool, candidate_rows):
    """``(start, stop, S)`` for every candidate block of ``pool`` against the query block ``Q``.

    Bit-packed pools with a :class:`BinaryRule` take the fused path; ``S`` may then be a reused buffer, valid only
    until the next block is produced.
    """
    read = packed_reader(pool) if scorer.binary_rule is not None else None
    if read is not None:
        yield from _binary_score_blocks(scorer.binary_rule, Q, read, pool.shape, candidate_rows)
        return
    for start, stop, R, offset in _candidate_blocks(scorer, pool, candidate_rows):
        yield start, stop, _score_block(Q, R, offset)


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
        for start, stop, block in _score_blocks(scorer, Q, pool, candidate_rows):
            if out is None:
                out = np.empty((scorer.n_queries, n_pool), dtype=block.dtype)
            out[rows, start:stop] = block
    if out is None:
        out = np.empty((scorer.n_queries, n_pool))
    return out


def merge_top_k(best_idx, best_scores, new_rows, new_idx, new_scores, k):
    """Merge entries (row, index, score) into per-row top-k arrays with the stable tie policy.

    Only the rows that receive new entries are re-sorted: late in a stream, few candidates beat the running k-th
    best, and re-sorting all ``m x k`` kept entries for each block would cost more than finding them.
    """
    m = best_idx.shape[0]
    new_rows = np.asarray(new_rows)
    if new_rows.size == 0:
        return best_idx, best_scores
    affected = np.unique(new_rows)
    if affected.size < m:
        sub_idx, sub_scores = _merge_rows(best_idx[affected], best_scores[affected],
                                          np.searchsorted(affected, new_rows), new_idx, new_scores, k)
        best_idx, best_scores = best_idx.copy(), best_scores.copy()
        best_idx[affected], best_scores[affected] = sub_idx, sub_scores
        return best_idx, best_scores
    return _merge_rows(best_idx, best_scores, new_rows, new_idx, new_scores, k)


def _merge_rows(best_idx, best_scores, new_rows, new_idx, new_scores, k):
    """Merge by one short sort per row: kept entries and new ones side by side in an (m, k + max new) table.

    Empty slots have score -inf and the largest index, so they sort after every real entry (a real -inf score
    included) and come back as index -1.
    """
    m, kept = best_idx.shape
    empty = np.iinfo(np.intp).max
    counts = np.bincount(new_rows, minlength=m)
    width = kept + int(counts.max(initial=0))
    idx = np.full((m, width), empty, dtype=np.intp)
    scores = np.full((m, width), -np.inf)
    idx[:, :kept] = np.where(best_idx >= 0, best_idx, empty)
    scores[:, :kept] = np.where(best_idx >= 0, best_scores, -np.inf)
    by_row = np.argsort(new_rows, kind="stable")
    rows = new_rows[by_row]
    slot = kept + np.arange(rows.size) - np.searchsorted(rows, rows)
    idx[rows, slot] = np.asarray(new_idx)[by_row]
    scores[rows, slot] = np.asarray(new_scores)[by_row]
    order = np.lexsort((idx, -scores), axis=-1)[:, :k]
    top_idx = np.take_along_axis(idx, order, axis=1)
    top_scores = np.take_along_axis(scores, order, axis=1)
    if top_idx.shape[1] < k:
        top_idx = np.hstack([top_idx, np.full((m, k - top_idx.shape[1]), empty, dtype=np.intp)])
        top_scores = np.hstack([top_scores, np.full((m, k - top_scores.shape[1]), -np.inf)])
    valid = top_idx != empty
    out_idx = np.where(valid, top_idx, -1)
    out_scores = np.where(valid, top_scores, -np.inf).astype(best_scores.dtype)
    return out_idx, out_scores


def _sparse_nonzero(mask, count):
    """``np.nonzero`` of a 2-D boolean mask with ``count`` True entries, same order; fast when they are few.

    A sparse mask is scanned 8 entries at a time (as uint64 words), and only the nonzero words are expanded.
    """
    flat = np.ascontiguousarray(mask).reshape(-1)
    if count * 16 > flat.size or flat.size < 64:
        return np.nonzero(mask)
    whole = flat.size // 8 * 8
    words = np.flatnonzero(flat[:whole].view(np.uint64))
    positions = (words[:, None] * 8 + np.arange(8)).ravel()
    positions = positions[flat[positions]]
    positions = np.concatenate([positions, whole + np.flatnonzero(flat[whole:])])
    return np.divmod(positions, mask.shape[1])


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
        for start, _stop, S in _score_blocks(scorer, Q, pool, candidate_rows):
            if best_scores is None:
                best_scores = np.full((mb, k), -np.inf, dtype=S.dtype)
            bar = threshold.astype(S.dtype)
            # Late in a stream most queries have no candidate above their running k-th best in a block: a row
            # maximum (one pass, no temporary) skips them before any mask is built.
            hit = np.flatnonzero(S.max(axis=1) >= bar) if S.shape[1] else np.zeros(0, dtype=np.intp)
            if hit.size == 0:
                continue
            sub = S if hit.size == mb else S[hit]
            passing = sub >= bar[hit, None]
            n_passing = np.count_nonzero(passing)
            if S.shape[1] > k and n_passing > 2 * k * hit.size:
                # Few entries pass once the running k-th best is known; only early blocks need a partition.
                kth = -np.partition(-sub, k - 1, axis=1)[:, k - 1]
                passing = sub >= np.maximum(bar[hit], kth.astype(S.dtype))[:, None]
                n_passing = np.count_nonzero(passing)
            sub_rows, new_cols = _sparse_nonzero(passing, n_passing)
            best_idx, best_scores = merge_top_k(
                best_idx, best_scores, hit[sub_rows], new_cols + start, sub[sub_rows, new_cols], k
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

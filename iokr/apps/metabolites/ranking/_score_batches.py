"""Batches of queries for ``identify``'s scoring, bounded by the working-memory budget, and the merge of a query
scored in chunks.

A batch holds the fingerprints of its queries' distinct candidates (the pool) at once, as float32 rows. Its size is
bounded twice: at most ``batch_size`` queries, and at most :func:`pool_row_limit` distinct candidates (half the
working-memory budget; the other half is the scoring's own blocks). Queries come sorted by neutral mass, so a batch's
candidate windows overlap and its pool stays small. A query whose window alone holds more candidates than a pool
may is scored in chunks of its candidates (each a pool of its own) and the chunks merged here: every score is kept
(8 bytes per candidate), and the top-k of the whole list is the top-k of the chunks' top-k lists (ties by position,
as everywhere: :data:`iokr.decoding.TIE_POLICY`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ...._config import working_memory_bytes
from ..model._hypotheses import QueryHypotheses

#: Bytes one pool row takes while a batch is scored, per fingerprint feature: the float32 row and the stored bytes it
#: is decoded from (at most one per feature).
POOL_BYTES_PER_FEATURE = 5


@dataclass(frozen=True)
class ScoredQuery:
    """One ranked query: the scores of all its candidates and its top-k.

    Attributes
    ----------
    query : Query
    scores : ndarray of shape (n_candidates,)
        In the order of ``query.candidates``; higher is better.
    top : ndarray of int, shape (min(top_k, n_candidates),)
        Positions of the best candidates, best first (ties by position, the stable tie policy).
    top_prior : ndarray of shape (len(top),)
        The structure prior of each of them (the score holds ``prior_weight`` times it).
    """

    query: object
    scores: np.ndarray
    top: np.ndarray
    top_prior: np.ndarray


def pool_row_limit(n_features, working_memory=None):
    """Distinct candidates one batch may hold: half the budget (MiB; the global one by default) over the bytes of
    a pool row (:data:`POOL_BYTES_PER_FEATURE` per feature); at least 1."""
    return max(1, int(working_memory_bytes(working_memory) // 2 // (POOL_BYTES_PER_FEATURE * max(n_features, 1))))


def plan_batches(queries, batch_size, max_rows):
    """Consecutive batches of ``queries`` (in their order) of at most ``batch_size`` queries and ``max_rows``
    distinct candidates; yields ``(batch, chunked)``, ``chunked`` True for a query alone whose candidates exceed
    ``max_rows`` (to be scored in chunks of ``max_rows``)."""
    batch, pool, previous = [], np.zeros(0, dtype=np.int64), None
    for q in queries:
        if q.candidates.size > max_rows:
            if batch:
                yield batch, False
                batch, pool = [], np.zeros(0, dtype=np.int64)
            yield [q], True
            continue
        # only the candidates not in the pool yet are merged, and the pool is not re-sorted for each query: a query
        # given the very list of the one before (a formula's lookup is shared by its queries) adds none (the 514
        # queries against 1.9M structures: 0.056 -> 0.003 s of CPU)
        if q.candidates is previous and 0 < len(batch) < batch_size:
            batch.append(q)
            continue
        previous = q.candidates
        candidates = np.unique(q.candidates)
        at = np.searchsorted(pool, candidates)
        known = np.zeros(candidates.size, dtype=bool)
        inside = at < pool.size
        known[inside] = pool[at[inside]] == candidates[inside]
        new = candidates[~known]
        if batch and (len(batch) == batch_size or pool.size + new.size > max_rows):
            yield batch, False
            batch, pool, new = [], np.zeros(0, dtype=np.int64), candidates
        batch.append(q)
        if new.size:
            pool = np.union1d(pool, new)
    if batch:
        yield batch, False


def chunk_queries(query, max_rows):
    """The query as copies holding consecutive chunks of at most ``max_rows`` of its candidates."""
    return [replace(query, candidates=query.candidates[start:start + max_rows])
            for start in range(0, query.candidates.size, max_rows)]


def merge_chunks(query, chunks, top_k):
    """One :class:`ScoredQuery` for ``query`` from the :class:`ScoredQuery` of its consecutive chunks.

    Sets ``query.hypotheses`` (the chunks' formulas merged) when the chunks were annotated; the caller words
    ``query.annotation`` from it (it knows the best candidate's formula).
    """
    offsets = np.cumsum([0, *(c.scores.size for c in chunks)])
    scores = np.concatenate([c.scores for c in chunks])
    positions = np.concatenate([c.top + offsets[i] for i, c in enumerate(chunks)])
    priors = np.concatenate([c.top_prior for c in chunks])
    # the best of the chunks' best, ties by position (lexsort: the last key is the primary one)
    order = np.lexsort((positions, -scores[positions]))[:top_k]
    hypotheses = [c.query.hypotheses for c in chunks if c.query.hypotheses is not None]
    if hypotheses:
        query.hypotheses = merge_hypotheses(hypotheses)
    return ScoredQuery(query, scores, positions[order], priors[order])


def merge_hypotheses(parts):
    """One :class:`~._hypotheses.QueryHypotheses` from those of chunks of one query's candidates: their formulas
    merged (each formula's annotation depends on the query and the formula only, so chunks agree on it)."""
    by_formula = {}
    for h in parts:
        for k, f in enumerate(h.formulas):
            by_formula[f] = (h.fallback[k], h.n_explained[k], h.n_above[k], h.shift[k])
    formulas = tuple(sorted(by_formula))
    columns = list(zip(*(by_formula[f] for f in formulas), strict=True)) if formulas else [(), (), (), ()]
    first = parts[0]
    return QueryHypotheses(formulas, *map(tuple, columns), n_peaks=first.n_peaks, given=first.given,
                           n_dropped_above=first.n_dropped_above)

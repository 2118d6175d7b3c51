"""Streamed scoring (top-k, per-query sets, dense) vs brute-force full scoring and sorting.

Queries and candidates are small integers so every score is exact in floating point: ties are real ties, and the
chunked results must equal the brute force bit for bit whatever the chunk sizes.
"""

import warnings

import numpy as np
import pytest
from reference import stable_order

from iokr.decoding import (
    TIE_POLICY,
    CandidateSets,
    PackedBinaryFeatures,
    _scoring,
    dense_scores,
    rankings_from_scores,
    set_scores,
    top_k_scores,
)
from iokr.decoding.developer import Scorer, order_by_score
from iokr.exceptions import EmptyCandidateSetWarning


def _problem(seed, n_queries=13, n_pool=41, width=4, with_offset=True, duplicates=True, dtype=np.float64):
    rng = np.random.default_rng(seed)
    Q = rng.integers(-2, 3, size=(n_queries, width)).astype(np.float64)
    pool = rng.integers(0, 3, size=(n_pool, width)).astype(dtype)
    if duplicates:
        pool[5] = pool[30]  # identical candidates: exact ties, the earlier pool row must rank first
        pool[12] = pool[2]
        pool[-1] = pool[0]
    offset_of = (lambda C: -np.asarray(C, dtype=np.float64).sum(axis=1)) if with_offset else (lambda C: None)
    seen_blocks = []

    def candidate_block(C):
        C = np.asarray(C)
        seen_blocks.append(C.shape[0])
        return C, offset_of(C)

    scorer = Scorer(n_queries, width, lambda rows: Q[rows], candidate_block)
    offset = offset_of(pool)
    S = Q @ pool.astype(np.float64).T + (0.0 if offset is None else offset[None, :])
    return scorer, pool, S, seen_blocks


# Budgets (MiB): 300 bytes gives 2 query rows and 3 candidate rows per chunk; 1 MiB gives a single chunk.
BUDGETS = [300 / 2**20, 2000 / 2**20, 1.0]


@pytest.mark.parametrize("working_memory", BUDGETS)
@pytest.mark.parametrize("k", [1, 3, 7, 41, 100])
@pytest.mark.parametrize("with_offset", [True, False])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_top_k_matches_full_sort(working_memory, k, with_offset, dtype):
    scorer, pool, S, seen_blocks = _problem(0, with_offset=with_offset, dtype=dtype)
    pool_copy = pool.copy()
    idx, scores = top_k_scores(scorer, pool, k, working_memory=working_memory)
    kk = min(k, pool.shape[0])
    assert idx.shape == scores.shape == (13, kk)
    for q in range(13):
        expected = stable_order(S[q])[:kk]
        np.testing.assert_array_equal(idx[q], expected)
        np.testing.assert_array_equal(scores[q], S[q, expected])
    if working_memory == BUDGETS[0]:
        assert max(seen_blocks) <= 3 and len(seen_blocks) >= 14 * 7  # many chunks ran
    np.testing.assert_array_equal(pool, pool_copy)


def test_top_k_ties_prefer_earlier_pool_rows():
    # Every candidate scores the same: the top k is the first k pool rows, in every chunking.
    Q = np.ones((3, 2))
    pool = np.ones((10, 2))
    scorer = Scorer(3, 2, lambda rows: Q[rows], lambda C: (C, None))
    for working_memory in BUDGETS:
        idx, scores = top_k_scores(scorer, pool, 4, working_memory=working_memory)
        np.testing.assert_array_equal(idx, np.tile(np.arange(4), (3, 1)))
        np.testing.assert_array_equal(scores, 2.0)


@pytest.mark.parametrize("working_memory", BUDGETS)
def test_dense_scores_match_brute_force(working_memory):
    scorer, pool, S, _ = _problem(1)
    np.testing.assert_array_equal(dense_scores(scorer, pool, working_memory=working_memory), S)


def test_dense_scores_with_float_data_match_within_rounding(rng):
    Q = rng.normal(size=(9, 5))
    pool = rng.normal(size=(30, 5)).astype(np.float32)
    scorer = Scorer(9, 5, lambda rows: Q[rows], lambda C: (C, -np.abs(C).sum(axis=1)))
    expected = Q @ pool.astype(np.float64).T - np.abs(pool.astype(np.float64)).sum(axis=1)
    for working_memory in BUDGETS:
        np.testing.assert_allclose(dense_scores(scorer, pool, working_memory), expected, rtol=1e-5, atol=1e-5)


def _set_layouts(n_queries, n_pool, rng):
    every = np.arange(n_pool)
    disjoint = np.array_split(rng.permutation(n_pool), n_queries)
    overlapping = [rng.choice(n_pool, size=rng.integers(1, 9), replace=False) for _ in range(n_queries)]
    with_empty = [idx if q % 3 else np.zeros(0, dtype=int) for q, idx in enumerate(overlapping)]
    with_repeats = [np.concatenate([idx, idx[:1]]) for idx in overlapping]  # a candidate listed twice
    single = [np.array([rng.integers(n_pool)]) for _ in range(n_queries)]
    return {
        "shared": [every] * n_queries,
        "shared-reversed": [every[::-1]] * n_queries,
        "disjoint": disjoint,
        "overlapping": overlapping,
        "with-empty": with_empty,
        "repeats": with_repeats,
        "single": single,
        "all-empty": [np.zeros(0, dtype=int)] * n_queries,
    }


@pytest.mark.parametrize("layout", ["shared", "shared-reversed", "disjoint", "overlapping", "with-empty", "repeats",
                                    "single", "all-empty"])
@pytest.mark.parametrize("working_memory", BUDGETS)
def test_set_scores_match_per_query_brute_force(layout, working_memory, monkeypatch):
    scorer, pool, S, _ = _problem(2, n_queries=13, n_pool=41)
    indices = _set_layouts(13, 41, np.random.default_rng(3))[layout]
    sets = CandidateSets(pool, indices)
    dense_calls = []
    real_score_block = _scoring._score_block

    def spy(Q, R, offset):
        dense_calls.append(Q.shape)
        return real_score_block(Q, R, offset)

    monkeypatch.setattr(_scoring, "_score_block", spy)
    scores = set_scores(scorer, sets, working_memory=working_memory)
    assert len(scores) == 13
    for q in range(13):
        expected = np.array([S[q, c] for c in indices[q]])
        assert scores[q].shape == (len(indices[q]),)
        np.testing.assert_array_equal(scores[q], expected)
    # The shared pool is scored densely (matrix products); one candidate per query from a big block is gathered.
    if layout.startswith("shared"):
        assert dense_calls
    if layout == "single" and working_memory == 1.0:
        assert not dense_calls


def test_set_scores_gathered_branch_with_float_data(rng, monkeypatch):
    Q = rng.normal(size=(20, 6))
    pool = rng.normal(size=(200, 6))
    indices = [np.array([rng.integers(200)]) for _ in range(20)]
    scorer = Scorer(20, 6, lambda rows: Q[rows], lambda C: (C, np.linalg.norm(C, axis=1)))
    monkeypatch.setattr(_scoring, "_score_block", lambda *a: pytest.fail("dense branch used"))
    scores = set_scores(scorer, CandidateSets(pool, indices), working_memory=1.0)
    for q in range(20):
        c = indices[q][0]
        np.testing.assert_allclose(scores[q], [Q[q] @ pool[c] + np.linalg.norm(pool[c])], rtol=1e-12)


def test_scoring_packed_pool_matches_dense():
    rng = np.random.default_rng(4)
    bits = (rng.random((50, 13)) < 0.4).astype(np.uint8)
    packed = PackedBinaryFeatures.from_dense(bits)
    Q = rng.integers(-2, 3, size=(7, 13)).astype(np.float32)
    scorer = Scorer(7, 13, lambda rows: Q[rows], lambda C: (C, None))
    S = Q.astype(np.float64) @ bits.T
    for working_memory in BUDGETS[1:]:
        np.testing.assert_array_equal(dense_scores(scorer, packed, working_memory), S)
        idx, _ = top_k_scores(scorer, packed, 5, working_memory)
        np.testing.assert_array_equal(idx, [stable_order(s)[:5] for s in S])
        sets = CandidateSets(packed, [np.arange(0, 50, q + 1) for q in range(7)])
        for q, s in enumerate(set_scores(scorer, sets, working_memory)):
            np.testing.assert_array_equal(s, S[q, sets.indices[q]])


def test_order_by_score_and_rankings(rng):
    scores = rng.integers(0, 4, size=30).astype(float)
    np.testing.assert_array_equal(order_by_score(scores), stable_order(scores))
    sets = CandidateSets(np.eye(5), [np.array([4, 2, 0]), np.zeros(0, dtype=int), np.array([1, 3])])
    per_query = [np.array([0.5, 2.0, 0.5]), np.zeros(0), np.array([-1.0, 3.0])]
    with pytest.warns(EmptyCandidateSetWarning, match=r"1 query\(ies\) have no candidates \(queries 1\)"):
        rankings = rankings_from_scores(per_query, sets, top_k=2)
    np.testing.assert_array_equal(rankings[0].order, [1, 0])
    np.testing.assert_array_equal(rankings[0].scores, [2.0, 0.5])
    np.testing.assert_array_equal(rankings[0].pool_indices, [2, 4])
    assert rankings[0].n_candidates == 3 and rankings[0].tie_policy == TIE_POLICY
    assert rankings[1].order.size == 0 and rankings[1].n_candidates == 0
    np.testing.assert_array_equal(rankings[2].pool_indices, [3, 1])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rankings_from_scores([np.array([1.0])], CandidateSets(np.eye(2), [np.array([1])]))


def test_candidate_blocks_capped_whatever_the_budget(monkeypatch):
    """A large budget does not enlarge candidate blocks past MAX_CANDIDATE_BLOCK_MIB (one block here: 41 rows, a few
    KiB); with the cap lowered to ~3 rows' bytes, the pool is scored in small blocks, with the same scores."""
    scorer, pool, S, seen_blocks = _problem(4, n_queries=13, n_pool=41)
    sets = CandidateSets(pool, [np.arange(41)] * 13)
    _, rows = _scoring.plan_blocks(scorer, 41, working_memory=1e6)
    assert rows == 41
    per_candidate = scorer.query_width * 8 + scorer.candidate_bytes_per_row + 13 * 8 * 2
    monkeypatch.setattr(_scoring, "MAX_CANDIDATE_BLOCK_MIB", 3.5 * per_candidate / 2**20)
    assert _scoring.plan_blocks(scorer, 41, working_memory=1e6) == (13, 3)
    seen_blocks.clear()
    scores = set_scores(scorer, sets, working_memory=1e6)
    assert max(seen_blocks) == 3 and sum(seen_blocks) == 41
    np.testing.assert_array_equal(np.array(scores), S)

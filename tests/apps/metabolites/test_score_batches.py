"""identify's batches under the working-memory budget: pools never exceed it, a query whose window exceeds a pool is
scored in chunks, and the results equal those of one pool (brute force: the same run with a large budget)."""

import csv
import json

import numpy as np
import pytest
from metab_helpers import bundled_lists_and_training

from iokr import get_config
from iokr.apps.metabolites.model._hypotheses import QueryHypotheses
from iokr.apps.metabolites.ranking import _identify
from iokr.apps.metabolites.ranking._identify import Query
from iokr.apps.metabolites.ranking._score_batches import (
    ScoredQuery,
    chunk_queries,
    merge_chunks,
    merge_hypotheses,
    plan_batches,
    pool_row_limit,
)
from iokr.cli.main import main


@pytest.fixture(scope="module")
def mixed_run(tmp_path_factory):
    """A small [M+H]+ model, a structure table of two bundled lists (a few dozen isomers each) and an MGF of their
    true structures' spectra, found by mass (wide windows: every structure is a candidate of every query)."""
    root = tmp_path_factory.mktemp("batches")
    lists, queries, train = bundled_lists_and_training(2, 12)
    (root / "train.jsonl").write_text("\n".join(json.dumps(r) for r in train) + "\n")
    model = root / "model.npz"
    assert main(["metabolites", "train", "--spectra", str(root / "train.jsonl"), "--output", str(model),
                 "--alphas", "0.3", "--folds", "2"]) == 0
    db = root / "structures.csv"
    with open(db, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["Identifier", "InChI"])
        writer.writerows([f"C{i}-{j}", row["id1"]] for i, rows in enumerate(lists) for j, row in enumerate(rows[:20]))
    mgf = root / "queries.mgf"
    mgf.write_text("".join(f"BEGIN IONS\nFEATURE_ID={i}\nPEPMASS={r['precursor_mz']}\nCHARGE=1+\n"
                           + "\n".join(f"{mz} {x}" for mz, x in r["peaks"]) + "\nEND IONS\n"
                           for i, r in enumerate(queries)))
    return model, mgf, db


def _query(row, candidates):
    return Query(row=row, query_id=str(row), precursor_mz=100.0, candidates=np.asarray(candidates, dtype=np.int64))


def test_batches_respect_both_bounds_and_isolate_oversized_queries():
    rng = np.random.default_rng(0)
    queries = [_query(i, np.unique(rng.integers(0, 60, size=rng.integers(1, 12)))) for i in range(40)]
    queries.insert(17, _query(99, np.arange(100, 130)))  # 30 candidates: more than a pool may hold
    seen = []
    for batch, chunked in plan_batches(queries, batch_size=5, max_rows=20):
        pool = np.unique(np.concatenate([q.candidates for q in batch]))
        if chunked:
            assert len(batch) == 1 and batch[0].candidates.size > 20
        else:
            assert len(batch) <= 5 and pool.size <= 20
        seen += [q.row for q in batch]
    assert seen == [q.row for q in queries]  # every query once, in order


def _naive_batches(queries, batch_size, max_rows):
    """plan_batches with the pool as a Python set of every candidate so far (the brute-force reference)."""
    done, batch, pool = [], [], set()
    for q in queries:
        listed = set(q.candidates.tolist())
        oversized = q.candidates.size > max_rows
        if batch and (oversized or len(batch) == batch_size or len(pool | listed) > max_rows):
            done.append((batch, False))
            batch, pool = [], set()
        if oversized:
            done.append(([q], True))
        else:
            batch.append(q)
            pool |= listed
    return done + ([(batch, False)] if batch else [])


@pytest.mark.parametrize("seed", range(6))
def test_batches_equal_those_of_the_whole_pools_union(seed):
    """Runs of queries of one candidate list (replicate spectra), overlapping windows, unsorted lists with repeats,
    empty and oversized lists: the same batches as merging every query into the whole pool."""
    rng = np.random.default_rng(seed)
    queries = []
    while len(queries) < 120:
        kind = rng.integers(0, 4)
        start = int(rng.integers(0, 200))
        if kind == 0:  # a run of one list
            shared = np.arange(start, start + int(rng.integers(1, 30)))
            queries += [_query(len(queries) + i, shared) for i in range(int(rng.integers(1, 8)))]
        elif kind == 1:  # unsorted, with repeats
            queries.append(_query(len(queries), rng.integers(start, start + 40, size=int(rng.integers(1, 25)))))
        elif kind == 2:
            queries.append(_query(len(queries), np.zeros(0, dtype=np.int64)))
        else:  # more than a pool may hold
            queries.append(_query(len(queries), np.arange(start, start + 70)))
    for batch_size, max_rows in ((1, 60), (7, 60), (50, 45), (500, 1000)):
        fast = [([q.row for q in b], c) for b, c in plan_batches(queries, batch_size, max_rows)]
        naive = [([q.row for q in b], c) for b, c in _naive_batches(queries, batch_size, max_rows)]
        assert fast == naive


def test_pool_row_limit_is_half_the_budget_over_the_row_bytes():
    assert pool_row_limit(1000, working_memory=1) == 2**20 // 2 // 5000
    assert pool_row_limit(10**9, working_memory=1) == 1


def test_merged_chunks_equal_the_whole_list():
    rng = np.random.default_rng(1)
    scores = np.round(rng.normal(size=23), 1)  # ties across chunks
    prior = rng.random(23)
    q = _query(0, np.arange(23))
    parts = []
    for part in chunk_queries(q, 5):
        s = scores[part.candidates]
        top = np.lexsort((np.arange(s.size), -s))[:4]
        parts.append(ScoredQuery(part, s, top, prior[part.candidates][top]))
    merged = merge_chunks(q, parts, top_k=4)
    expected = np.lexsort((np.arange(23), -scores))[:4]
    np.testing.assert_array_equal(merged.scores, scores)
    np.testing.assert_array_equal(merged.top, expected)
    np.testing.assert_array_equal(merged.top_prior, prior[expected])


def test_merged_hypotheses_hold_every_formula_once():
    a = QueryHypotheses(("C2H6O", "C3H8O"), ("", "no_peak_explained"), (3, 0), (0, 0), (0.0, 0.0), 5, False)
    b = QueryHypotheses(("C2H6O", "CH4O"), ("", ""), (3, 2), (0, 1), (0.0, 0.0), 5, False)
    m = merge_hypotheses([a, b])
    assert m.formulas == ("C2H6O", "C3H8O", "CH4O")
    assert m.fallback == ("", "no_peak_explained", "") and m.n_explained == (3, 0, 2) and m.n_above == (0, 0, 1)


def _tables(out):
    with open(out / "structure_identifications.tsv", newline="") as h:
        ident = list(csv.DictReader(h, delimiter="\t"))
    with open(out / "structure_candidates.tsv", newline="") as h:
        cands = list(csv.DictReader(h, delimiter="\t"))
    return ident, cands


@pytest.mark.parametrize(("budget", "chunked"), [("0.1", True), ("0.4", False)])
def test_identify_under_a_tiny_budget_ranks_like_one_pool(mixed_run, tmp_path, monkeypatch, budget, chunked):
    """A budget of a few pool rows scores every query in chunks (0.1 MiB: 4 rows) or one query per batch (0.4 MiB:
    18 rows): the same ids, ranks, statuses and scores (to the 6 digits written) as with the default budget."""
    model, mgf, db = mixed_run
    calls, budget_before = [], get_config()["working_memory"]
    monkeypatch.setattr(_identify, "chunk_queries", lambda q, rows: calls.append(rows) or chunk_queries(q, rows))
    outs = {}
    for name, extra in (("default", []), ("tiny", ["--working-memory", budget])):
        out = tmp_path / name
        assert main([*extra, "metabolites", "identify", "--model", str(model), "--spectra", str(mgf),
                     "--candidates", str(db), "--output", str(out), "--ppm", "200000", "--top-k", "30"]) == 0
        outs[name] = _tables(out)
    assert bool(calls) == chunked
    assert get_config()["working_memory"] == budget_before  # --working-memory held for its command only
    (ident_a, cands_a), (ident_b, cands_b) = outs["default"], outs["tiny"]
    assert any(int(r["n_candidates"]) > 3 for r in ident_a)  # windows larger than a tiny pool
    assert ident_a == ident_b
    assert [(r["query_id"], r["rank"], r["identifier"]) for r in cands_a] == \
        [(r["query_id"], r["rank"], r["identifier"]) for r in cands_b]
    assert [r["score"] for r in cands_a] == [r["score"] for r in cands_b]

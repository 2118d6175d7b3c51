"""Pre-images of n-gram counts: exactness, enumeration vs brute force, the paper's Figures 3-6, bad input."""

import itertools
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import sparse

from iokr.strings import (
    DeBruijnGraph,
    edit_distance,
    euler_walk_batch,
    has_preimage,
    ngram_counts,
    ngram_preimage,
    ngram_preimages,
)

words = st.text(alphabet="abc", min_size=0, max_size=14)


@settings(max_examples=50, deadline=None)
@given(s=words, n=st.integers(1, 4))
def test_preimage_reproduces_counts(s, n):
    counts = ngram_counts(s, n)
    out = ngram_preimage(counts, n)
    assert ngram_counts(out, n) == counts
    assert has_preimage(counts, n)


@settings(max_examples=50, deadline=None)
@given(s=st.lists(st.sampled_from(["AH", "BB", "K0"]), min_size=1, max_size=8), n=st.integers(2, 3))
def test_preimage_of_symbol_sequences(s, n):
    counts = ngram_counts(s, n)
    out = ngram_preimage(counts, n)
    assert isinstance(out, tuple)
    assert ngram_counts(out, n) == counts


def _brute_force_preimages(s, n):
    target = ngram_counts(s, n)
    return {"".join(p) for p in set(itertools.permutations(s)) if ngram_counts("".join(p), n) == target}


@settings(max_examples=40, deadline=None)
@given(s=st.text(alphabet="abc", min_size=0, max_size=7), n=st.integers(1, 3))
def test_all_preimages_match_brute_force(s, n):
    found = ngram_preimages(ngram_counts(s, n), n)
    assert len(found) == len(set(found))
    assert set(found) == _brute_force_preimages(s, n)


def _paper_graph(**bigrams):
    """Bigram counts over {a, b, c} as in Figure 3, as a graph on single-symbol vertices."""
    return DeBruijnGraph({tuple(k): v for k, v in bigrams.items() if v}, 2)


FIG3 = dict(ab=1, bc=2, ca=1, cb=1)


def _circuits(graph):
    return {"".join(p) for p in graph.euler_paths(("a",), ("a",))}


def test_figure_3_unique_circuit():
    graph = _paper_graph(**FIG3)
    assert graph.degree_imbalance() == {}
    assert "".join(graph.walk(("a",))) == "bcbca"
    assert _circuits(graph) == {"bcbca"}


def test_figure_4_two_preimages_with_self_loop():
    graph = _paper_graph(**FIG3, cc=1)
    assert _circuits(graph) == {"bcbcca", "bccbca"}
    walk = "".join(graph.walk(("a",)))
    assert walk in {"bcbcca", "bccbca"}
    assert edit_distance(walk, "bcbca") == 1


def test_figure_5_extra_edge_generalized():
    graph = _paper_graph(**{**FIG3, "bc": 3})
    assert graph.degree_imbalance() != {}
    assert _circuits(graph) == set()
    walk = "".join(graph.walk(("a",)))
    assert len(walk) == 6
    assert edit_distance(walk, "bcbca") == 1
    assert walk in {"bccbca", "bcbcca"}


def test_figure_6_missing_edge_generalized():
    graph = _paper_graph(**{**FIG3, "bc": 1})
    walk = "".join(graph.walk(("a",)))
    assert len(walk) == 4
    assert edit_distance(walk, "bcbca") == 1


@settings(max_examples=40, deadline=None)
@given(pairs=st.dictionaries(st.sampled_from(["".join(p) for p in itertools.product("^ab$", repeat=2)]),
                             st.integers(0, 3), max_size=10))
def test_generalized_walk_uses_every_edge_once(pairs):
    counts = {tuple(k): v for k, v in pairs.items() if v}
    walk = DeBruijnGraph(counts, 2).walk(("^",))
    assert len(walk) == sum(counts.values())
    # every edge's emitted symbol is used exactly as often as the edges emitting it
    assert Counter(walk) == Counter({k[-1]: 0 for k in counts}) + Counter(
        {sym: sum(v for k, v in counts.items() if k[-1] == sym) for sym in {k[-1] for k in counts}})


@settings(max_examples=50, deadline=None)
@given(s=st.text(alphabet="abc", min_size=1, max_size=10), delta=st.sampled_from([1, -1]), data=st.data())
def test_single_self_loop_change_is_one_edit(s, delta, data):
    """Sec. 4.10: changing the count of a self-loop n-gram ``xx`` by one inserts or deletes one local ``x``.

    The changed counts may admit several pre-images (Figure 4); the walk returns one of them and one of them is
    at edit distance 1 from the original string.
    """
    symbol = data.draw(st.sampled_from(sorted(set(s))))
    counts = ngram_counts(s, 2)
    key = (symbol, symbol)
    if delta < 0 and counts[key] == 0:
        return
    counts[key] += delta
    out = ngram_preimage(counts, 2)
    assert len(out) == len(s) + delta
    alternatives = ngram_preimages(counts, 2)
    assert out in alternatives
    assert min(edit_distance(a, s) for a in alternatives) == 1


def test_bad_input():
    with pytest.raises(TypeError, match="mapping"):
        ngram_preimage([("a", "b")], 2)
    with pytest.raises(ValueError, match="length 3"):
        ngram_preimage({"abc": 1}, 2)
    with pytest.raises(ValueError, match="finite"):
        ngram_preimage({"ab": float("nan")}, 2)
    with pytest.raises(ValueError, match="'n' parameter"):
        ngram_preimage({"ab": 1}, 0)
    with pytest.raises(ValueError, match="no pre-image"):
        ngram_preimage({"^a": 1, "b$": 1}, 2, strict=True)


def test_edge_cases():
    assert ngram_preimage({}, 2) == ""  # all-zero counts: empty string, documented
    assert ngram_preimage({"ab": 0, "bc": -0.3}, 2) == ""
    assert ngram_preimage(ngram_counts("", 3), 3) == ""
    assert ngram_preimage(ngram_counts("ab", 5), 5) == "ab"  # n larger than the string
    assert ngram_preimage({"^a": 0.7, "ab": 1.2, "b$": 0.9}, 2) == "ab"  # regression outputs are rounded
    assert ngram_preimages({"^a": 1, "b$": 1}, 2) == []
    assert not has_preimage({"^a": 1, "b$": 1}, 2)


def _batch_inputs(strings, n):
    vocab = sorted({g for s in strings for g in ngram_counts(s, n)})
    nodes = sorted({g[:-1] for g in vocab} | {g[1:] for g in vocab} | {("^",) * (n - 1)})
    node = {v: i for i, v in enumerate(nodes)}
    symbols = sorted({g[-1] for g in vocab})
    col = {g: j for j, g in enumerate(vocab)}
    rows = [ngram_counts(s, n) for s in strings]
    C = sparse.lil_matrix((len(strings), len(vocab)), dtype=np.int64)
    for r, counts in enumerate(rows):
        for g, c in counts.items():
            C[r, col[g]] = c
    src = np.array([node[g[:-1]] for g in vocab])
    dst = np.array([node[g[1:]] for g in vocab])
    sym = np.array([symbols.index(g[-1]) for g in vocab])
    return C.tocsr(), src, dst, sym, node[("^",) * (n - 1)], len(nodes), symbols, vocab


@pytest.mark.parametrize("n", [1, 2, 3])
def test_batch_walk_matches_reference(n, rng):
    letters = np.array(list("abcd"))
    strings = ["".join(rng.choice(letters, size=rng.integers(0, 12))) for _ in range(60)]
    C, src, dst, sym, start, n_nodes, symbols, vocab = _batch_inputs(strings, n)
    # perturb half of the rows: counts +-1 on random columns (non-Eulerian, sometimes disconnected graphs)
    C = C.toarray()
    for r in range(0, len(strings), 2):
        j = rng.integers(C.shape[1])
        C[r, j] = max(C[r, j] + rng.choice([-1, 1]), 0)
    out, offsets = euler_walk_batch(C, src, dst, sym, start, n_nodes)
    for r in range(len(strings)):
        got = [symbols[i] for i in out[offsets[r] : offsets[r + 1]]]
        assert len(got) == C[r].sum()
        counts = {vocab[j]: int(C[r, j]) for j in np.flatnonzero(C[r])}
        graph = DeBruijnGraph(counts, n)
        expected = graph.walk(("^",) * (n - 1))
        connected = len(expected) == 0 or _reachable_all(graph, ("^",) * (n - 1))
        if connected:
            assert got == expected
        else:
            assert Counter(got) == Counter(expected)
        if r % 2 == 1:
            assert ngram_counts("".join(s for s in got if s not in "^$"), n) == ngram_counts(strings[r], n)


def _reachable_all(graph, start):
    seen = {start}
    stack = [start]
    while stack:
        v = stack.pop()
        for _, dest, _ in graph.out_edges.get(v, ()):
            if dest not in seen:
                seen.add(dest)
                stack.append(dest)
    return all(v in seen for v in graph.out_edges)

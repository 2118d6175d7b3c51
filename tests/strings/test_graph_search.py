"""Length-indexed best paths through the training n-gram graph vs brute-force enumeration."""

import itertools

import numpy as np
import pytest

from iokr.strings import OutputSpace
from iokr.strings._graph_search import GraphSearch
from iokr.strings._ngrams import iter_ngrams


def _additive_cost(ids, space, g, lm_cost_by_gram, lm_weight):
    n = space.n
    total = 0.0
    for gram in iter_ngrams(ids, n, space.start_id, space.stop_id):
        if gram not in space.vocab[n]:
            return np.inf
        for o in range(1, n + 1):
            col = space.vocab[o].get(gram[-o:], -1)
            total += 1.0 - 2.0 * (g[col] if col >= 0 else 0.0)
        total += lm_weight * lm_cost_by_gram[gram]
    return total


@pytest.mark.parametrize("n", [2, 3])
def test_best_path_per_length_matches_enumeration(n, rng):
    words = [tuple(w) for w in ["ab", "ba", "aab", "bba", "abc", "c"]]
    space = OutputSpace(words, n)
    g = rng.normal(scale=0.6, size=space.n_columns)
    lm_cost = rng.random(len(space.top_grams))
    by_gram = dict(zip(space.top_grams, lm_cost, strict=True))
    search = GraphSearch(space, lm_cost)
    max_length = 6
    paths = search.best_paths(g, max_length, lm_weight=0.5)
    costs = {}
    A = len(space.alphabet)
    for L in range(0, max_length - n + 2):
        for ids in itertools.product(range(A), repeat=L):
            c = _additive_cost(ids, space, g, by_gram, 0.5)
            edges = L + n - 1
            if np.isfinite(c) and edges <= max_length:
                costs[edges] = min(costs.get(edges, np.inf), c)
    got = {len(p) + n - 1: _additive_cost(p, space, g, by_gram, 0.5) for p in paths}
    assert set(got) == set(costs)
    for edges, c in costs.items():
        assert got[edges] == pytest.approx(c, abs=1e-12)

"""Length-indexed best paths in the n-gram graph of the training vocabulary (candidate pre-images).

For real-valued predicted counts ``g`` the pre-image objective ``||Phi(y) - g||^2`` is, for strings whose n-grams
all occur once, ``const + sum over the n-grams u of y (of every order) of (1 - 2 g_u)``: additive over the edges of
a path through the De Bruijn graph of all training n-grams. A dynamic program over path lengths gives, for each
length ``L <= max_length``, the best such path from the start vertex to the stop vertex (plus ``lm_weight`` times
the language-model cost of its edges). Repeated n-grams make the additive cost an approximation, so these paths are
only *candidates*: the estimator re-ranks them with the exact objective together with the Euler-walk pre-images.
Cost ``O(max_length * n_edges)`` per prediction, vectorized over edges.
"""

from __future__ import annotations

import numpy as np


class GraphSearch:
    """Precomputed edge tables for :meth:`best_paths`.

    Parameters
    ----------
    space : OutputSpace
    edge_lm_cost : ndarray of shape (n_edges,), optional
        Negative log-probability of each top-order edge under a language model (0 when None).
    """

    def __init__(self, space, edge_lm_cost=None):
        n = space.n
        self.space = space
        E = len(space.top_grams)
        # columns of the suffixes (orders 1..n) of each top-order n-gram; -1 when not a training feature
        self.suffix_cols = np.full((n, E), -1, dtype=np.int64)
        for e, gram in enumerate(space.top_grams):
            for o in range(1, n + 1):
                self.suffix_cols[o - 1, e] = space.vocab[o].get(gram[-o:], -1)
        self.edge_lm_cost = np.zeros(E) if edge_lm_cost is None else np.asarray(edge_lm_cost, dtype=np.float64)
        order = np.argsort(space.dst, kind="stable")
        self.by_dst = order
        self.dst_sorted = space.dst[order]
        self.dst_starts = np.flatnonzero(np.r_[True, np.diff(self.dst_sorted) != 0])

    def edge_costs(self, g, lm_weight):
        """Additive cost of each edge for predictions ``g`` of shape (n_columns,)."""
        cols = self.suffix_cols
        values = np.where(cols >= 0, g[np.maximum(cols, 0)], 0.0)
        return (1.0 - 2.0 * values).sum(axis=0) + lm_weight * self.edge_lm_cost

    def best_paths(self, g, max_length, lm_weight=0.0):
        """Best path (as id tuple, pads removed) for every number of edges ``1..max_length`` that reaches stop."""
        space = self.space
        cost = self.edge_costs(g, lm_weight)
        src = space.src
        V = space.n_nodes
        best = np.full(V, np.inf)
        best[space.start_node] = 0.0
        back = []
        found = []
        cost_sorted = cost[self.by_dst]
        src_sorted = src[self.by_dst]
        for _ in range(max_length):
            cand = best[src_sorted] + cost_sorted
            mins = np.minimum.reduceat(cand, self.dst_starts)
            # first edge reaching each vertex's minimum (ties: lowest column)
            is_min = cand == np.repeat(mins, np.diff(np.r_[self.dst_starts, cand.size]))
            first = np.minimum.reduceat(np.where(is_min, np.arange(cand.size), cand.size), self.dst_starts)
            new = np.full(V, np.inf)
            choice = np.full(V, -1, dtype=np.int64)
            targets = self.dst_sorted[self.dst_starts]
            new[targets] = mins
            ok = np.isfinite(mins)
            choice[targets[ok]] = self.by_dst[first[ok]]
            back.append(choice)
            best = new
            if np.isfinite(best[space.stop_node]):
                found.append(len(back))
        paths = []
        for length in found:
            v = space.stop_node
            edges = []
            for t in range(length - 1, -1, -1):
                e = back[t][v]
                edges.append(e)
                v = src[e]
            syms = space.sym[edges[::-1]]
            paths.append(tuple(int(s) for s in syms if s < space.start_id))
        return paths

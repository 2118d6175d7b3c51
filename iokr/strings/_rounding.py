"""From real-valued predicted n-gram counts to integer counts: learned rounding thresholds and degree repair.

Rounding with threshold ``t`` maps a prediction ``v`` to ``max(0, ceil(v - t))``, i.e. count ``c`` for
``v`` in ``(c - 1 + t, c + t]``; ``t = 0.5`` is ordinary rounding. Sec. 6.3 of Cortes et al. (2005) chooses one
threshold per output dimension on training predictions so that the right number of n-grams is predicted; we pick
per column the threshold of a grid minimizing the total absolute count error on (held-out) training predictions,
or, with ``criterion="total"``, the one whose total count is closest to the true total (the paper's wording).

Rounding each n-gram independently usually breaks the Euler condition (in-degree = out-degree). The repair moves
one edge count at a time, always the cheapest move (smallest distance of the prediction to its rounding
boundary) among those that reduce the total degree imbalance by two, until the graph is balanced or no such move
exists.
"""

from __future__ import annotations

import numpy as np

DEFAULT_GRID = np.round(np.arange(0.05, 0.951, 0.05), 2)


def round_counts(values, thresholds):
    """``max(0, ceil(values - thresholds))`` as int64; ``thresholds`` broadcasts over columns."""
    return np.maximum(np.ceil(np.asarray(values, dtype=np.float64) - thresholds), 0).astype(np.int64)


def learn_thresholds(predictions, targets, *, grid=DEFAULT_GRID, criterion="l1"):
    """Per-column rounding thresholds learned on training predictions.

    Parameters
    ----------
    predictions : ndarray of shape (m, V)
        Real-valued predicted counts (ideally held-out predictions, e.g. leave-one-out).
    targets : ndarray or sparse matrix of shape (m, V)
        True counts.
    grid : ndarray of shape (g,)
        Candidate thresholds in (0, 1).
    criterion : {"l1", "total"}
        ``"l1"``: minimize ``sum_i |round(v_i) - y_i|`` per column; ``"total"``: make ``sum_i round(v_i)`` closest
        to ``sum_i y_i``. Ties go to the threshold closest to 0.5.

    Returns
    -------
    thresholds : ndarray of shape (V,)
    """
    if criterion not in ("l1", "total"):
        raise ValueError(f"The 'criterion' parameter must be 'l1' or 'total'. Got {criterion!r} instead.")
    P = np.asarray(predictions, dtype=np.float64)
    Y = targets.toarray() if hasattr(targets, "toarray") else np.asarray(targets, dtype=np.float64)
    grid = np.asarray(grid, dtype=np.float64)
    losses = np.empty((grid.size, P.shape[1]))
    for g, t in enumerate(grid):
        R = round_counts(P, t)
        if criterion == "l1":
            losses[g] = np.abs(R - Y).sum(axis=0)
        else:
            losses[g] = np.abs(R.sum(axis=0) - Y.sum(axis=0))
    # Prefer thresholds near 0.5 among ties: add a tiny tie-breaking penalty.
    losses += 1e-9 * np.abs(grid - 0.5)[:, None]
    return grid[losses.argmin(axis=0)]


def repair_degrees(counts, values, thresholds, src, dst, n_nodes, start_node, stop_node, *, max_moves=None,
                   out_edges=None, in_edges=None):
    """Make a rounded count vector satisfy the Euler-path degree condition by cheapest single-count moves.

    Parameters
    ----------
    counts : ndarray of shape (V,) of int
        Rounded counts (not modified).
    values : ndarray of shape (V,)
        Real-valued predictions the counts were rounded from.
    thresholds : ndarray of shape (V,)
    src, dst : ndarray of shape (V,)
        Vertex ids of each column's edge.
    n_nodes, start_node, stop_node : int
        Number of vertices; the Euler path must leave ``start_node`` once more than it enters it and enter
        ``stop_node`` once more than it leaves it (equal ids: a circuit).
    max_moves : int, optional
        Cap on the number of moves (default: the total imbalance).
    out_edges, in_edges : list of ndarray, optional
        Precomputed columns leaving / entering each vertex.

    Returns
    -------
    repaired : ndarray of shape (V,) of int
    balanced : bool
        Whether the degree condition holds after the repair.
    """
    c = np.array(counts, dtype=np.int64, copy=True)
    if out_edges is None or in_edges is None:
        out_edges, in_edges = edge_lists(src, dst, n_nodes)
    need = np.bincount(src, weights=c, minlength=n_nodes) - np.bincount(dst, weights=c, minlength=n_nodes)
    need = need.astype(np.int64)
    if start_node != stop_node:
        need[start_node] -= 1
        need[stop_node] += 1
    total = int(np.abs(need).sum())
    if total == 0:
        return c, True
    budget = total if max_moves is None else max_moves
    values = np.asarray(values, dtype=np.float64)
    for _ in range(budget):
        pos = np.flatnonzero(need > 0)
        neg = np.flatnonzero(need < 0)
        if pos.size == 0:
            break
        best_cost, best = np.inf, None
        # Decrement an edge u -> v with need[u] > 0 and need[v] < 0: cost = how far v_e is above its boundary.
        for u in pos:
            cols = out_edges[u]
            cols = cols[(c[cols] > 0) & (need[dst[cols]] < 0)]
            if cols.size:
                cost = values[cols] - (c[cols] - 1 + thresholds[cols])
                j = int(cost.argmin())
                if cost[j] < best_cost:
                    best_cost, best = cost[j], (int(cols[j]), -1)
        # Increment an edge u -> v with need[u] < 0 and need[v] > 0: cost = how far v_e is below the next boundary.
        for u in neg:
            cols = out_edges[u]
            cols = cols[need[dst[cols]] > 0]
            if cols.size:
                cost = (c[cols] + thresholds[cols]) - values[cols]
                j = int(cost.argmin())
                if cost[j] < best_cost:
                    best_cost, best = cost[j], (int(cols[j]), +1)
        if best is None:
            break
        col, step = best
        c[col] += step
        need[src[col]] += step
        need[dst[col]] -= step
    return c, bool(not need.any())


def edge_lists(src, dst, n_nodes):
    """Columns leaving and entering each vertex, as two lists of int arrays."""
    src = np.asarray(src)
    dst = np.asarray(dst)
    order_out = np.argsort(src, kind="stable")
    order_in = np.argsort(dst, kind="stable")
    bounds_out = np.searchsorted(src[order_out], np.arange(n_nodes + 1))
    bounds_in = np.searchsorted(dst[order_in], np.arange(n_nodes + 1))
    out_edges = [order_out[bounds_out[v] : bounds_out[v + 1]] for v in range(n_nodes)]
    in_edges = [order_in[bounds_in[v] : bounds_in[v + 1]] for v in range(n_nodes)]
    return out_edges, in_edges

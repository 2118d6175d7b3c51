"""Euler walks of many small De Bruijn graphs at once, in lockstep with numpy (the fast pre-image path).

All graphs share one n-gram vocabulary: column ``j`` is the edge ``src[j] -> dst[j]`` emitting symbol ``sym[j]``.
Row ``r`` of an integer count matrix is one graph. Each graph runs Hierholzer's stack algorithm; one numpy step
advances every unfinished graph by one push or one pop, so a batch costs ``2 * max_edges + 1`` vectorized steps
instead of a Python loop per edge. The order of the walk equals :meth:`DeBruijnGraph.walk` (edges of a vertex
taken in column order, which is the sorted-symbol order of a sorted vocabulary). Graphs whose edges are not all
reachable from the start vertex (the disconnected case of the generalized algorithm) are finished by the
reference walk.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse

#: Graphs walked together: small enough that the per-chunk arrays stay in cache (measured fastest near 1000).
CHUNK_ROWS = 1024


def euler_walk_batch(counts, src, dst, sym, start_node, n_nodes, *, fallback=None):
    """Generalized Euler walks of the graphs given by the rows of ``counts``.

    Parameters
    ----------
    counts : sparse matrix or ndarray of shape (n_graphs, n_columns)
        Non-negative integer multiplicities of the vocabulary edges.
    src, dst : ndarray of shape (n_columns,)
        Vertex ids (``0 <= id < n_nodes``) of each column's source and destination.
    sym : ndarray of shape (n_columns,)
        Symbol id emitted by each column.
    start_node : int
        Vertex the walks start from.
    n_nodes : int
        Number of vertex ids.
    fallback : callable, optional
        ``fallback(row_index) -> sequence of symbol ids`` used for graphs with edges unreachable from the start;
        by default those graphs are completed by restarting at the smallest vertex id with unused edges.

    Returns
    -------
    symbols : ndarray of shape (n_edges_total,)
        Emitted symbol ids, graph after graph; graph ``r`` occupies ``symbols[offsets[r]:offsets[r + 1]]`` and has
        exactly ``counts[r].sum()`` symbols.
    offsets : ndarray of shape (n_graphs + 1,)
    """
    counts = sparse.csr_matrix(counts)
    counts.eliminate_zeros()
    counts.sort_indices()
    n_rows = counts.shape[0]
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    sym = np.asarray(sym, dtype=np.int64)
    if counts.data.size and (counts.data < 0).any():
        raise ValueError("'counts' must be non-negative.")
    edges_per_row = np.asarray(counts.sum(axis=1)).ravel().astype(np.int64)
    offsets = np.zeros(n_rows + 1, dtype=np.int64)
    np.cumsum(edges_per_row, out=offsets[1:])
    out = np.full(offsets[-1], -1, dtype=np.int64)
    # Vertex keys are dense ``row * n_nodes + vertex``: rows are processed in chunks that keep them small.
    step = max(1, min(n_rows, CHUNK_ROWS, (1 << 22) // max(int(n_nodes), 1)))
    monotone = bool(np.all(np.diff(src) >= 0))
    for lo in range(0, n_rows, step):
        hi = min(lo + step, n_rows)
        _walk_chunk(counts[lo:hi], src, dst, sym, start_node, int(n_nodes), monotone, out, offsets[lo : hi + 1])

    # Graphs with edges unreachable from the start wrote fewer symbols than edges (marked -1).
    unfinished = np.flatnonzero(np.minimum.reduceat(out, offsets[:-1][edges_per_row > 0]) < 0) if out.size else []
    rows_with_edges = np.flatnonzero(edges_per_row > 0)
    for r in rows_with_edges[unfinished]:
        if fallback is not None:
            walk = np.asarray(fallback(int(r)), dtype=np.int64)
        else:
            walk = _reference_walk(counts, int(r), src, dst, sym, start_node)
        out[offsets[r] : offsets[r + 1]] = walk
    return out, offsets


def _walk_chunk(counts, src, dst, sym, start_node, n_nodes, monotone, out, offsets):
    """Lockstep Hierholzer on the rows of one chunk, writing into ``out[offsets[0]:offsets[-1]]``."""
    n_rows = counts.shape[0]
    multiplicity = counts.data.astype(np.int64)
    row_of_entry = np.repeat(np.arange(n_rows, dtype=np.int64), np.diff(counts.indptr))
    edge_row = np.repeat(row_of_entry, multiplicity)
    edge_col = np.repeat(counts.indices.astype(np.int64), multiplicity)
    if edge_col.size == 0:
        return
    src_key = edge_row * n_nodes + src[edge_col]
    if not monotone:
        # Columns not grouped by source vertex: group edges by (row, vertex), keeping column order within a vertex.
        order = np.argsort(src_key, kind="stable")
        src_key, edge_col, edge_row = src_key[order], edge_col[order], edge_row[order]
    dst_key = edge_row * n_nodes + dst[edge_col]
    n_keys = n_rows * n_nodes
    end = np.cumsum(np.bincount(src_key, minlength=n_keys))
    pointer = np.empty_like(end)
    pointer[0] = 0
    pointer[1:] = end[:-1]
    edge_sym = sym[edge_col]
    base = offsets[0]
    edges_per_row = np.diff(offsets)
    depth = int(edges_per_row.max()) + 1
    # Flat stacks (row-major, ``depth`` slots per row): 1-D fancy indexing is much cheaper than 2-D.
    stack_v = np.empty(n_rows * depth, dtype=np.int64)
    stack_s = np.empty(n_rows * depth, dtype=np.int64)
    slot0 = np.arange(n_rows, dtype=np.int64) * depth
    stack_v[slot0] = np.arange(n_rows, dtype=np.int64) * n_nodes + start_node
    top = slot0.copy()  # absolute slot of each row's stack top
    write = offsets[1:] - 1 - base  # walks are written backwards: the pop order reversed is the walk
    chunk_out = out[base : offsets[-1]]
    active = np.flatnonzero(edges_per_row > 0)
    while active.size:
        t = top[active]
        v = stack_v[t]
        e = pointer[v]
        has = e < end[v]
        push = np.compress(has, active)
        if push.size:
            ep = np.compress(has, e)
            pointer[np.compress(has, v)] = ep + 1
            tp = np.compress(has, t) + 1
            top[push] = tp
            stack_v[tp] = dst_key[ep]
            stack_s[tp] = edge_sym[ep]
        if push.size < active.size:
            low = ~has
            pop = np.compress(low, active)
            tq = np.compress(low, t)
            emit = tq > slot0[pop]
            rows = np.compress(emit, pop)
            chunk_out[write[rows]] = stack_s[np.compress(emit, tq)]
            write[rows] -= 1
            top[pop] = tq - 1
            active = np.compress(top[active] >= slot0[active], active)


def _reference_walk(counts, r, src, dst, sym, start_node):
    """Python generalized walk of one row, restarting at the smallest vertex id with unused edges."""
    row = counts[r]
    adjacency = {}
    for col, c in zip(row.indices, row.data.astype(np.int64), strict=True):
        adjacency.setdefault(int(src[col]), []).append([int(col), int(c)])
    for lst in adjacency.values():
        lst.sort()
    pointer = dict.fromkeys(adjacency, 0)
    pieces = []
    for root in [start_node] + sorted(adjacency):
        if root not in adjacency or pointer[root] >= len(adjacency[root]):
            continue
        piece = []
        stack = [(root, -1)]
        while stack:
            v = stack[-1][0]
            lst = adjacency.get(v)
            i = pointer.get(v, 0)
            if lst is not None and i < len(lst):
                col = lst[i][0]
                lst[i][1] -= 1
                if lst[i][1] == 0:
                    pointer[v] = i + 1
                stack.append((int(dst[col]), int(sym[col])))
            else:
                s = stack.pop()[1]
                if stack:
                    piece.append(s)
        piece.reverse()
        pieces.extend(piece)
    return pieces

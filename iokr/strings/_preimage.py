"""Pre-images of n-gram counts: De Bruijn graphs and iterative Euler walks (Cortes, Mohri & Weston 2005, sec. 4).

The counts ``y`` of the n-grams of ``start * (n - 1) + s + stop * (n - 1)`` define a multigraph whose vertices
are (n-1)-grams and whose edges are the n-grams (``a1..an`` goes from ``a1..a(n-1)`` to ``a2..an``, repeated
``y[a1..an]`` times). The padded string is exactly an Euler path of that graph from ``start * (n - 1)``, so
every Euler path spells a pre-image, and enumerating the Euler paths enumerates all pre-images (sec. 4.8).

The walk is Hierholzer's algorithm with an explicit stack (no recursion limit); it visits the edges in the same
order as the paper's recursive ``EULER(q)``: ``path <- e EULER(dest(e)) path``. When the counts admit no Euler
path (the *generalized algorithm*, sec. 4.10) the same walk still consumes every edge once, restarting at each
vertex that keeps unused edges, so the output has exactly ``sum(y)`` symbols.
"""

from __future__ import annotations

import functools
import math
import numbers
from collections import Counter

import numpy as np

from ._ngrams import as_symbols, check_order, ngram_counts


@functools.lru_cache(maxsize=65536)
def _symbol_key(symbol):
    # Integers (symbol ids) sort numerically, anything else by type name and repr: deterministic for any symbols.
    if isinstance(symbol, (int, np.integer)) and not isinstance(symbol, bool):
        return (0, "", int(symbol), "")
    return (1, type(symbol).__name__, 0, repr(symbol))


def check_counts(counts, n, name="counts"):
    """Validate a mapping ``n-gram -> count``; return a dict ``tuple -> int`` without zero counts.

    Keys are tuples of ``n`` symbols or strings of length ``n``; values are finite reals. Non-integer or negative
    values (regression outputs) are rounded to the nearest non-negative integer, halves up.
    """
    if not hasattr(counts, "items"):
        raise TypeError(f"'{name}' must be a mapping from n-grams to counts. Got {type(counts).__name__} instead.")
    out = {}
    for key, value in counts.items():
        gram = as_symbols(key, f"{name} key")
        if len(gram) != n:
            raise ValueError(
                f"'{name}' has the key {key!r} of length {len(gram)}; every n-gram must have n={n} symbols."
            )
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not np.isfinite(value):
            raise ValueError(f"'{name}[{key!r}]' must be a finite number. Got {value!r} instead.")
        c = int(np.floor(float(value) + 0.5)) if value > 0 else 0
        if c > 0:
            out[gram] = out.get(gram, 0) + c
    return out


class DeBruijnGraph:
    """Multigraph of n-gram counts: vertices are (n-1)-grams, edge ``g[:-1] -> g[1:]`` has multiplicity ``y[g]``.

    Parameters
    ----------
    counts : dict
        ``n-gram tuple -> positive int`` (see :func:`check_counts`).
    n : int
        Order of the n-grams.

    Attributes
    ----------
    out_edges : dict
        ``vertex -> list of [symbol, destination, multiplicity]``, sorted by symbol, so walks are deterministic.
    """

    def __init__(self, counts, n):
        self.n = n
        edges = {}
        for gram, c in counts.items():
            edges.setdefault(gram[:-1], []).append([gram[-1], gram[1:], int(c)])
        for lst in edges.values():
            lst.sort(key=lambda e: _symbol_key(e[0]))
        self.out_edges = edges
        self.n_edges = int(sum(counts.values()))

    def degree_imbalance(self):
        """``out-degree - in-degree`` per vertex (vertices with zero imbalance omitted)."""
        balance = Counter()
        for v, lst in self.out_edges.items():
            for _, dest, c in lst:
                balance[v] += c
                balance[dest] -= c
        return {v: b for v, b in balance.items() if b}

    def _vertices(self):
        seen = dict.fromkeys(self.out_edges)
        return list(seen)

    def walk(self, start):
        """Generalized Euler walk: symbols of all edges, each used once, starting at ``start``.

        Hierholzer's algorithm with an explicit stack. When edges remain unused after the walk from ``start``
        (disconnected graph), the walk restarts at the first vertex (in insertion order) that still has unused
        edges and the pieces are concatenated, as in sec. 4.10. Returns a list of ``n_edges`` symbols.
        """
        pointer = {v: 0 for v in self.out_edges}
        left = {v: [e[2] for e in lst] for v, lst in self.out_edges.items()}
        pieces = []
        roots = [start] + self._vertices()
        for root in roots:
            if root not in self.out_edges or pointer[root] >= len(self.out_edges[root]):
                continue
            piece = []
            stack_vertex = [root]
            stack_symbol = [None]
            while stack_vertex:
                v = stack_vertex[-1]
                lst = self.out_edges.get(v)
                i = pointer.get(v, 0)
                if lst is not None and i < len(lst):
                    symbol, dest, _ = lst[i]
                    left[v][i] -= 1
                    if left[v][i] == 0:
                        pointer[v] = i + 1
                    stack_vertex.append(dest)
                    stack_symbol.append(symbol)
                else:
                    stack_vertex.pop()
                    symbol = stack_symbol.pop()
                    if stack_vertex:
                        piece.append(symbol)
            piece.reverse()
            pieces.append(piece)
        return [symbol for piece in pieces for symbol in piece]

    def euler_paths(self, start, end=None, *, max_results=None, max_steps=1_000_000):
        """All distinct Euler paths from ``start`` (ending at ``end`` if given), as lists of edge symbols.

        Depth-first enumeration with an explicit stack over distinct edge types with remaining multiplicity, so
        parallel copies of one n-gram do not produce duplicate strings. Stops after ``max_results`` paths or
        ``max_steps`` edge moves (the number of Euler paths can grow exponentially with the counts).
        """
        total = self.n_edges
        left = {v: [e[2] for e in lst] for v, lst in self.out_edges.items()}
        results = []
        if total == 0:
            return [[]] if end is None or end == start else []
        path = []
        frames = [[start, 0]]  # vertex, next edge index to try
        taken = []  # (vertex, edge index) per edge of ``path``
        steps = 0
        while frames:
            frame = frames[-1]
            v, i = frame
            if len(path) == total:
                if end is None or v == end:
                    results.append(list(path))
                    if max_results is not None and len(results) >= max_results:
                        break
                frames.pop()
                if taken:
                    u, j = taken.pop()
                    left[u][j] += 1
                    path.pop()
                continue
            lst = self.out_edges.get(v, ())
            counts = left.get(v, ())
            while i < len(lst) and counts[i] == 0:
                i += 1
            if i < len(lst):
                frame[1] = i + 1
                counts[i] -= 1
                taken.append((v, i))
                path.append(lst[i][0])
                frames.append([lst[i][1], 0])
                steps += 1
                if steps >= max_steps:
                    break
            else:
                frames.pop()
                if taken:
                    u, j = taken.pop()
                    left[u][j] += 1
                    path.pop()
        return results


def _fast_clean(counts, n):
    """:func:`check_counts` and :class:`DeBruijnGraph` in one pass for the common input, or None.

    The common input: a ``dict`` (or Counter, as :func:`ngram_counts` returns) whose keys are ``str`` of length ``n``
    or tuples of ``n`` symbols and whose values are plain ``int`` or ``float``. Returns ``(clean, out_edges, as_str)``
    equal to ``check_counts(counts, n)``, ``DeBruijnGraph(clean, n).out_edges`` (same insertion orders, same sorted
    edge lists) and the "every symbol is a one-character str" flag of :func:`_graph_and_key`; anything else (other key
    or value types, a key of the wrong length, non-finite values, an invalid ``n``) returns None so the general path
    validates and raises its usual errors.
    """
    if type(n) is not int or n < 1 or not isinstance(counts, dict):
        return None
    clean = {}
    as_str = True
    for key, value in counts.items():
        kind = type(key)
        if kind is tuple:
            if len(key) != n:
                return None
            if as_str:
                for c in key:
                    if type(c) is not str or len(c) != 1:
                        as_str = False
                        break
        elif kind is not str or len(key) != n:
            return None
        kind = type(value)
        if kind is int:
            c = value
        elif kind is float and value - value == 0.0:  # finite
            c = math.floor(value + 0.5) if value > 0 else 0
        else:
            return None
        if c > 0:
            gram = key if kind is tuple else tuple(key)
            clean[gram] = clean.get(gram, 0) + c
    edges = {}
    for gram, c in clean.items():
        edges.setdefault(gram[:-1], []).append([gram[-1], gram[1:], c])
    for lst in edges.values():
        if len(lst) > 1:
            lst.sort(key=lambda e: _symbol_key(e[0]))
    return clean, edges, as_str


def _walk_edges(out_edges, start):
    """:meth:`DeBruijnGraph.walk` on an edge table ``vertex -> [[symbol, destination, multiplicity], ...]``.

    Each vertex's edges are expanded into a stack of ``(symbol, destination)`` copies, smallest symbol on top, so
    taking the next unused edge is one ``list.pop``; the order of the walk is the reference walk's.
    """
    stacks = {}
    for v, lst in out_edges.items():
        expanded = []
        for symbol, dest, c in reversed(lst):
            expanded.extend([(symbol, dest)] * c)
        stacks[v] = expanded
    pieces = []
    for root in (start, *out_edges):
        if not stacks.get(root):
            continue
        piece = []
        vertices = [root]
        symbols = [None]
        while vertices:
            edges = stacks.get(vertices[-1])
            if edges:
                symbol, dest = edges.pop()
                vertices.append(dest)
                symbols.append(symbol)
            else:
                vertices.pop()
                piece.append(symbols.pop())
        piece.pop()  # the root's placeholder
        piece.reverse()
        pieces.append(piece)
    return [symbol for piece in pieces for symbol in piece]


def _strip(symbols, start, stop, as_str):
    core = [s for s in symbols if s != start and s != stop]
    if as_str and all(isinstance(s, str) for s in core):
        return "".join(core)
    return tuple(core)


def _graph_and_key(counts, n, start, stop):
    n = check_order(n)
    clean = check_counts(counts, n)
    as_str = all(isinstance(c, str) and len(c) == 1 for k in counts for c in as_symbols(k, "counts key"))
    return DeBruijnGraph(clean, n), clean, (start,) * (n - 1), (stop,) * (n - 1), as_str


def ngram_preimage(counts, n, start="^", stop="$", *, strict=False):
    """String whose padded n-gram counts are ``counts`` (the generalized string when none exists).

    Parameters
    ----------
    counts : mapping
        ``n-gram -> count`` for the n-grams of ``start * (n - 1) + s + stop * (n - 1)``. Keys are strings of
        length ``n`` or tuples of ``n`` symbols; values are counts (non-integer or negative values are rounded to
        the nearest non-negative integer). Missing n-grams count zero.
    n : int
        n-gram order, >= 1.
    start, stop : hashable, default="^", "$"
        Pad symbols.
    strict : bool, default=False
        Raise ``ValueError`` instead of returning the generalized string when no pre-image exists.

    Returns
    -------
    s : str or tuple
        ``str`` when every symbol is a one-character string, a tuple of symbols otherwise. When the counts
        admit a pre-image, ``ngram_counts(s, n, start, stop) == counts`` (up to zero entries). Otherwise the
        generalized algorithm's string: every n-gram is consumed once by the walk, pad symbols are removed.
        All-zero counts give the empty string (for ``n >= 2`` they admit no pre-image: even the empty string has
        the n-grams of its padding).

    Examples
    --------
    >>> ngram_preimage({"^b": 1, "bc": 2, "cb": 1, "ca": 1, "a$": 1}, 2)
    'bcbca'
    """
    fast = _fast_clean(counts, n) if not strict else None
    if fast is not None:
        clean, out_edges, as_str = fast
        return _strip(_walk_edges(out_edges, (start,) * (n - 1)), start, stop, as_str)
    graph, clean, start_node, _, as_str = _graph_and_key(counts, n, start, stop)
    s = _strip(graph.walk(start_node), start, stop, as_str)
    if strict and Counter(ngram_counts(s, n, start, stop)) != Counter(clean):
        raise ValueError(
            f"'counts' admit no pre-image for n={n} (degree imbalance {graph.degree_imbalance()!r} or disconnected "
            "n-grams); call with strict=False for the generalized string."
        )
    return s


def ngram_preimages(counts, n, start="^", stop="$", *, max_results=None):
    """All strings whose padded n-gram counts are exactly ``counts`` (sec. 4.8), in walk order.

    Returns an empty list when the counts admit no pre-image. See :func:`ngram_preimage` for the arguments.
    """
    graph, clean, start_node, stop_node, as_str = _graph_and_key(counts, n, start, stop)
    if not clean:  # only the empty string under n = 1 has no n-grams
        return [_strip((), start, stop, as_str)] if graph.n == 1 else []
    out = []
    for path in graph.euler_paths(start_node, stop_node if n > 1 else None, max_results=max_results):
        s = _strip(path, start, stop, as_str)
        if Counter(ngram_counts(s, n, start, stop)) == Counter(clean):
            out.append(s)
    return out


def has_preimage(counts, n, start="^", stop="$"):
    """Whether some string has exactly these padded n-gram counts.

    Exact and linear-time: when an Euler path from the start vertex exists, the walk finds one.
    """
    graph, clean, start_node, _, as_str = _graph_and_key(counts, n, start, stop)
    s = _strip(graph.walk(start_node), start, stop, as_str)
    return Counter(ngram_counts(s, n, start, stop)) == Counter(clean)

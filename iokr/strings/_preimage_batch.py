"""Pre-images of many n-gram count vectors at once: one vocabulary, one lockstep Euler walk for all of them.

:func:`ngram_preimage_batch` is the public door to :func:`~iokr.strings.euler_walk_batch`: it builds the shared
edge table (vertex ids, symbol ids, columns sorted by source vertex and then by symbol, the order of
:class:`~iokr.strings.DeBruijnGraph`) from the n-grams it is given, walks every count vector in lockstep, and turns
the walks back into strings. Every result equals :func:`~iokr.strings.ngram_preimage` of the same counts, including
the generalized strings of counts without a pre-image (graphs with edges unreachable from the start are finished by
the reference walk of their own graph, which restarts in the same vertex order).
"""

from __future__ import annotations

import numbers
from collections import defaultdict
from itertools import chain, count
from operator import methodcaller

import numpy as np
from scipy import sparse

from ._batch_euler import euler_walk_batch
from ._ngrams import as_symbols, check_order
from ._preimage import DeBruijnGraph, _symbol_key, check_counts


class _Vocabulary:
    """Distinct n-grams met so far: raw key -> gram id (keys spelling the same gram share it)."""

    def __init__(self, n):
        self.n = n
        self.column = {}  # raw key -> gram id
        self.gram_id = {}  # gram tuple -> gram id
        self.grams = []
        self.one_char = []  # per gram id: every symbol a one-character str

    def add(self, key, where):
        gram = as_symbols(key, f"{where} key")
        if len(gram) != self.n:
            raise ValueError(
                f"'{where}' has the key {key!r} of length {len(gram)}; every n-gram must have n={self.n} symbols."
            )
        gid = self.gram_id.setdefault(gram, len(self.grams))
        if gid == len(self.grams):
            self.grams.append(gram)
            self.one_char.append(all(isinstance(c, str) and len(c) == 1 for c in gram))
        self.column[key] = gid
        return gid


def _valid_value_types(values):
    """Whether every value is a real number other than bool (what :func:`check_counts` accepts)."""
    return all(kind is not bool and issubclass(kind, numbers.Real) for kind in set(map(type, values)))


def _round_counts(values):
    """Counts rounded as :func:`check_counts` does, or None when some value is not finite."""
    values = np.asarray(values, dtype=np.float64)
    if not np.isfinite(values).all():
        return None
    return np.where(values > 0, np.floor(values + 0.5), 0.0).astype(np.int64)


def _from_mappings(counts, vocab):
    """Flat (row, gram id, rounded count) triplets and the per-row one-character flag of a list of mappings.

    Keys, values and lengths are gathered by C-level iteration over all mappings at once; anything invalid
    (a non-mapping, a bad key, a non-finite or non-real value) is reported by :func:`check_counts` on the mappings
    in order, so the error names the first offending mapping as ``ngram_preimage`` would.
    """
    def first_error():
        for r, mapping in enumerate(counts):
            if not hasattr(mapping, "items"):
                raise TypeError(f"'counts[{r}]' must be a mapping from n-grams to counts. Got "
                                f"{type(mapping).__name__} instead.")
            check_counts(mapping, vocab.n, f"counts[{r}]")
        # pragma: no cover - check_counts rejects whatever the batch rejected
        raise AssertionError("unreachable: the batch found an invalid entry that check_counts accepts")

    if not all(hasattr(kind, "items") for kind in set(map(type, counts))):
        first_error()
    lengths = np.fromiter(map(len, counts), dtype=np.int64, count=len(counts))
    total = int(lengths.sum())
    raw = defaultdict(count().__next__)  # raw key -> id in order of first sight; one hash per key occurrence
    raw_ids = np.fromiter(map(raw.__getitem__, chain.from_iterable(counts)), dtype=np.int64, count=total)
    try:
        gram_of_raw = np.fromiter((vocab.add(key, "counts") for key in raw), dtype=np.int64, count=len(raw))
    except (TypeError, ValueError):
        first_error()
    key_ids = gram_of_raw[raw_ids]
    values = list(chain.from_iterable(map(methodcaller("values"), counts)))
    rounded = _round_counts(values) if _valid_value_types(values) else None
    if rounded is None:
        first_error()
    rows = np.repeat(np.arange(lengths.size, dtype=np.int64), lengths)
    one_char = np.asarray(vocab.one_char, dtype=bool)[key_ids] if total else np.zeros(0, bool)
    # A row is spelled as a str when all its keys (zero counts included) hold one-character strings.
    as_str = np.ones(lengths.size, dtype=bool)
    as_str[rows[~one_char]] = False
    return rows, key_ids, rounded, as_str


def _from_matrix(counts, vocabulary, vocab):
    counts = sparse.csr_matrix(counts) if sparse.issparse(counts) else np.asarray(counts)
    if counts.ndim != 2 or vocabulary is None or len(vocabulary) != counts.shape[1]:
        raise ValueError(
            "'counts' as a matrix must be 2-D (n_strings, n_columns) with 'vocabulary' naming the n-gram of every "
            f"column; got shape {counts.shape} and {None if vocabulary is None else len(vocabulary)} n-grams."
        )
    key_ids = np.array([vocab.add(key, f"vocabulary[{j}]") for j, key in enumerate(vocabulary)], dtype=np.int64)
    if sparse.issparse(counts):
        coo = counts.tocoo()
        rows, cols, values = coo.row.astype(np.int64), coo.col.astype(np.int64), coo.data
    else:
        rows, cols = np.nonzero(counts)
        values = counts[rows, cols]
    dtype = np.asarray(values).dtype
    real = dtype.kind != "b" and (np.issubdtype(dtype, np.integer) or np.issubdtype(dtype, np.floating))
    rounded = _round_counts(values) if real else None
    if rounded is None:
        raise ValueError(f"'counts' must hold finite real numbers; got dtype {dtype} with a non-finite or "
                         "non-real entry.")
    as_str = np.full(counts.shape[0], all(vocab.one_char), dtype=bool)
    return rows.astype(np.int64), key_ids[cols], rounded, as_str


def _edge_table(grams, start_vertex):
    """Columns sorted by (source vertex, symbol order): the permutation and the ``src, dst, sym`` arrays."""
    symbols = sorted({g[-1] for g in grams} | {c for g in grams for c in g}, key=_symbol_key)
    symbol_id = {c: i for i, c in enumerate(symbols)}
    vertices = {start_vertex: 0}
    for g in grams:
        vertices.setdefault(g[:-1], len(vertices))
        vertices.setdefault(g[1:], len(vertices))
    src = np.array([vertices[g[:-1]] for g in grams], dtype=np.int64)
    dst = np.array([vertices[g[1:]] for g in grams], dtype=np.int64)
    sym = np.array([symbol_id[g[-1]] for g in grams], dtype=np.int64)
    order = np.lexsort((sym, src))
    return order, src[order], dst[order], sym[order], symbols, symbol_id, len(vertices)


def ngram_preimage_batch(counts, n, start="^", stop="$", *, vocabulary=None):
    """Pre-images of many n-gram count vectors at once (vectorized Euler walks).

    The batch form of :func:`ngram_preimage`: the same strings, about ten times faster per string on short words
    (all graphs are walked in lockstep with numpy; see ``benchmarks/bench_strings.py``).

    Parameters
    ----------
    counts : sequence of mappings, or array-like / sparse matrix of shape (n_strings, n_columns)
        Either one mapping ``n-gram -> count`` per string (keys and values as in :func:`ngram_preimage`), or a
        count matrix whose column ``j`` counts the n-gram ``vocabulary[j]``. Non-integer or negative counts are
        rounded to the nearest non-negative integer, halves up.
    n : int
        n-gram order, >= 1.
    start, stop : hashable, default="^", "$"
        Pad symbols.
    vocabulary : sequence, optional
        The n-gram of every column (strings of length ``n`` or tuples of ``n`` symbols); required with a matrix,
        ignored with mappings. Row ``i`` of a matrix is read as the mapping ``dict(zip(vocabulary, counts[i]))``.

    Returns
    -------
    strings : list of length n_strings
        ``strings[i] == ngram_preimage(counts[i], n, start, stop)``: a ``str`` when every symbol of the row's
        n-grams is a one-character string, a tuple of symbols otherwise; the generalized string when the counts
        admit no pre-image.

    See Also
    --------
    ngram_preimage : one mapping at a time, with ``strict``.
    euler_walk_batch : the walk on integer edge tables, for callers that already hold them.

    Examples
    --------
    >>> from iokr.strings import ngram_counts
    >>> ngram_preimage_batch([ngram_counts(w, 3) for w in ("banana", "kayak", "")], 3)
    ['banana', 'kayak', '']
    >>> ngram_preimage_batch([[1, 1, 1, 1]], 2, vocabulary=["^a", "ab", "ba", "a$"])
    ['aba']
    """
    n = check_order(n)
    vocab = _Vocabulary(n)
    if isinstance(counts, (str, bytes)) or (hasattr(counts, "items") and not sparse.issparse(counts)):
        raise TypeError("'counts' must be a sequence of mappings or a 2-D count matrix; for one mapping call "
                        "ngram_preimage.")
    if sparse.issparse(counts) or isinstance(counts, np.ndarray) or vocabulary is not None:
        rows, key_ids, rounded, as_str = _from_matrix(counts, vocabulary, vocab)
    else:
        counts = list(counts)
        rows, key_ids, rounded, as_str = _from_mappings(counts, vocab)
    n_rows = as_str.size
    if not vocab.grams:
        return ["" if s else () for s in as_str]
    start_vertex = (start,) * (n - 1)
    order, src, dst, sym, symbols, symbol_id, n_nodes = _edge_table(vocab.grams, start_vertex)
    position = np.empty(order.size, dtype=np.int64)
    position[order] = np.arange(order.size)
    keep = rounded > 0
    matrix = sparse.csr_matrix((rounded[keep], (rows[keep], position[key_ids[keep]])),
                               shape=(n_rows, len(vocab.grams)), dtype=np.int64)  # repeated n-grams summed

    def fallback(r):  # edges unreachable from the start: the reference walk of this row's own graph
        if vocabulary is None:
            mapping = counts[r]
        else:
            row = counts.getrow(r).toarray().ravel() if sparse.issparse(counts) else np.asarray(counts)[r]
            mapping = dict(zip(vocabulary, row.tolist(), strict=True))
        return [symbol_id[c] for c in DeBruijnGraph(check_counts(mapping, n), n).walk(start_vertex)]

    walked, offsets = euler_walk_batch(matrix, src, dst, sym, 0, n_nodes, fallback=fallback)
    is_pad = np.array([c in (start, stop) for c in symbols], dtype=bool)
    kept = ~is_pad[walked]
    walked = walked[kept]
    bounds = np.concatenate(([0], np.cumsum(kept)))[offsets]
    table = np.empty(len(symbols), dtype=object)
    for i, c in enumerate(symbols):  # element-wise: symbols may themselves be tuples
        table[i] = c
    spelled = table[walked].tolist()
    lo, hi = bounds[:-1].tolist(), bounds[1:].tolist()
    # Comprehensions over zipped ints create no long-lived container per string, so the cyclic garbage collector
    # does not rescan the callers' mappings while the strings are made.
    if as_str.all():  # one-character symbols: slices of one joined text are the strings
        text = "".join(spelled)
        return [text[a:b] for a, b in zip(lo, hi, strict=True)]
    return ["".join(spelled[a:b]) if flag else tuple(spelled[a:b])
            for a, b, flag in zip(lo, hi, as_str.tolist(), strict=True)]

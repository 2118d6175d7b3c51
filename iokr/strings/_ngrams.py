"""Strings as symbol tuples, padded n-grams and sparse n-gram count features.

A *string* is either a Python ``str`` (one symbol per character) or any sequence of hashable symbols (for
example phonemes ``("HH", "AH0", "L", "OW1")``). Its n-grams are taken on the padded string
``start * (n - 1) + s + stop * (n - 1)``, so every string, including the empty one and strings shorter than
``n``, has ``len(s) + n - 1`` n-grams and the boundary n-grams tell where the string starts and stops.
Features are sparse (CSR) over a vocabulary learned on training strings or hashed into a fixed number of
columns: never a dense ``|alphabet| ** n`` vector.
"""

from __future__ import annotations

import numbers
import zlib
from collections import Counter

import numpy as np
from scipy import sparse


def check_order(n, name="n", owner=None):
    """Return ``n`` as an int after checking it is an integer >= 1."""
    where = f" of {owner}" if owner else ""
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
        raise ValueError(f"The '{name}' parameter{where} must be an int >= 1. Got {n!r} instead.")
    return int(n)


def check_orders(orders, name="orders", owner=None):
    """Return a sorted tuple of distinct n-gram orders from an int (meaning ``1..orders``) or a sequence."""
    if isinstance(orders, numbers.Integral) and not isinstance(orders, bool):
        return tuple(range(1, check_order(orders, name, owner) + 1))
    try:
        values = tuple(sorted({check_order(o, name, owner) for o in orders}))
    except TypeError:
        raise ValueError(
            f"The '{name}' parameter{'' if owner is None else ' of ' + owner} must be an int or a sequence of "
            f"ints >= 1. Got {orders!r} instead."
        ) from None
    if not values:
        raise ValueError(f"The '{name}' parameter must name at least one order. Got {orders!r} instead.")
    return values


def _converted(obj, convert, name, expected):
    """``convert(obj)`` (``tuple`` or ``list``), or a TypeError naming ``name`` and ``expected`` if it fails."""
    try:
        return convert(obj)
    except TypeError:
        raise TypeError(f"'{name}' must be {expected}. Got {type(obj).__name__} instead.") from None


def as_symbols(s, name="string"):
    """Return the string ``s`` as a tuple of symbols (characters of a ``str``, items of a sequence)."""
    if isinstance(s, str):
        return tuple(s)
    if isinstance(s, (bytes, bytearray)):
        raise TypeError(f"'{name}' must be a str or a sequence of symbols, got bytes; decode it first.")
    symbols = _converted(s, tuple, name, "a str or a sequence of symbols")
    for symbol in symbols:
        try:
            hash(symbol)
        except TypeError:
            raise TypeError(f"'{name}' holds an unhashable symbol {symbol!r}.") from None
    return symbols


def check_strings(strings, name, *, reserved=(), allow_empty_list=False):
    """Validate a list of strings; return ``(list of symbol tuples, all_str)``.

    ``reserved`` symbols (the start and stop pads) may not occur in any string.
    """
    if isinstance(strings, (str, bytes)):
        raise TypeError(f"'{name}' must be a sequence of strings, got a single {type(strings).__name__}.")
    items = _converted(strings, list, name, "a sequence of strings")
    if not items and not allow_empty_list:
        raise ValueError(f"'{name}' must hold at least one string, got an empty sequence.")
    out = []
    all_str = True
    reserved = set(reserved)
    for i, s in enumerate(items):
        all_str &= isinstance(s, str)
        symbols = as_symbols(s, f"{name}[{i}]")
        if reserved:
            bad = reserved.intersection(symbols)
            if bad:
                raise ValueError(
                    f"'{name}[{i}]' = {s!r} contains the reserved pad symbol(s) {sorted(map(repr, bad))}; choose "
                    "other 'start'/'stop' symbols."
                )
        out.append(symbols)
    return out, all_str


def padded(symbols, n, start="^", stop="$"):
    """``start * (n - 1) + symbols + stop * (n - 1)`` as a tuple."""
    return (start,) * (n - 1) + tuple(symbols) + (stop,) * (n - 1)


def iter_ngrams(symbols, n, start="^", stop="$"):
    """The ``len(symbols) + n - 1`` n-grams (tuples) of the padded string, left to right."""
    p = padded(symbols, n, start, stop)
    return [p[i : i + n] for i in range(len(p) - n + 1)]


def ngram_counts(s, n, start="^", stop="$"):
    """Counts of the n-grams of the padded string ``start * (n - 1) + s + stop * (n - 1)``.

    Parameters
    ----------
    s : str or sequence of symbols
    n : int
        Order, >= 1 (``n = 1`` counts symbols; no padding).
    start, stop : hashable
        Pad symbols.

    Returns
    -------
    counts : collections.Counter
        Keys are n-gram tuples.

    Examples
    --------
    >>> sorted(ngram_counts("aba", 2).items())
    [(('^', 'a'), 1), (('a', '$'), 1), (('a', 'b'), 1), (('b', 'a'), 1)]
    """
    n = check_order(n)
    return Counter(iter_ngrams(as_symbols(s), n, start, stop))


def stable_hash(ngram, order):
    """Hash of an n-gram that does not depend on ``PYTHONHASHSEED`` (CRC32 of its repr and order)."""
    return zlib.crc32(repr((order, ngram)).encode("utf-8"))


class NgramVectorizer:
    """Sparse n-gram count features of strings, for one or several orders, from a vocabulary or hashed.

    Parameters
    ----------
    orders : int or sequence of int, default=2
        An int ``N`` means orders ``1..N``.
    start, stop : hashable, default="^", "$"
        Pad symbols.
    n_features : int, optional
        When given, n-grams are hashed (CRC32 of the n-gram and its order, stable across processes) into this
        many columns and :meth:`fit` learns nothing; otherwise a vocabulary of the training n-grams is learned
        and unseen n-grams are dropped at transform time.

    Attributes
    ----------
    vocabulary_ : dict
        ``(order, ngram tuple) -> column`` (vocabulary mode), columns sorted by order then n-gram.
    """

    def __init__(self, orders=2, start="^", stop="$", n_features=None):
        self.orders = orders
        self.start = start
        self.stop = stop
        self.n_features = n_features

    def _orders(self):
        return check_orders(self.orders, "orders", "NgramVectorizer")

    def fit(self, strings):
        symbols, _ = check_strings(strings, "strings", reserved=(self.start, self.stop),
                                   allow_empty_list=self.n_features is not None)
        orders = self._orders()
        if self.n_features is not None:
            check_order(self.n_features, "n_features", "NgramVectorizer")
            self.vocabulary_ = None
            return self
        keys = set()
        for s in symbols:
            for n in orders:
                keys.update((n, g) for g in iter_ngrams(s, n, self.start, self.stop))
        ordered = sorted(keys, key=lambda k: (k[0], tuple(map(repr, k[1]))))
        self.vocabulary_ = {k: i for i, k in enumerate(ordered)}
        return self

    @property
    def n_columns_(self):
        return self.n_features if self.vocabulary_ is None else len(self.vocabulary_)

    def transform(self, strings, *, dtype=np.float64):
        """Sparse count matrix of shape (n_strings, n_columns); unseen n-grams are dropped (vocabulary mode)."""
        symbols, _ = check_strings(strings, "strings", allow_empty_list=True)
        return self.transform_symbols(symbols, dtype=dtype)

    def transform_symbols(self, symbols, *, dtype=np.float64):
        """:meth:`transform` for already validated symbol tuples."""
        orders = self._orders()
        vocab = self.vocabulary_
        indptr = [0]
        indices = []
        for s in symbols:
            for n in orders:
                for g in iter_ngrams(s, n, self.start, self.stop):
                    if vocab is None:
                        indices.append(stable_hash(g, n) % self.n_features)
                    else:
                        j = vocab.get((n, g))
                        if j is not None:
                            indices.append(j)
            indptr.append(len(indices))
        data = np.ones(len(indices), dtype=dtype)
        X = sparse.csr_matrix(
            (data, np.asarray(indices, dtype=np.int64), np.asarray(indptr, dtype=np.int64)),
            shape=(len(symbols), self.n_columns_),
        )
        X.sum_duplicates()
        return X

    def fit_transform(self, strings, *, dtype=np.float64):
        return self.fit(strings).transform(strings, dtype=dtype)


def ngram_features(strings, orders=2, start="^", stop="$", n_features=2**20):
    """Hashed sparse n-gram counts of ``strings``: a CSR matrix of shape (n_strings, n_features)."""
    vectorizer = NgramVectorizer(orders, start, stop, n_features)
    vectorizer.fit([])
    return vectorizer.transform(strings)

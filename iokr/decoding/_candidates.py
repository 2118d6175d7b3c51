"""Candidate sets: a pool of unique candidates plus, per query, the indices of its candidates.

A candidate shared by many queries (the same molecule in several formula lists, the same document for every query)
is stored and scored once.
"""

from __future__ import annotations

import numpy as np


class PackedBinaryFeatures:
    """Binary feature vectors stored bit-packed (8 features per byte), unpacked to float32 on slicing.

    Parameters
    ----------
    packed : ndarray of uint8, shape (n, ceil(n_features / 8))
        Rows as produced by ``np.packbits(bits, axis=1)``; may be a ``np.memmap``.
    n_features : int
        Number of features (bits) per row.

    Examples
    --------
    >>> import numpy as np
    >>> bits = np.array([[1, 0, 1], [0, 1, 1]], dtype=np.uint8)
    >>> P = PackedBinaryFeatures.from_dense(bits)
    >>> P[0:2]
    array([[1., 0., 1.],
           [0., 1., 1.]], dtype=float32)
    """

    dtype = np.dtype(np.float32)
    ndim = 2

    def __init__(self, packed, n_features):
        packed = np.asarray(packed) if not isinstance(packed, np.memmap) else packed
        if packed.dtype != np.uint8 or packed.ndim != 2:
            raise ValueError(f"'packed' must be a 2-D uint8 array, got {packed.dtype} of shape {packed.shape}.")
        n_features = int(n_features)
        if not 0 < n_features <= packed.shape[1] * 8 or packed.shape[1] != (n_features + 7) // 8:
            raise ValueError(
                f"'n_features'={n_features} does not match packed rows of {packed.shape[1]} bytes "
                f"(expected {packed.shape[1] * 8 - 7}..{packed.shape[1] * 8} features)."
            )
        self.packed = packed
        self.n_features = n_features

    @classmethod
    def from_dense(cls, bits):
        """Pack a dense 0/1 matrix.

        Parameters
        ----------
        bits : array-like of shape (n, n_features)
            Zeros and ones.

        Returns
        -------
        packed : PackedBinaryFeatures
            The same rows, 8 features per byte.
        """
        bits = np.asarray(bits)
        if bits.ndim != 2 or (bits.size and not np.isin(bits, (0, 1)).all()):
            raise ValueError("'bits' must be a 2-D array of zeros and ones.")
        return cls(np.packbits(bits.astype(np.uint8), axis=1), bits.shape[1])

    @property
    def shape(self):
        """Shape ``(n_rows, n_features)`` of the unpacked matrix."""
        return (self.packed.shape[0], self.n_features)

    def __len__(self):
        return self.packed.shape[0]

    def __getitem__(self, rows):
        block = np.unpackbits(np.asarray(self.packed[rows]), axis=-1, count=self.n_features)
        return block.astype(np.float32)


class CountFeatures:
    """Non-negative integer feature counts stored as uint8 (or uint16), converted to float32 on slicing.

    A pool of count fingerprints takes a quarter (half) of its float32 size; every block read by the scorer is
    the exact float32 value of the counts, so scores equal those of the float32 pool.

    Parameters
    ----------
    counts : ndarray of uint8 or uint16, shape (n, n_features)
        The counts, row by row (e.g. count fingerprints as stored by a candidate store); may be a ``np.memmap``.

    Examples
    --------
    >>> import numpy as np
    >>> C = CountFeatures(np.array([[3, 0], [0, 250]], dtype=np.uint8))
    >>> C[1:2]
    array([[  0., 250.]], dtype=float32)
    """

    dtype = np.dtype(np.float32)
    ndim = 2

    def __init__(self, counts):
        counts = np.asarray(counts) if not isinstance(counts, np.memmap) else counts
        if counts.dtype not in (np.uint8, np.uint16) or counts.ndim != 2:
            raise ValueError(f"'counts' must be a 2-D uint8 or uint16 array, got {counts.dtype} of shape "
                             f"{counts.shape}.")
        self.counts = counts

    @property
    def shape(self):
        """Shape ``(n_rows, n_features)``."""
        return self.counts.shape

    def __len__(self):
        return self.counts.shape[0]

    def __getitem__(self, rows):
        return np.asarray(self.counts[rows]).astype(np.float32)


class CandidateSets:
    """Per-query candidate sets over one pool of unique candidates.

    Parameters
    ----------
    pool : array-like of shape (n_pool, n_features)
        Unique candidates (ndarray, ``np.memmap``, :class:`PackedBinaryFeatures` or :class:`CountFeatures`); read
        in row blocks.
    indices : sequence of array-like of int
        For each query, the pool rows of its candidates, in the query's own candidate order.
    ids : sequence, optional
        Identifier of every pool row (e.g. InChIKeys), kept for reports.

    Attributes
    ----------
    n_queries : int
    sizes : ndarray of shape (n_queries,)
        Number of candidates per query.
    empty_queries : ndarray of int
        Queries without any candidate.
    """

    def __init__(self, pool, indices, ids=None):
        if getattr(pool, "ndim", None) != 2:
            pool = np.asarray(pool)
            if pool.ndim != 2:
                raise ValueError(f"'pool' must be 2-D (n_pool, n_features), got shape {pool.shape}.")
        n_pool = pool.shape[0]
        checked = []
        for q, idx in enumerate(indices):
            idx = np.asarray(idx)
            if idx.size == 0:
                idx = np.zeros(0, dtype=np.intp)
            if idx.ndim != 1 or not np.issubdtype(idx.dtype, np.integer):
                raise ValueError(
                    f"'indices[{q}]' must be a 1-D integer array of pool rows, got {idx.dtype} {idx.shape}."
                )
            if idx.size and (idx.min() < 0 or idx.max() >= n_pool):
                raise ValueError(
                    f"'indices[{q}]' references pool rows outside [0, {n_pool}): range [{idx.min()}, {idx.max()}]."
                )
            checked.append(idx.astype(np.intp, copy=False))
        if ids is not None and len(ids) != n_pool:
            raise ValueError(f"'ids' must have one entry per pool row ({n_pool}), got {len(ids)}.")
        self.pool = pool
        self.indices = checked
        self.ids = ids
        # Every query has the whole pool in pool order: rank(..., top_k) then streams the pool with a bounded
        # top-k instead of scoring every set in full.
        self.is_shared = bool(checked) and all(
            idx.size == n_pool and (idx is checked[0] or np.array_equal(idx, checked[0])) for idx in checked
        ) and np.array_equal(checked[0], np.arange(n_pool))

    @classmethod
    def from_arrays(cls, sets, deduplicate=True):
        """Build from one array of candidate rows per query.

        Parameters
        ----------
        sets : list of array-like of shape (n_i, n_features)
            Candidates of each query.
        deduplicate : bool, default=True
            Pool identical rows once (queries then index the same pool row); see :func:`unique_rows` for what
            "identical" means (``-0.0`` equals ``0.0``, NaN equals NaN) and for the pool order.

        Returns
        -------
        candidate_sets : CandidateSets
            A pool of candidate rows and one index array per query.
        """
        sets = [np.asarray(s) for s in sets]
        if not sets:
            raise ValueError("'candidate_sets' must hold at least one query's candidates, got an empty list.")
        widths = {s.shape[1] for s in sets if s.ndim == 2}
        if any(s.ndim != 2 and s.size for s in sets) or len(widths) > 1:
            raise ValueError(
                "Every candidate set must be a 2-D array (n_candidates, n_features) with the same number of features; "
                f"got shapes {sorted({s.shape for s in sets})[:5]}."
            )
        width = widths.pop() if widths else 0
        sets = [s.reshape(-1, width) if s.size == 0 else s for s in sets]
        stacked = np.concatenate(sets, axis=0) if sets else np.zeros((0, width))
        offsets = np.cumsum([0] + [s.shape[0] for s in sets])
        if deduplicate and stacked.shape[0]:
            pool, inverse = unique_rows(stacked)
        else:
            pool, inverse = stacked, np.arange(stacked.shape[0])
        return cls(pool, [inverse[offsets[q]:offsets[q + 1]] for q in range(len(sets))])

    @classmethod
    def shared(cls, pool, n_queries):
        """Give every query the whole pool as candidates (in pool order).

        Parameters
        ----------
        pool : array-like of shape (n_pool, n_features)
            Candidate rows (ndarray, memmap, :class:`PackedBinaryFeatures` or :class:`CandidateFile`).
        n_queries : int
            Number of queries.

        Returns
        -------
        candidate_sets : CandidateSets
            Sets that all index the whole pool.
        """
        all_rows = np.arange(pool.shape[0])
        return cls(pool, [all_rows] * int(n_queries))

    @property
    def n_queries(self):
        """Number of queries (candidate sets)."""
        return len(self.indices)

    @property
    def n_features(self):
        """Features per candidate."""
        return self.pool.shape[1]

    @property
    def sizes(self):
        """Candidates per query, shape (n_queries,)."""
        return np.array([idx.size for idx in self.indices], dtype=np.intp)

    @property
    def empty_queries(self):
        """Indices of the queries without candidates."""
        return np.flatnonzero(self.sizes == 0)

    def __len__(self):
        return self.n_queries

    def candidates(self, query):
        """Return the features of one query's candidates.

        Parameters
        ----------
        query : int
            Query index.

        Returns
        -------
        features : ndarray of shape (n_q, n_features) or PackedBinaryFeatures
            The query's candidate rows (packed when the pool is packed).
        """
        return np.asarray(self.pool[self.indices[query]]) if not isinstance(self.pool, PackedBinaryFeatures) else \
            self.pool[self.indices[query]]


def _canonical(rows):
    """``rows`` with one zero and one NaN: equal rows (by value, NaN equal to NaN) get equal bytes."""
    if rows.dtype.kind not in "fc":
        return rows
    canon = rows + rows.dtype.type(0)  # -0.0 + 0.0 == +0.0
    nan = np.isnan(canon)
    if nan.any():
        canon[nan] = np.nan  # one NaN bit pattern (payload and sign dropped)
    return canon


def _row_keys(rows):
    """Bytes of each canonical row, one row at a time (no copy of the whole matrix)."""
    for row in rows:
        yield np.ascontiguousarray(_canonical(row)).tobytes()


def _lexicographic_order(rows):
    """Permutation sorting distinct rows lexicographically by value (``np.unique(rows, axis=0)``'s order).

    Refines a rank column by column with 1-D sorts and stops as soon as every row has its own rank, so the cost
    is ``O(k log k)`` per column actually needed to tell the rows apart, not per column of the matrix.
    """
    k, width = rows.shape
    rank = np.zeros(k, dtype=np.intp)
    for c in range(width):
        order = np.lexsort((rows[:, c], rank))
        key_r, key_c = rank[order], rows[order, c]
        new_group = np.empty(k, dtype=bool)
        new_group[:1] = True
        new_group[1:] = (key_r[1:] != key_r[:-1]) | (key_c[1:] != key_c[:-1])
        rank = np.empty(k, dtype=np.intp)
        rank[order] = np.cumsum(new_group) - 1
        if rank.max(initial=-1) == k - 1:
            break
    return np.argsort(rank, kind="stable")


def unique_rows(rows):
    """Distinct rows of a matrix and, for every row, its index among them; by hashing rows, not by sorting them.

    Parameters
    ----------
    rows : ndarray of shape (n, n_features)
        Any non-object dtype.

    Returns
    -------
    unique : ndarray of shape (n_unique, n_features)
        The distinct rows, sorted lexicographically by value (the order of ``np.unique(rows, axis=0)``).
    inverse : ndarray of int of shape (n,)
        ``unique[inverse]`` equals ``rows`` (up to the zero and NaN policy below).

    Notes
    -----
    Each row's bytes are hashed (a dict keyed by ``row.tobytes()``), which costs ``O(n n_features)``; only the
    ``n_unique`` distinct rows are then sorted. ``np.unique(axis=0)`` sorts a structured dtype with one field per
    feature instead, which took 9 s on 2,250 x 4,000 rows.

    Two rows are equal when their bytes are equal after canonicalizing floating-point values: ``-0.0`` becomes
    ``0.0`` (so rows equal by value collapse, as with ``np.unique``), and every NaN becomes one NaN, so rows with NaN
    in the same places and equal elsewhere collapse too (``np.unique(axis=0)`` keeps each NaN row apart). The
    returned rows carry the canonical values (``0.0``, never ``-0.0``).

    Examples
    --------
    >>> import numpy as np
    >>> unique, inverse = unique_rows(np.array([[1.0, 0.0], [0.0, 2.0], [1.0, -0.0]]))
    >>> unique
    array([[0., 2.],
           [1., 0.]])
    >>> inverse
    array([1, 0, 1])
    """
    if rows.dtype == object:
        raise TypeError("unique_rows does not support object arrays; pass a numeric or fixed-width dtype.")
    first = {}
    code = np.fromiter((first.setdefault(key, len(first)) for key in _row_keys(rows)), dtype=np.intp,
                       count=rows.shape[0])
    firsts = np.unique(code, return_index=True)[1]  # first row of each code, codes in first-seen order
    unique = _canonical(rows[firsts])
    order = _lexicographic_order(unique)
    position = np.empty(order.size, dtype=np.intp)
    position[order] = np.arange(order.size)
    return unique[order], position[code]


def as_candidate_sets(candidate_sets, n_queries, n_features):
    """Validate ``candidate_sets`` (CandidateSets or list of arrays) against the queries and feature count."""
    if not isinstance(candidate_sets, CandidateSets):
        if isinstance(candidate_sets, np.ndarray) and candidate_sets.ndim == 2:
            raise TypeError(
                "'candidate_sets' must be a CandidateSets or a list of per-query arrays; for one candidate matrix "
                "shared by all queries use decision_function(X, C) or CandidateSets.shared(C, n_queries)."
            )
        candidate_sets = CandidateSets.from_arrays(list(candidate_sets))
    if candidate_sets.n_queries != n_queries:
        raise ValueError(
            f"'candidate_sets' holds {candidate_sets.n_queries} sets, but {n_queries} queries were given."
        )
    if candidate_sets.n_features != n_features:
        raise ValueError(
            f"'candidate_sets' has candidates with {candidate_sets.n_features} features, but the model was fitted "
            f"on outputs with {n_features} features."
        )
    return candidate_sets

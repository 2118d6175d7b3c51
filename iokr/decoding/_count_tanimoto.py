"""Exact Tanimoto on non-negative integer fingerprints (substructure counts) by float32 BLAS.

The inner-product Tanimoto ``<a,b> / (|a|^2 + |b|^2 - <a,b>)`` of count fingerprints needs the inner products
``<a,b>``. For non-negative integer vectors every partial sum of ``<a,b> = sum_k a_k b_k`` is an integer no larger
than the whole sum, and ``<a,b> <= (|a|^2 + |b|^2) / 2 <= max(|a|^2, |b|^2)``. When every row's squared norm is below
``2**24`` (:data:`MAX_EXACT_SQUARED_NORM`), float32 represents each partial sum exactly, so one sgemm gives the exact
integers whatever the BLAS kernel's blocking or summation order, and the Tanimoto computed from them in float64 is
bit for bit the one :class:`~iokr.kernels.Tanimoto` computes in float64 (the same integers, the same operations).

Why: candidate pools arrive as float32 rows (decoded from uint8 counts) and the training outputs as float64, so the
general kernel promotes each candidate block to float64 (a copy) and runs dgemm; the float32 product does half the
memory traffic at twice the vector width. On the 70k-structure store (Morgan counts + MACCS, 2,215 features, 1,649
training structures) the cross blocks were most of ``identify``'s scoring time (``benchmarks/bench_polarities.py``).
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import csr_matrix

from ._bits import blas_intersections, tanimoto_from_counts

#: Squared row norms below this make float32 inner products of non-negative integer rows exact.
MAX_EXACT_SQUARED_NORM = 2**24

#: Largest fraction of nonzero entries for which :meth:`CountTanimotoIndex.inner_products` multiplies sparse rows
#: (CSR) instead of running the dense sgemm. Measured with one thread: Morgan counts + MACCS rows of the 70k PubChem
#: store hold 80 nonzeros of 2,215 (3.6 %); 12,000 of them against the 1,649 (1,015) training rows of the bundled
#: model took 1.3-1.4 s (0.6-0.7 s) by sgemm, near its peak, and 0.54-0.68 s (0.42 s) by the CSR product, its
#: construction included. Random columns (no shared frequent bits, the cache's worst case) break even near 4 %:
#: 4,000 x 2,215 against 1,649 rows, 0.33 s dense for 0.28 s sparse at 3.6 %, 0.35 s for 0.47 s at 10 %.
SPARSE_MAX_DENSITY = 0.05

#: In the sparse product, a column nonzero in at least this share of a block's rows is multiplied densely (one
#: sgemm over those columns), the rest by the CSR product: a CSR entry costs one scalar multiply-add per training
#: row, an sgemm entry an eighth or less of that. Fingerprint columns are very unequal (MACCS keys and common
#: Morgan environments are in most rows, most Morgan bits in few): on the 4,747 candidate rows of 1,000 queries
#: against 1.9M MOSES structures (88 nonzeros per row), 0.42 s -> 0.23 s with one thread (1/4 to 1/16: within
#: 0.01 s of that), the same integers.
DENSE_COLUMN_SHARE = 1 / 8


def exact_count_norms(A):
    """Squared row norms of ``A`` (float64, shape (n,)) when its rows qualify for exact float32 inner products:
    finite, non-negative, integer-valued, squared norms below :data:`MAX_EXACT_SQUARED_NORM`; else ``None``.

    Parameters
    ----------
    A : ndarray of shape (n, p)
    """
    A = np.asarray(A)
    if A.size == 0:
        return np.zeros(A.shape[0])
    if A.dtype.kind not in "uif" or (A.dtype.kind == "i" and A.min() < 0):
        return None
    # NaN fails the minimum (NaN >= 0 is False) and +inf the bound on the squared norms: no pass for finiteness
    if A.dtype.kind == "f" and not (A.min() >= 0 and np.array_equal(A, np.rint(A))):
        return None
    squared = np.einsum("ij,ij->i", A, A, dtype=np.float64)
    return squared if squared.max() < MAX_EXACT_SQUARED_NORM else None


class CountTanimotoIndex:
    """Training count rows as float32 once, for exact Tanimoto similarities of count query rows against them.

    Built by :meth:`build`, which returns ``None`` unless the training rows qualify (:func:`exact_count_norms`).

    Attributes
    ----------
    rows : ndarray of float32, shape (n, p)
    squared_norms : ndarray of float64, shape (n,)
    """

    def __init__(self, Y, squared_norms):
        self.rows = np.asarray(Y, dtype=np.float32)
        self.squared_norms = squared_norms
        self._columns = None  # the rows' transpose, C-ordered, for the sparse product (made on first use)

    @classmethod
    def build(cls, Y):
        """An index of ``Y`` (n, p), or ``None`` when its rows do not qualify."""
        squared = exact_count_norms(Y)
        return None if squared is None else cls(Y, squared)

    def similarities(self, C, dtype=np.float64, working_memory=None):
        """Tanimoto ``T(c_i, y_j)`` of rows ``C`` (m, p) against the training rows, shape (m, n) in ``dtype``; or
        ``None`` when ``C`` does not qualify (the caller then uses the general kernel).

        Parameters
        ----------
        C : ndarray of shape (m, p)
        dtype : numpy dtype, default=float64
        working_memory : float, optional
            Budget (MiB) of one block of float32 products.
        """
        rows_of = self.similarity_rows(C, dtype, working_memory)
        return None if rows_of is None else rows_of(slice(None))

    def similarity_rows(self, C, dtype=np.float64, working_memory=None):
        """:meth:`similarities` of row ranges of ``C``: the exact inner products of the whole block computed now,
        a function ``rows -> T(C[rows], Y)`` returned (each row's values are those of :meth:`similarities`); or
        ``None`` when ``C`` does not qualify. The float64 block is then made a few rows at a time, where the caller
        transforms it while it is in cache."""
        C = np.asarray(C)
        entries = _sparse_entries(C)
        if entries is None:
            squared = exact_count_norms(C)
            if squared is None:
                return None
            products = blas_intersections(C, self.rows, working_memory)
        else:
            # the qualification read off the nonzero entries the product needs anyway (zeros always qualify)
            squared = _entry_norms(C, *entries)
            if squared is None:
                return None
            products = self._sparse_products(C.shape, *entries)
        return lambda rows: tanimoto_from_counts(products[rows], squared[rows], self.squared_norms, dtype)

    def inner_products(self, C, working_memory=None):
        """Exact ``<c_i, y_j>`` of qualifying rows ``C`` (m, p) against the training rows, shape (m, n).

        Sparse rows (at most :data:`SPARSE_MAX_DENSITY` of their entries nonzero) go through a CSR product with
        the training rows' transpose: ``nnz(C) x n`` multiply-adds instead of ``m x p x n``; the columns nonzero
        in at least :data:`DENSE_COLUMN_SHARE` of the rows go through an sgemm of their own, added. Every partial
        sum is an integer below ``2**24`` in any order of summation (module docstring), so all paths give the same
        exact integers (float32 here, int32 from the sgemm).
        """
        C = np.asarray(C)
        entries = _sparse_entries(C)
        if entries is None:
            # the same chunked sgemm as the intersection counts of 0/1 rows: exact integers here too
            return blas_intersections(C, self.rows, working_memory)
        return self._sparse_products(C.shape, *entries)

    def _sparse_products(self, shape, flat, values):
        """:meth:`inner_products` of a sparse block from its nonzero entries (:func:`_sparse_entries`)."""
        if self._columns is None:
            self._columns = np.ascontiguousarray(self.rows.T)
        m, p = shape
        rows, columns = np.divmod(flat, p)
        values = values.astype(np.float32)
        dense_columns = np.flatnonzero(np.bincount(columns, minlength=p) >= DENSE_COLUMN_SHARE * m)
        in_dense = np.zeros(p, dtype=bool)
        in_dense[dense_columns] = True
        dense = in_dense[columns]
        sparse = ~dense
        indptr = np.zeros(m + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows[sparse], minlength=m), out=indptr[1:])
        out = csr_matrix((values[sparse], columns[sparse], indptr), shape=shape) @ self._columns
        if dense_columns.size:
            position = np.zeros(p, dtype=np.intp)
            position[dense_columns] = np.arange(dense_columns.size)
            block = np.zeros((m, dense_columns.size), dtype=np.float32)
            block[rows[dense], position[columns[dense]]] = values[dense]
            out += block @ self._columns[dense_columns]
        return out


def _sparse_entries(C):
    """``(flat positions, values)`` of the nonzero entries of ``C`` (m, p) in row-major order, or ``None`` for a
    block to multiply densely (empty, or more than :data:`SPARSE_MAX_DENSITY` of its entries nonzero)."""
    if C.size == 0:
        return None
    # a float32 block is scanned as int32 (a faster scan): a -0.0 then counts as an entry, which adds zero
    flat = np.flatnonzero(C.view(np.int32) if C.dtype == np.float32 and C.flags.c_contiguous else C)
    if flat.size > SPARSE_MAX_DENSITY * C.size:
        return None
    return flat, C.reshape(-1)[flat]


def _entry_norms(C, flat, values):
    """:func:`exact_count_norms` of ``C`` from its nonzero entries: the same checks on the values that can fail
    them, the same integer sums (exact in float64 in any order)."""
    if C.dtype.kind not in "uif" or (values.size and C.dtype.kind in "if" and not values.min() >= 0):
        return None
    if C.dtype.kind == "f" and not np.array_equal(values, np.rint(values)):
        return None
    squared = np.bincount(flat // C.shape[1], weights=np.square(values, dtype=np.float64), minlength=C.shape[0])
    return squared if squared.max() < MAX_EXACT_SQUARED_NORM else None

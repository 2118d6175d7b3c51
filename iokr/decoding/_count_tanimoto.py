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

from ._bits import blas_intersections, tanimoto_from_counts

#: Squared row norms below this make float32 inner products of non-negative integer rows exact.
MAX_EXACT_SQUARED_NORM = 2**24


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
    if A.dtype.kind == "f" and not (np.isfinite(A).all() and A.min() >= 0 and np.array_equal(A, np.rint(A))):
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
        squared = exact_count_norms(C)
        if squared is None:
            return None
        # the same chunked sgemm as the intersection counts of 0/1 rows: exact integers here too (module docstring)
        return tanimoto_from_counts(blas_intersections(C, self.rows, working_memory), squared, self.squared_norms,
                                    dtype)

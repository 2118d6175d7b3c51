"""Exact Tanimoto on binary fingerprints from intersection counts: bit-packed popcount or float32 BLAS.

For binary vectors ``a, b`` the inner-product Tanimoto is ``|a & b| / (|a| + |b| - |a & b|)``: everything follows from
the intersection counts ``|a & b|`` and the per-row bit counts. Two exact ways to get the counts:

- ``"popcount"``: rows packed 64 bits per ``uint64`` word, ``np.bitwise_count(a & b)`` summed over words, in tiles
  small enough to stay in cache. Reads 1 bit per feature (32x less than float32) and needs no unpacking.
- ``"blas"``: the 0/1 rows as float32 and one sgemm. Exact: every partial sum is an integer below ``2**24``.

On this machine (numpy 2.4, OpenBLAS, 2 shared cores) float32 BLAS computes the counts about 2.7x faster than the
numpy popcount (``benchmarks/bench_scale.py`` measures both), so the estimators' default is ``"blas"`` on blocks
that are unpacked anyway; the popcount path is the one to use when the candidates stay packed (memory-bound pools,
no BLAS).
"""

from __future__ import annotations

import numpy as np

from .._config import working_memory_bytes
from ..linalg.developer import chunk_rows

COUNT_METHODS = ("popcount", "blas")
#: Intersection-count method the output side uses for binary candidates (see the module docstring).
DEFAULT_COUNT_METHOD = "blas"
# Tile of the popcount loop: (rows x columns) uint64 temporaries that stay in L2 cache.
_TILE_ROWS, _TILE_COLS = 32, 2048


def is_binary(A):
    """True when every entry of ``A`` is 0 or 1 (any numeric dtype)."""
    A = np.asarray(A)
    if A.dtype == np.bool_:
        return True
    return bool(A.size == 0 or np.all((A == 0) | (A == 1)))


def pack_words(bits):
    """Pack 0/1 rows into ``uint64`` words, shape (n, ceil(p / 64)); padding bits are zero.

    Parameters
    ----------
    bits : array-like of shape (n, p)
        Zeros and ones (validated by the caller, e.g. with :func:`is_binary`).
    """
    bits = np.asarray(bits)
    packed = np.packbits(bits.astype(bool, copy=False), axis=1)
    return words_from_packed_bytes(packed)


def words_from_packed_bytes(packed):
    """``uint64`` words from rows packed by ``np.packbits`` (uint8, shape (n, ceil(p / 8))); zero-padded copy."""
    packed = np.asarray(packed, dtype=np.uint8)
    n, n_bytes = packed.shape
    n_words = max((n_bytes + 7) // 8, 1)
    out = np.zeros((n, n_words * 8), dtype=np.uint8)
    out[:, :n_bytes] = packed
    return out.view(np.uint64)


def bit_counts(words):
    """Number of set bits per row of packed words, int64 of shape (n,)."""
    return np.bitwise_count(np.asarray(words, dtype=np.uint64)).sum(axis=1, dtype=np.int64)


def popcount_intersections(A_words, B_words, working_memory=None):
    """``|a_i & b_j|`` for packed rows, by popcount; int32 of shape (n_a, n_b).

    Parameters
    ----------
    A_words, B_words : ndarray of uint64, shapes (n_a, w) and (n_b, w)
        Rows from :func:`pack_words` (same number of words).
    working_memory : float, optional
        Budget in MiB; only the (n_a, n_b) result is larger than a cache-sized tile.
    """
    A_words = np.ascontiguousarray(A_words, dtype=np.uint64)
    B_words = np.asarray(B_words, dtype=np.uint64)
    if A_words.ndim != 2 or B_words.ndim != 2 or A_words.shape[1] != B_words.shape[1]:
        raise ValueError(f"Packed rows must be 2-D with the same number of words; got {A_words.shape} and "
                         f"{B_words.shape}.")
    n_a, n_words = A_words.shape
    n_b = B_words.shape[0]
    # Counts per word are <= 64, so uint16 holds the sum of up to 1023 words (65,472 bits); wider rows use int32.
    acc_dtype = np.uint16 if n_words <= 1023 else np.int32
    out = np.empty((n_a, n_b), dtype=np.int32)
    B_cols = np.ascontiguousarray(B_words.T)  # word-major: one contiguous row of words per bit position
    tile_rows = min(_TILE_ROWS, max(n_a, 1))
    tile_cols = min(_TILE_COLS, max(n_b, 1))
    tmp = np.empty((tile_rows, tile_cols), dtype=np.uint64)
    cnt = np.empty((tile_rows, tile_cols), dtype=np.uint8)
    acc = np.empty((tile_rows, tile_cols), dtype=acc_dtype)
    working_memory_bytes(working_memory)  # validates the budget; the tiles are far below any sensible budget
    for r0 in range(0, n_a, tile_rows):
        a = A_words[r0:r0 + tile_rows]
        for c0 in range(0, n_b, tile_cols):
            b = B_cols[:, c0:c0 + tile_cols]
            t, k, s = tmp[:a.shape[0], :b.shape[1]], cnt[:a.shape[0], :b.shape[1]], acc[:a.shape[0], :b.shape[1]]
            s[...] = 0
            for j in range(n_words):
                np.bitwise_and(a[:, j, None], b[j][None, :], out=t)
                np.bitwise_count(t, out=k)
                np.add(s, k, out=s)
            out[r0:r0 + a.shape[0], c0:c0 + b.shape[1]] = s
    return out


def blas_intersections(A_bits, B_bits, working_memory=None):
    """``|a_i & b_j|`` for 0/1 rows by float32 matrix products; int32 of shape (n_a, n_b).

    Exact for up to ``2**24`` features: float32 represents every integer partial sum exactly. The same holds for the
    inner products of non-negative integer rows whose squared norms stay below ``2**24``
    (:class:`~iokr.decoding.CountTanimotoIndex` calls it for those).
    """
    A = np.asarray(A_bits, dtype=np.float32)
    B = np.asarray(B_bits, dtype=np.float32)
    if A.shape[1] >= 2**24:
        raise ValueError(f"BLAS intersection counts are exact up to 2**24 features; got {A.shape[1]}.")
    out = np.empty((A.shape[0], B.shape[0]), dtype=np.int32)
    rows = chunk_rows(A.shape[0], 8 * max(B.shape[0], 1), working_memory)
    for start in range(0, A.shape[0], rows):
        np.rint(A[start:start + rows] @ B.T, out=out[start:start + rows], casting="unsafe")
    return out


def tanimoto_from_counts(intersections, counts_a, counts_b, dtype=np.float64):
    """Tanimoto ``|a&b| / (|a| + |b| - |a&b|)`` from counts, with ``T(0, 0) = 1``; shape (n_a, n_b) in ``dtype``.

    Matches :class:`~iokr.kernels.Tanimoto` (``form="inner"``) on binary vectors: the same rational numbers,
    each computed by one correctly rounded division.
    """
    inter = np.asarray(intersections, dtype=dtype)
    counts_a, counts_b = np.asarray(counts_a, dtype=dtype), np.asarray(counts_b, dtype=dtype)
    denominator = counts_a[:, None] + counts_b[None, :]
    denominator -= inter
    # |a| + |b| - |a&b| >= max(|a|, |b|) is zero only for two empty rows: those pairs (read off the counts, not a
    # mask of the whole block) divide 0 by 1 and are then set to 1; every other entry is the same one division
    empty_a, empty_b = np.flatnonzero(counts_a <= 0), np.flatnonzero(counts_b <= 0)
    pairs = np.ix_(empty_a, empty_b) if empty_a.size and empty_b.size else None
    if pairs is not None:
        denominator[pairs] = 1.0
    out = np.divide(inter, denominator, out=denominator)
    if pairs is not None:
        out[pairs] = 1.0
    return out


def binary_tanimoto(A, B_words, counts_b, *, method=DEFAULT_COUNT_METHOD, B_bits=None, dtype=np.float64,
                    working_memory=None):
    """Tanimoto between 0/1 rows ``A`` (dense) and packed rows ``B``; shape (n_a, n_b).

    Parameters
    ----------
    A : ndarray of shape (n_a, p)
        Zeros and ones.
    B_words : ndarray of uint64, shape (n_b, ceil(p / 64))
    counts_b : ndarray of shape (n_b,)
        Set bits per row of ``B``.
    method : {"popcount", "blas"}
    B_bits : ndarray of shape (n_b, p), optional
        ``B`` as float32 0/1 (needed by ``"blas"``; unpacked from ``B_words`` when missing).
    """
    if method not in COUNT_METHODS:
        raise ValueError(f"'method' must be one of {COUNT_METHODS}, got {method!r}.")
    A = np.asarray(A)
    counts_a = np.count_nonzero(A, axis=1)
    if method == "popcount":
        inter = popcount_intersections(pack_words(A), B_words, working_memory)
    else:
        if B_bits is None:
            B_bits = unpack_words(B_words, A.shape[1])
        inter = blas_intersections(A, B_bits, working_memory)
    return tanimoto_from_counts(inter, counts_a, counts_b, dtype)


def unpack_words(words, n_features):
    """float32 0/1 rows of shape (n, n_features) from packed ``uint64`` words."""
    as_bytes = np.ascontiguousarray(words, dtype=np.uint64).view(np.uint8)
    return np.unpackbits(as_bytes, axis=1, count=n_features).astype(np.float32)


# -- bit-packed candidate blocks for the streamed scorer ----------------------------------------------------------
# Rows packed by ``np.packbits`` (big-endian bit order: bit 7 of byte b is feature 8 b). Padding bits of the last byte
# are ignored wherever counts are taken, so a pool whose padding is not zero still scores as its first p features.

#: ``_BYTE_BITS[v]`` is byte ``v`` as eight 0/1 floats in ``np.unpackbits`` order.
_BYTE_BITS = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1).astype(np.float64)


def unpack_into(packed, out):
    """Unpack uint8 rows into a preallocated float32 buffer (no float temporary).

    Parameters
    ----------
    packed : ndarray of uint8, shape (n, n_bytes)
        Rows as produced by ``np.packbits(bits, axis=1)``.
    out : ndarray of float32, shape (n, 8 * n_bytes)
        Receives the 0/1 values of every bit, padding bits included (the caller gives them zero weight).

    Returns
    -------
    out : ndarray of float32, shape (n, 8 * n_bytes)
    """
    np.copyto(out, np.unpackbits(packed, axis=1), casting="unsafe")
    return out


def packed_row_counts(packed, n_features):
    """Set bits among the first ``n_features`` bits of every packed row; int64 of shape (n,).

    For 0/1 rows this is the squared norm ``||c||^2``, read from 1 bit per feature instead of a float pass.
    """
    packed = np.asarray(packed, dtype=np.uint8)
    counts = np.bitwise_count(packed).sum(axis=1, dtype=np.int64)
    spare = 8 * packed.shape[1] - int(n_features)
    if spare and packed.shape[0]:
        counts -= np.bitwise_count(packed[:, -1] & np.uint8((1 << spare) - 1)).astype(np.int64)
    return counts


def byte_dot_table(weights):
    """Lookup table ``T[b, v] = sum_k bit_k(v) w[8 b + k]`` of shape (n_bytes, 256), float64.

    With it the inner products ``<c, w>`` of packed 0/1 rows with a fixed vector ``w`` (the centering mean) are sums
    of ``n_bytes`` table entries per row (:func:`packed_dot`), exact to float64 round-off and without unpacking.
    """
    weights = np.asarray(weights, dtype=np.float64).ravel()
    n_bytes = (weights.size + 7) // 8
    padded = np.zeros(8 * n_bytes)
    padded[:weights.size] = weights
    return np.ascontiguousarray((_BYTE_BITS @ padded.reshape(n_bytes, 8).T).T)


def packed_dot(packed, table):
    """``<c_i, w>`` for packed 0/1 rows ``c_i``, from a :func:`byte_dot_table` of ``w``; float64 of shape (n,)."""
    packed = np.asarray(packed, dtype=np.uint8)
    n_bytes = packed.shape[1]
    return table[np.arange(n_bytes)[None, :], packed].sum(axis=1)


class BinaryTanimotoIndex:
    """Training 0/1 rows packed once, for exact Tanimoto similarities of 0/1 query rows against them.

    Built by :meth:`build`, which returns ``None`` unless every training entry is 0 or 1. The intersection counts
    use :data:`DEFAULT_COUNT_METHOD` as it is when :meth:`similarities` is called.

    Attributes
    ----------
    words : ndarray of uint64, shape (n, ceil(p / 64))
    counts : ndarray of shape (n,)
        Set bits per training row.
    bits : ndarray of float32, shape (n, p)
        The training rows as 0/1 floats (the BLAS count method's operand).
    """

    def __init__(self, Y):
        self.words = pack_words(Y)
        self.counts = bit_counts(self.words)
        self.bits = np.asarray(Y, dtype=np.float32)

    @classmethod
    def build(cls, Y):
        """An index of ``Y`` (n, p), or ``None`` when ``Y`` is not 0/1."""
        return cls(Y) if is_binary(Y) else None

    def applies_to(self, C):
        """True when the query rows ``C`` are 0/1 (the counts are then exact)."""
        return is_binary(C)

    def similarities(self, C, dtype=np.float64):
        """Tanimoto ``T(c_i, y_j)`` of 0/1 rows ``C`` (m, p) against the training rows; shape (m, n) in ``dtype``."""
        return binary_tanimoto(C, self.words, self.counts, B_bits=self.bits, method=DEFAULT_COUNT_METHOD,
                               dtype=dtype)

"""Candidate-set statistics of magnitude-preserving IOKR, computed in one streamed pass over the candidates.

For training example ``i`` with candidate multiset ``C_i`` (``n_i`` rows of a pool of unique candidates), MP-IOKR
needs only the per-set means and the summed within-set covariance of the (transformed) candidate representations
``r(c)``:

    mean_i = (1 / n_i) sum_{c in C_i} r(c)
    Sigma  = sum_i (1 / n_i) sum_{c in C_i} (r(c) - mean_i)(r(c) - mean_i)^T
           = sum_c omega_c r(c) r(c)^T - sum_i mean_i mean_i^T,      omega_c = sum_i mult_i(c) / n_i

so one pass over the pool rows with ``omega_c > 0`` accumulates ``means += Vbar[:, block] R_block`` and
``second += R_block^T diag(omega_block) R_block``; no more than one block of candidates is ever in memory. With
explicit output features ``r(c) = psi(c)`` (memory ``O(d^2 + d l)``, independent of the number of candidates); with a
kernelized output ``r(c) = Psi_S^T psi(c) = k_y(Y_S, c)`` (the statistics projected on the training outputs, ``l x l``).

The statistics depend on the training outputs, the candidate sets (after subsampling) and the output transform only,
not on ``alpha`` or ``gamma``: they are computed once and reused across hyperparameter values.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
from scipy import sparse
from scipy.linalg import blas
from sklearn.utils import check_random_state

from ..linalg.developer import chunk_rows
from ._candidates import CandidateSets


@dataclass(frozen=True)
class SetLayout:
    """Per-set weights of the candidate multisets over the pool.

    Attributes
    ----------
    sets : CandidateSets
        The (possibly subsampled) sets the statistics refer to.
    sizes : ndarray of shape (l,)
        ``n_i`` after subsampling.
    mean_operator : scipy.sparse.csc_matrix of shape (l, n_pool)
        ``Vbar^T``: entry ``(i, c)`` is ``mult_i(c) / n_i``, so ``mean_operator @ R`` are the per-set means.
    weights : ndarray of shape (n_pool,)
        ``omega_c = sum_i mult_i(c) / n_i`` (the column sums of ``mean_operator``).
    used_rows : ndarray of int
        Sorted pool rows with ``omega_c > 0`` (the rows the statistics pass reads).
    """

    sets: CandidateSets
    sizes: np.ndarray
    mean_operator: sparse.csc_matrix
    weights: np.ndarray
    used_rows: np.ndarray


@dataclass(frozen=True)
class CandidateStatistics:
    """Per-set means and summed within-set covariance of transformed candidate representations.

    Attributes
    ----------
    layout : SetLayout
    means : ndarray of shape (l, w)
        ``mean_i`` as rows; ``w = d`` (explicit output features) or ``w = l`` (kernelized: ``<psi(y_j), mean_i>``
        in column ``j``).
    within_cov : ndarray of shape (w, w)
        ``Sigma`` (explicit) or ``Psi_S^T Sigma Psi_S`` (kernelized), symmetric PSD.
    key : tuple
        Settings the statistics were computed with (checked when they are reused by ``fit``).
    seconds, cpu_seconds : float
        Wall and CPU time (this process, all threads) of the streamed pass.
    """

    layout: SetLayout
    means: np.ndarray
    within_cov: np.ndarray
    key: tuple
    seconds: float = 0.0
    cpu_seconds: float = 0.0

    @property
    def second_moment(self):
        """``sum_c omega_c r(c) r(c)^T = Sigma + sum_i mean_i mean_i^T``."""
        return self.within_cov + self.means.T @ self.means


def subsample_sets(sets, fraction, random_state=None):
    """Keep a seeded random fraction of each set's candidates.

    Each non-empty set keeps ``max(1, ceil(fraction * n_i))`` of its candidates drawn without replacement (so no
    set becomes empty); ``fraction=1`` returns ``sets`` unchanged.

    Parameters
    ----------
    sets : CandidateSets
    fraction : float in (0, 1]
    random_state : int, RandomState or None

    Returns
    -------
    CandidateSets
        Sharing the pool of ``sets``.
    """
    if fraction >= 1.0:
        return sets
    rng = check_random_state(random_state)
    kept = []
    for idx in sets.indices:
        if idx.size == 0:
            kept.append(idx)
            continue
        k = max(1, math.ceil(fraction * idx.size))
        kept.append(np.sort(rng.choice(idx, size=k, replace=False)))
    return CandidateSets(sets.pool, kept, sets.ids)


def set_layout(sets):
    """Build the :class:`SetLayout` of candidate sets (``Vbar``, ``omega``), in ``O(n)`` memory for ``n`` members."""
    n_pool = sets.pool.shape[0]
    sizes = sets.sizes
    rows = np.repeat(np.arange(len(sizes)), sizes)
    cols = np.concatenate([np.asarray(idx, dtype=np.int64) for idx in sets.indices]) if sizes.sum() else \
        np.zeros(0, dtype=np.int64)
    values = np.repeat(1.0 / np.maximum(sizes, 1), sizes)
    # Duplicates (one candidate listed twice in a set) are summed, which is the multiset semantics of (4).
    mean_operator = sparse.csc_matrix((values, (rows, cols)), shape=(len(sizes), n_pool))
    mean_operator.sum_duplicates()
    weights = np.asarray(mean_operator.sum(axis=0)).ravel()
    used_rows = np.flatnonzero(weights > 0)
    return SetLayout(sets, sizes, mean_operator, weights, used_rows)


def _read_rows(pool, rows):
    """Pool rows as an array; a contiguous run is read as a slice (memmaps and packed pools read it in one go)."""
    if rows.size and rows[-1] - rows[0] + 1 == rows.size:
        return np.asarray(pool[int(rows[0]):int(rows[-1]) + 1])
    return np.asarray(pool[rows])


def _accumulate_second(second, block, weights):
    """``second += block^T diag(weights) block`` (upper triangle, syrk in the block's precision)."""
    scaled = block * np.sqrt(weights, dtype=np.float64).astype(block.dtype)[:, None]
    syrk = blas.get_blas_funcs("syrk", (scaled,))
    # ``scaled.T`` is Fortran-ordered, so syrk reads it without a copy: C = A A^T with A = scaled^T.
    upper = syrk(1.0, np.asfortranarray(scaled.T), trans=0, lower=0)
    second += upper


def stream_statistics(layout, represent, width, *, pool=None, key=(), working_memory=None, bytes_per_row=None):
    """One pass over the used pool rows accumulating per-set means and the summed within-set covariance.

    Parameters
    ----------
    layout : SetLayout
    pool : array-like of shape (len(layout.used_rows), p), optional
        The used rows only, in ``used_rows`` order, to read instead of ``layout.sets.pool`` (e.g. representations
        already in memory).
    represent : callable
        ``represent(block)`` maps raw candidate rows (b, p) to representations (b, width), float32 or float64;
        float32 representations are multiplied in float32 and accumulated in float64.
    width : int
        Representation width (``d`` or ``l``).
    key : tuple
        Stored in the result, for reuse checks.
    working_memory : float, optional
        Budget in MiB for one block of candidates and its temporaries.
    bytes_per_row : int, optional
        Temporary bytes per candidate row; by default four float64 copies of the wider of input and output rows.

    Returns
    -------
    CandidateStatistics
    """
    start, cpu_start = time.perf_counter(), time.process_time()
    compact = pool is not None
    if compact and pool.shape[0] != layout.used_rows.size:
        raise ValueError(f"'pool' must hold the {layout.used_rows.size} used rows, got {pool.shape[0]}.")
    pool = layout.sets.pool if pool is None else pool
    n_sets = layout.sizes.shape[0]
    means = np.zeros((n_sets, width))
    second = np.zeros((width, width))
    used = layout.used_rows
    if bytes_per_row is None:
        bytes_per_row = 4 * 8 * max(width, pool.shape[1])
    step = chunk_rows(used.size, bytes_per_row, working_memory)
    for begin in range(0, used.size, step):
        rows = used[begin:begin + step]
        read = np.arange(begin, begin + rows.size) if compact else rows
        block = np.asarray(represent(_read_rows(pool, read)))
        means += np.asarray(layout.mean_operator[:, rows] @ block, dtype=np.float64)
        _accumulate_second(second, block, layout.weights[rows])
    second = np.triu(second) + np.triu(second, 1).T
    within = second - means.T @ means
    within = 0.5 * (within + within.T)
    return CandidateStatistics(layout, means, within, tuple(key), time.perf_counter() - start,
                               time.process_time() - cpu_start)

"""Similarity of candidates to their nearest reference structures: the structure prior of candidate scoring.

A candidate that resembles many known structures (the training structures of a model) is, before any spectrum is
seen, a likelier answer than an arbitrary structure of the same formula. :func:`neighbour_similarity` measures this
as the mean of a candidate's ``n_neighbors`` largest kernel values against the reference rows.
"""

from __future__ import annotations

import numpy as np

from ..linalg.developer import row_slices


def top_mean(block, n_neighbors):
    """Mean of the ``n_neighbors`` largest values of each row of ``block``.

    Parameters
    ----------
    block : ndarray of shape (n, n_ref)
    n_neighbors : int or sequence of int
        Positive; more than ``n_ref`` averages the whole row. A sequence gives one row of results per value (one
        partition serves them all).

    Returns
    -------
    means : ndarray of shape (n,), or (len(n_neighbors), n) for a sequence
    """
    single = np.ndim(n_neighbors) == 0
    counts = _check_counts(n_neighbors)
    block = np.asarray(block)
    n, n_ref = block.shape
    out = np.zeros((len(counts), n), dtype=np.float64)
    if n and n_ref and max(counts) == 1:
        out[:] = block.max(axis=1)  # the nearest one alone: no partition (the default prior)
    elif n and n_ref:
        ks = [min(k, n_ref) for k in counts]
        # the largest max(ks) values of each row, sorted descending, then prefix means
        top = np.partition(block, n_ref - max(ks), axis=1)[:, n_ref - max(ks):]
        top = -np.sort(-top, axis=1)
        for j, k in enumerate(ks):
            out[j] = top[:, :k].mean(axis=1)
    return out[0] if single else out


def _check_counts(n_neighbors):
    counts = [n_neighbors] if np.ndim(n_neighbors) == 0 else list(n_neighbors)
    if not counts or any(isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1 for k in counts):
        raise ValueError(f"'n_neighbors' must be a positive int (or a non-empty sequence of them), "
                         f"got {n_neighbors!r}.")
    return [int(k) for k in counts]


def neighbour_similarity(kernel, candidates, reference, n_neighbors, working_memory=None):
    """Mean of each candidate's ``n_neighbors`` largest kernel values against ``reference``.

    Parameters
    ----------
    kernel : Kernel
        Similarity of two rows (e.g. a Tanimoto kernel on fingerprints).
    candidates : ndarray, CountFeatures or PackedBinaryFeatures of shape (n, p)
        Rows are read in chunks (``candidates[a:b]``), so compact pools are never expanded at once. float32
        candidates are compared with a float32 copy of ``reference``.
    reference : ndarray of shape (n_ref, p)
        At least one row.
    n_neighbors : int or sequence of int
        Positive; with fewer reference rows, all of them are averaged. A sequence gives one row of results per
        value from one pass over the kernel blocks.
    working_memory : float, optional
        Budget (MiB) of one chunk of kernel values.

    Returns
    -------
    similarity : ndarray of shape (n,), or (len(n_neighbors), n) for a sequence
    """
    _check_counts(n_neighbors)
    reference = np.asarray(reference)
    shape = candidates.shape if hasattr(candidates, "shape") else np.shape(candidates)
    if reference.ndim == 2 and len(shape) == 2 and shape[1] != reference.shape[1]:
        # checked here too: an empty side never reaches the kernel's own check
        raise ValueError(f"'candidates' have {shape[1]} features but 'reference' has {reference.shape[1]}.")
    if reference.ndim == 2 and reference.shape[0] == 0:
        raise ValueError("'reference' must have at least one row: the mean similarity to no structure is undefined.")
    if getattr(candidates, "dtype", None) == np.float32:
        # float32 pools (compact fingerprints) are compared in float32 BLAS, as candidate scoring does
        reference = reference.astype(np.float32)
    n, n_ref = len(candidates), reference.shape[0]
    if n == 0:
        return top_mean(np.zeros((0, n_ref)), n_neighbors)  # the result's shape
    # the kernel block, its temporaries and the partition's copy; the candidate row expanded from a compact pool and
    # the kernel's validated copy and squared norms of it (with few reference rows, these dominate)
    bytes_per_row = 8 * n_ref * (2 + kernel.temporaries_per_entry) + 3 * 8 * shape[1]
    return np.concatenate([top_mean(kernel(np.asarray(candidates[rows]), reference, working_memory=working_memory),
                                    n_neighbors) for rows in row_slices(n, bytes_per_row, working_memory)], axis=-1)

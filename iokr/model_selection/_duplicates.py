"""Exact duplicate inputs and hold-out searches: a leak to warn about.

A copy of a held-out example (the same input with the same output) left on the training side predicts its twin
almost perfectly when regularization is weak, so a search whose hold-out splits separate exact duplicate rows (leave-one-out, or k-fold without groups)
favours the smallest ``alpha``. The remedy is to hold copies out together: ``groups`` with one label per distinct
input, e.g. ``groups = np.unique(X, axis=0, return_inverse=True)[1]`` (for a precomputed kernel, the rows of the Gram
identify the inputs the same way), or labels of the entity the rows describe (all spectra of one molecule). Splits
that already keep copies together (groups, or explicit splits by structure) raise no warning.
"""

from __future__ import annotations

import warnings

import numpy as np


def _numeric_rows(A):
    if hasattr(A, "toarray") or not isinstance(A, (np.ndarray, list, tuple)):  # sparse, or inputs of a kernel
        return None
    A = np.asarray(A)
    return A if A.ndim == 2 and A.dtype.kind in "biuf" else None


def duplicate_labels(X, Y=None):
    """One label per distinct example: rows identical in ``X`` (and in ``Y`` when given) share it.

    Parameters
    ----------
    X : array-like of shape (n, p)
        Inputs, or a precomputed Gram (n, n).
    Y : array-like of shape (n, q), optional
        Outputs: copies of an input with another output are no leak (their twin pulls the other way).

    Returns
    -------
    labels : ndarray of shape (n,) or None
        None when ``X`` (or ``Y``) is not a numeric 2-D array with at least 2 rows.
    """
    X = _numeric_rows(X)
    if X is None or X.shape[0] < 2:
        return None
    if Y is not None:
        Y = _numeric_rows(Y)
        if Y is None or Y.shape[0] != X.shape[0]:
            return None
        X = np.hstack([X.astype(np.float64), Y.astype(np.float64)])
    return np.unique(X, axis=0, return_inverse=True)[1].ravel()


def separated_duplicates(X, holdouts, Y=None):
    """How many examples copy another one, and how many hold-out sets split a set of copies.

    Parameters
    ----------
    X : array-like of shape (n, p)
    holdouts : list of ndarray of int
        The test indices of each split (the training side is the complement).
    Y : array-like of shape (n, q), optional
        Outputs (see :func:`duplicate_labels`).

    Returns
    -------
    n_copies : int
        Rows beyond the first of each set of identical rows.
    n_leaking : int
        Hold-out sets holding some, but not all, copies of a row.
    """
    labels = duplicate_labels(X, Y)
    if labels is None:
        return 0, 0
    counts = np.bincount(labels)
    n_copies = int(labels.size - counts.size)
    if n_copies == 0:
        return 0, 0
    n_leaking = 0
    for test in holdouts:
        held = labels[np.asarray(test)]
        held = held[counts[held] > 1]  # O(|test|) per split: only rows that have copies matter
        if held.size:
            values, in_test = np.unique(held, return_counts=True)
            n_leaking += bool((in_test < counts[values]).any())
    return n_copies, n_leaking


def warn_duplicate_rows(X, Y, holdouts, owner):
    """Warn (``UserWarning``) when hold-out splits separate exact duplicate examples (rows of ``X`` and ``Y``).

    Parameters
    ----------
    X : array-like of shape (n, p)
        The search's inputs (features or precomputed Gram).
    Y : array-like of shape (n, q)
        The search's outputs.
    holdouts : list of ndarray of int
        The search's test sets.
    owner : str
        The estimator's name, for the message.
    """
    n_copies, n_leaking = separated_duplicates(X, holdouts, Y)
    if n_leaking:
        warnings.warn(
            f"{owner}: 'X' and 'Y' hold {n_copies} exact copies of other examples, and {n_leaking} of {len(holdouts)} hold-out "
            "splits separate copies; a copy on the training side predicts its held-out twin, so the search favours "
            "the smallest alpha. Pass groups with one label per distinct input, e.g. "
            "groups=np.unique(X, axis=0, return_inverse=True)[1].",
            UserWarning, stacklevel=3)

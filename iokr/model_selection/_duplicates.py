"""Exact duplicate inputs and hold-out searches: a leak to warn about.

A copy of a held-out example left on the training side predicts its twin almost perfectly when regularization is
weak, so a leave-one-out (or k-fold) search over data with exact duplicate rows favours the smallest ``alpha``. The
remedy is to hold copies out together: ``groups`` with one label per distinct input, e.g.
``groups = np.unique(X, axis=0, return_inverse=True)[1]`` (for a precomputed kernel, the rows of the Gram identify
the inputs the same way), or labels of the entity the rows describe (all spectra of one molecule).
"""

from __future__ import annotations

import warnings

import numpy as np


def duplicate_rows(X):
    """Count the rows of ``X`` that repeat an identical row (0 when ``X`` is not a numeric 2-D array).

    Parameters
    ----------
    X : array-like of shape (n, p)
        Inputs, or a precomputed Gram (n, n).

    Returns
    -------
    n_copies : int
        Rows beyond the first of each set of identical rows.
    """
    if hasattr(X, "toarray") or not isinstance(X, (np.ndarray, list, tuple)):  # sparse, or inputs of a kernel
        return 0
    X = np.asarray(X)
    if X.ndim != 2 or X.dtype.kind not in "biuf" or X.shape[0] < 2:
        return 0
    n_distinct = np.unique(X, axis=0).shape[0]
    return X.shape[0] - n_distinct


def warn_duplicate_rows(X, owner):
    """Warn (``UserWarning``) when ``X`` holds exact duplicate rows and the search was given no groups.

    Parameters
    ----------
    X : array-like of shape (n, p)
        The search's inputs (features or precomputed Gram).
    owner : str
        The estimator's name, for the message.
    """
    n_copies = duplicate_rows(X)
    if n_copies:
        warnings.warn(
            f"{owner}: 'X' holds {n_copies} exact copies of other rows and no 'groups' were given; a copy on the "
            "training side of a hold-out predicts its twin, so the search favours the smallest alpha. Pass groups "
            "with one label per distinct input, e.g. groups=np.unique(X, axis=0, return_inverse=True)[1].",
            UserWarning, stacklevel=3)

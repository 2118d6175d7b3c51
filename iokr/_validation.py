"""Boundary validation shared by all layers: finite arrays, shapes, positive scalars.

Messages name the parameter, what was expected and what was received.
"""

from __future__ import annotations

import numbers

import numpy as np


def check_array_2d(value, name, *, dtype=(np.float64, np.float32), allow_empty_rows=False, copy=False):
    """Return ``value`` as a finite 2-D float array (float32 kept, other dtypes converted to float64).

    The caller's array is never modified; a copy is made only when conversion requires it (or ``copy``).
    """
    if hasattr(value, "toarray") and not isinstance(value, np.ndarray):
        raise TypeError(f"'{name}' must be a dense array; got a sparse matrix (call .toarray() first).")
    arr = np.asarray(value)
    if arr.dtype == object:
        raise TypeError(f"'{name}' must be a numeric array, got an array of Python objects.")
    if arr.ndim != 2:
        hint = (" Reshape your data with .reshape(-1, 1) if it has a single feature or .reshape(1, -1) if it is a "
                "single sample.") if arr.ndim == 1 else ""
        raise ValueError(f"'{name}' must be a 2-D array of shape (n_samples, n_features), got shape {arr.shape}."
                         + hint)
    if arr.shape[0] == 0 and not allow_empty_rows:
        raise ValueError(f"'{name}' must have at least one row, got shape {arr.shape}.")
    if arr.shape[1] == 0:
        raise ValueError(f"'{name}' has 0 feature(s) (shape={arr.shape}) while a minimum of 1 is required.")
    if np.iscomplexobj(arr):
        # Casting to float would silently drop the imaginary part.
        raise ValueError(f"'{name}' must be real-valued; Complex data not supported, got dtype {arr.dtype}.")
    if arr.dtype not in dtype:
        if not (np.issubdtype(arr.dtype, np.number) or arr.dtype == np.bool_):
            raise TypeError(f"'{name}' must be numeric, got dtype {arr.dtype}.")
        arr = arr.astype(dtype[0])
    elif copy:
        arr = arr.copy()
    check_finite(arr, name)
    return arr


def check_finite(arr, name):
    """Raise ``ValueError`` naming ``name`` when ``arr`` holds NaN or infinity."""
    if arr.size and not np.isfinite(arr).all():
        bad = np.argwhere(~np.isfinite(arr))[0]
        raise ValueError(
            f"'{name}' contains NaN or infinity (first at index {tuple(int(i) for i in bad)}); "
            "remove or impute these values."
        )


def check_positive_scalar(value, name, owner=None):
    """Return ``value`` as a float after checking it is a finite number > 0."""
    where = f" of {owner}" if owner else ""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not np.isfinite(value) or value <= 0:
        raise ValueError(f"The '{name}' parameter{where} must be a float in the range (0, inf). Got {value!r} instead.")
    return float(value)


def is_count(value):
    """Whether ``value`` is an integer >= 1: a Python or numpy int, not a bool (``True`` is no count) nor a float."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool) and value >= 1


def check_nonnegative_scalar(value, name, owner=None):
    """Return ``value`` as a float after checking it is a finite number >= 0."""
    where = f" of {owner}" if owner else ""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not np.isfinite(value) or value < 0:
        raise ValueError(f"The '{name}' parameter{where} must be a float >= 0. Got {value!r}.")
    return float(value)


def check_square_gram(gram, name):
    """Validate a precomputed symmetric Gram matrix (finite, square, symmetric to 1e-8 relative)."""
    gram = check_array_2d(gram, name)
    if gram.shape[0] != gram.shape[1]:
        raise ValueError(f"'{name}' must be a square Gram matrix, got shape {gram.shape}.")
    scale = max(float(np.abs(gram).max()), np.finfo(np.float64).tiny)
    asym = float(np.abs(gram - gram.T).max())
    tol = 1e-4 if gram.dtype == np.float32 else 1e-8
    if asym > tol * scale:
        raise ValueError(
            f"'{name}' must be symmetric; max |K - K^T| = {asym:.3g} exceeds {tol:g} x max |K| = {tol * scale:.3g}."
        )
    return gram


def check_n_features(arr, expected, name, owner=None):
    """Raise ``ValueError`` unless ``arr`` has the ``expected`` number of columns (scikit-learn's message format)."""
    if arr.shape[1] != expected:
        raise ValueError(f"{name} has {arr.shape[1]} features, but {owner or 'the model'} is expecting {expected} "
                         "features as input (the number of features it was fitted with).")

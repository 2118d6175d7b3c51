"""Kernels built from other kernels or from a precomputed Gram: cosine normalization, weighted sums, Precomputed."""

from __future__ import annotations

import numbers

import numpy as np

from .._validation import check_square_gram
from ._base import Kernel


class Normalized(Kernel):
    """Cosine-normalized kernel ``k(a, b) / sqrt(k(a, a) k(b, b))``.

    Points whose diagonal is zero have a zero feature vector; their normalized similarities are 0.

    Parameters
    ----------
    kernel : Kernel
        The kernel to normalize.
    """

    def __init__(self, kernel):
        self.kernel = kernel

    @property
    def temporaries_per_entry(self):
        # The wrapped kernel's block is scaled in place: its temporaries are all this kernel needs.
        return self.kernel.temporaries_per_entry

    def validate(self, X, name):
        return self.kernel.validate(X, name)

    def check_compatible(self, A, B):
        self.kernel.check_compatible(A, B)

    def compute(self, A, B):
        K = self.kernel.compute(A, B)
        inv_a = _inverse_sqrt(self.kernel.compute_diag(A))
        inv_b = _inverse_sqrt(self.kernel.compute_diag(B))
        K *= inv_a[:, None]
        K *= inv_b[None, :]
        return K

    def compute_diag(self, A):
        return (self.kernel.compute_diag(A) > 0).astype(A.dtype if A.dtype.kind == "f" else np.float64)

    @property
    def has_explicit_features(self):
        return self.kernel.has_explicit_features

    def compute_features(self, A):
        F = np.array(self.kernel.compute_features(A), dtype=np.result_type(A.dtype, np.float32), copy=True)
        F *= _inverse_sqrt(np.einsum("ij,ij->i", F, F))[:, None]
        return F


def _inverse_sqrt(values):
    out = np.zeros_like(values, dtype=np.result_type(values.dtype, np.float32))
    positive = values > 0
    out[positive] = 1.0 / np.sqrt(values[positive])
    return out


class WeightedSum(Kernel):
    """Weighted sum ``sum_i w_i k_i(a, b)`` of kernels on the same inputs (non-negative weights keep it PSD).

    Parameters
    ----------
    kernels : sequence of Kernel
    weights : sequence of float, optional
        Non-negative weights; uniform (1 / number of kernels) by default.
    """

    def __init__(self, kernels, weights=None):
        self.kernels = kernels
        self.weights = weights

    def components(self):
        """The base kernels and their validated weights (uniform when ``weights`` is None).

        Returns
        -------
        kernels : list of Kernel
        weights : ndarray of shape (n_kernels,)
            Finite, non-negative.
        """
        kernels = list(self.kernels)
        if not kernels:
            raise ValueError("The 'kernels' parameter of WeightedSum must hold at least one kernel. Got none.")
        if self.weights is None:
            return kernels, np.full(len(kernels), 1.0 / len(kernels))
        weights = np.asarray(self.weights, dtype=np.float64)
        if weights.shape != (len(kernels),) or not np.isfinite(weights).all() or (weights < 0).any():
            raise ValueError(
                f"The 'weights' parameter of WeightedSum must hold {len(kernels)} finite non-negative floats. "
                f"Got {self.weights!r} instead."
            )
        return kernels, weights

    @property
    def temporaries_per_entry(self):
        kernels, _ = self.components()
        return 1 + max(k.temporaries_per_entry for k in kernels)

    def validate(self, X, name):
        kernels, _ = self.components()
        return kernels[0].validate(X, name)

    def compute(self, A, B):
        kernels, weights = self.components()
        total = None
        for kernel, weight in zip(kernels, weights, strict=True):
            block = kernel.compute(A, B)
            block *= weight
            total = block if total is None else total + block
        return total

    def compute_diag(self, A):
        kernels, weights = self.components()
        return sum(w * k.compute_diag(A) for k, w in zip(kernels, weights, strict=True))


class Precomputed(Kernel):
    """Kernel given by a stored Gram matrix over a fixed set of objects; inputs are integer indices.

    Useful for kernels on objects that are not vectors (spectra, graphs) computed once, e.g. inside
    :class:`WeightedSum` for multiple kernel learning.

    Parameters
    ----------
    gram : ndarray of shape (n_objects, n_objects)
        Symmetric Gram matrix of all objects.

    Examples
    --------
    >>> import numpy as np
    >>> K = Precomputed(np.eye(3))
    >>> K(np.array([[0], [2]]), np.array([[2]]))
    array([[0.],
           [1.]])
    """

    temporaries_per_entry = 0

    def __init__(self, gram):
        self.gram = gram

    def validate(self, X, name):
        idx = np.asarray(X)
        if idx.ndim == 1:
            idx = idx[:, None]
        if idx.ndim != 2 or idx.shape[1] != 1 or not (
            np.issubdtype(idx.dtype, np.integer) or all(isinstance(v, numbers.Integral) for v in idx.ravel())
        ):
            raise ValueError(f"Precomputed kernel: '{name}' must be integer indices of shape (n, 1); got {idx.shape} "
                             f"of dtype {idx.dtype}.")
        n = np.shape(self.gram)[0]
        if idx.size and (idx.min() < 0 or idx.max() >= n):
            raise ValueError(f"Precomputed kernel: '{name}' indices must lie in [0, {n}); got range "
                             f"[{idx.min()}, {idx.max()}].")
        return idx.astype(np.intp)

    def __call__(self, A, B=None, *, working_memory=None):
        gram = check_square_gram(self.gram, "gram")
        A = self.validate(A, "A")[:, 0]
        B = A if B is None else self.validate(B, "B")[:, 0]
        return gram[np.ix_(A, B)]

    def compute(self, A, B):
        return np.asarray(self.gram)[np.ix_(A[:, 0], B[:, 0])]

    def compute_diag(self, A):
        return np.asarray(self.gram)[A[:, 0], A[:, 0]]

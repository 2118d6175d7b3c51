"""Kernels on real vectors: linear, polynomial, Gaussian (RBF)."""

from __future__ import annotations

import numpy as np

from .._validation import check_positive_scalar
from ._base import Kernel, squared_norms


class Linear(Kernel):
    """Linear kernel ``k(a, b) = <a, b>``; its feature map is the identity."""

    temporaries_per_entry = 0
    has_explicit_features = True

    def compute(self, A, B):
        return A @ B.T

    def compute_diag(self, A):
        return squared_norms(A)

    def compute_features(self, A):
        return A


class Polynomial(Kernel):
    """Polynomial kernel ``k(a, b) = (gamma <a, b> + coef0) ** degree``.

    Parameters
    ----------
    degree : int, default=2
    gamma : float, default=1.0
    coef0 : float, default=1.0
    """

    def __init__(self, degree=2, gamma=1.0, coef0=1.0):
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0

    def _check_params(self):
        if isinstance(self.degree, bool) or not isinstance(self.degree, (int, np.integer)) or self.degree < 1:
            raise ValueError(f"The 'degree' parameter of Polynomial must be an int >= 1. Got {self.degree!r} instead.")
        check_positive_scalar(self.gamma, "gamma", "Polynomial")

    def compute(self, A, B):
        self._check_params()
        K = A @ B.T
        K *= self.gamma
        K += self.coef0
        return K**self.degree

    def compute_diag(self, A):
        self._check_params()
        return (self.gamma * squared_norms(A) + self.coef0) ** self.degree


class Gaussian(Kernel):
    """Gaussian (RBF) kernel ``k(a, b) = exp(-gamma ||a - b||^2)``.

    Parameters
    ----------
    gamma : float, default=1.0
        Inverse squared length scale; ``gamma = 1 / (2 sigma^2)``.
    """

    def __init__(self, gamma=1.0):
        self.gamma = gamma

    def compute(self, A, B):
        gamma = check_positive_scalar(self.gamma, "gamma", "Gaussian")
        D = A @ B.T
        D *= -2.0
        D += squared_norms(A)[:, None]
        D += squared_norms(B)[None, :]
        np.maximum(D, 0.0, out=D)
        D *= -gamma
        return np.exp(D, out=D)

    def compute_diag(self, A):
        check_positive_scalar(self.gamma, "gamma", "Gaussian")
        return np.ones(A.shape[0], dtype=A.dtype)

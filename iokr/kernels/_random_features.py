"""Random Fourier features: an explicit finite feature map approximating the Gaussian kernel.

For ``k(a, b) = exp(-gamma ||a - b||^2)`` Bochner's theorem gives ``k(a, b) = E[cos(w^T (a - b))]`` with
``w ~ N(0, 2 gamma I)``, so ``z(a) = sqrt(2 / D) cos(W^T a + b)`` with ``D`` draws ``W`` and phases ``b ~ U[0, 2 pi)``
satisfies ``E[z(a)^T z(b)] = k(a, b)`` with error ``O(1 / sqrt(D))`` (Rahimi and Recht, 2007). The kernel defined
here *is* ``z(a)^T z(b)``, so estimators use it through their explicit-feature path (ridge regression on ``D``
features instead of an ``n x n`` system).
"""

from __future__ import annotations

import numpy as np

from .._validation import check_positive_scalar
from ._base import Kernel


class RandomFourierFeatures(Kernel):
    """Random Fourier feature approximation of :class:`~iokr.kernels.Gaussian`.

    Parameters
    ----------
    gamma : float, default=1.0
        Parameter of the approximated Gaussian kernel ``exp(-gamma ||a - b||^2)``.
    n_components : int, default=1000
        Number of random features ``D``.
    random_state : int, default=0
        Seed of the frequencies and phases. The draw depends only on ``(random_state, n_features)``, so a kernel
        object gives the same feature map in every call and process (needed for train/test consistency).

    References
    ----------
    Rahimi and Recht, Random features for large-scale kernel machines, NeurIPS 2007.
    """

    has_explicit_features = True
    temporaries_per_entry = 0

    def __init__(self, gamma=1.0, n_components=1000, random_state=0):
        self.gamma = gamma
        self.n_components = n_components
        self.random_state = random_state

    def _draw(self, n_features):
        gamma = check_positive_scalar(self.gamma, "gamma", "RandomFourierFeatures")
        D = self.n_components
        if isinstance(D, bool) or not isinstance(D, (int, np.integer)) or D < 1:
            raise ValueError(f"The 'n_components' parameter of RandomFourierFeatures must be an int >= 1. "
                             f"Got {D!r} instead.")
        if isinstance(self.random_state, np.random.Generator) or self.random_state is None:
            raise ValueError("RandomFourierFeatures needs an int 'random_state' so that training and test inputs "
                             f"share one feature map; got {self.random_state!r}.")
        key = (n_features, D, float(gamma), int(self.random_state))
        cached = getattr(self, "_cache", None)
        if cached is None or cached[0] != key:
            rng = np.random.default_rng(int(self.random_state))
            W = rng.normal(scale=np.sqrt(2.0 * gamma), size=(n_features, D))
            b = rng.uniform(0.0, 2.0 * np.pi, size=D)
            self._cache = (key, W, b)
        return self._cache[1], self._cache[2]

    def compute_features(self, A):
        W, b = self._draw(A.shape[1])
        Z = A @ W.astype(A.dtype, copy=False)
        Z += b.astype(Z.dtype)
        np.cos(Z, out=Z)
        Z *= np.sqrt(2.0 / W.shape[1])
        return Z

    def compute(self, A, B):
        return self.compute_features(A) @ self.compute_features(B).T

    def compute_diag(self, A):
        Z = self.compute_features(A)
        return np.einsum("ij,ij->i", Z, Z)

"""Kernel ridge regression on many outputs, exact or on a basis subset (sec. 3 and 6.4 of Cortes et al. 2005).

All approximations fit the *subset of regressors* model ``g(x) = K(x, S) beta`` on a basis ``S`` of ``n`` training
points,

    beta = argmin ||Y - K_{*S} beta||^2 + alpha beta^T K_SS beta,

and differ only in how ``S`` is chosen, behind one option ``basis``:

- ``"random"``: uniform subsampling without replacement;
- ``"cholesky"``: the pivots of an incomplete (pivoted) Cholesky factorization of ``K`` (largest remaining
  diagonal), for which ``K_{*S} K_SS^{-1} K_S*`` is exactly the incomplete factorization ``G G^T``
  (Bach & Jordan 2002), so ridge on ``G`` and the subset model coincide;
- ``"greedy"``: the paper's incremental selection: add the training point with the largest residual
  ``||y_i - g(x_i)||^2`` over all outputs at once (eq. 9) and refit (eq. 10), with rank-one updates of an
  orthonormal basis of ``span K_{*S}`` (Smola & Bartlett 2001), ``O(m n (n + N2))`` in total.

With ``K_SS = L L^T`` and ``B = K_{*S} L^{-T}`` the solution is ``beta = L^{-T} (B^T B + alpha I)^{-1} B^T Y``,
two :func:`~iokr.linalg.cholesky_shifted` solves of size ``n``.
"""

from __future__ import annotations

import numpy as np
from scipy import linalg as sla

from ..linalg import cholesky_shifted, greedy_landmarks, pivoted_cholesky_landmarks

BASIS_METHODS = ("full", "random", "cholesky", "greedy")


def take(X, idx):
    """Rows ``idx`` of an array or items of a list (for sequence inputs)."""
    idx = np.asarray(idx, dtype=np.int64)
    if isinstance(X, np.ndarray):
        return X[idx]
    return [X[i] for i in idx]


class KernelColumns:
    """Columns ``K(X, X[j])`` of a training Gram matrix computed on demand (or read from a given matrix)."""

    def __init__(self, kernel, X, gram=None):
        self.kernel = kernel
        self.X = X
        self.gram = gram

    def __call__(self, idx):
        idx = np.atleast_1d(np.asarray(idx, dtype=np.int64))
        if self.gram is not None:
            return np.asarray(self.gram[:, idx], dtype=np.float64)
        return np.asarray(self.kernel(self.X, take(self.X, idx)), dtype=np.float64)

    def diag(self):
        if self.gram is not None:
            return np.asarray(np.diag(self.gram), dtype=np.float64)
        return np.asarray(self.kernel.diag(self.X), dtype=np.float64)


def select_random(columns, m, n_basis, random_state):
    rng = np.random.default_rng(random_state)
    return np.sort(rng.choice(m, size=n_basis, replace=False))


def select_cholesky(columns, m, n_basis, tol=1e-12):
    """Pivots of an incomplete Cholesky factorization (largest residual diagonal first).

    See :func:`iokr.linalg._sketch.pivoted_cholesky_landmarks` (the one implementation, shared with the Nystrom
    landmarks of :class:`~iokr.estimators.sketched.SketchedIOKR`).
    """
    return pivoted_cholesky_landmarks(columns, columns.diag(), n_basis, tol)


def select_greedy(columns, Y, n_basis):
    """Largest-residual incremental selection (eq. 9-10) with Gram-Schmidt rank-one updates.

    See :func:`iokr.linalg._sketch.greedy_landmarks` (the one implementation, shared with the Nystrom landmarks of
    :class:`~iokr.estimators.sketched.SketchedIOKR`); memory is the (m, N2) residual and the (m, n_basis) basis.
    """
    return greedy_landmarks(columns, Y, n_basis)


def fit_subset(C, basis, Y, alpha):
    """Subset-of-regressors ridge: coefficients ``beta`` (n, N2) with ``g(x) = K(x, S) beta``.

    Parameters
    ----------
    C : ndarray of shape (m, n)
        ``K(X, X[basis])``.
    basis : ndarray of shape (n,)
        Training indices of the basis (rows of ``C`` giving ``K_SS``).
    Y : ndarray of shape (m, N2)
    alpha : float
    """
    K_SS = C[basis]
    K_SS = 0.5 * (K_SS + K_SS.T)
    # A tiny relative shift keeps K_SS factorizable when basis points are nearly duplicates.
    L = cholesky_shifted(K_SS, 1e-10 * max(float(np.mean(np.diag(K_SS))), 1e-300), name="K_SS").lower
    B = sla.solve_triangular(L, C.T, lower=True, check_finite=False).T  # C L^{-T}
    inner = cholesky_shifted(B.T @ B, alpha, name="B^T B").solve(B.T @ np.asarray(Y, dtype=np.float64))
    return sla.solve_triangular(L.T, inner, lower=False, check_finite=False)


def select_basis(method, columns, m, Y, n_basis, random_state=None):
    """Training indices of the basis chosen by ``method`` (one of ``"random"``, ``"cholesky"``, ``"greedy"``)."""
    n_basis = int(min(n_basis, m))
    if method == "random":
        return select_random(columns, m, n_basis, random_state)
    if method == "cholesky":
        return select_cholesky(columns, m, n_basis)
    if method == "greedy":
        return select_greedy(columns, Y, n_basis)
    raise ValueError(f"The 'basis' parameter must be one of {BASIS_METHODS}. Got {method!r} instead.")

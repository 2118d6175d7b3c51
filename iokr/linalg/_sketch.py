"""Sketches of kernel matrices and the Nystrom-preconditioned CG of Falkon.

A sketch ``S`` of shape (s, n) compresses the span of the ``n`` training points to ``s`` directions; the model is then
sought in ``span(S^T)``. With ``K_S = K S^T`` (n, s) and ``K_SS = S K S^T`` (s, s), the sketched kernel
``K_S K_SS^+ K_S^T`` is the Gram of the explicit features ``Phi = K_S U D^{-1/2}`` (``K_SS = U D U^T``, eigenvalues
below a relative cutoff dropped), and kernel ridge regression restricted to ``span(S^T)`` is ridge regression on
``Phi`` (El Ahmad et al. 2024; Rudi et al. 2015). Two sketches are provided:

- sub-sampling: ``S`` selects ``s`` rows of the identity (the Nystrom method); only ``K(X, X_landmarks)`` is needed;
- p-sparsified: every entry of ``S`` is nonzero with probability ``p``, with value ``+-1/sqrt(s p)`` (Rademacher),
  so ``K S^T`` mixes all training points at the cost of ``p`` times a dense Gaussian sketch.

A full-rank sketch (``S = I``) gives back the exact solution. The same features give the Falkon preconditioner for
the full problem ``(K + alpha I) C = B``: ``(Phi Phi^T + alpha I)^{-1}`` applied by the Woodbury identity.

This module knows nothing about kernels: callers pass kernel blocks.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy import linalg as sla

from ._cg import block_cg
from ._cholesky import cholesky_shifted

SKETCH_TYPES = ("subsample", "sparse")


def _rng(random_state):
    return random_state if isinstance(random_state, np.random.Generator) else np.random.default_rng(random_state)


def subsample_indices(n, n_components, random_state=None):
    """``min(n_components, n)`` distinct training indices, sorted (the rows kept by a sub-sampling sketch)."""
    s = int(min(n_components, n))
    return np.sort(_rng(random_state).choice(n, size=s, replace=False))


def sparse_sketch(n_components, n, p, random_state=None):
    """p-sparsified Rademacher sketch, a sparse CSR matrix of shape (n_components, n).

    Each entry is nonzero with probability ``p``, equal to ``+-1 / sqrt(n_components * p)`` with equal chance, so
    ``E[S^T S] = I``. Every row is given at least one nonzero so that no sketched direction is empty.
    """
    if not 0.0 < float(p) <= 1.0:
        raise ValueError(f"The sparsity 'p' of a p-sparsified sketch must be in (0, 1], got {p!r}.")
    rng = _rng(random_state)
    s = int(n_components)
    mask = sp.random(s, n, density=float(p), format="csr", random_state=rng, data_rvs=lambda k: np.ones(k))
    empty = np.flatnonzero(np.diff(mask.indptr) == 0)
    if empty.size:
        extra = sp.csr_matrix((np.ones(empty.size), (empty, rng.integers(0, n, empty.size))), shape=(s, n))
        mask = (mask + extra).tocsr()
        mask.data[:] = 1.0
    mask.data = rng.choice((-1.0, 1.0), size=mask.data.size) / np.sqrt(s * float(p))
    return mask


def nystrom_whitening(K_ss, rtol=1e-10):
    """``U_r D_r^{-1/2}`` of shape (s, r) for ``K_ss = U D U^T``, keeping eigenvalues above ``rtol * max``.

    ``K_S @ nystrom_whitening(K_SS)`` are features whose Gram is ``K_S K_SS^+ K_S^T``.
    """
    K_ss = np.asarray(K_ss, dtype=np.float64)
    values, vectors = sla.eigh(0.5 * (K_ss + K_ss.T), check_finite=False)
    keep = values > rtol * max(float(values.max(initial=0.0)), np.finfo(np.float64).tiny)
    return vectors[:, keep] / np.sqrt(values[keep])


def ridge_primal(features, targets, alpha):
    """``W = (Phi^T Phi + alpha I)^{-1} Phi^T B``: ridge regression on explicit features, by Cholesky.

    Solved in the primal (an ``r x r`` system) when ``r <= n``, otherwise in the dual through the identity
    ``(Phi^T Phi + alpha I)^{-1} Phi^T = Phi^T (Phi Phi^T + alpha I)^{-1}`` (an ``n x n`` system).

    Parameters
    ----------
    features : ndarray of shape (n, r)
    targets : ndarray of shape (n, k)
    alpha : float

    Returns
    -------
    W : ndarray of shape (r, k)
    jitter : float
        Jitter the Cholesky factorization needed (0.0 normally).
    """
    Phi = np.asarray(features, dtype=np.float64)
    B = np.asarray(targets, dtype=np.float64)
    if Phi.shape[1] <= Phi.shape[0]:
        factor = cholesky_shifted(Phi.T @ Phi, alpha, name="sketched normal equations")
        return factor.solve(Phi.T @ B), factor.jitter
    factor = cholesky_shifted(Phi @ Phi.T, alpha, name="random-feature Gram")
    return Phi.T @ factor.solve(B), factor.jitter


class NystromPreconditioner:
    """``(Phi Phi^T + alpha I)^{-1}`` applied by Woodbury: ``(R - Phi (Phi^T Phi + alpha I)^{-1} Phi^T R) / alpha``.

    Parameters
    ----------
    features : ndarray of shape (n, r)
        Nystrom features of the (transformed) training kernel.
    alpha : float
        The ridge of the full problem.
    """

    def __init__(self, features, alpha):
        self.features = np.asarray(features, dtype=np.float64)
        self.alpha = float(alpha)
        self.factor = cholesky_shifted(self.features.T @ self.features, self.alpha, name="Nystrom preconditioner")

    def __call__(self, R):
        correction = self.features @ self.factor.solve(self.features.T @ R)
        return (R - correction) / self.alpha


def falkon_solve(matmat, rhs, features, alpha, *, rtol=1e-8, max_iter=100, x0=None, warn=True):
    """Solve the full problem ``(K + alpha I) C = B`` by block CG with a Nystrom preconditioner (Falkon-style).

    Parameters
    ----------
    matmat : callable
        ``matmat(V)`` returns ``K @ V`` for ``V`` of shape (n, k) (computed block-wise by the caller: ``K`` is never
        stored).
    rhs : ndarray of shape (n, k)
    features : ndarray of shape (n, r)
        Nystrom features of ``K`` (see :func:`nystrom_whitening`).
    alpha : float

    Returns
    -------
    C : ndarray of shape (n, k)
    info : CGInfo
    """
    precond = NystromPreconditioner(features, alpha)
    shifted = lambda V: matmat(V) + alpha * V  # noqa: E731
    return block_cg(shifted, rhs, x0=x0, rtol=rtol, max_iter=max_iter, preconditioner=precond, warn=warn)

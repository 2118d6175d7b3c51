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
from ._chunks import row_slices

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


# -- landmark (basis) selection -------------------------------------------------------------------------------------
# Kernel-agnostic: the caller passes ``columns(idx) -> K[:, idx]`` (float64, shape (n, len(idx))) and, for the pivoted
# Cholesky, the diagonal of ``K``. Used for the Nystrom landmarks of SketchedIOKR and the basis of the string
# regressors (iokr.strings._basis), with one implementation.

LANDMARK_METHODS = ("random", "cholesky", "greedy")


def pivoted_cholesky_landmarks(columns, diag, n_landmarks, tol=1e-12):
    """Pivots of an incomplete (pivoted) Cholesky factorization of ``K``: largest residual diagonal first.

    After ``k`` steps ``G G^T = K_{*S} K_SS^{-1} K_{S*}`` for the pivots ``S`` (Bach & Jordan 2002), and the residual
    diagonal is that of the Schur complement ``K - G G^T``. Stops early when it falls below ``tol * max(diag)``
    (the remaining columns are then in the span of the chosen ones up to that tolerance).

    Parameters
    ----------
    columns : callable
        ``columns(idx)`` returns ``K[:, idx]``, shape (n, len(idx)).
    diag : ndarray of shape (n,)
        Diagonal of ``K``.
    n_landmarks : int
        Maximum number of pivots.
    tol : float, default=1e-12
        Relative residual at which to stop.

    Returns
    -------
    pivots : ndarray of int64, shape (r,), r <= n_landmarks
        In the order they were chosen.

    Notes
    -----
    Memory: the factor ``G`` of shape (n, n_landmarks), float64.
    """
    d = np.array(diag, dtype=np.float64, copy=True).ravel()
    n = d.size
    n_landmarks = int(min(n_landmarks, n))
    scale = max(float(d.max(initial=0.0)), np.finfo(float).tiny)
    G = np.zeros((n, n_landmarks))
    pivots = []
    for k in range(n_landmarks):
        j = int(np.argmax(d))
        if d[j] <= tol * scale:
            break
        col = np.asarray(columns(j), dtype=np.float64).reshape(n, -1)[:, 0] - G[:, :k] @ G[j, :k]
        G[:, k] = col / np.sqrt(d[j])
        d -= G[:, k] ** 2
        d[j] = -np.inf  # never pick a pivot twice (round-off could leave it positive)
        pivots.append(j)
    return np.asarray(pivots, dtype=np.int64)


def greedy_landmarks(columns, targets, n_landmarks, working_memory=None):
    """Largest-residual incremental basis (Cortes, Mohri & Weston 2005, eq. 9-10).

    At every step the training point whose targets are worst fitted by least squares on the chosen kernel columns,
    ``argmax_i ||y_i - P_S y_i||^2`` with ``P_S`` the projection on ``span K_{*S}``, joins the basis. ``Q`` holds an
    orthonormal basis of the chosen columns (Gram-Schmidt, re-orthogonalized once), and the residual
    ``R = Y - Q Q^T Y`` is downdated by one rank-one term per step (Smola & Bartlett 2001). A column already in the
    span (relative norm after orthogonalization below ``1e-10``) is marked as visited and not added.

    Parameters
    ----------
    columns : callable
        ``columns(idx)`` returns ``K[:, idx]``, shape (n, len(idx)).
    targets : ndarray of shape (n, p)
        The outputs to fit (e.g. the transformed output features).
    n_landmarks : int
        Maximum number of basis points.
    working_memory : float, optional
        Budget in MiB for the row chunks of the residual update.

    Returns
    -------
    landmarks : ndarray of int64, shape (r,), r <= n_landmarks
        In the order they were chosen.

    Notes
    -----
    Memory: the residual ``R`` (n, p) and the basis ``Q`` (n, n_landmarks), both float64; the rank-one update and
    the residual norms are computed in row chunks, so no other (n, p) temporary is formed. Time:
    ``O(n_landmarks n (p + n_landmarks))`` plus ``n_landmarks`` kernel columns.
    """
    Y = np.asarray(targets, dtype=np.float64)
    if Y.ndim != 2:
        raise ValueError(f"'targets' must be a 2-D array (n, p), got shape {Y.shape}.")
    n, p = Y.shape
    n_landmarks = int(min(n_landmarks, n))
    R = np.array(Y, dtype=np.float64, copy=True)
    Q = np.zeros((n, n_landmarks))
    chosen = np.zeros(n, dtype=bool)
    selected = []
    chunks = list(row_slices(n, 16 * max(p, 1), working_memory))
    residual = np.einsum("ij,ij->i", R, R)
    while len(selected) < n_landmarks:
        score = np.where(chosen, -np.inf, residual)
        j = int(np.argmax(score))
        if not np.isfinite(score[j]):
            break
        chosen[j] = True
        q = np.array(np.asarray(columns(j), dtype=np.float64).reshape(n, -1)[:, 0])
        norm0 = np.linalg.norm(q)
        r = len(selected)
        for _ in range(2):  # twice is enough (Kahan-Parlett re-orthogonalization)
            q -= Q[:, :r] @ (Q[:, :r].T @ q)
        norm = np.linalg.norm(q)
        if norm <= 1e-10 * max(norm0, np.finfo(float).tiny):
            continue  # column already in the span: visited, but adds no basis vector
        q /= norm
        Q[:, r] = q
        selected.append(j)
        z = q @ R
        for rows in chunks:
            R[rows] -= q[rows, None] * z[None, :]
            residual[rows] = np.einsum("ij,ij->i", R[rows], R[rows])
    return np.asarray(selected, dtype=np.int64)

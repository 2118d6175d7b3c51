"""Block conjugate gradient on a matrix-free symmetric positive definite operator.

The solver sees only callables (as Falkon's ``optim/conjgrad.py``): ``matmat(V)`` returns ``A @ V`` for a block
``V`` of shape (n, k). Each column runs its own CG recursion (the block only batches the operator products), and
stops when its true relative residual ``||b_j - A x_j|| / ||b_j||`` is at most ``rtol``: the recursive residual
proposes the stop, and one product with the true residual confirms it (otherwise the recursion continues from
the true residual). The true residual is also recomputed every ``restart_every`` iterations to stop the recursive
residual from drifting, and at the end for columns stopped by ``max_iter``, so ``CGInfo.relative_residuals``
always reports the true residual.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from ..exceptions import ConvergenceWarning


@dataclass(frozen=True)
class CGInfo:
    """Outcome of :func:`block_cg`.

    Attributes
    ----------
    n_iter : int
        Iterations run.
    converged : ndarray of bool, shape (k,)
        Whether each right-hand side reached the tolerance.
    relative_residuals : ndarray of shape (k,)
        Final true relative residual ``||b_j - A x_j|| / ||b_j||``.
    """

    n_iter: int
    converged: np.ndarray
    relative_residuals: np.ndarray


def block_cg(matmat, rhs, *, x0=None, rtol=1e-8, max_iter=None, preconditioner=None, restart_every=50,
             callback=None, warn=True):
    """Solve ``A X = B`` for SPD ``A`` given only ``matmat``.

    Parameters
    ----------
    matmat : callable
        ``matmat(V)`` with ``V`` of shape (n, k) returns ``A @ V`` of shape (n, k).
    rhs : ndarray of shape (n,) or (n, k)
        Right-hand sides.
    x0 : ndarray, optional
        Initial guess (zeros by default).
    rtol : float, default=1e-8
        Stop column ``j`` when its true residual satisfies ``||b_j - A x_j|| <= rtol * ||b_j||``.
    max_iter : int, optional
        Iteration cap (default ``10 * n``). Early stopping by ``max_iter`` is also a regularizer
        (Pahikkala et al. 2013); pass ``warn=False`` when that is intended.
    preconditioner : callable, optional
        ``preconditioner(R)`` applies an SPD approximation of ``A^{-1}`` to a block.
    restart_every : int, default=50
        Recompute the true residual every this many iterations.
    callback : callable, optional
        Called as ``callback(iteration, X)`` after each iteration.
    warn : bool, default=True
        Emit a :class:`~iokr.exceptions.ConvergenceWarning` if some column did not converge.

    Returns
    -------
    X : ndarray, same shape as ``rhs``
    info : CGInfo
    """
    rhs = np.asarray(rhs, dtype=np.float64)
    vector = rhs.ndim == 1
    B = rhs[:, None] if vector else rhs
    n, k = B.shape
    max_iter = 10 * n if max_iter is None else int(max_iter)
    precond = preconditioner if preconditioner is not None else (lambda R: R)
    X = np.zeros_like(B) if x0 is None else np.array(x0, dtype=np.float64).reshape(n, k)
    R = B - matmat(X) if x0 is not None else B.copy()
    b_norm = np.linalg.norm(B, axis=0)
    b_norm[b_norm == 0] = 1.0
    Z = precond(R)
    P = Z.copy()
    rz = np.einsum("ij,ij->j", R, Z)
    active = np.linalg.norm(R, axis=0) > rtol * b_norm
    iteration = 0
    while active.any() and iteration < max_iter:
        iteration += 1
        cols = np.flatnonzero(active)
        AP = matmat(P[:, cols])
        pap = np.einsum("ij,ij->j", P[:, cols], AP)
        step = np.divide(rz[cols], pap, out=np.zeros_like(pap), where=pap > 0)
        X[:, cols] += P[:, cols] * step
        if iteration % restart_every == 0:
            R[:, cols] = B[:, cols] - matmat(X[:, cols])
        else:
            R[:, cols] -= AP * step
        Zc = precond(R[:, cols])
        rz_new = np.einsum("ij,ij->j", R[:, cols], Zc)
        beta = np.divide(rz_new, rz[cols], out=np.zeros_like(rz_new), where=rz[cols] > 0)
        P[:, cols] = Zc + P[:, cols] * beta
        rz[cols] = rz_new
        small = np.linalg.norm(R[:, cols], axis=0) <= rtol * b_norm[cols]
        if small.any() and iteration % restart_every != 0:
            # The recursive residual says done: stop only if the true residual agrees (else carry on from it).
            done = cols[small]
            R[:, done] = B[:, done] - matmat(X[:, done])
            small[small] = np.linalg.norm(R[:, done], axis=0) <= rtol * b_norm[done]
        active[cols] = ~small & (pap > 0)
        if callback is not None:
            callback(iteration, X[:, 0] if vector else X)
    stale = np.flatnonzero(active) if iteration % restart_every != 0 else np.zeros(0, dtype=np.intp)
    if stale.size:  # stopped by max_iter (or breakdown): report the true residual
        R[:, stale] = B[:, stale] - matmat(X[:, stale])
    relative = np.linalg.norm(R, axis=0) / b_norm
    converged = relative <= rtol * (1 + 1e-12)
    if warn and not converged.all():
        warnings.warn(
            f"Conjugate gradient stopped after {iteration} iterations with relative residual "
            f"{relative.max():.3g} > rtol={rtol:g} for {int((~converged).sum())} of {k} right-hand side(s).",
            ConvergenceWarning,
            stacklevel=2,
        )
    info = CGInfo(iteration, converged, relative)
    return (X[:, 0] if vector else X), info

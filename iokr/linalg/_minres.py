"""MINRES on a matrix-free symmetric operator (Paige & Saunders 1975), stopped on the true relative residual.

The solver sees only a callable, like :func:`~iokr.linalg.block_cg`. For a symmetric positive (semi)definite
``A``, MINRES minimizes ``||b - A x||`` over the same Krylov space in which conjugate gradient minimizes the
``A``-norm of the error, so its residual never exceeds CG's at the same iteration and decreases monotonically:
with a stopping rule on the residual it needs at most as many operator products as CG. The recurrence carries
only an estimate of the residual norm; when the estimate reaches the tolerance the true residual ``b - A x`` is
computed, and the solve restarts from ``x`` if round-off made the estimate optimistic.
"""

from __future__ import annotations

import warnings

import numpy as np

from ..exceptions import ConvergenceWarning
from ._cg import CGInfo


def _minres_run(matvec, x, r, beta1, rtol_abs, max_iter):
    """One MINRES recurrence from ``x`` with residual ``r``; returns ``(x, iterations)``."""
    n = r.size
    eps = np.finfo(np.float64).eps
    r1, r2, y = r, r, r
    oldb, beta, dbar, epsln, phibar = 0.0, beta1, 0.0, 0.0, beta1
    cs, sn = -1.0, 0.0
    w, w2 = np.zeros(n), np.zeros(n)
    it = 0
    while it < max_iter and phibar > rtol_abs:
        it += 1
        v = y / beta
        y = matvec(v)
        if it >= 2:
            y = y - (beta / oldb) * r1
        alfa = float(v @ y)
        y = y - (alfa / beta) * r2
        r1, r2 = r2, y
        oldb, beta = beta, float(np.linalg.norm(y))
        oldeps = epsln
        delta = cs * dbar + sn * alfa
        gbar = sn * dbar - cs * alfa
        epsln = sn * beta
        dbar = -cs * beta
        gamma = max(float(np.hypot(gbar, beta)), eps)
        cs, sn = gbar / gamma, beta / gamma
        phi = cs * phibar
        phibar = sn * phibar
        w1, w2 = w2, w
        w = (v - oldeps * w1 - delta * w2) / gamma
        x = x + phi * w
        if beta <= eps * beta1:  # the Krylov space is exhausted: x solves the system
            break
    return x, it


def minres(matvec, rhs, *, x0=None, rtol=1e-8, max_iter=None, warn=True):
    """Solve ``A x = b`` for symmetric ``A`` given only ``matvec``, to ``||b - A x|| <= rtol ||b||``.

    Parameters
    ----------
    matvec : callable
        ``matvec(v)`` with ``v`` of shape (n,) returns ``A @ v`` of shape (n,).
    rhs : ndarray of shape (n,)
        Right-hand side ``b``.
    x0 : ndarray of shape (n,), optional
        Initial guess (zeros by default).
    rtol : float, default=1e-8
        Stop when the true relative residual ``||b - A x|| / ||b||`` is at most ``rtol``.
    max_iter : int, optional
        Cap on operator products in the recurrences (default ``10 * n``); the true-residual checks add one
        product each.
    warn : bool, default=True
        Emit a :class:`~iokr.exceptions.ConvergenceWarning` when the tolerance was not reached.

    Returns
    -------
    x : ndarray of shape (n,)
    info : CGInfo
        ``n_iter`` (recurrence iterations), ``converged`` and ``relative_residuals`` (true residual), each of
        shape (1,).
    """
    b = np.asarray(rhs, dtype=np.float64)
    if b.ndim != 1:
        raise ValueError(f"'rhs' must be a 1-D vector for minres, got shape {b.shape}.")
    n = b.size
    max_iter = 10 * n if max_iter is None else int(max_iter)
    b_norm = float(np.linalg.norm(b)) or 1.0
    x = np.zeros(n) if x0 is None else np.array(x0, dtype=np.float64)
    r = b - matvec(x) if x0 is not None else b.copy()
    res = float(np.linalg.norm(r))
    total = 0
    while res > rtol * b_norm and total < max_iter:
        x, it = _minres_run(matvec, x, r, res, rtol * b_norm, max_iter - total)
        total += it
        r = b - matvec(x)
        new = float(np.linalg.norm(r))
        if it == 0 or new >= res:  # no progress (singular direction or round-off floor): stop
            res = new
            break
        res = new
    relative = res / b_norm
    converged = relative <= rtol * (1 + 1e-12)
    if warn and not converged:
        warnings.warn(
            f"MINRES stopped after {total} iterations with relative residual {relative:.3g} > rtol={rtol:g}.",
            ConvergenceWarning,
            stacklevel=2,
        )
    return x, CGInfo(total, np.array([converged]), np.array([relative]))

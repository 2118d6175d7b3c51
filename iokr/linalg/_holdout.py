"""Closed-form hold-out and leave-one-out values of kernel ridge regression, without retraining.

Let ``G = (K + alpha I)^{-1}`` and ``A = G Y`` be the model trained on all ``n`` examples. For a hold-out set
``H`` with complement ``C``, the model trained on ``C`` alone predicts (Pahikkala 2008, Proposition 1, eq. 2.56)

    f_C(X_H) = K_HC (K_CC + alpha I)^{-1} Y_C = Y_H - (G_HH)^{-1} A_H,

so the hold-out *residual* ``Y_H - f_C(X_H) = (G_HH)^{-1} A_H`` needs only the ``|H| x |H|`` block of ``G`` and
rows of ``A``. Leave-one-out is the case ``|H| = 1``: ``y_i - f_{-i}(x_i) = A_i / G_ii``.

Taking ``Y = I`` gives the hold-out prediction as a *combination of the training outputs*:

    f_C(X_H) = W_H Y,      W_H = E_H - (G_HH)^{-1} G_H      (rows ``H`` of the identity minus ...),

whose columns in ``H`` vanish. This is what IOKR needs: the hold-out prediction ``h_C(x_H) = W_H Psi`` lives in
the output feature space, so candidate scores ``W_H K_y(Y, c)`` and output-space errors
``||h_C(x_i) - psi(y_i)||^2 = r_i K_y r_i^T`` with ``r_i = [(G_HH)^{-1} G_H]_i`` are exact without refitting.

Leave-pair-out (``|H| = 2`` for many pairs ``H = {i, j}``) solves the ``2 x 2`` systems in closed form, vectorized
over the pairs (:func:`pair_holdout_predictions`); with an intercept solver it is the leave-pair-out of ridge with
an unpenalized intercept, which is what global RankRLS needs (:mod:`iokr.linalg._ranking_holdout`).

Every function takes a *shifted solver* for one alpha (:class:`~iokr.linalg.developer.EigenShift` or
:class:`~iokr.linalg.developer.CholeskyShift`, from a :class:`~iokr.linalg.RegularizationPath`), so the same code serves
both routes. ``(G_HH)^{-1}`` is applied by a Cholesky solve of the small SPD block, never formed.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy import linalg as sla

from ..exceptions import NumericalStabilityWarning
from ._chunks import row_slices


def check_holdouts(holdouts, n, name="holdouts"):
    """Validate hold-out index sets for ``n`` training examples.

    Each set must be a non-empty 1-D array of distinct integers in ``[0, n)`` that leaves at least one training
    example. Returns a list of ``intp`` arrays.
    """
    checked = []
    for k, rows in enumerate(holdouts):
        rows = np.asarray(rows)
        if rows.ndim != 1 or (rows.size and not np.issubdtype(rows.dtype, np.integer)):
            raise ValueError(f"'{name}[{k}]' must be a 1-D array of integer indices, got {rows.dtype} {rows.shape}.")
        if rows.size == 0:
            raise ValueError(f"'{name}[{k}]' is empty; every hold-out set needs at least one example.")
        if rows.min() < 0 or rows.max() >= n:
            raise ValueError(f"'{name}[{k}]' has indices outside [0, {n}): range [{rows.min()}, {rows.max()}].")
        if np.unique(rows).size != rows.size:
            raise ValueError(f"'{name}[{k}]' repeats indices; a hold-out set is a set of distinct examples.")
        if rows.size >= n:
            raise ValueError(f"'{name}[{k}]' holds out all {n} examples, leaving the training side empty.")
        checked.append(rows.astype(np.intp, copy=False))
    if not checked:
        raise ValueError(f"'{name}' must contain at least one hold-out set, got none.")
    return checked


def _spd_solve(block, rhs):
    """Solve ``block X = rhs`` for a small SPD block; falls back to a clipped eigen solve if Cholesky fails."""
    try:
        return sla.cho_solve(sla.cho_factor(block, lower=True, check_finite=False), rhs, check_finite=False)
    except sla.LinAlgError:
        pass
    values, vectors = sla.eigh(block, check_finite=False)
    floor = np.finfo(np.float64).eps * max(float(values.max()), np.finfo(np.float64).tiny) * block.shape[0]
    warnings.warn(
        f"A {block.shape[0]} x {block.shape[0]} block of (K + alpha I)^-1 is numerically singular (smallest "
        f"eigenvalue {values.min():.3g}); solved with eigenvalues clipped at {floor:.3g}.",
        NumericalStabilityWarning, stacklevel=3)
    return vectors @ ((vectors.T @ rhs) / np.maximum(values, floor).reshape((-1,) + (1,) * (rhs.ndim - 1)))


def _all_singletons(holdouts):
    return all(rows.size == 1 for rows in holdouts)


def loo_residuals(solver, token, coefficients=None):
    """Leave-one-out residuals ``y_i - f_{-i}(x_i) = A_i / G_ii`` for all ``i``.

    ``G_ii`` is the leverage complement ``(1 - h_ii) / alpha`` computed without forming ``1 - h_ii`` (on the eigen
    route ``sum_j Q_ij^2 / (s_j + alpha)``), so no cancellation occurs when ``h_ii`` is close to 1.

    Parameters
    ----------
    solver : EigenShift or CholeskyShift
        Shifted solver at one alpha.
    token : ndarray
        ``solver.prepare(Y)`` for targets ``Y`` of shape (n,) or (n, k).
    coefficients : ndarray of shape (n,) or (n, k), optional
        ``A = solver.solve_prepared(token)`` when the caller already has it (the fitted dual coefficients).

    Returns
    -------
    residuals : ndarray of shape (n,) or (n, k), float64
    """
    A = solver.solve_prepared(token) if coefficients is None else coefficients
    g = solver.inverse_diag()
    return A / (g if A.ndim == 1 else g[:, None])


def holdout_residuals(solver, token, holdouts):
    """Hold-out residuals ``Y_H - f_C(X_H) = (G_HH)^{-1} A_H``, one array per hold-out set.

    Parameters
    ----------
    solver : EigenShift or CholeskyShift
    token : ndarray
        ``solver.prepare(Y)``.
    holdouts : list of ndarray of int
        Hold-out index sets (validated with :func:`check_holdouts`).

    Returns
    -------
    residuals : list of ndarray of shape (|H|,) or (|H|, k)
    """
    A = solver.solve_prepared(token)
    if _all_singletons(holdouts):
        g = solver.inverse_diag()
        return [A[rows] / (g[rows] if A.ndim == 1 else g[rows][:, None]) for rows in holdouts]
    return [_spd_solve(solver.inverse_block(rows), A[rows]) for rows in holdouts]


def holdout_predictions(solver, Y, holdouts):
    """``f_C(X_H) = Y_H - (G_HH)^{-1} A_H`` for every hold-out set (Pahikkala 2008, eq. 2.56).

    Parameters
    ----------
    solver : EigenShift or CholeskyShift
    Y : ndarray of shape (n,) or (n, k)
        Training targets.
    holdouts : list of ndarray of int

    Returns
    -------
    predictions : list of ndarray of shape (|H|,) or (|H|, k), float64
    """
    Y = np.asarray(Y, dtype=np.float64)
    residuals = holdout_residuals(solver, solver.prepare(Y), holdouts)
    return [Y[rows] - r for rows, r in zip(holdouts, residuals, strict=True)]


def _inverse_entries(solver, rows, cols):
    """Entries ``G[rows[k], cols[k]]`` of the shifted inverse, shape (p,).

    Many pairs read them from the whole inverse (``n^2`` memory, built once); fewer than ``n`` pairs from their
    rows only (``p x n``).
    """
    if rows.size >= solver.n:
        return solver.inverse_rows(slice(None))[rows, cols]
    return solver.inverse_rows(rows)[np.arange(rows.size), cols]


def check_pairs(first, second, n, name="pairs"):
    """Validate pairs of distinct example indices in ``[0, n)``: two 1-D integer arrays of equal length.

    Returns the two arrays as ``intp``.
    """
    first, second = np.asarray(first), np.asarray(second)
    if (first.shape != second.shape or first.ndim != 1
            or not (np.issubdtype(first.dtype, np.integer) and np.issubdtype(second.dtype, np.integer))):
        raise ValueError(f"'{name}' must be two 1-D integer arrays of equal length, got dtypes {first.dtype}, "
                         f"{second.dtype} and shapes {first.shape}, {second.shape}.")
    if first.size and (min(first.min(), second.min()) < 0 or max(first.max(), second.max()) >= n):
        raise ValueError(f"'{name}' indices must lie in [0, {n}), got range "
                         f"[{min(first.min(), second.min())}, {max(first.max(), second.max())}].")
    if np.any(first == second):
        raise ValueError(f"'{name}' must pair two different examples (found a pair (i, i)).")
    return first.astype(np.intp, copy=False), second.astype(np.intp, copy=False)


def pair_holdout_predictions(solver, Y, first, second):
    """Leave-pair-out predictions: for every pair ``H = {i, j}``, ``f_C(X_H) = Y_H - (G_HH)^{-1} A_H``.

    The ``2 x 2`` systems are solved in closed form for all pairs at once (Cramer's rule on the SPD blocks
    ``[[G_ii, G_ij], [G_ij, G_jj]]``); blocks that are numerically singular go through the guarded solve of
    :func:`holdout_residuals`.

    Parameters
    ----------
    solver : EigenShift, CholeskyShift or InterceptShift
        Shifted solver at one alpha.
    Y : ndarray of shape (n,) or (n, k)
        Training targets.
    first, second : ndarray of int, shape (p,)
        The two examples held out together, pair by pair (validated with :func:`check_pairs`).

    Returns
    -------
    predictions : ndarray of shape (p, 2) or (p, 2, k), float64
        ``[f_C(x_first), f_C(x_second)]`` of the model trained without both examples of the pair.
    """
    Y = np.asarray(Y, dtype=np.float64)
    A = solver.solve_prepared(solver.prepare(Y))
    g = solver.inverse_diag()
    g_ii, g_jj, g_ij = g[first], g[second], _inverse_entries(solver, first, second)
    det = g_ii * g_jj - g_ij**2
    # A determinant at round-off level of g_ii g_jj: the block is singular in working precision.
    singular = det <= 4 * np.finfo(np.float64).eps * g_ii * g_jj
    det = np.where(singular, 1.0, det)
    if Y.ndim > 1:
        g_ii, g_jj, g_ij, det = (v[:, None] for v in (g_ii, g_jj, g_ij, det))
    A_i, A_j = A[first], A[second]
    residuals = np.stack([(g_jj * A_i - g_ij * A_j) / det, (g_ii * A_j - g_ij * A_i) / det], axis=1)
    for k in np.flatnonzero(singular):
        rows = np.array([first[k], second[k]])
        residuals[k] = _spd_solve(solver.inverse_block(rows), A[rows])
    return np.stack([Y[first], Y[second]], axis=1) - residuals


def holdout_residual_coefficients(solver, holdouts, *, stacked=False):
    """``R_H = (G_HH)^{-1} G_H``: the hold-out residual as a combination of training outputs, shape (|H|, n) each.

    ``Y_H - f_C(X_H) = R_H Y`` for every target matrix ``Y``; for explicit output features ``Psi`` the squared
    output-space error of example ``i`` is ``||R_i Psi||^2`` and, with an output Gram ``K_y``, ``R_i K_y R_i^T``.
    With ``stacked``, one array of shape (sum |H|, n) in the order of the hold-outs, filled hold-out by hold-out
    (never the list and its stacked copy at once).
    """
    def residual(rows):
        if _all_singletons(holdouts):
            return solver.inverse_rows(rows) / solver.inverse_block(rows)[0, 0]
        return _spd_solve(solver.inverse_block(rows), solver.inverse_rows(rows))

    if not stacked:
        return [residual(rows) for rows in holdouts]
    sizes = [np.arange(solver.n)[rows].size for rows in holdouts]
    out = np.empty((sum(sizes), solver.n))
    start = 0
    for rows, size in zip(holdouts, sizes, strict=True):
        out[start:start + size] = residual(rows)
        start += size
    return out


def holdout_coefficients(solver, holdouts):
    """IOKR hold-out combination coefficients ``W_H = E_H - (G_HH)^{-1} G_H``, shape (|H|, n) each.

    ``f_C(X_H) = W_H Y``; the columns of ``W_H`` in ``H`` are zero (up to round-off, set exactly to zero here),
    so the hold-out prediction combines only the outputs of the training side.
    """
    out = []
    for rows, R in zip(holdouts, holdout_residual_coefficients(solver, holdouts), strict=True):
        W = -R
        W[:, rows] = 0.0
        out.append(W)
    return out


def loo_coefficients(solver):
    """Leave-one-out combination coefficients ``W = I - G / diag(G)`` (rows), shape (n, n), zero diagonal."""
    G = solver.inverse_rows(slice(None))
    W = -(G / np.diag(G)[:, None])
    np.fill_diagonal(W, 0.0)
    return W


def sq_norms_in_kernel(coefficients, gram, working_memory=None):
    """Row-wise ``c_i K c_i^T``: squared RKHS norms of combinations ``sum_j c_ij psi(y_j)``, shape (m,); the
    product ``C K`` is formed by row blocks within ``working_memory`` (MiB; default the global budget)."""
    out = np.empty(coefficients.shape[0])
    for rows in row_slices(coefficients.shape[0], 8 * gram.shape[1], working_memory):
        block = coefficients[rows]
        out[rows] = np.einsum("ij,ij->i", block @ gram, block)
    return out

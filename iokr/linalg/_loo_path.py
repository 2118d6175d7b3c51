"""Leave-one-out squared errors over a whole alpha grid, with the per-alpha products compressed to a few alphas.

On the eigen route (``K = U diag(s) U^T``) the leave-one-out residual of example ``i`` at ``alpha`` is
``A_i / G_ii`` with ``A = U diag(g) U^T Y`` and ``g = 1 / (s + alpha)``. The diagonal ``G_ii`` costs
``O(n)`` per alpha, but ``A`` costs one ``n x n x p`` product per alpha, which dominates everything else when the
outputs are wide (IOKR with 2048-bit fingerprints: 31 such products against one eigendecomposition).

The vectors ``g(alpha_k)`` over the spectrum are samples of the Cauchy kernel ``1 / (s + alpha)``, whose matrices
have rapidly decaying rank: a few *skeleton* alphas reproduce all the others as linear combinations,

    1 / (s_a + alpha_k) = sum_j C_jk / (s_a + alpha_{S_j})     for every eigenvalue s_a,

so ``A(alpha_k) = sum_j C_jk A(alpha_{S_j})`` and only the skeleton alphas need an ``n x n x p`` product. The
skeleton is accepted only if every eigenvalue's ``g`` is reproduced to a relative tolerance (checked, not
assumed) and the combination does not amplify round-off beyond it; otherwise every alpha is computed directly.
The result is therefore the exact closed form up to that certified tolerance (1e-12 relative by default).

Model selection rarely needs 1e-12: with ``tol > 0`` the skeleton is loosened (fewer products) to the relative
accuracy that keeps every alpha's mean error within ``tol`` of its exact value, by an a-priori bound computed from the
spectrum and ``G_ii`` before any product; the run's own bounds (per example and per mean, Notes of
:func:`loo_squared_errors`) are returned, and alphas the bounds cannot order against the best are recomputed directly,
so the smallest mean is the exact route's.
"""

from __future__ import annotations

import numpy as np
from scipy import linalg as sla

from .._config import working_memory_bytes
from ._chunks import row_slices

#: Default certified relative accuracy of the skeleton combination of ``1 / (s + alpha)``.
SKELETON_RTOL = 1e-12


class AlphaSkeleton:
    """Skeleton alphas that reproduce ``1 / (s + alpha)`` over a spectrum for every alpha of a grid.

    Parameters
    ----------
    eigenvalues : ndarray of shape (n,)
        Spectrum (>= 0).
    alphas : ndarray of shape (n_alphas,)
        Regularization grid (> 0).
    rtol : float, default=SKELETON_RTOL
        Certified elementwise relative accuracy, including the round-off amplification of the combination.

    Attributes
    ----------
    indices : ndarray of shape (r,)
        Positions in ``alphas`` of the skeleton alphas (``r == n_alphas`` when compression does not pay).
    coefficients : ndarray of shape (r, n_alphas)
        ``C`` with ``1 / (s + alphas[k]) = sum_j C[j, k] / (s + alphas[indices[j]])``.
    max_relative_error : float
        Largest elementwise relative error of the combination over the spectrum and grid (0 when uncompressed).
    amplification : float
        Largest ``sum_j |C_jk| g_a(alpha_Sj) / g_a(alpha_k)``: how much the combination can amplify round-off.
    """

    def __init__(self, eigenvalues, alphas, rtol=SKELETON_RTOL):
        s = np.asarray(eigenvalues, dtype=np.float64)
        alphas = np.asarray(alphas, dtype=np.float64)
        # Search on representatives of the spectrum (nearby eigenvalues give nearly equal rows), then certify on all.
        key = np.round(np.log(s + alphas.min()) / 0.01)
        _, first = np.unique(key, return_index=True)
        for sample in (s[np.union1d(first, [np.argmin(s), np.argmax(s)])], s):
            self._search(sample, alphas, rtol)
            if self._certify(s, alphas, rtol):
                return
        self._search(s, alphas, 0.0)  # uncompressed: every alpha is its own skeleton

    def _certify(self, s, alphas, rtol):
        if not self.compressed:
            return True
        g = 1.0 / (s[:, None] + alphas[None, :])
        basis = g[:, self.indices]
        with np.errstate(all="ignore"):
            error = np.max(np.abs(basis @ self.coefficients - g) / g)
            spread = np.max((np.abs(basis) @ np.abs(self.coefficients)) / g)
        self.max_relative_error, self.amplification = float(error), float(spread)
        return bool(error + spread * np.finfo(np.float64).eps * 4 <= rtol)

    def _search(self, s, alphas, rtol):
        """Greedy skeleton: add the worst-reproduced alpha until every alpha is reproduced to ``rtol``."""
        m = alphas.size
        self.indices, self.coefficients = np.arange(m, dtype=np.intp), np.eye(m)
        self.max_relative_error, self.amplification = 0.0, 1.0
        if rtol <= 0.0 or m < 3:
            return
        g = 1.0 / (s[:, None] + alphas[None, :])
        eps = np.finfo(np.float64).eps
        chosen, errors = [], np.full(m, np.inf)
        # No more skeleton alphas than sampled eigenvalues: beyond that the least squares is underdetermined (and
        # the QR factor not square), while len(s) of them already interpolate every alpha exactly on the sample.
        while len(chosen) < min(m - 1, s.size):
            chosen.append(int(np.argmax(errors)))
            basis = g[:, chosen]
            coefficients = np.zeros((len(chosen), m))
            coefficients[np.arange(len(chosen)), chosen] = 1.0
            errors, amplification = np.zeros(m), 1.0
            for k in np.setdiff1d(np.arange(m), chosen):
                # Least squares in the relative error of every eigenvalue's entry.
                weight = 1.0 / g[:, k]
                q, r = np.linalg.qr(basis * weight[:, None])
                with np.errstate(all="ignore"):
                    c = sla.solve_triangular(r, q.T @ (g[:, k] * weight), check_finite=False)
                    error = np.max(np.abs(basis @ c - g[:, k]) * weight)
                    spread = np.max((np.abs(basis) @ np.abs(c)) * weight)
                if not (np.isfinite(error) and np.isfinite(spread)):  # dependent skeleton columns
                    error, spread = np.inf, np.inf
                coefficients[:, k] = c
                errors[k] = error
                amplification = max(amplification, float(spread))
            if errors.max() + amplification * eps * 4 <= rtol:
                self.indices = np.asarray(chosen, dtype=np.intp)
                self.coefficients = coefficients
                self.max_relative_error, self.amplification = float(errors.max()), amplification
                return

    @property
    def compressed(self):
        """True when fewer skeleton alphas than grid alphas are needed."""
        return self.indices.size < self.coefficients.shape[1]


def loo_squared_errors(path, Y, alphas, *, working_memory=None, rtol=SKELETON_RTOL, compress=True, tol=0.0,
                       return_bounds=False, projected=None):
    """Leave-one-out squared residual norms ``||y_i - f_{-i}(x_i)||^2`` for every alpha of a grid.

    Parameters
    ----------
    path : EigenPath
        Eigendecomposition of the (transformed) training Gram, ``n x n``; with ``deflate_constant`` the values are
        those of the model with an unpenalized intercept (equal to re-centering both sides on every training side).
    Y : ndarray of shape (n,) or (n, p)
        Targets (output features); not modified.
    alphas : ndarray of shape (n_alphas,)
        Regularization values (> 0).
    working_memory : float, optional
        Budget in MiB for the temporaries (output columns are processed in blocks that fit).
    rtol : float, default=SKELETON_RTOL
        Certified relative accuracy of the skeleton compression (see :class:`AlphaSkeleton`).
    compress : bool, default=True
        Use the skeleton compression when it saves products; False computes every alpha directly.
    tol : float, default=0.0
        Relative accuracy asked of the mean leave-one-out error of every alpha (``0 <= tol < 1``). ``0`` keeps the
        skeleton at ``rtol``; ``tol > 0`` loosens it to the largest relative accuracy whose a-priori certificate
        (see Notes) keeps every mean within ``tol`` of its exact value, and recomputes directly the alphas whose
        certified interval overlaps that of the best (smallest) mean, so the selected alpha is the exact route's.
    return_bounds : bool, default=False
        Also return the certified bounds (:class:`LooErrorBounds`).
    projected : ndarray of shape (n_eigenvalues, p), optional
        ``U^T Y`` when the caller has it (it serves the refit too, :meth:`EigenPath.solve_projected`); computed
        here otherwise. Not modified.

    Returns
    -------
    errors : ndarray of shape (n_alphas, n)
        Squared Euclidean norms of the leave-one-out residual rows.
    skeleton : AlphaSkeleton
        The skeleton used (``indices`` covers the whole grid when not compressed).
    bounds : LooErrorBounds
        Only with ``return_bounds``.

    Notes
    -----
    With ``Z = U^T Y`` the exact residual rows are ``E = U diag(g) Z`` and the skeleton gives
    ``U diag(g + dg) Z`` with ``|dg_a| <= eps g_a`` for every eigenvalue (``eps``: the skeleton's certified
    relative error). Since ``U`` has orthonormal columns the difference ``D`` has
    ``||D||_F <= eps (sum_a g_a^2 ||Z_a||^2)^(1/2)``, and the weighted sum ``sum_i ||E_i||^2 / G_ii^2`` changes by at
    most ``2 (n m w_max)^(1/2) ||D||_F + w_max ||D||_F^2`` (Cauchy-Schwarz; ``m`` the computed mean,
    ``w_max = max_i G_ii^-2``). Row by row, ``||D_i|| <= eps (|U| (g ||Z_a||))_i`` (triangle inequality, an
    ``n x n x n_alphas`` product). Both bounds include the float64 round-off of the products (``gamma_n |U| |B|``)
    and of ``Z``; they are computed per run from the data, not assumed. A priori ``m >= w_min S / n`` gives the
    relative bound ``2 eps kappa^(1/2) + eps^2 kappa`` with ``kappa = w_max / w_min``, from which ``tol`` sets
    ``eps`` before any product is formed. With ``tol > 0`` the squares of the combinations are taken through each
    row's ``r x r`` Gram of skeleton residuals; its round-off, ``gamma_(p + r^2) (sum_j |C_jk| ||S_j,i||)^2`` per
    example, is added to both bounds. The eigendecomposition's own error is shared with the exact route and
    not part of the bound.
    """
    tol = check_loo_tol(tol, "loo_squared_errors")
    Y = np.asarray(Y, dtype=np.float64)
    if Y.ndim == 1:
        Y = Y[:, None]
    alphas = np.asarray(alphas, dtype=np.float64)
    s, U = path.eigenvalues, path.eigenvectors
    g = 1.0 / (s[:, None] + alphas[None, :])                       # (n_eigenvalues, m)
    diag = _squared_rows_times(U, g, working_memory)                 # G_ii per alpha, (n, m)
    if tol > 0.0 and compress:
        rtol = max(rtol, _rtol_for(tol, diag))
    skeleton = AlphaSkeleton(s, alphas, rtol if compress else 0.0)
    # With tol > 0 the combinations are squared through the r x r Gram of each row's skeleton residuals (exact in
    # arithmetic, a quadratic round-off term that the bounds carry): no (n_alphas, n, p) block is ever formed.
    through_gram = tol > 0.0 and skeleton.compressed
    sq, znorm2, gram_rounding = _combined_norms(U, Y, g, skeleton.indices, skeleton.coefficients, working_memory,
                                                projected=projected, through_gram=through_gram)
    sq /= diag.T**2
    if not (return_bounds or tol > 0.0):
        return sq, skeleton
    eps = skeleton.max_relative_error + skeleton.amplification * 4 * np.finfo(np.float64).eps
    bounds = _certified_bounds(U, Y, g, diag, sq, znorm2, eps, skeleton.amplification, working_memory,
                               extra_rows=None if gram_rounding is None else gram_rounding / diag.T**2)
    refined = np.zeros(0, dtype=np.intp)
    if tol > 0.0 and skeleton.compressed:
        mean = sq.mean(axis=1)
        best = int(np.argmin(mean))
        refined = np.flatnonzero(mean - bounds.mean <= mean[best] + bounds.mean[best])
        if refined.size > 1:  # the certificate cannot order them: recompute those alphas directly
            direct, _, _ = _combined_norms(U, Y, g, refined, np.eye(refined.size), working_memory,
                                           projected=projected)
            sq[refined] = direct / diag[:, refined].T ** 2
            exact = _certified_bounds(U, Y, g[:, refined], diag[:, refined], sq[refined], znorm2, 0.0, 1.0,
                                      working_memory)
            bounds.rows[refined], bounds.mean[refined] = exact.rows, exact.mean
        else:
            refined = refined[:0]
    bounds = LooErrorBounds(bounds.rows, bounds.mean, refined)
    return (sq, skeleton, bounds) if return_bounds else (sq, skeleton)


def check_loo_tol(tol, owner):
    """``tol`` of :func:`loo_squared_errors` (and of the searches that pass it on) as a float in ``[0, 1)``."""
    if isinstance(tol, bool) or not isinstance(tol, (int, float, np.integer, np.floating)) or not 0 <= tol < 1:
        raise ValueError(f"The 'tol' parameter of {owner} must be a float in the range [0, 1). Got {tol!r} instead.")
    return float(tol)


class LooErrorBounds:
    """Certified bounds on the distance of computed leave-one-out squared errors to the exact closed form.

    Attributes
    ----------
    rows : ndarray of shape (n_alphas, n)
        ``|computed_i - exact_i|`` for every example.
    mean : ndarray of shape (n_alphas,)
        ``|mean_i computed_i - mean_i exact_i|`` (the tighter of the Frobenius bound and the mean of ``rows``).
    refined : ndarray of int
        Grid positions recomputed directly because their certified interval overlapped the best one's.
    """

    def __init__(self, rows, mean, refined=None):
        self.rows, self.mean = rows, mean
        self.refined = np.zeros(0, dtype=np.intp) if refined is None else refined


def _rtol_for(tol, diag):
    """Skeleton relative accuracy whose a-priori bound ``2 x + x^2`` (``x = eps kappa^(1/2)``) is ``tol / 2``."""
    kappa = float(np.max(np.max(diag, axis=0) ** 2 / np.min(diag, axis=0) ** 2))
    x = np.sqrt(1.0 + 0.5 * tol) - 1.0
    return float(x / np.sqrt(kappa))


def _combined_norms(U, Y, g, indices, coefficients, working_memory, *, projected=None, through_gram=False):
    """``||(U diag(g C) U^T Y)_i||^2`` for every column of ``C`` with products only at ``indices``, and
    ``||(U^T Y)_a||^2`` per eigenvector.

    Direct route: the combinations ``C^T S`` of the skeleton residuals ``S_j = U diag(g_j) U^T Y`` are formed row
    block by row block and squared. ``through_gram``: ``||sum_j C_jk S_j,i||^2 = c_k^T P_i c_k`` with the
    ``r x r`` Gram ``P_i`` of row ``i``'s skeleton residuals, which costs ``r^2`` instead of ``r n_alphas`` per
    entry; the third value is then the bound ``gamma (sum_j |C_jk| ||S_j,i||)^2`` on its round-off, shape
    ``(n_alphas, n)`` (else None).
    """
    n, m, r = U.shape[0], coefficients.shape[1], indices.size
    budget = working_memory_bytes(working_memory)
    # Per output column: the projected block, r skeleton solves and one row chunk of the m combinations.
    width = max(1, min(Y.shape[1], budget // (8 * n * (r + 3))))
    sq, znorm2 = np.zeros((m, n)), np.zeros(U.shape[1])
    pair = np.zeros((n, r, r)) if through_gram else None
    for start in range(0, Y.shape[1], width):
        columns = slice(start, start + width)
        Z = U.T @ Y[:, columns] if projected is None else projected[:, columns]  # (n, w)
        znorm2 += np.einsum("aw,aw->a", Z, Z)
        w = Z.shape[1]
        solves = np.empty((r, n, w))                                 # skeleton solves, filled in place
        for k, j in enumerate(indices):
            np.matmul(U, Z * g[:, j][:, None], out=solves[k])
        if through_gram:
            for rows in row_slices(n, 8 * 2 * r * w, working_memory):
                block = solves[:, rows, :].transpose(1, 0, 2)       # (h, r, w)
                pair[rows] += np.matmul(block, block.transpose(0, 2, 1))
            continue
        for rows in row_slices(n, 8 * (r + m) * w, working_memory):
            block = (coefficients.T @ solves[:, rows, :].reshape(r, -1)).reshape(m, -1, w)  # (m, h, w)
            sq[:, rows] += np.einsum("khw,khw->kh", block, block)
    if not through_gram:
        return sq, znorm2, None
    sq = np.maximum(np.einsum("jk,ijl,lk->ki", coefficients, pair, coefficients), 0.0)
    norms = np.sqrt(np.maximum(np.einsum("ijj->ij", pair), 0.0))     # ||S_j,i||, (n, r)
    # Each P_i entry is a float64 dot product of length p (error gamma_p ||S_j,i|| ||S_l,i||), then r^2 terms.
    gamma = 1.01 * (Y.shape[1] + r * r + 2) * np.finfo(np.float64).eps / 2
    rounding = gamma * (np.abs(coefficients).T @ norms.T) ** 2        # (m, n)
    return sq, znorm2, rounding


def _certified_bounds(U, Y, g, diag, sq, znorm2, eps, amplification, working_memory, extra_rows=None):
    """Bounds of :func:`loo_squared_errors` (Notes) for a relative error ``eps`` of the filter factors, plus
    ``extra_rows`` (shape (n_alphas, n)), a further per-example bound of how the squares were formed."""
    n, k = U.shape
    unit = np.finfo(np.float64).eps / 2
    gamma = 1.01 * (k + g.shape[1] + 2) * unit                        # float64 dot products of length <= k + m
    absU = np.abs(U)
    ynorm = np.sqrt(np.einsum("ij,ij->i", Y, Y))
    # ||Z_a|| of the exact U^T Y, from above: computed norm + round-off of the product.
    zn = np.sqrt(znorm2) + gamma * (absU.T @ ynorm)
    T = np.empty((n, g.shape[1]))
    for rows in row_slices(n, 8 * (k + g.shape[1]), working_memory):
        T[rows] = absU[rows] @ (g * zn[:, None])                   # (|U| (g ||Z_a||))_i, (n, m)
    diag_low = diag * (1.0 - gamma)                                   # (U * U) g has positive terms
    rel = eps + gamma * amplification
    delta = rel * T / diag_low                                        # residual-row error over G_ii, (n, m)
    value = np.sqrt(sq.T)                                             # computed ||E_i|| / G_ii
    rows = (2 * value * delta + delta**2 + 4 * gamma * sq.T).T       # (m, n)
    if extra_rows is not None:
        rows = rows + extra_rows
    # Frobenius route: ||D||_F <= eps (sum_a g_a^2 ||Z_a||^2)^(1/2) + round-off of the rows.
    frob = eps * np.sqrt((g**2).T @ zn**2) + gamma * amplification * np.sqrt(np.einsum("im,im->m", T, T))
    wmax = np.max(1.0 / diag_low**2, axis=0)
    mean_sq = sq.mean(axis=1)
    mean = (2 * np.sqrt(n * mean_sq * wmax) * frob + wmax * frob**2) / n + 4 * gamma * mean_sq
    if extra_rows is not None:
        mean = mean + extra_rows.mean(axis=1)
    return LooErrorBounds(rows, np.minimum(mean, rows.mean(axis=1)))


def _squared_rows_times(U, right, working_memory):
    """``(U * U) @ right`` in row chunks, never holding the whole squared matrix."""
    out = np.empty((U.shape[0], right.shape[1]))
    for rows in row_slices(U.shape[0], 8 * (U.shape[1] + right.shape[1]), working_memory):
        out[rows] = (U[rows] * U[rows]) @ right
    return out

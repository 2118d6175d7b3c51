"""Kronecker ridge regression on complete labels: closed-form dual coefficients and hold-out predictions.

:func:`kron_ridge_dual` solves ``K1 A K2 + alpha A = Y`` (the one place the "Kronecker + alpha I" solve is written;
:class:`~iokr.linalg.KroneckerOperator` and the estimators call it), :func:`kron_ridge_symmetric_dual` its
one-domain symmetric/reciprocal variant and :func:`kron_leverages` the diagonal of its hat matrix;
:func:`kron_ridge_holdout` gives settings A-C and :func:`kron_ridge_leave_edge_out` one-domain setting A in closed
form (their docstrings carry the formulas); :func:`leave_row_and_column_out` gives setting D for a grid of alphas,
derived below.

Complete labels ``Y`` of shape (n1, n2), ``K1 = V S1 V^T``, ``K2 = U S2 U^T``; the Kronecker ridge model has dual
coefficients ``A = V [(V^T Y U) / (s1 s2^T + alpha)] U^T``. The setting-D prediction of entry ``(i, j)`` comes from
the model trained on rows ``R = {1..n1} minus i`` and columns ``{1..n2} minus j``, evaluated at the new row ``i``
and the new column ``j``.

Row ``i`` is left out by decomposing ``K1_RR = V' diag(s1') V'^T`` (one eigendecomposition per row); column ``j``
by the leave-one-column-out shortcut on that model: in the eigenbasis of ``K1_RR`` the problem splits into
``n1 - 1`` kernel ridge regressions over columns with kernel ``s1'_k K2`` and targets ``Z_k`` (``Z = V'^T Y_R``),
and leaving column ``j`` out of each is their leave-one-out. With ``Yt = Z U``, ``D = 1 / (s1' s2^T + alpha)``,
``UU = (U o U)^T`` and ``q = V'^T K1[R, i]``, the leave-one-out residual of problem ``k`` at column ``j`` is
``r_kj = [(D o Yt) U^T]_kj / [D UU]_kj`` (the complement weights ``alpha D`` over their own leverage sum, with
``alpha`` cancelled), and the prediction at the new row is

    f(i, j) = sum_k (q_k / s1'_k) Z_kj  -  sum_k (q_k / s1'_k) [(D o Yt) U^T]_kj / [D UU]_kj.       (B)

The first sum does not depend on alpha, so every alpha costs two products of shape ``(n1 - 1, n2) x (n2, n2)``.
The identities ``s1'_k s2 D = 1 - alpha D``, ``Yt U^T = Z`` and ``UU 1 = 1`` turn (B), term by term, into the hat
form

    f_k(i, j) = q_k [((s2 D) o Yt) U^T - H o Z]_kj / (1 - s1'_k H_kj),     H = (s2 D) UU,                (A')

whose denominator is ``alpha D UU`` and whose two products have the same shapes. The forms cancel in opposite
regimes. (B) divides by ``s1'_k`` and, where ``alpha`` exceeds every ``s1'_k s2_b``, subtracts from ``Z`` a residual
that is nearly ``Z`` (the model predicts little); (A') subtracts, where every ``s1'_k s2_b`` exceeds ``alpha``, two
terms of size ``|Z| / s1'_k`` whose difference is ``alpha / (s1'_k s2)`` smaller. So row ``k`` takes (B) when
``s1'_k max(s2) > alpha`` and ``s1'_k > RESIDUAL_FORM_RTOL * max(s1')``, and (A') otherwise, where
``s1'_k H_kj <= 1/2`` keeps its denominator free of cancellation; per alpha, the weights of the two products are
``D`` or ``s2 D`` row by row. Against an extended-precision brute force over ``alpha`` in ``1e-6..1e3``
(``tests/linalg/test_kron_holdout.py``, unit-scale kernels) this is within ``6e-15`` of ``max |f|`` at every alpha
for full-rank kernels, where the previous route (the three-product form ``q_k [((s2 D) o Yt) U^T - H o Z] /
(alpha D UU)`` on every row) was off by up to ``2e-10`` at ``1e-6``; with rank-deficient kernels both are off by up to
``1e-10`` at ``1e-6``, the conditioning ``||K1|| ||K2|| / alpha`` of the problem itself.

Only ``D`` depends on alpha: the eigendecomposition of every ``K1_RR``, ``Z``, ``Yt`` and ``q`` are computed once per
row and serve every alpha. The per-alpha products are exact and are not shared between alphas. Sharing them through a
few skeleton alphas (:class:`~iokr.linalg._loo_path.AlphaSkeleton`, ``D(alpha_k) = sum_j C_jk D(alpha_Sj)``
elementwise) does not pay here: the products ``s1'_a s2_b`` fill the range of a log-spaced grid densely, and a
relative accuracy of ``1e-12`` on ``1 / (x + alpha)`` then needs 26-31 skeleton alphas out of 31 (``1e-6``: 23-27),
as the Cauchy-kernel rank ``~ log(range) log(1/eps) / pi^2`` predicts; ``benchmarks/bench_kron_path.py`` reports
the skeleton size next to the timings and both floors.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ._chunks import chunk_rows
from ._eigen import EigenPath

#: Rows of the leave-one-row-out eigenbasis with ``s1'_k`` at most this fraction of the largest take the hat form (A')
#: of the module notes at every alpha, never the residual form (B), which divides by ``s1'_k``. The square root of
#: the float64 epsilon: the division then amplifies round-off by at most ``~1e4`` for a PSD ``K1``, since
#: ``q_k^2 <= s1'_k K1_ii``.
RESIDUAL_FORM_RTOL = 1e-8

#: Bytes of per-chunk temporaries kept near a core's L2 cache (1 MiB) when the budget allows more.
_CACHE_BYTES = 2**20


def kron_ridge_dual(V, s1, U, s2, Y, alpha):
    """Dual coefficients of Kronecker ridge regression on complete labels.

    Parameters
    ----------
    V, s1 : ndarray of shape (n1, n1) and (n1,)
        Eigenvectors and eigenvalues of ``K1``.
    U, s2 : ndarray of shape (n2, n2) and (n2,)
        Eigenvectors and eigenvalues of ``K2``.
    Y : ndarray of shape (n1, n2)
        Labels.
    alpha : float
        Regularization > 0.

    Returns
    -------
    A : ndarray of shape (n1, n2)
        ``A = V [(V^T Y U) / (s1 s2^T + alpha)] U^T``, the solution of ``K1 A K2 + alpha A = Y``.
    """
    return V @ ((V.T @ Y @ U) / (np.outer(s1, s2) + alpha)) @ U.T


def kron_ridge_symmetric_dual(V, s, Y, alpha, sign):
    """Dual coefficients of one-domain Kronecker ridge regression with a symmetric or reciprocal pair kernel.

    Parameters
    ----------
    V, s : ndarray of shape (n, n) and (n,)
        Eigenvectors and eigenvalues of the node kernel ``K``.
    Y : ndarray of shape (n, n)
        Labels of all ordered pairs, ``Y[r, c]`` for the pair ``(r, c)``.
    alpha : float
        Regularization > 0.
    sign : {+1, -1}
        +1 for the symmetric kernel ``(K kron K)(I + P) / 2``, -1 for the reciprocal ``(K kron K)(I - P) / 2``.

    Returns
    -------
    A : ndarray of shape (n, n)
        Solution of ``((K kron K) S + alpha I) vec(A) = vec(Y)``, ``S = (I + sign P) / 2``. ``S`` is an orthogonal
        projection commuting with ``K kron K``, so the inverse is ``S (K kron K + alpha I)^{-1} + (I - S) / alpha``:
        ``A = kron_ridge_dual(S Y) + (Y - S Y) / alpha`` with ``S Y = (Y + sign Y^T) / 2``.
    """
    projected = 0.5 * (Y + sign * Y.T)
    return kron_ridge_dual(V, s, V, s, projected, alpha) + (Y - projected) / alpha


def kron_leverages(V, s1, U, s2, alpha):
    """Diagonal of the Kronecker ridge hat matrix and its complement, both as (n1, n2) matrices.

    Arguments as :func:`kron_ridge_dual`. Returns ``(h, c)`` with ``h = diag(H)`` of
    ``H = (K2 kron K1)(K2 kron K1 + alpha I)^{-1}``, ``h = (V o V) W (U o U)^T`` with
    ``W = s1 s2^T / (s1 s2^T + alpha)``, and ``c = 1 - h`` computed as ``(V o V) Wc (U o U)^T`` with the complement
    weights ``Wc = alpha / (s1 s2^T + alpha)``: the rows of the orthogonal ``V`` and ``U`` have unit norm, so ``c``
    has no cancellation when the leverage ``h`` is close to 1 (small alpha).
    """
    grid = np.outer(s1, s2)
    VV, UU = V * V, (U * U).T
    return VV @ (grid / (grid + alpha)) @ UU, VV @ (alpha / (grid + alpha)) @ UU


def kron_ridge_holdout(V, s1, U, s2, Y, alpha, setting):
    """Closed-form hold-out predictions of Kronecker ridge regression on complete labels, settings A, B and C.

    Arguments as :func:`kron_ridge_dual`, and ``setting`` in {"A", "B", "C"}; returns an array of shape (n1, n2).

    Setting A (leave one pair out): with ``H = (K2 kron K1)(K2 kron K1 + alpha I)^{-1}``,
    ``f = (p - diag(H) y) / (1 - diag(H))``, the leverages from :func:`kron_leverages`.

    Settings B / C (leave one row / column out): in the eigenbasis of ``K2``, the problem splits into
    independent kernel ridge regressions over rows with kernel ``s2_b K1``; leaving a row out of every column
    is leave-one-out of each of them: ``Z = Y U``, ``F = (Z_hat - h o Z) / (1 - h)`` with ``h = (V o V) W``,
    then back-rotated by ``U^T``. Setting C is the same with the roles of the domains swapped.
    """
    grid = np.outer(s1, s2)
    W = grid / (grid + alpha)
    # 1 - h from the complement weights alpha / (s1 s2 + alpha): the rows of the orthogonal V and U have unit norm,
    # so this has no cancellation when the leverage h is close to 1 (small alpha).
    Wc = alpha / (grid + alpha)
    Yt = V.T @ Y @ U
    if setting == "A":
        h, c = kron_leverages(V, s1, U, s2, alpha)
        return (V @ (W * Yt) @ U.T - h * Y) / c
    if setting == "B":
        Z = Y @ U
        VV = V * V
        return ((V @ (W * Yt) - (VV @ W) * Z) / (VV @ Wc)) @ U.T
    Z = V.T @ Y
    UU = (U * U).T
    return V @ (((W * Yt) @ U.T - (W @ UU) * Z) / (Wc @ UU))


def kron_ridge_leave_edge_out(V, s, Y, A, alpha, sign):
    """Leave-edge-out predictions of one-domain Kronecker ridge regression on complete labels.

    ``K = V diag(s) V^T``, fitted dual coefficients ``A``, ``sign`` +1 (symmetric) or -1 (reciprocal); returns an
    array of shape (n, n) in which ``(i, j)`` is predicted by the model trained without both directions ``(i, j)``
    and ``(j, i)`` (one edge of a symmetric/reciprocal relation).

    With ``M = (K kron K + alpha I)^{-1}`` and ``S = (I + sign P) / 2``, the regularized matrix
    ``G = (K kron K) S + alpha I`` has ``G^{-1} = S M + (I - S) / alpha``. The ridge hold-out formula
    ``f_E = y_E - (G^{-1}_EE)^{-1} a_E`` on ``E = {(i, j), (j, i)}`` needs ``m_d = M[(i,j),(i,j)] =
    ((V o V) D (V o V)^T)_ij`` and ``m_x = M[(i,j),(j,i)] = sum_kl V_ik V_jk V_il V_jl D_kl`` (``D = 1 / (s s^T +
    alpha)``): ``G^{-1}_EE = [[g, sign (g - 1/alpha)], [sign (g - 1/alpha), g]]`` with ``g = (m_d + sign m_x) / 2 +
    1 / (2 alpha)``, whose determinant is ``(m_d + sign m_x) / alpha``. ``m_x`` costs ``O(n^4)`` (``n`` products
    of ``n x n`` matrices). A self-pair ``(i, i)`` is its own edge (``G^{-1}_ee = m_d`` or ``1 / alpha``).
    """
    D = 1.0 / (np.outer(s, s) + alpha)
    VV = V * V
    m_d = VV @ D @ VV.T
    m_x = np.empty_like(m_d)
    for i in range(V.shape[0]):
        Z = V * V[i]
        m_x[i] = np.einsum("jk,jk->j", Z @ D, Z)
    g = 0.5 * (m_d + sign * m_x) + 0.5 / alpha
    det = (m_d + sign * m_x) / alpha
    with np.errstate(divide="ignore", invalid="ignore"):
        out = Y - (g * A - sign * (g - 1.0 / alpha) * A.T) / det
    diag = np.diagonal(m_d) if sign > 0 else np.full(Y.shape[0], 1.0 / alpha)
    np.fill_diagonal(out, np.diagonal(Y) - np.diagonal(A) / diag)
    return out


def leave_row_and_column_out(K1, eig2, Y, alphas, *, working_memory=None):
    """Setting-D hold-out predictions of Kronecker ridge regression on complete labels, for every alpha.

    Parameters
    ----------
    K1 : ndarray of shape (n1, n1)
        Symmetric PSD Gram matrix of the rows (the domain left out by eigendecomposition; pass the smaller one).
    eig2 : EigenPath
        Eigendecomposition of the column Gram matrix ``K2`` of shape (n2, n2).
    Y : ndarray of shape (n1, n2)
        Complete labels.
    alphas : array-like of shape (n_alphas,)
        Regularization values > 0.
    working_memory : float, optional
        Budget in MiB for the per-row temporaries (``n_alphas`` is processed in chunks); defaults to the global
        setting.

    Returns
    -------
    P : ndarray of shape (n_alphas, n1, n2)
        ``P[a, i, j]``: prediction for ``(i, j)`` of the model trained at ``alphas[a]`` without row ``i`` and
        column ``j`` (module notes: the residual form (B) or the hat form (A') per row of ``K1_RR``'s eigenbasis
        and alpha, two products of shape ``(n1 - 1, n2) x (n2, n2)`` per row and alpha).
    """
    K1 = np.asarray(K1, dtype=np.float64)
    Y = np.asarray(Y, dtype=np.float64)
    alphas = np.atleast_1d(np.asarray(alphas, dtype=np.float64))
    n1, n2 = Y.shape
    U, s2 = eig2.eigenvectors, eig2.eigenvalues
    Ut, UU = np.ascontiguousarray(U.T), np.ascontiguousarray((U * U).T)
    m = n1 - 1
    out = np.empty((alphas.size, n1, n2))
    # A chunk of alphas holds three (chunk, n1 - 1, n2) buffers: the weights, the denominators and the numerators.
    # Stacking more alphas into one product does not make it faster per alpha (benchmarks/bench_kron_path.py), so the
    # chunk is also kept small enough for the buffers to stay in cache.
    row_bytes = 3 * 8 * max(m, 1) * n2
    step = min(chunk_rows(alphas.size, row_bytes, working_memory), max(1, _CACHE_BYTES // row_bytes))
    buffers = np.empty((3, step, m, n2))
    for i in range(n1):
        rest = np.delete(np.arange(n1), i)
        eig1 = EigenPath(K1[np.ix_(rest, rest)], name="K1")
        V, s1 = eig1.eigenvectors, eig1.eigenvalues
        Z = V.T @ Y[rest]
        Yt = Z @ U
        q = K1[i, rest] @ V
        safe = s1 > RESIDUAL_FORM_RTOL * (s1.max() if m else 0.0)
        c = np.divide(q, s1, out=np.zeros_like(q), where=safe)
        row = _RowTerms(np.outer(s1, s2), s1, s2, Yt, Z, q, c, c[:, None] * Z, safe)
        for lo in range(0, alphas.size, step):
            a = alphas[lo:lo + step]
            out[lo:lo + step, i] = _two_product_forms(row, Ut, UU, a, buffers[:, :a.size])
    return out


class _RowTerms(NamedTuple):
    """The alpha-free terms of one left-out row (module notes); ``c = q / s1'`` is 0 where form (B) is never used
    (``safe`` False), ``cZ = c o Z``."""

    x: np.ndarray       # s1' s2^T, (n1 - 1, n2)
    s1: np.ndarray
    s2: np.ndarray
    Yt: np.ndarray
    Z: np.ndarray
    q: np.ndarray
    c: np.ndarray
    cZ: np.ndarray
    safe: np.ndarray


def _two_product_forms(row, Ut, UU, alphas, buffers):
    """``f(i, :)`` for every alpha of a chunk, form (B) or (A') per eigenvector row; shape (n_alphas, n2).

    Rows with ``s1'_k max(s2) > alpha`` (and ``s1'_k`` not negligible) take the residual form (B) with weights
    ``G = D``; the others take the hat form (A') with weights ``G = s2 D``. Both need only ``(G o Yt) U^T`` and
    ``G UU``, so the two products are formed once on all rows with the weights chosen row by row. ``buffers`` has
    shape (3, n_alphas, n1 - 1, n2) and is overwritten.
    """
    s1, s2, Z = row.s1, row.s2, row.Z
    residual = row.safe[None, :] & (s1[None, :] * max(float(s2.max()), 0.0) > alphas[:, None])  # (chunk, k)
    # s1' is ascending, so the hat-form rows of every alpha are a leading block: rows[:hat[a]].
    hat = residual.shape[1] - residual.sum(axis=1)
    G, den, num = buffers
    n2 = G.shape[2]
    np.add(row.x, alphas[:, None, None], out=G)
    np.reciprocal(G, out=G)
    for a, h in enumerate(hat):
        G[a, :h] *= s2
    np.matmul(G.reshape(-1, n2), UU, out=den.reshape(-1, n2))
    np.multiply(G, row.Yt, out=G)
    np.matmul(G.reshape(-1, n2), Ut, out=num.reshape(-1, n2))
    # (B): -c_k [(D o Yt) U^T]_kj / [D UU]_kj, plus the alpha-free c_k Z_kj (summed below through the mask).
    # (A'): q_k [((s2 D) o Yt) U^T - ((s2 D) UU) o Z]_kj / (1 - s1'_k [(s2 D) UU]_kj), the last being alpha D UU,
    # free of cancellation there since s1'_k (s2 D) UU <= s1'_k max(s2) / (s1'_k max(s2) + alpha) <= 1/2.
    for a, h in enumerate(hat):
        num[a, :h] -= den[a, :h] * Z[:h]
        den[a, :h] *= -s1[:h, None]
        den[a, :h] += 1.0
    np.divide(num, den, out=num)
    weights = np.where(residual, -row.c[None, :], row.q[None, :])
    return np.matmul(weights[:, None, :], num)[:, 0, :] + residual.astype(np.float64) @ row.cZ

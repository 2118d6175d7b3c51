"""Conditional ranking with Kronecker kernels: the per-row centered loss, its closed form and hold-out predictions.

The ranking loss of Pahikkala et al. (2013, eq. 30-33) centers the labels of every conditioning (row) node. On
labelled pairs this is the projection :class:`~iokr.linalg.developer.BlockCentering` with one group per row and unit scales
(used by the conjugate-gradient route of the estimator); on complete labels ``Y`` of shape (n1, n2) it is
``Y C`` with ``C`` the n2 x n2 centering matrix, and the model is Kronecker ridge regression on the factors ``K1``
and ``C K2 C`` (:func:`kron_ranking_factors`, Corollary 2).

Hold-out. The per-row centered loss ``||(Y - F) C||^2`` equals ``min_b ||Y - F - b 1^T||^2``, so conditional
ranking is Kronecker ridge regression with one unpenalized intercept per row: a penalized least-squares fit whose
hat matrix maps ``Y`` to ``H Y = Y J / n2 + V (W o (V^T Y U)) U^T`` (``K1 = V S1 V^T``, ``C K2 C = U S2 U^T``,
``W = s1 s2^T / (s1 s2^T + alpha)``). The model trained without a set ``S`` of pairs equals the full model refitted
with ``y_S`` replaced by its own predictions, ``(I - H_SS) f_S = (H y)_S - H_SS y_S``:

- A (one pair): ``H_SS`` is the diagonal ``h = 1 / n2 + (V o V) W (U o U)^T``;
- B (one row): leave-row-out of Kronecker ridge regression on ``(K1, C K2 C, Y C)`` (a whole row comes from one
  model, so only its centered scores are defined);
- C (one column): ``H_SS = I / n2 + V diag(d_j) V^T`` with ``d_j = W (U o U)^T e_j`` is diagonal in the eigenbasis
  of ``K1``, so every column costs ``O(n1^2)``;
- D (row and column): ``n1`` row refits, each with the closed-form column hold-out
  (:func:`kron_ranking_leave_row_and_column_out`).

The complements ``1 - h`` are written with the weights ``Wc = alpha / (s1 s2^T + alpha)``; the constant direction
of ``C K2 C`` (eigenvalue 0, so ``Wc = 1``) carries the ``1 / n2`` of the intercept, which is subtracted.
"""

from __future__ import annotations

import numpy as np

from ._eigen import EigenPath
from ._kron_holdout import kron_leverages, kron_ridge_holdout

__all__ = [
    "kron_ranking_factors",
    "kron_ranking_holdout",
    "kron_ranking_leave_row_and_column_out",
]


def kron_ranking_factors(K2, Y):
    """Column factor and labels of conditional ranking on complete labels: ``(C K2 C, Y C)``.

    Parameters
    ----------
    K2 : ndarray of shape (n2, n2)
        Column (ranked-object) kernel.
    Y : ndarray of shape (n1, n2)
        Complete labels.

    Returns
    -------
    K2c : ndarray of shape (n2, n2)
        ``C K2 C`` with ``C = I - 1 1^T / n2``.
    Yc : ndarray of shape (n1, n2)
        Labels centered per row.
    """
    n2 = K2.shape[0]
    C = np.eye(n2) - np.full((n2, n2), 1.0 / n2)
    return C @ K2 @ C, Y - Y.mean(axis=1, keepdims=True)


def _hat_parts(V, s1, U, s2, Y, alpha):
    """``(V^T H Y, Z = V^T Y, W, Wc)`` of the intercept form (module notes)."""
    grid = np.outer(s1, s2)
    W, Wc = grid / (grid + alpha), alpha / (grid + alpha)
    Z = V.T @ Y
    VtHY = Z.mean(axis=1, keepdims=True) + (W * (Z @ U)) @ U.T
    return VtHY, Z, W, Wc


def _leave_column_out(V, s1, U, s2, Y, alpha):
    """Setting C of the module notes; ``F`` of shape (n1, n2)."""
    n2 = Y.shape[1]
    VtHY, Z, W, Wc = _hat_parts(V, s1, U, s2, Y, alpha)
    UU = (U * U).T
    return V @ ((VtHY - (W @ UU + 1.0 / n2) * Z) / (Wc @ UU - 1.0 / n2))


def kron_ranking_holdout(V, s1, U, s2, Y, alpha, setting):
    """Closed-form hold-out predictions of conditional ranking on complete labels, settings A, B and C.

    Parameters
    ----------
    V, s1 : ndarray of shape (n1, n1) and (n1,)
        Eigenvectors and eigenvalues of ``K1``.
    U, s2 : ndarray of shape (n2, n2) and (n2,)
        Eigenvectors and eigenvalues of ``C K2 C`` (:func:`kron_ranking_factors`).
    Y : ndarray of shape (n1, n2)
        Labels (not centered).
    alpha : float
        Regularization > 0.
    setting : {"A", "B", "C"}
        Pair, row or column held out (module notes).

    Returns
    -------
    F : ndarray of shape (n1, n2)
        Settings A and C include the least-squares row intercept of the model that made each prediction; setting
        B gives row-centered scores.
    """
    n2 = Y.shape[1]
    if setting == "A":
        VtHY = _hat_parts(V, s1, U, s2, Y, alpha)[0]
        h, c = kron_leverages(V, s1, U, s2, alpha)
        return (V @ VtHY - (h + 1.0 / n2) * Y) / (c - 1.0 / n2)
    if setting == "C":
        return _leave_column_out(V, s1, U, s2, Y, alpha)
    return kron_ridge_holdout(V, s1, U, s2, Y - Y.mean(axis=1, keepdims=True), alpha, "B")


def kron_ranking_leave_row_and_column_out(K1, K2, eig2, Y, alpha):
    """Setting-D hold-out predictions of conditional ranking on complete labels.

    Parameters
    ----------
    K1 : ndarray of shape (n1, n1)
        Row kernel.
    K2 : ndarray of shape (n2, n2)
        Column kernel (not centered).
    eig2 : EigenPath
        Eigendecomposition of ``C K2 C``.
    Y : ndarray of shape (n1, n2)
        Labels (not centered; each training row is centered here).
    alpha : float
        Regularization > 0.

    Returns
    -------
    F : ndarray of shape (n1, n2)
        ``F[v, j]``: plain kernel score of the model trained without row ``v`` and column ``j``.

    Notes
    -----
    Row ``v`` is left out by retraining (``n1`` eigendecompositions of ``K1`` without ``v``), column ``j`` in closed
    form on that model. The model without column ``j`` equals the full model refitted on labels whose column ``j`` is
    replaced by its hold-out prediction ``f_j`` (setting C), so its dual coefficients are
    ``A + V [((V^T delta_j) (C U)_j^T) / (s1 s2^T + alpha)] U^T`` with ``delta_j = f_j - y_j``; the new row's score
    ``K1[v, R] A^(-j) K2[:, j]`` then needs only ``T[k, j] = sum_l ((C U)_jl (K2 U)_jl) / (s1_k s2_l + alpha)``.
    """
    n1 = Y.shape[0]
    U, s2 = eig2.eigenvectors, eig2.eigenvalues
    CU = U - U.mean(axis=0)
    K2U = K2 @ U
    out = np.empty(Y.shape)
    for v in range(n1):
        rest = np.delete(np.arange(n1), v)
        eig1 = EigenPath(K1[np.ix_(rest, rest)], name="K1")
        V, s1 = eig1.eigenvectors, eig1.eigenvalues
        Yr = Y[rest]
        inv = 1.0 / (np.outer(s1, s2) + alpha)
        A = V @ ((V.T @ (Yr - Yr.mean(axis=1, keepdims=True)) @ U) * inv) @ U.T
        delta = _leave_column_out(V, s1, U, s2, Yr, alpha) - Yr
        T = inv @ (CU * K2U).T
        q = K1[v, rest] @ V
        out[v] = (K1[v, rest] @ A) @ K2 + q @ ((V.T @ delta) * T)
    return out

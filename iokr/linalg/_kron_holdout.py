"""Leave-row-and-column-out ("setting D") predictions of Kronecker ridge regression, for a grid of alphas.

Complete labels ``Y`` of shape (n1, n2), ``K1 = V S1 V^T``, ``K2 = U S2 U^T``; the Kronecker ridge model has dual
coefficients ``A = V [(V^T Y U) / (s1 s2^T + alpha)] U^T``. The setting-D prediction of entry ``(i, j)`` comes from
the model trained on rows ``R = {1..n1} minus i`` and columns ``{1..n2} minus j``, evaluated at the new row ``i``
and the new column ``j``.

Row ``i`` is left out by decomposing ``K1_RR = V' diag(s1') V'^T`` (one eigendecomposition per row); column ``j``
by the leave-one-column-out shortcut on that model: in the eigenbasis of ``K1_RR`` the problem splits into
``n1 - 1`` kernel ridge regressions over columns with kernel ``s1'_k K2``, and leaving column ``j`` out of each is
their leave-one-out. With ``Z = V'^T Y_R``, ``Yt = Z U``, ``D = 1 / (s1' s2^T + alpha)`` and ``UU = (U o U)^T``,

    f(i, j) = sum_k q_k [((s2 D) o Yt) U^T - ((s2 D) UU) o Z]_kj / [alpha D UU]_kj,   q = V'^T K1[R, i],

which is the setting-C formula divided through by ``s1'`` (no division by tiny eigenvalues) and, in the
denominator, ``1 - h`` written as the complement weights ``alpha D`` (no cancellation when ``h`` is close to 1).

Only ``D`` depends on alpha: the eigendecomposition of every ``K1_RR``, ``Z``, ``Yt`` and ``q`` are computed once per
row and serve every alpha, so a grid costs ``n1`` eigendecompositions of size ``n1 - 1`` plus, per alpha and row,
three products of shape ``(n1 - 1, n2) x (n2, n2)``. The per-alpha products are exact and cannot be shared
between alphas (``D`` enters inside a sum over the eigenvalues of ``K2``), so a long grid costs more than one
alpha even though nothing is decomposed twice; ``benchmarks/bench_kron.py`` reports the ratio with both floors.
"""

from __future__ import annotations

import numpy as np

from ._chunks import chunk_rows
from ._eigen import EigenPath


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
        column ``j`` (see the module notes for the formula).
    """
    K1 = np.asarray(K1, dtype=np.float64)
    Y = np.asarray(Y, dtype=np.float64)
    alphas = np.atleast_1d(np.asarray(alphas, dtype=np.float64))
    n1, n2 = Y.shape
    U, s2 = eig2.eigenvectors, eig2.eigenvalues
    UU = (U * U).T
    m = n1 - 1
    out = np.empty((alphas.size, n1, n2))
    # Per alpha in a chunk: denominator, two weight arrays, the products and the quotient, each (n1 - 1, n2).
    step = chunk_rows(alphas.size, 6 * 8 * max(m, 1) * n2, working_memory)
    for i in range(n1):
        rest = np.delete(np.arange(n1), i)
        eig1 = EigenPath(K1[np.ix_(rest, rest)], name="K1")
        V, s1 = eig1.eigenvectors, eig1.eigenvalues
        Z = V.T @ Y[rest]
        Yt = Z @ U
        q = K1[i, rest] @ V
        for lo in range(0, alphas.size, step):
            a = alphas[lo:lo + step]
            D = s1[None, :, None] * s2[None, None, :] + a[:, None, None]  # (chunk, m, n2)
            np.reciprocal(D, out=D)
            Dw = D * s2
            num = ((Dw * Yt).reshape(-1, n2) @ U.T).reshape(D.shape)
            num -= (Dw.reshape(-1, n2) @ UU).reshape(D.shape) * Z
            num /= (D.reshape(-1, n2) @ UU).reshape(D.shape)  # alpha D UU, the alpha divided out after the sum
            out[lo:lo + step, i] = np.einsum("k,akj->aj", q, num) / a[:, None]
    return out

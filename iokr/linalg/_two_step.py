"""Two-step kernel ridge regression on complete labels: dual coefficients and closed-form hold-out predictions.

A ridge regression over rows followed by one over columns (Pahikkala et al. 2014; Stock et al. 2018):
``A = (K1 + alpha1 I)^{-1} Y (K2 + alpha2 I)^{-1}``, fitted values ``H1 Y H2`` with ``Hk = Kk (Kk + alpha_k I)^{-1}``.
Because the fit is a product of two ridge smoothers, each setting's hold-out is a leave-one-out of one or both:

- A (pair): the self-consistent imputation ``f = (H1 Y H2 - h1 h2 o Y) / (1 - h1 h2)`` (``hk = diag(Hk)``), with
  ``1 - h1 h2 = (1 - h1) + h1 (1 - h2)``;
- B (row): leave-one-out of the row smoother applied to ``Y H2``;
- C (column): leave-one-out of the column smoother applied to ``H1 Y``;
- D (row and column): the column leave-one-out of ``Y``, then the row leave-one-out of that (exact).

Every complement ``1 - hk`` is computed from the weights ``alpha / (s + alpha)`` (no cancellation near ``hk = 1``).
"""

from __future__ import annotations

__all__ = ["two_step_dual", "two_step_holdout"]


def two_step_dual(eig1, eig2, Y, alpha1, alpha2):
    """Dual coefficients ``A = (K1 + alpha1 I)^{-1} Y (K2 + alpha2 I)^{-1}``.

    Parameters
    ----------
    eig1, eig2 : EigenPath
        Decompositions of the row kernel ``K1`` (n1 x n1) and column kernel ``K2`` (n2 x n2).
    Y : ndarray of shape (n1, n2)
        Complete labels.
    alpha1, alpha2 : float
        Row and column regularization, > 0.

    Returns
    -------
    A : ndarray of shape (n1, n2)
    """
    return eig1.solve(eig2.solve(Y.T, alpha2).T, alpha1)


def _smoother(eig, alpha):
    """Hat matrix ``H``, its diagonal ``h`` and ``1 - h`` from the complement weights."""
    Q, s = eig.eigenvectors, eig.eigenvalues
    QQ = Q * Q
    return (Q * (s / (s + alpha))) @ Q.T, QQ @ (s / (s + alpha)), QQ @ (alpha / (s + alpha))


def two_step_holdout(eig1, eig2, Y, alpha1, alpha2, setting):
    """Closed-form hold-out predictions of two-step kernel ridge regression in settings A-D.

    Parameters
    ----------
    eig1, eig2, Y, alpha1, alpha2
        As :func:`two_step_dual`.
    setting : {"A", "B", "C", "D"}
        Pair, row, column, or row and column held out (module notes).

    Returns
    -------
    F : ndarray of shape (n1, n2)
        Each entry predicted by the model trained without the pairs the setting holds out with it.
    """
    (H1, h1, c1), (H2, h2, c2) = _smoother(eig1, alpha1), _smoother(eig2, alpha2)
    h1, c1, h2, c2 = h1[:, None], c1[:, None], h2[None, :], c2[None, :]
    if setting == "A":
        return (H1 @ Y @ H2 - h1 * h2 * Y) / (c1 + h1 * c2)
    if setting == "B":
        YH2 = Y @ H2
        return (H1 @ YH2 - h1 * YH2) / c1
    if setting == "C":
        H1Y = H1 @ Y
        return (H1Y @ H2 - H1Y * h2) / c2
    loo_cols = (Y @ H2 - Y * h2) / c2
    return (H1 @ loo_cols - h1 * loo_cols) / c1

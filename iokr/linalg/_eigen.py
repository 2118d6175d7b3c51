"""Eigendecomposition path: decompose a PSD matrix once, solve ``(K + alpha I) X = B`` for many alphas.

With ``K = Q diag(s) Q^T`` every shifted solve costs two matrix products,
``X = Q ((Q^T B) / (s + alpha))``, which is what makes regularization paths and closed-form
cross-validation nearly free (Pahikkala 2008, eq. 2.47; scikit-learn's ``_RidgeGCV``).
"""

from __future__ import annotations

import numpy as np
from scipy import linalg as sla


def _psd_clip(eigenvalues, name):
    """Clip round-off negative eigenvalues to zero; raise on clearly indefinite matrices."""
    largest = float(np.max(np.abs(eigenvalues))) if eigenvalues.size else 0.0
    tol = 1e-8 * max(largest, 1.0) * max(eigenvalues.size, 1) ** 0.5
    most_negative = float(eigenvalues.min()) if eigenvalues.size else 0.0
    if most_negative < -max(tol, 1e-5 * largest):
        raise ValueError(
            f"'{name}' is not positive semidefinite: smallest eigenvalue {most_negative:.3g} "
            f"vs largest {largest:.3g}. Check the kernel."
        )
    return np.clip(eigenvalues, 0.0, None)


class EigenPath:
    """Eigendecomposition of a symmetric PSD matrix serving shifted solves for any ``alpha``.

    Parameters
    ----------
    gram : ndarray of shape (n, n)
        Symmetric positive semidefinite matrix; not modified. Decomposed in float64.
    name : str
        Name used in error messages.

    Attributes
    ----------
    eigenvalues : ndarray of shape (n,)
        Eigenvalues (round-off negatives clipped to zero), ascending.
    eigenvectors : ndarray of shape (n, n)
        Orthonormal eigenvectors as columns.
    """

    def __init__(self, gram, *, name="K"):
        gram = np.asarray(gram)
        if gram.ndim != 2 or gram.shape[0] != gram.shape[1]:
            raise ValueError(f"'{name}' must be a square matrix, got shape {gram.shape}.")
        if not np.isfinite(gram).all():
            raise ValueError(f"'{name}' contains NaN or infinity; cannot decompose it.")
        values, vectors = sla.eigh(np.array(gram, dtype=np.float64), check_finite=False, driver="evd")
        self.eigenvalues = _psd_clip(values, name)
        self.eigenvectors = vectors

    @property
    def n(self):
        return self.eigenvalues.shape[0]

    def project(self, rhs):
        """``Q^T rhs``: do this once per right-hand side, then call :meth:`solve_projected` per alpha."""
        return self.eigenvectors.T @ np.asarray(rhs, dtype=np.float64)

    def solve_projected(self, projected, alpha):
        """``(K + alpha I)^{-1} rhs`` from ``projected = Q^T rhs``."""
        scale = 1.0 / (self.eigenvalues + alpha)
        if projected.ndim == 1:
            return self.eigenvectors @ (projected * scale)
        return self.eigenvectors @ (projected * scale[:, None])

    def solve(self, rhs, alpha):
        """Solve ``(K + alpha I) X = rhs``; ``rhs`` of shape (n,) or (n, k)."""
        return self.solve_projected(self.project(rhs), alpha)

    def hat_diagonal(self, alpha):
        """Diagonal of ``K (K + alpha I)^{-1}`` (the leave-one-out leverages), shape (n,)."""
        weights = self.eigenvalues / (self.eigenvalues + alpha)
        return np.einsum("ij,j,ij->i", self.eigenvectors, weights, self.eigenvectors)

    def shifted_inverse_block(self, rows, alpha):
        """Block ``[(K + alpha I)^{-1}]_{rows, rows}`` as a dense (h, h) array, without forming the inverse."""
        sub = self.eigenvectors[rows]
        return (sub / (self.eigenvalues + alpha)) @ sub.T

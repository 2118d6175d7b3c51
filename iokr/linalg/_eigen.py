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


def _column_blocks(n, width=256):
    """Column slices of width ``width`` covering ``range(n)``."""
    return [slice(start, min(start + width, n)) for start in range(0, n, width)]


class EigenPath:
    """Eigendecomposition of a symmetric PSD matrix serving shifted solves for any ``alpha``.

    Parameters
    ----------
    gram : ndarray of shape (n, n)
        Symmetric positive semidefinite matrix; not modified. Decomposed in float64.
    name : str
        Name used in error messages.
    deflate_constant : bool, default=False
        Serve the model with an unpenalized intercept instead: its shifted inverse is the limit
        ``(K + t 1 1^T + alpha I)^{-1} -> V (V^T K V + alpha I)^{-1} V^T`` as ``t -> inf``, with ``V`` an orthonormal
        basis of the complement of the constant vector. ``V^T K V`` is decomposed (``V`` from one Householder
        reflection), so the constant direction never enters the solves and no cancellation of its ``1 / alpha``
        component occurs (the Sherman-Morrison form of :class:`~iokr.linalg.developer.InterceptShift` subtracts it).

    Attributes
    ----------
    eigenvalues : ndarray of shape (n,), or (n - 1,) with ``deflate_constant``
        Eigenvalues (round-off negatives clipped to zero), ascending.
    eigenvectors : ndarray of shape (n, n), or (n, n - 1) with ``deflate_constant``
        Orthonormal eigenvectors as columns (orthogonal to the constant vector with ``deflate_constant``).
    deflate_constant : bool
    """

    def __init__(self, gram, *, name="K", deflate_constant=False):
        gram = np.asarray(gram)
        if gram.ndim != 2 or gram.shape[0] != gram.shape[1]:
            raise ValueError(f"'{name}' must be a square matrix, got shape {gram.shape}.")
        if not np.isfinite(gram).all():
            raise ValueError(f"'{name}' contains NaN or infinity; cannot decompose it.")
        self.deflate_constant = bool(deflate_constant)
        n = gram.shape[0]
        if self.deflate_constant and n > 0:
            # Householder reflection H = I - beta h h^T with H 1 = -sqrt(n) e_1; H K H = K - h w^T - w h^T. Only
            # its trailing (n - 1) x (n - 1) block is decomposed: built in one Fortran-ordered copy, updated column
            # block by column block (no n x n temporaries), and overwritten by LAPACK with its eigenvectors.
            h = np.ones(n)
            h[0] += np.sqrt(n)
            beta = 2.0 / float(h @ h)
            Kh = np.asarray(gram, dtype=np.float64) @ h
            w = beta * Kh - 0.5 * beta**2 * float(h @ Kh) * h
            block = np.array(gram[1:, 1:], dtype=np.float64, order="F")
            h1, w1 = h[1:], w[1:]
            for cols in _column_blocks(n - 1):
                block[:, cols] -= np.outer(h1, w1[cols])
                block[:, cols] -= np.outer(w1, h1[cols])
            values, sub = sla.eigh(block, check_finite=False, driver="evd", overwrite_a=True)
            del block
            vectors = np.empty((n, n - 1))
            vectors[0] = 0.0
            vectors[1:] = sub
            coefficients = h1 @ sub
            del sub
            for cols in _column_blocks(n - 1):  # H [0; U]: columns orthonormal and orthogonal to 1
                vectors[:, cols] -= np.outer(beta * h, coefficients[cols])
        else:
            matrix = np.array(gram, dtype=np.float64, order="F")
            values, vectors = sla.eigh(matrix, check_finite=False, driver="evd", overwrite_a=True)
        self.eigenvalues = _psd_clip(values, name)
        self.eigenvectors = vectors

    @property
    def n(self):
        return self.eigenvectors.shape[0]

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

    def solve_without_intercept(self, gram, rhs, alpha, *, projected=None):
        """Solve ``(K + alpha I) X = rhs`` for the plain model, also on a decomposition with ``deflate_constant``.

        Not deflated, this is :meth:`solve`. Deflated, the constant direction ``e = 1 / sqrt(n)`` enters through
        one bordered (Schur complement) step: with ``b = U^T K e``, ``D = diag(1 / (s + alpha))`` and
        ``Z = U^T rhs``, ``x_e = (e^T rhs - b^T D Z) / (e^T K e + alpha - b^T D b)`` and
        ``X = U D (Z - b x_e) + e x_e``; the Schur complement is at least ``alpha``, so the step is stable.

        Parameters
        ----------
        gram : ndarray of shape (n, n)
            The matrix this path decomposed (only ``K e`` is read).
        rhs : ndarray of shape (n, k)
            Right-hand sides; not modified.
        alpha : float
            Regularization (> 0).
        projected : ndarray of shape (n_eigenvalues, k), optional
            ``U^T rhs`` when the caller has it (:meth:`project`).

        Returns
        -------
        X : ndarray of shape (n, k)
        """
        rhs = np.asarray(rhs, dtype=np.float64)
        Z = self.project(rhs) if projected is None else projected
        if not self.deflate_constant:
            return self.solve_projected(Z, alpha)
        n = self.n
        e = np.full(n, 1.0 / np.sqrt(n))
        Ke = np.asarray(gram, dtype=np.float64) @ e
        b = self.eigenvectors.T @ Ke
        d = 1.0 / (self.eigenvalues + alpha)
        schur = float(e @ Ke) + alpha - float(b @ (d * b))
        x_e = (e @ rhs - (b * d) @ Z) / schur                          # (k,)
        return self.eigenvectors @ ((Z - np.outer(b, x_e)) * d[:, None]) + np.outer(e, x_e)

    def hat_diagonal(self, alpha):
        """Diagonal of ``K (K + alpha I)^{-1}`` (the leave-one-out leverages), shape (n,)."""
        weights = self.eigenvalues / (self.eigenvalues + alpha)
        return np.einsum("ij,j,ij->i", self.eigenvectors, weights, self.eigenvectors)

    def shifted_inverse_block(self, rows, alpha):
        """Block ``[(K + alpha I)^{-1}]_{rows, rows}`` as a dense (h, h) array, without forming the inverse."""
        sub = self.eigenvectors[rows]
        return (sub / (self.eigenvalues + alpha)) @ sub.T

"""Paths and hold-out of the product-shifted system ``(alpha I + K B)^{-1}`` (``K``, ``B`` symmetric PSD).

Magnitude-preserving IOKR learns ``h(x) = Psi B (alpha I + K B)^{-1} k(x)`` (Brouard et al. 2017; ``B`` the
mixing matrix of the candidate sets, ``K`` the input Gram of the basis). The system is not symmetric, but it is
similar to a symmetric one: with ``B = R R^T`` (``R`` of shape (n, r), from an eigendecomposition of ``B``) and
``R^T K R = U diag(lam) U^T``, Woodbury gives

    (alpha I + K B)^{-1} X = (X - K R U (U^T R^T X) / (alpha + lam)) / alpha,
    (alpha I + B K)^{-1} X = (X - R U (U^T R^T K X) / (alpha + lam)) / alpha,

so two symmetric eigendecompositions serve every alpha (route ``"eigen"``); route ``"lu"`` forms the product
``K B`` once and factors ``alpha I + K B`` by LU per alpha, cheaper for short grids (an eigendecomposition costs
several LU factorizations). ``"auto"`` takes the eigen route for grids of at least
:data:`~iokr.linalg.developer.EIGEN_MIN_ALPHAS` values, as :class:`~iokr.linalg.RegularizationPath` does.

Hold-out (:func:`mixing_holdout_coefficients`). Let ``B = sum_i B_i`` with ``B_i = P_i P_i^T`` the block of
training example ``i`` (its pseudo-examples, the columns ``P_i``). Leaving the examples ``H`` out removes their
pseudo-examples: ``B_C = B - J D J^T`` with ``D`` the ``s x s`` block of ``sum_{i in H} B_i`` on its support
``S`` (``J`` the columns of the identity on ``S``). With ``M = alpha I + K B``, ``Z = M^{-1} K`` (symmetric) and
the pseudo-example form of the ridge hold-out (Pahikkala 2008, eq. 2.56, applied to the pseudo-examples and
pushed back through ``P``), the model trained without ``H`` predicts at basis unit ``u`` the combination

    c_C(u) = B Z e_u - alpha (B_C-correction) = (Z B)_u - alpha Z_uS (I - D Z_SS)^{-1} D (M^{-1})_S

of the basis outputs (``h_C(x_u) = Psi c_C(u)^T``). ``I - D Z_SS`` is invertible for ``alpha > 0`` (its
determinant equals that of ``alpha (P_H^T K P_H + alpha I)^{-1}`` restricted to the held-out pseudo-examples), and
only ``|S|`` transposed solves with ``M`` are needed per hold-out set.
"""

from __future__ import annotations

import numpy as np
from scipy import linalg as sla
from scipy import sparse

from ._path import check_alphas, choose_path_method

#: Routes of :class:`ProductShiftPath` (the Cholesky route of :class:`RegularizationPath` is an LU route here).
PRODUCT_PATH_METHODS = ("auto", "eigen", "lu")


def _dense_symmetric(B):
    B = B.toarray() if sparse.issparse(B) else np.asarray(B, dtype=np.float64)
    return 0.5 * (B + B.T)


class LUShift:
    """``alpha I + K B`` factored by LU at one alpha (route ``"lu"``)."""

    method = "lu"

    def __init__(self, product, alpha, overwrite=False):
        self.alpha = float(alpha)
        system = np.asarray(product, dtype=np.float64) if overwrite else np.array(product, dtype=np.float64)
        system[np.diag_indices_from(system)] += self.alpha
        self._lu = sla.lu_factor(system, overwrite_a=True, check_finite=True)

    def solve(self, X):
        """``(alpha I + K B)^{-1} X``."""
        return sla.lu_solve(self._lu, X, check_finite=False)

    def solve_transposed(self, X):
        """``(alpha I + B K)^{-1} X`` (the transposed system)."""
        return sla.lu_solve(self._lu, X, trans=1, check_finite=False)


class ProductEigenShift:
    """``alpha I + K B`` at one alpha through the shared eigendecompositions (route ``"eigen"``)."""

    method = "eigen"

    def __init__(self, path, alpha):
        self.alpha = float(alpha)
        self._path = path

    def solve(self, X):
        p = self._path
        inner = (p.RU.T @ X) / (self.alpha + p.lam).reshape((-1,) + (1,) * (np.ndim(X) - 1))
        return (X - p.KRU @ inner) / self.alpha

    def solve_transposed(self, X):
        p = self._path
        inner = (p.KRU.T @ X) / (self.alpha + p.lam).reshape((-1,) + (1,) * (np.ndim(X) - 1))
        return (X - p.RU @ inner) / self.alpha


class ProductShiftPath:
    """Solvers of ``alpha I + K B`` for a grid of alphas, ``K`` and ``B`` symmetric PSD (see the module notes).

    Parameters
    ----------
    gram : ndarray of shape (n, n), or an operator with ``gram @ X`` for dense ``X``
        ``K`` (e.g. a block-diagonal operator).
    mixing : ndarray or sparse matrix of shape (n, n)
        ``B``, symmetric positive semidefinite.
    alphas : array-like of shape (n_alphas,)
        Values > 0.
    method : {"auto", "eigen", "lu"}, default="auto"
    overwrite : bool, default=False
        Route ``"lu"`` with one alpha: factor the product in place (no copy of an ``n x n`` matrix); the path then
        serves that one solver only.

    Attributes
    ----------
    alphas : ndarray
    method : str
        ``"eigen"`` or ``"lu"``.
    """

    def __init__(self, gram, mixing, alphas, *, method="auto", overwrite=False):
        self.alphas = check_alphas(alphas)
        if overwrite and (method != "lu" or self.alphas.size != 1):
            raise ValueError("ProductShiftPath(overwrite=True) needs method='lu' and a single alpha; got "
                             f"method={method!r} and {self.alphas.size} alphas.")
        self._overwrite = bool(overwrite)
        if method not in PRODUCT_PATH_METHODS:
            raise ValueError(f"The 'method' parameter of ProductShiftPath must be one of {PRODUCT_PATH_METHODS}. "
                             f"Got {method!r} instead.")
        if method == "auto":
            method = "eigen" if choose_path_method(self.alphas.size) == "eigen" else "lu"
        self.method = method
        self.gram, self.mixing = gram, mixing
        if method == "lu":
            # The product is a fresh array; with a sparse B, (B K)^T = K B by symmetry.
            self._product = np.asarray((mixing @ gram).T if sparse.issparse(mixing) else gram @ mixing,
                                       dtype=np.float64)
            return
        values, vectors = sla.eigh(_dense_symmetric(mixing), check_finite=True, driver="evd")
        keep = values > values.max(initial=0.0) * values.size * np.finfo(np.float64).eps
        R = vectors[:, keep] * np.sqrt(values[keep])
        KR = np.asarray(gram @ R, dtype=np.float64)
        inner = R.T @ KR
        lam, U = sla.eigh(0.5 * (inner + inner.T), check_finite=False, driver="evd")
        self.lam = np.clip(lam, 0.0, None)  # round-off negatives of a PSD product
        self.RU, self.KRU = R @ U, KR @ U

    def __len__(self):
        return self.alphas.size

    def __iter__(self):
        for alpha in self.alphas:
            yield self.shift(alpha)

    def shift(self, alpha):
        """The solver at one ``alpha`` (any value > 0, on or off the grid)."""
        alpha = float(check_alphas([alpha])[0])
        if self.method == "eigen":
            return ProductEigenShift(self, alpha)
        if self._overwrite:
            if self._product is None:
                raise RuntimeError("This ProductShiftPath(overwrite=True) has already served its one solver.")
            product, self._product = self._product, None
            return LUShift(product, alpha, overwrite=True)
        return LUShift(self._product, alpha)


def mixing_holdout_coefficients(shift, gram, mixing, held_blocks, query_units):
    """Hold-out predictions of ``h(x) = Psi B (alpha I + K B)^{-1} k(x)`` as combinations of the basis outputs.

    Parameters
    ----------
    shift : LUShift or ProductEigenShift
        The solver of ``alpha I + K B`` at one alpha.
    gram : ndarray of shape (n, n)
        ``K``, the input Gram of the basis.
    mixing : ndarray or sparse matrix of shape (n, n)
        ``B`` of all examples.
    held_blocks : list of sparse matrices of shape (n, n)
        Per hold-out set, ``sum_{i in H} B_i``: the part of ``B`` the held-out examples contribute.
    query_units : list of ndarray of int
        Per hold-out set, the basis units whose hold-out prediction is wanted (the held-out examples' own inputs).

    Returns
    -------
    coefficients : list of ndarray of shape (len(query_units[k]), n)
        ``c_C(u)`` with ``h_C(x_u) = Psi c_C(u)^T`` for the model trained without the ``k``-th hold-out set's
        blocks (the formula of the module notes).
    """
    gram = np.asarray(gram, dtype=np.float64)
    out = []
    n = gram.shape[0]
    for block, units in zip(held_blocks, query_units, strict=True):
        block = sparse.csr_matrix(block)
        units = np.asarray(units, dtype=np.intp)
        support = np.union1d(units, np.union1d(*block.nonzero())) if block.nnz else units
        E = np.zeros((n, support.size))
        E[support, np.arange(support.size)] = 1.0
        minv_rows = shift.solve_transposed(E).T  # (M^{-1})_S, shape (s, n)
        z_rows = minv_rows @ gram  # Z_S = (M^{-1} K)_S
        where = np.searchsorted(support, units)
        D = block[support][:, support].toarray()
        z_ss = z_rows[:, support]
        correction = sla.solve(np.eye(support.size) - D @ z_ss, D @ minv_rows, check_finite=False)
        z_units = z_rows[where]
        full = np.asarray((mixing @ z_units.T).T if sparse.issparse(mixing) else z_units @ mixing)
        out.append(full - shift.alpha * (z_units[:, support] @ correction))
    return out

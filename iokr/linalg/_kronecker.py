"""Kronecker operators that store only their factors: vec-trick products, factor-wise eigendecomposition and the
"Kronecker + diagonal" solve.

Conventions follow :func:`numpy.kron`: ``KroneckerOperator(a, b)`` stands for ``np.kron(a, b)``. A vector ``v`` of
length ``a.shape[1] * b.shape[1]`` is read as the C-ordered matrix ``V`` of shape ``(a.shape[1], b.shape[1])`` and
``np.kron(a, b) @ v == (a @ V @ b.T).ravel()`` (the vec trick), which costs ``O(n_a n_b (n_a + n_b))`` instead of
``O(n_a^2 n_b^2)``. In pairwise learning with a label matrix ``Y`` of shape ``(n1, n2)`` and column-major ``vec``,
the Kronecker kernel ``K2 kron K1`` is ``KroneckerOperator(K2, K1)`` acting on ``Y.T``; the estimators work
directly with the matrix forms ``K1 A K2^T``.

One-domain variants (Pahikkala et al. 2013, eq. 8-9 and Proposition 1): with the commutation matrix ``P``
(``P vec(M) = vec(M^T)``), the symmetric kernel is ``(K kron K)(I + P) / 2`` and the reciprocal (antisymmetric)
kernel ``(K kron K)(I - P) / 2``. ``S = (I + P) / 2`` and ``A = (I - P) / 2`` are orthogonal projections that commute
with ``K kron K``, so ``(K kron K) S + lambda I`` has the closed-form inverse
``S (K kron K + lambda I)^{-1} + (I - S) / lambda`` (:func:`~iokr.linalg.kron_ridge_symmetric_dual`).

:class:`SampledKroneckerOperator` is the matrix-free kernel matrix between two lists of observed pairs (edges),
``Kq[e, f] = K1[r_e, r_f] K2[c_e, c_f]``: one product costs a scatter, two matrix products and a gather. The first
product takes the scattered coefficients as a sparse matrix when that is cheaper (few labelled pairs: ``q`` nonzeros
cost ``q m`` multiply-adds instead of the ``n1 n2 m`` of a dense product), the second is dense.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator

from ._eigen import EigenPath
from ._kron_holdout import kron_ridge_dual

__all__ = [
    "KroneckerEigen",
    "KroneckerOperator",
    "SampledKroneckerOperator",
    "SymmetricKroneckerOperator",
    "WeightedKroneckerSum",
    "commutation_matrix",
    "sampled_kron_features",
]


def _as_factor(matrix, name):
    matrix = np.asarray(matrix)
    if matrix.ndim != 2:
        raise ValueError(f"'{name}' must be a 2-D factor matrix, got shape {matrix.shape}.")
    if not np.issubdtype(matrix.dtype, np.floating):
        matrix = matrix.astype(np.float64)
    if not np.isfinite(matrix).all():
        raise ValueError(f"'{name}' contains NaN or infinity.")
    return matrix


def _as_block(rhs, n, name="rhs"):
    rhs = np.asarray(rhs)
    vector = rhs.ndim == 1
    block = rhs[:, None] if vector else rhs
    if block.ndim != 2 or block.shape[0] != n:
        raise ValueError(f"'{name}' must have shape ({n},) or ({n}, k), got {rhs.shape}.")
    return block, vector


def commutation_matrix(n):
    """Dense commutation matrix ``P`` of shape (n*n, n*n) with ``P vec(M) = vec(M^T)``; for tests and small sizes."""
    idx = np.arange(n * n)
    perm = (idx % n) * n + idx // n
    P = np.zeros((n * n, n * n))
    P[idx, perm] = 1.0
    return P


class _Operator:
    """Shared helpers: ``@`` with vectors/blocks, dense materialization for tests."""

    shape = (0, 0)

    def matmat(self, V):  # pragma: no cover - abstract
        raise NotImplementedError

    def matvec(self, v):
        return self.matmat(np.asarray(v)[:, None])[:, 0]

    def __matmul__(self, other):
        other = np.asarray(other)
        return self.matvec(other) if other.ndim == 1 else self.matmat(other)

    def toarray(self):
        """Dense matrix (``O(n^2)`` memory); meant for tests and tiny sizes."""
        return self.matmat(np.eye(self.shape[1]))

    def aslinearoperator(self):
        """The operator as a :class:`scipy.sparse.linalg.LinearOperator`."""
        return LinearOperator(self.shape, matvec=self.matvec, matmat=self.matmat, dtype=np.float64)


class KroneckerOperator(_Operator):
    """``np.kron(a, b)`` stored as its two factors.

    Parameters
    ----------
    a : ndarray of shape (m_a, n_a)
    b : ndarray of shape (m_b, n_b)

    Attributes
    ----------
    shape : tuple (m_a * m_b, n_a * n_b)
    """

    def __init__(self, a, b):
        self.a = _as_factor(a, "a")
        self.b = _as_factor(b, "b")
        self.shape = (self.a.shape[0] * self.b.shape[0], self.a.shape[1] * self.b.shape[1])
        self._eigen = None

    def matmat(self, V):
        """``np.kron(a, b) @ V`` for ``V`` of shape (n_a * n_b, k) by the vec trick."""
        V, vector = _as_block(V, self.shape[1], "V")
        k = V.shape[1]
        # V[(ja, jb), col] -> T[ja, jb, col]; contract jb with b, then ja with a.
        T = V.reshape(self.a.shape[1], self.b.shape[1], k)
        T = np.einsum("ib,abk->aik", self.b, T, optimize=True)
        out = np.tensordot(self.a, T, axes=(1, 0)).reshape(self.shape[0], k)
        return out[:, 0] if vector else out

    def apply_matrix(self, X):
        """``a @ X @ b.T``: the operator on a single vector given in matrix form ``X`` of shape (n_a, n_b)."""
        return self.a @ np.asarray(X) @ self.b.T

    @property
    def T(self):
        return KroneckerOperator(self.a.T, self.b.T)

    def diagonal(self):
        """Diagonal ``kron(diag(a), diag(b))``, shape (n,)."""
        return np.outer(np.diag(self.a), np.diag(self.b)).ravel()

    def eigh(self):
        """Factor-wise eigendecomposition (cached); both factors must be symmetric PSD."""
        if self._eigen is None:
            self._eigen = KroneckerEigen(EigenPath(self.a, name="a"), EigenPath(self.b, name="b"))
        return self._eigen

    def solve_shifted(self, rhs, alpha=None, *, diagonal=None):
        """Solve ``(kron(a, b) + D) x = rhs`` with ``D = alpha I`` or ``D = kron(diag(d_a), diag(d_b))``.

        Parameters
        ----------
        rhs : ndarray of shape (n,) or (n, k)
        alpha : float, optional
            Scalar shift (> 0 unless the operator is positive definite).
        diagonal : tuple (d_a, d_b) of positive ndarrays, optional
            Kronecker-structured diagonal. ``kron(a, b) + kron(D_a, D_b)`` equals
            ``(D_a^{1/2} kron D_b^{1/2}) (kron(a~, b~) + I) (D_a^{1/2} kron D_b^{1/2})`` with
            ``a~ = D_a^{-1/2} a D_a^{-1/2}``; the scaled factors are decomposed (not cached).

        Returns
        -------
        x : ndarray, same shape as ``rhs``
        """
        if (alpha is None) == (diagonal is None):
            raise ValueError("Pass exactly one of 'alpha' (scalar shift) or 'diagonal' (pair of vectors).")
        if alpha is not None:
            return self.eigh().solve(rhs, alpha)
        d_a, d_b = (np.asarray(d, dtype=np.float64) for d in diagonal)
        if d_a.shape != (self.a.shape[0],) or d_b.shape != (self.b.shape[0],):
            raise ValueError(
                f"'diagonal' must be vectors of lengths ({self.a.shape[0]}, {self.b.shape[0]}), "
                f"got {d_a.shape} and {d_b.shape}."
            )
        if (d_a <= 0).any() or (d_b <= 0).any() or not (np.isfinite(d_a).all() and np.isfinite(d_b).all()):
            raise ValueError("'diagonal' entries must be finite and > 0.")
        ra, rb = 1.0 / np.sqrt(d_a), 1.0 / np.sqrt(d_b)
        scaled = KroneckerEigen(
            EigenPath(self.a * ra[:, None] * ra[None, :], name="a"),
            EigenPath(self.b * rb[:, None] * rb[None, :], name="b"),
        )
        block, vector = _as_block(rhs, self.shape[0])
        scale = np.outer(ra, rb).ravel()[:, None]
        out = scale * scaled.solve(scale * block, 1.0)
        return out[:, 0] if vector else out


class KroneckerEigen:
    """Eigendecomposition of ``kron(a, b)`` from the factors: ``(Qa kron Qb) diag(sa kron sb) (Qa kron Qb)^T``.

    The shifted solve is :func:`~iokr.linalg.kron_ridge_dual` (the one implementation of the closed form); the
    hat-matrix diagonal is :func:`~iokr.linalg.kron_leverages`.

    Parameters
    ----------
    eig_a, eig_b : EigenPath
        Decompositions of the two symmetric PSD factors.
    """

    def __init__(self, eig_a, eig_b):
        self.eig_a = eig_a
        self.eig_b = eig_b

    @property
    def eigenvalues(self):
        """Eigenvalues as the (n_a, n_b) grid ``sa[i] * sb[j]`` (C-ordered like the operator's vectors)."""
        return np.outer(self.eig_a.eigenvalues, self.eig_b.eigenvalues)

    def solve(self, rhs, alpha):
        """Solve ``(kron(a, b) + alpha I) x = rhs``; ``rhs`` of shape (n,) or (n, k)."""
        na, nb = self.eig_a.n, self.eig_b.n
        block, vector = _as_block(rhs, na * nb)
        a, b = self.eig_a, self.eig_b
        out = np.empty(block.shape)
        for j in range(block.shape[1]):
            # kron(a, b) vec_C(X) = vec_C(a X b^T): the matrix form of K1 A K2 + alpha A = Y with (K1, K2) = (a, b).
            out[:, j] = kron_ridge_dual(a.eigenvectors, a.eigenvalues, b.eigenvectors, b.eigenvalues,
                                        block[:, j].reshape(na, nb), alpha).ravel()
        return out[:, 0] if vector else out


class SymmetricKroneckerOperator(_Operator):
    """Symmetric (``sign=+1``) or reciprocal (``sign=-1``) Kronecker kernel ``(K kron K)(I + sign P) / 2``.

    Parameters
    ----------
    k : ndarray of shape (n, n)
        Node kernel (one domain).
    sign : {+1, -1}
    """

    def __init__(self, k, sign=1):
        self.k = _as_factor(k, "k")
        if self.k.shape[0] != self.k.shape[1]:
            raise ValueError(f"'k' must be square for a one-domain Kronecker kernel, got shape {self.k.shape}.")
        if sign not in (1, -1):
            raise ValueError(f"'sign' must be +1 (symmetric) or -1 (reciprocal), got {sign!r}.")
        self.sign = sign
        n = self.k.shape[0]
        self.shape = (n * n, n * n)
        self._kron = KroneckerOperator(self.k, self.k)

    def project(self, V):
        """``(I + sign P) / 2`` applied to a block: symmetrize (or antisymmetrize) each column's matrix form."""
        V, vector = _as_block(V, self.shape[1], "V")
        n = self.k.shape[0]
        T = V.reshape(n, n, -1)
        out = (0.5 * (T + self.sign * T.transpose(1, 0, 2))).reshape(self.shape[0], -1)
        return out[:, 0] if vector else out

    def matmat(self, V):
        # K kron K commutes with P, so projecting first halves nothing but keeps one product.
        return self._kron.matmat(self.project(V))


class WeightedKroneckerSum(_Operator):
    """``sum_i w_i op_i`` of Kronecker operators of equal shape (e.g. a multiple-kernel pairwise kernel).

    No factor-wise closed-form solve exists for a sum; use :func:`iokr.linalg.block_cg` with :meth:`matmat`.

    Parameters
    ----------
    operators : sequence of operators
    weights : sequence of float, optional
        Default all ones.
    """

    def __init__(self, operators, weights=None):
        self.operators = list(operators)
        if not self.operators:
            raise ValueError("'operators' must contain at least one operator.")
        shapes = {op.shape for op in self.operators}
        if len(shapes) != 1:
            raise ValueError(f"All operators must have the same shape, got {sorted(shapes)}.")
        self.shape = self.operators[0].shape
        weights = np.ones(len(self.operators)) if weights is None else np.asarray(weights, dtype=np.float64)
        if weights.shape != (len(self.operators),) or not np.isfinite(weights).all():
            raise ValueError(f"'weights' must be {len(self.operators)} finite numbers, got {weights!r}.")
        self.weights = weights

    def matmat(self, V):
        V, vector = _as_block(V, self.shape[1], "V")
        out = sum(w * op.matmat(V) for w, op in zip(self.weights, self.operators, strict=True))
        return out[:, 0] if vector else out


class SampledKroneckerOperator(_Operator):
    """Kernel matrix between two lists of pairs under a Kronecker kernel, never formed.

    ``M[e, f] = K1[r_out[e], r_in[f]] * K2[c_out[e], c_in[f]]`` (plus the transposed term for one-domain
    symmetric/reciprocal kernels: ``(K1[r_out, r_in] K1[c_out, c_in] + sign K1[r_out, c_in] K1[c_out, r_in]) / 2``).

    Parameters
    ----------
    K1 : ndarray of shape (m1, n1)
        Row-domain kernel block (output rows x training rows).
    K2 : ndarray of shape (m2, n2)
        Column-domain kernel block.
    rows_in, cols_in : int ndarrays of shape (q,)
        Input pairs (repeats allowed: their coefficients add up).
    rows_out, cols_out : int ndarrays of shape (q_out,), optional
        Output pairs; default the input pairs (then with square kernels ``M`` is the q x q training kernel).
    sign : {None, +1, -1}
        ``None`` for the ordinary Kronecker kernel, ``+1`` symmetric, ``-1`` reciprocal (needs ``K1`` = ``K2``).
    product : {"auto", "dense", "sparse"}, default="auto"
        How the first of the two matrix products sees the scattered coefficients ``V`` (``n1 x n2`` with at most
        ``q`` nonzeros): as a dense matrix (a GEMM) or as a sparse one (``q m`` multiply-adds, with ``m`` the
        other factor's output size). "auto" picks the one with the smaller cost, counting a sparse multiply-add
        as ``SPARSE_COST`` dense ones (measured with one BLAS thread on a 1000 x 1000 grid: 5.5 at 200k pairs, 7 at
        20k; the break-even density is then about 1/6).

    Attributes
    ----------
    sparse : bool
        Whether products take the sparse route (from ``product`` and the costs in the Notes).

    Notes
    -----
    Cost of one product in multiply-adds, with ``(m1, n1) = K1.shape``, ``(m2, n2) = K2.shape`` and ``nnz`` the
    nonzeros of ``V`` (``q``, or ``2 q`` for one-domain kernels): dense ``min(m1 n1 n2 + m1 n2 m2,
    n1 n2 m2 + m1 n1 m2)``; sparse ``min(nnz m1 + m1 n2 m2, nnz m2 + m1 n1 m2)``. The first dense product is
    replaced by the sparse one, so at most one full GEMM remains; the gather of the ``q_out`` outputs is free.
    """

    SPARSE_COST = 6.0

    def __init__(self, K1, K2, rows_in, cols_in, rows_out=None, cols_out=None, *, sign=None, product="auto"):
        self.K1 = _as_factor(K1, "K1")
        self.K2 = _as_factor(K2, "K2")
        self.rows_in = np.asarray(rows_in, dtype=np.intp)
        self.cols_in = np.asarray(cols_in, dtype=np.intp)
        self.rows_out = self.rows_in if rows_out is None else np.asarray(rows_out, dtype=np.intp)
        self.cols_out = self.cols_in if cols_out is None else np.asarray(cols_out, dtype=np.intp)
        if sign is not None and (sign not in (1, -1) or self.K1.shape != self.K2.shape
                                 or self.K1.shape[1] != self.K2.shape[1]):
            raise ValueError("'sign' needs one domain (K1 and K2 of equal shape) and must be +1 or -1.")
        self.sign = sign
        self.shape = (self.rows_out.size, self.rows_in.size)
        n1, n2 = self.K1.shape[1], self.K2.shape[1]
        self._flat_in = self.rows_in * n2 + self.cols_in
        self._grid = (n1, n2)
        if product not in ("auto", "dense", "sparse"):
            raise ValueError(f"'product' must be 'auto', 'dense' or 'sparse', got {product!r}.")
        # Product order: (K1 @ V) @ K2^T or K1 @ (V @ K2^T); pick the one with fewer flops.
        m1, m2 = self.K1.shape[0], self.K2.shape[0]
        self._left_first = m1 * n1 * n2 + m1 * n2 * m2 <= n1 * n2 * m2 + m1 * n1 * m2
        dense_cost = min(m1 * n1 * n2 + m1 * n2 * m2, n1 * n2 * m2 + m1 * n1 * m2)
        nnz = self.rows_in.size * (1 if sign is None else 2)
        sparse_left = self.SPARSE_COST * nnz * m1 + m1 * n2 * m2
        sparse_right = self.SPARSE_COST * nnz * m2 + m1 * n1 * m2
        self.sparse = product == "sparse" or (product == "auto" and min(sparse_left, sparse_right) < dense_cost)
        self._sparse_left = sparse_left < sparse_right
        # The sparse product needs the factor's transpose in C order (V^T K1^T or V K2^T); a symmetric factor is
        # its own transpose, anything else is copied once.
        self._factor_t = None
        if self.sparse:
            K = self.K1 if self._sparse_left else self.K2
            symmetric = K.shape[0] == K.shape[1] and np.array_equal(K, K.T)
            self._factor_t = K if symmetric else np.ascontiguousarray(K.T)

    def scatter(self, v):
        """Coefficient vector over input pairs -> (n1, n2) matrix (repeated pairs summed)."""
        n1, n2 = self._grid
        return np.bincount(self._flat_in, weights=v, minlength=n1 * n2).reshape(n1, n2)

    def full_product(self, V):
        """``K1 V~ K2^T`` with ``V~`` the (anti)symmetrized ``V`` for one-domain kernels; shape (m1, m2)."""
        if self.sign is not None:
            V = 0.5 * (V + self.sign * V.T)
        if self._left_first:
            return (self.K1 @ V) @ self.K2.T
        return self.K1 @ (V @ self.K2.T)

    def _sparse_product(self, v):
        """``K1 V~ K2^T`` with the first product on the sparse ``V`` (duplicates summed by the CSR conversion)."""
        rows, cols = self.rows_in, self.cols_in
        if self.sign is not None:
            rows, cols, v = np.concatenate([rows, cols]), np.concatenate([cols, rows]), np.concatenate(
                [0.5 * v, 0.5 * self.sign * v])
        if self._sparse_left:  # (K1 V) K2^T with K1 V = (V^T K1^T)^T
            Vt = sp.csr_matrix((v, (cols, rows)), shape=(self._grid[1], self._grid[0]))
            return (Vt @ self._factor_t).T @ self.K2.T
        V = sp.csr_matrix((v, (rows, cols)), shape=self._grid)
        return self.K1 @ (V @ self._factor_t)

    def matmat(self, V):
        V, vector = _as_block(V, self.shape[1], "V")
        out = np.empty((self.shape[0], V.shape[1]))
        for j in range(V.shape[1]):
            full = self._sparse_product(V[:, j]) if self.sparse else self.full_product(self.scatter(V[:, j]))
            out[:, j] = full[self.rows_out, self.cols_out]
        return out[:, 0] if vector else out


def _top_eigenpairs(K, k, name):
    """The ``k`` largest eigenpairs of the symmetric PSD ``K`` (negatives from round-off clipped to 0)."""
    n = K.shape[0]
    if K.ndim != 2 or K.shape[1] != n:
        raise ValueError(f"'{name}' must be a square Gram matrix, got shape {K.shape}.")
    values, vectors = sla.eigh(K, subset_by_index=[n - k, n - 1], check_finite=False)
    return np.maximum(values, 0.0), vectors


def sampled_kron_features(K1, K2, rows, cols, rank):
    """Features of the best rank-``rank`` truncation of ``K1 kron K2``, restricted to the pairs ``(rows, cols)``.

    With ``K1 = U1 diag(s1) U1^T``, ``K2 = U2 diag(s2) U2^T`` and ``(i_k, j_k)`` the ``rank`` largest products
    ``s1[i] s2[j]``, ``Phi[e, k] = U1[rows[e], i_k] U2[cols[e], j_k] sqrt(s1[i_k] s2[j_k])``. Then
    ``Phi Phi^T = S K_r S^T`` with ``K_r`` the truncation and ``S`` the pair selection, and since ``K - K_r`` is PSD
    with largest eigenvalue ``lambda_next`` (the largest product left out),
    ``0 <= K_q - Phi Phi^T <= lambda_next I`` for the sampled pair kernel ``K_q = S (K1 kron K2) S^T``: with
    ``P = Phi Phi^T + alpha I`` the eigenvalues of ``P^{-1} (K_q + alpha I)`` lie in ``[1, 1 + lambda_next / alpha]``
    (a preconditioner for conjugate gradient, applied by Woodbury: :class:`~iokr.linalg.NystromPreconditioner`).

    Parameters
    ----------
    K1 : ndarray of shape (n1, n1)
    K2 : ndarray of shape (n2, n2)
        Symmetric PSD factors.
    rows, cols : int ndarrays of shape (q,)
        The pairs.
    rank : int
        Number of Kronecker eigenpairs kept (at most ``n1 * n2``).

    Returns
    -------
    Phi : ndarray of shape (q, rank)
    lambda_next : float
        The largest eigenvalue of ``K1 kron K2`` left out (0 when every one is kept).

    Notes
    -----
    Only the top ``min(rank, n)`` eigenpairs of each factor are computed: a product among the ``rank`` largest
    cannot use a factor eigenvalue ranked lower than ``rank`` in its factor. Cost: two partial eigendecompositions,
    a ``rank x rank`` grid of candidate products, and ``q x rank`` gathers.
    """
    K1, K2 = _as_factor(K1, "K1"), _as_factor(K2, "K2")
    rows, cols = np.asarray(rows, dtype=np.intp), np.asarray(cols, dtype=np.intp)
    n1, n2 = K1.shape[0], K2.shape[0]
    if not 1 <= rank <= n1 * n2:
        raise ValueError(f"'rank' must be an int in [1, n1 * n2 = {n1 * n2}], got {rank!r}.")
    s1, U1 = _top_eigenpairs(K1, min(rank + 1, n1), "K1")
    s2, U2 = _top_eigenpairs(K2, min(rank + 1, n2), "K2")
    grid = np.outer(s1, s2).ravel()
    order = np.argsort(grid)[::-1]
    keep, rest = order[:rank], order[rank:]
    # With rank + 1 eigenpairs per factor the candidate grid holds the (rank + 1)-th product too (or all of them).
    lambda_next = float(grid[rest[0]]) if rest.size else 0.0
    i, j = np.unravel_index(keep, (s1.size, s2.size))
    # Column gathers first (n x rank), then row gathers of contiguous rows: q x rank each.
    Phi = U1[:, i][rows] * U2[:, j][cols]
    Phi *= np.sqrt(grid[keep])
    return Phi, lambda_next

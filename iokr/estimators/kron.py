"""Pairwise learning with Kronecker kernels: KronRLS (regression loss) and ConditionalRankRLS (ranking loss).

Labels live on pairs (drug, target) or (node, node). With complete labels ``Y`` of shape (n1, n2) the dual
coefficients ``A`` (same shape) solve ``K1 A K2 + alpha A = Y``, i.e. ``(K2 kron K1 + alpha I) vec(A) = vec(Y)``
(Pahikkala et al. 2013, eq. 18); through ``K1 = V S1 V^T`` and ``K2 = U S2 U^T``,
``A = V [(V^T Y U) / (s1 s2^T + alpha)] U^T`` in ``O(n1^3 + n2^3)`` (Proposition 2, Corollary 1).
Incomplete labels (triplets) are solved by conjugate gradient on the matrix-free pair kernel
(:class:`iokr.linalg.SampledKroneckerOperator`), with early stopping and optional Tikhonov regularization (Sec. 4.4).

Cross-validation follows the four prediction settings (known/new rows x known/new columns): closed forms where the
Kronecker structure gives one (``holdout_predictions`` Notes), explicit retraining on the setting's splits otherwise.
"""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from .._config import working_memory_bytes
from .._validation import check_array_2d, check_finite, check_square_gram
from ..kernels import make_kernel
from ..linalg import (
    EigenPath,
    SampledKroneckerOperator,
    block_cg,
    kron_ridge_dual,
    kron_ridge_holdout,
    kron_ridge_leave_edge_out,
    leave_row_and_column_out,
    minres,
)
from ..metrics import concordance_index, pairwise_rank_loss

__all__ = ["ConditionalRankRLS", "KronRLS", "TwoStepRLS"]

_SYMMETRY = {None: None, "symmetric": 1, "reciprocal": -1}
SETTINGS = ("A", "B", "C", "D")


def _centering(n):
    return np.eye(n) - np.full((n, n), 1.0 / n)


def _check_triplets(Y, n1, n2):
    """Validate ``(rows, cols, values)``; repeated pairs are allowed."""
    if len(Y) != 3:
        raise ValueError(f"'Y' as a tuple must be (rows, cols, values), got a tuple of length {len(Y)}.")
    rows, cols, values = (np.asarray(part) for part in Y)
    for name, idx, bound in (("rows", rows, n1), ("cols", cols, n2)):
        if idx.ndim != 1 or not (np.issubdtype(idx.dtype, np.integer) or idx.size == 0):
            raise ValueError(f"'Y' {name} must be a 1-D integer array, got dtype {idx.dtype} and shape {idx.shape}.")
        if idx.size and (idx.min() < 0 or idx.max() >= bound):
            raise ValueError(
                f"'Y' {name} indices must lie in [0, {bound}) (the number of training "
                f"{'rows' if name == 'rows' else 'columns'}), got range [{idx.min()}, {idx.max()}]."
            )
    values = np.asarray(values, dtype=np.float64)
    if not (rows.shape == cols.shape == values.shape):
        raise ValueError(
            f"'Y' rows, cols and values must have the same length, got {rows.shape}, {cols.shape} and {values.shape}."
        )
    if rows.size == 0:
        raise ValueError("'Y' must contain at least one labelled pair, got none.")
    check_finite(values, "Y values")
    return rows.astype(np.intp), cols.astype(np.intp), values


def _group_center(values, groups, n_groups):
    """Subtract from each entry the mean of its group (the ranking loss matrix ``L`` of eq. 31)."""
    counts = np.bincount(groups, minlength=n_groups)
    sums = np.bincount(groups, weights=values, minlength=n_groups)
    return values - (sums / np.maximum(counts, 1))[groups]


def _ranking_hat_parts(V, s1, U, s2, Y, alpha):
    """Pieces of the hat matrix of conditional ranking seen as regression with one free intercept per row.

    The per-row centered loss ``||(Y - F) C||^2`` equals ``min_b ||Y - F - b 1^T||^2``, so ConditionalRankRLS is
    KronRLS plus an unpenalized intercept per row; its hat matrix maps ``Y`` to ``H Y = Y J / n2 + V (W o (V^T Y
    U)) U^T`` (``U, s2`` from ``C K2 C``, ``W = s1 s2^T / (s1 s2^T + alpha)``). Returns ``(V^T H Y, Z = V^T Y, W,
    Wc = alpha / (s1 s2^T + alpha))``.
    """
    grid = np.outer(s1, s2)
    W, Wc = grid / (grid + alpha), alpha / (grid + alpha)
    Z = V.T @ Y
    VtHY = Z.mean(axis=1, keepdims=True) + (W * (Z @ U)) @ U.T
    return VtHY, Z, W, Wc


def _ranking_holdout_a(V, s1, U, s2, Y, alpha):
    """Leave-one-pair-out of conditional ranking (intercept form): ``f = (H Y - h o Y) / (1 - h)`` with
    ``h = 1 / n2 + (V o V) W (U o U)^T`` and ``1 - h = (V o V) Wc (U o U)^T - 1 / n2`` (rows of ``V``, ``U`` have
    unit norm; the constant direction of ``C K2 C`` has ``Wc = 1`` and carries the ``1 / n2``)."""
    n2 = Y.shape[1]
    VtHY, _, W, Wc = _ranking_hat_parts(V, s1, U, s2, Y, alpha)
    VV, UU = V * V, (U * U).T
    h = VV @ W @ UU + 1.0 / n2
    return (V @ VtHY - h * Y) / (VV @ Wc @ UU - 1.0 / n2)


def _ranking_holdout_c(V, s1, U, s2, Y, alpha):
    """Leave-one-column-out of conditional ranking (intercept form).

    Holding out column ``j`` from every row leaves each row's intercept determined, and the hold-out identity
    ``(I - H_SS) f_S = (H y)_S - H_SS y_S`` applies with ``H_SS = I / n2 + V diag(d_j) V^T``,
    ``d_j = W (U o U)^T e_j``: diagonal in the eigenbasis of ``K1``, so every column costs ``O(n1^2)``.
    Returns ``(F, d)`` with ``F`` of shape (n1, n2)."""
    n2 = Y.shape[1]
    VtHY, Z, W, Wc = _ranking_hat_parts(V, s1, U, s2, Y, alpha)
    UU = (U * U).T
    d = W @ UU
    return V @ ((VtHY - (d + 1.0 / n2) * Z) / (Wc @ UU - 1.0 / n2))


def _ranking_holdout_d(K1, K2, eig2, Y, alpha):
    """Leave-row-and-column-out of conditional ranking: row ``v`` by retraining (``n1`` eigendecompositions of
    ``K1`` without ``v``), column ``j`` in closed form on that model.

    The model without column ``j`` equals the full model refitted on labels whose column ``j`` is replaced by its
    hold-out prediction ``f_j`` (:func:`_ranking_holdout_c`), so its dual coefficients are
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
        delta = _ranking_holdout_c(V, s1, U, s2, Yr, alpha) - Yr
        T = inv @ (CU * K2U).T
        q = K1[v, rest] @ V
        out[v] = (K1[v, rest] @ A) @ K2 + q @ ((V.T @ delta) * T)
    return out


def _scheme_splits(setting, rows, cols, one_domain, n_folds, random_state):
    """Train/test masks over labelled pairs for a prediction setting, by explicit group splits.

    Two domains: A groups by pair (repeats together), B by row, C by column, D by (row group, column group): the
    model for a test pair saw neither its row nor its column. One domain (nodes x nodes): A groups by unordered
    edge ``{i, j}``; B / C predict ``(i, j)`` from a model without any pair touching node ``i`` / ``j`` (pairs whose
    other node is held out too are D pairs and left out of B / C); D removes both nodes.
    ``n_folds=None`` is leave-one-group-out; otherwise groups are dealt round-robin into ``n_folds`` folds after a
    seeded permutation.
    """
    rng = np.random.default_rng(random_state)

    def fold_of(group_ids):
        _, inverse = np.unique(group_ids, return_inverse=True)
        n_groups = inverse.max() + 1
        k = n_groups if n_folds is None else min(n_folds, n_groups)
        fold = np.empty(n_groups, dtype=np.intp)
        fold[rng.permutation(n_groups)] = np.arange(n_groups) % k
        return fold[inverse.ravel()], k

    if setting == "A":
        lo, hi = (np.minimum(rows, cols), np.maximum(rows, cols)) if one_domain else (rows, cols)
        fold, k = fold_of(lo * (max(rows.max(), cols.max()) + 1) + hi)
        for f in range(k):
            test = fold == f
            yield ~test, test
        return
    if one_domain:
        nodes = np.unique(np.concatenate([rows, cols]))
        node_fold = np.full(max(rows.max(), cols.max()) + 1, -1)
        node_fold[nodes], k = fold_of(nodes)
        fr, fc = node_fold[rows], node_fold[cols]
        if setting in "BC":
            for f in range(k):
                out_r, out_c = fr == f, fc == f
                test = (out_r & ~out_c) if setting == "B" else (out_c & ~out_r)
                if test.any():
                    yield ~(out_r | out_c), test
            return
        for f in range(k):
            for g in range(f, k):
                touched = (fr == f) | (fr == g) | (fc == f) | (fc == g)
                test = ((fr == f) & (fc == g)) | ((fr == g) & (fc == f))
                if test.any():
                    yield ~touched, test
        return
    fr, kr = fold_of(rows) if setting in "BD" else (np.zeros(rows.size, np.intp), 1)
    fc, kc = fold_of(cols) if setting in "CD" else (np.zeros(cols.size, np.intp), 1)
    for f in range(kr):
        for g in range(kc):
            out_r = fr == f if setting in "BD" else np.zeros(rows.size, bool)
            out_c = fc == g if setting in "CD" else np.zeros(cols.size, bool)
            test = (fr == f) & (fc == g)
            if test.any():
                yield ~(out_r | out_c), test


class _PairwiseRLS(BaseEstimator):
    """Shared fit/predict of the Kronecker estimators; subclasses set ``_ranking``."""

    _ranking = False

    def __init__(self, alpha=1.0, kernel1="precomputed", kernel2="precomputed", symmetry=None, max_iter=None,
                 tol=1e-10, solver="cg"):
        self.alpha = alpha
        self.kernel1 = kernel1
        self.kernel2 = kernel2
        self.symmetry = symmetry
        self.max_iter = max_iter
        self.tol = tol
        self.solver = solver

    # ----------------------------------------------------------------------------------------------- validation
    def _check_params(self):
        name = type(self).__name__
        alpha = self.alpha
        if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or not np.isfinite(alpha) or alpha < 0:
            raise ValueError(f"The 'alpha' parameter of {name} must be a float in the range [0, inf). Got {alpha!r}.")
        if self.symmetry not in _SYMMETRY:
            raise ValueError(
                f"The 'symmetry' parameter of {name} must be None, 'symmetric' or 'reciprocal'. Got {self.symmetry!r}."
            )
        max_iter = self.max_iter
        if max_iter is not None and (isinstance(max_iter, bool) or not isinstance(max_iter, numbers.Integral)
                                     or max_iter < 1):
            raise ValueError(f"The 'max_iter' parameter of {name} must be a positive int or None. Got {max_iter!r}.")
        if isinstance(self.tol, bool) or not isinstance(self.tol, numbers.Real) or not self.tol > 0:
            raise ValueError(f"The 'tol' parameter of {name} must be a float > 0. Got {self.tol!r}.")
        if self.solver not in ("cg", "minres"):
            raise ValueError(f"The 'solver' parameter of {name} must be 'cg' or 'minres'. Got {self.solver!r}.")
        return float(alpha)

    def _train_gram(self, X, kernel_spec, name):
        kernel = make_kernel(kernel_spec, name=name)
        if kernel == "precomputed":
            return None, kernel, check_square_gram(X, name.replace("kernel", "X")).astype(np.float64)
        X = check_array_2d(X, name.replace("kernel", "X"))
        K = np.asarray(kernel(X), dtype=np.float64)
        return X, kernel, K

    # ------------------------------------------------------------------------------------------------------ fit
    def fit(self, X1, X2, Y):
        """Fit on complete labels ``Y`` of shape (n1, n2) or on triplets ``(rows, cols, values)``.

        Parameters
        ----------
        X1 : ndarray of shape (n1, n1) if ``kernel1="precomputed"``, else (n1, n_features1)
            Row objects (drugs, conditioning nodes).
        X2 : ndarray of shape (n2, n2) or (n2, n_features2), or None
            Column objects (targets, ranked nodes). With ``symmetry`` set (one domain) it must be None or equal
            to ``X1``.
        Y : ndarray of shape (n1, n2), or tuple (rows, cols, values) of 1-D arrays of length q
            Complete label matrix, or labels of observed pairs (repeated pairs allowed).

        Returns
        -------
        self : object
            The fitted estimator.
        """
        alpha = self._check_params()
        name = type(self).__name__
        sign = _SYMMETRY[self.symmetry]
        self.one_domain_ = sign is not None
        X1_fit, kernel1, K1 = self._train_gram(X1, self.kernel1, "kernel1")
        if self.one_domain_:
            if X2 is not None:
                same = np.shape(X2) == np.shape(X1) and np.array_equal(np.asarray(X2), np.asarray(X1))
                if not same:
                    raise ValueError(
                        f"{name}(symmetry={self.symmetry!r}) needs one domain: pass X2=None or X2 equal to X1 "
                        f"(got X1 of shape {np.shape(X1)} and a different X2 of shape {np.shape(X2)})."
                    )
            X2_fit, kernel2, K2 = X1_fit, kernel1, K1
        else:
            if X2 is None:
                raise ValueError(f"'X2' is required for {name} with two domains (symmetry=None); got None.")
            X2_fit, kernel2, K2 = self._train_gram(X2, self.kernel2, "kernel2")
        n1, n2 = K1.shape[0], K2.shape[0]
        self.K1_, self.K2_ = K1, K2
        self.X1_fit_, self.X2_fit_ = X1_fit, X2_fit
        self.kernel1_, self.kernel2_ = kernel1, kernel2
        self.shape_ = (n1, n2)

        complete = not isinstance(Y, tuple)
        self.complete_ = complete
        if complete:
            Y = check_array_2d(Y, "Y").astype(np.float64)
            if Y.shape != (n1, n2):
                raise ValueError(
                    f"'Y' must be the complete label matrix of shape (n1, n2) = ({n1}, {n2}) matching X1 and X2, "
                    f"got {Y.shape}. For incomplete labels pass a (rows, cols, values) triplet."
                )
            self.Y_ = Y
        else:
            self.rows_, self.cols_, self.values_ = _check_triplets(Y, n1, n2)

        closed = complete and sign is None
        if complete and sign is not None and not self._ranking:
            closed = True
        if closed and alpha == 0:
            raise ValueError(f"The 'alpha' parameter of {name} must be > 0 for complete labels (closed form). Got 0.")
        if not closed and alpha == 0 and self.max_iter is None:
            raise ValueError(
                f"{name} with alpha=0 on incomplete labels needs 'max_iter' (early stopping is then the regularizer)."
            )
        self.alpha_ = alpha
        self.eigen_ = None
        if closed:
            self.dual_coef_ = self._fit_closed(K1, K2, Y, alpha, sign)
            self.n_iter_ = 0
        else:
            if complete:
                rows, cols = (a.ravel() for a in np.indices((n1, n2)))
                self.rows_, self.cols_, self.values_ = rows.astype(np.intp), cols.astype(np.intp), Y.ravel()
            self.dual_coef_ = self._fit_cg(K1, K2, alpha, sign)
        return self

    def _fit_closed(self, K1, K2, Y, alpha, sign):
        if sign is not None:
            # (K kron K) S + alpha I has inverse S (K kron K + alpha I)^{-1} + (I - S) / alpha (S commutes).
            eig = EigenPath(K1, name="K1")
            self.eigen_ = (eig, eig)
            V, s = eig.eigenvectors, eig.eigenvalues
            Ysym = 0.5 * (Y + sign * Y.T)
            return kron_ridge_dual(V, s, V, s, Ysym, alpha) + (Y - Ysym) / alpha
        K2_eff, Y_eff = self._effective(K2, Y)
        eig1, eig2 = EigenPath(K1, name="K1"), EigenPath(K2_eff, name="K2")
        self.eigen_ = (eig1, eig2)
        return kron_ridge_dual(eig1.eigenvectors, eig1.eigenvalues, eig2.eigenvectors, eig2.eigenvalues, Y_eff, alpha)

    def _effective(self, K2, Y):
        """Regression: ``(K2, Y)``. Ranking (loss matrix ``C_{n2} kron I``): ``(C K2 C, Y C)`` (Corollary 2)."""
        if not self._ranking:
            return K2, Y
        C = _centering(K2.shape[0])
        return C @ K2 @ C, Y - Y.mean(axis=1, keepdims=True)

    def _fit_cg(self, K1, K2, alpha, sign):
        rows, cols, values = self.rows_, self.cols_, self.values_
        op = SampledKroneckerOperator(K1, K2, rows, cols, sign=sign)
        n1 = K1.shape[0]
        if self._ranking:
            # (L Kq + alpha I) a = L y has its solution in range(L), where it equals the SPD system
            # (L Kq L + alpha I) a = L y (L is a projection): CG applies.
            def center(v):
                return _group_center(v, rows, n1)

            rhs = center(values)

            def matmat(B):
                return np.column_stack([center(op.matvec(center(b))) + alpha * b for b in B.T])
        else:
            rhs = values

            def matmat(B):
                return op.matmat(B) + alpha * B

        if self.solver == "minres":
            coef, info = minres(lambda v: matmat(v[:, None])[:, 0], rhs, rtol=self.tol, max_iter=self.max_iter,
                                warn=self.max_iter is None)
        else:
            coef, info = block_cg(matmat, rhs, rtol=self.tol, max_iter=self.max_iter, warn=self.max_iter is None)
        self.n_iter_ = info.n_iter
        self.cg_info_ = info
        self.edge_coef_ = coef
        return op.scatter(coef)

    # -------------------------------------------------------------------------------------------------- predict
    def _test_block(self, X, which):
        kernel = self.kernel1_ if which == 1 else self.kernel2_
        X_fit = self.X1_fit_ if which == 1 else self.X2_fit_
        n_train = self.shape_[0] if which == 1 else self.shape_[1]
        name = f"X{which}_test"
        if kernel == "precomputed":
            K = check_array_2d(X, name).astype(np.float64)
            if K.shape[1] != n_train:
                raise ValueError(
                    f"'{name}' must be a precomputed test-by-train kernel with {n_train} columns, got shape {K.shape}."
                )
            return K
        X = check_array_2d(X, name)
        if X.shape[1] != X_fit.shape[1]:
            raise ValueError(f"'{name}' has {X.shape[1]} features, but the model was fitted with {X_fit.shape[1]}.")
        return np.asarray(kernel(X, X_fit), dtype=np.float64)

    def _effective_dual(self):
        sign = _SYMMETRY[self.symmetry]
        A = self.dual_coef_
        return A if sign is None else 0.5 * (A + sign * A.T)

    def predict(self, X1_test, X2_test=None, pairs=None):
        """Score test pairs.

        Parameters
        ----------
        X1_test : ndarray of shape (m1, n1) if precomputed (test-by-train), else (m1, n_features1)
            Test row objects.
        X2_test : ndarray of shape (m2, n2) or (m2, n_features2), optional
            Defaults to ``X1_test`` in one-domain (symmetric/reciprocal) mode; required otherwise.
        pairs : tuple (rows, cols) of int arrays of length p, optional
            Score only these (row of ``X1_test``, row of ``X2_test``) pairs.

        Returns
        -------
        scores : ndarray of shape (m1, m2), or (p,) when ``pairs`` is given
            Predicted score of every test pair (or of the given pairs).
        """
        check_is_fitted(self, "dual_coef_")
        K1t = self._test_block(X1_test, 1)
        if X2_test is None:
            if not self.one_domain_:
                raise ValueError("'X2_test' is required for a model with two domains (symmetry=None); got None.")
            K2t = K1t
        else:
            K2t = self._test_block(X2_test, 2)
        A = self._effective_dual()
        if pairs is None:
            # Contract the smaller side first: (n1 x n2) @ (n2 x m2) then (m1 x n1) @ (n1 x m2).
            return K1t @ (A @ K2t.T)
        if len(pairs) != 2:
            raise ValueError(f"'pairs' must be a (rows, cols) tuple, got a sequence of length {len(pairs)}.")
        r, c = (np.asarray(p) for p in pairs)
        if r.shape != c.shape or r.ndim != 1 or (r.size and not (np.issubdtype(r.dtype, np.integer)
                                                                 and np.issubdtype(c.dtype, np.integer))):
            raise ValueError(f"'pairs' must be two 1-D integer arrays of equal length, got {r.shape} and {c.shape}.")
        for name, idx, bound in (("rows", r, K1t.shape[0]), ("cols", c, K2t.shape[0])):
            if idx.size and (idx.min() < 0 or idx.max() >= bound):
                raise ValueError(f"'pairs' {name} must lie in [0, {bound}), got range [{idx.min()}, {idx.max()}].")
        T = A @ K2t.T  # (n1, m2)
        out = np.empty(r.size)
        step = max(1, working_memory_bytes() // (16 * max(A.shape[0], 1)))
        for start in range(0, r.size, step):
            sl = slice(start, start + step)
            out[sl] = np.einsum("ei,ie->e", K1t[r[sl]], T[:, c[sl]])
        return out

    # ---------------------------------------------------------------------------------------- model selection
    def _default_score(self, y, p, rows):  # pragma: no cover - overridden
        raise NotImplementedError

    def _check_cv_args(self, setting, alpha, n_folds):
        check_is_fitted(self, "dual_coef_")
        if setting not in SETTINGS:
            raise ValueError(f"'setting' must be one of {SETTINGS}, got {setting!r}.")
        if n_folds is not None and (isinstance(n_folds, bool) or not isinstance(n_folds, numbers.Integral)
                                    or n_folds < 2):
            raise ValueError(f"'n_folds' must be None (leave one group out) or an int >= 2, got {n_folds!r}.")
        if alpha is None:
            return self.alpha_
        if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or not np.isfinite(alpha) or alpha < 0 \
                or (alpha == 0 and self.max_iter is None):
            raise ValueError(f"'alpha' must be a float > 0 (or 0 with max_iter set), got {alpha!r}.")
        return float(alpha)

    def _labelled(self):
        """Labelled pairs as ``(rows, cols, values)``; all entries (row-major) for complete labels."""
        if self.complete_:
            n1, n2 = self.shape_
            rows, cols = (a.ravel().astype(np.intp) for a in np.indices((n1, n2)))
            return rows, cols, self.Y_.ravel()
        return self.rows_, self.cols_, self.values_

    def _retrain_holdout(self, setting, alpha, n_folds, random_state):
        """Cross-validation predictions by explicit retraining on the splits of :func:`_scheme_splits`.

        Each split refits this estimator (same parameters, precomputed training Grams): in closed form on the
        sub-matrices when the training pairs form a complete grid (complete labels, settings B-D, ordinary or
        symmetric regression), otherwise by conjugate gradient on the training triplets. Pairs no split predicts
        (one domain, settings B / C: both nodes in the same fold) are NaN.
        """
        rows, cols, values = self._labelled()
        out = np.full(values.size, np.nan)
        for train, test in _scheme_splits(setting, rows, cols, self.one_domain_, n_folds, random_state):
            if train.any():
                out[test] = self._refit_predict(alpha, rows[train], cols[train], values[train], rows[test],
                                                cols[test])
        return out.reshape(self.shape_) if self.complete_ else out

    def _refit_predict(self, alpha, r, c, v, r_test, c_test):
        params = {"alpha": alpha, "kernel1": "precomputed", "kernel2": "precomputed", "symmetry": self.symmetry,
                  "max_iter": self.max_iter, "tol": self.tol}
        one = self.one_domain_
        R, C = np.unique(r), np.unique(c)
        grid = (self.complete_ and alpha > 0 and r.size == R.size * C.size
                and (not one or (np.array_equal(R, C) and not self._ranking)))
        if grid:
            model = type(self)(**params).fit(self.K1_[np.ix_(R, R)], None if one else self.K2_[np.ix_(C, C)],
                                             self.Y_[np.ix_(R, C)])
            K1t, K2t = self.K1_[:, R], None if one else self.K2_[:, C]
        else:
            model = type(self)(**params).fit(self.K1_, None if one else self.K2_, (r, c, v))
            K1t, K2t = self.K1_, None if one else self.K2_
        pred = model.predict(K1t, K2t, pairs=(r_test, c_test))
        if self._ranking:
            # The ranking loss leaves each row's offset free: score with the least-squares intercept of the rows
            # that have training labels (rows new to the model keep the plain kernel score).
            n1 = self.shape_[0]
            resid = v - model.predict(K1t, K2t, pairs=(r, c))
            counts = np.bincount(r, minlength=n1)
            offset = np.bincount(r, weights=resid, minlength=n1) / np.maximum(counts, 1)
            pred = pred + offset[r_test]
        return pred

    def cv_path(self, alphas, setting, scoring=None, n_folds=None, random_state=0):
        """Cross-validated score of each ``alpha`` under a prediction setting.

        Parameters
        ----------
        alphas : sequence of float > 0
            Regularization values to evaluate.
        setting : {"A", "B", "C", "D"}
            See :meth:`holdout_predictions`.
        scoring : callable, optional
            ``scoring(y, p)`` on the labelled pairs a split predicted (flat arrays; higher is better). Defaults to
            the concordance index over all pairs (KronRLS) or one minus the mean per-row pairwise rank loss
            (ConditionalRankRLS).
        n_folds : int, optional
            As :meth:`holdout_predictions`.
        random_state : int, default=0
            As :meth:`holdout_predictions`.

        Returns
        -------
        scores : ndarray of shape (n_alphas,)
            Cross-validated score of each alpha (higher is better).

        Notes
        -----
        KronRLS setting D on complete labels (two domains, ``n_folds=None``) decomposes every leave-one-row-out
        Gram matrix once for the whole grid (:func:`iokr.linalg.leave_row_and_column_out`); other settings and
        estimators evaluate the alphas one at a time.
        """
        check_is_fitted(self, "dual_coef_")
        rows, _, values = self._labelled()
        scores = []
        for P in self._holdout_path(alphas, setting, n_folds, random_state):
            P = np.ravel(P)
            keep = ~np.isnan(P)
            y, p = values[keep], P[keep]
            scores.append(self._default_score(y, p, rows[keep]) if scoring is None else scoring(y, p))
        return np.array(scores)


    def _holdout_path(self, alphas, setting, n_folds, random_state):
        """Hold-out predictions for each alpha, one at a time (subclasses share work across alphas)."""
        for a in alphas:
            yield self.holdout_predictions(setting, alpha=a, n_folds=n_folds, random_state=random_state)


class KronRLS(_PairwiseRLS):
    """Kronecker regularized least squares for pairwise (dyadic) regression.

    Parameters
    ----------
    alpha : float, default=1.0
        ``lambda`` of ``(K2 kron K1 + lambda I) vec(A) = vec(Y)`` (Pahikkala et al. 2013, eq. 18). May be 0 only
        for incomplete labels with ``max_iter`` (early stopping regularizes).
    kernel1, kernel2 : Kernel, str, default="precomputed"
        Kernels of the row and column domains; with "precomputed", ``X1`` / ``X2`` are Gram matrices in ``fit``
        and test-by-train blocks in ``predict``. ``kernel2`` is ignored in one-domain mode.
    symmetry : {None, "symmetric", "reciprocal"}, default=None
        One-domain pairwise kernels ``(K kron K)(I +/- P) / 2`` (eq. 8-9) for symmetric or antisymmetric relations.
    max_iter : int, optional
        Iteration cap of the iterative solver on incomplete labels (early stopping).
    tol : float, default=1e-10
        The iterative solver stops when the true relative residual ``||b - M a|| / ||b||`` of the pair system is
        at most ``tol`` (reported in ``cg_info_``); see Notes.
    solver : {"cg", "minres"}, default="cg"
        Iterative solver on incomplete labels. MINRES minimizes the residual over the same Krylov space, so it
        reaches ``tol`` in at most as many operator products (``benchmarks/bench_kron_solvers.py``).

    Attributes
    ----------
    dual_coef_ : ndarray of shape (n1, n2)
        Dual coefficients ``A`` (repeated pairs summed); scores are ``K1_test A K2_test^T`` (with ``A`` projected
        to its (anti)symmetric part in one-domain mode).
    eigen_ : tuple of EigenPath or None
        Factor eigendecompositions of the closed form (None after conjugate gradient).
    n_iter_ : int
        Iterations of the iterative solver (0 for the closed form).
    cg_info_ : CGInfo
        After the iterative solver: ``relative_residuals[0]``, the true ``||b - M a|| / ||b||`` at the stop.

    Notes
    -----
    Incomplete labels (or ``max_iter``) solve ``M a = b`` with ``M = K_q + alpha I`` (``K_q`` the pair kernel on the
    labelled pairs) and ``b`` the labels, by CG or MINRES from ``a = 0``. The stopping rule is stated on the true
    residual: the solver stops at the first iterate with ``||b - M a|| / ||b|| <= tol`` (a cheap recursive estimate
    proposes the stop, one product with ``M`` confirms it), or after ``max_iter`` iterations.

    Proposition 3 of the paper: with complete labels, the symmetric (reciprocal) kernel gives the same predictions
    as the ordinary Kronecker kernel trained on ``(Y + Y^T) / 2`` (``(Y - Y^T) / 2``), i.e. on each edge included in
    both directions; the closed form used here is ``S (K kron K + alpha I)^{-1} y + (I - S) y / alpha``.

    Examples
    --------
    >>> import numpy as np
    >>> from iokr.estimators.kron import KronRLS
    >>> rng = np.random.default_rng(0)
    >>> X1, X2 = rng.normal(size=(5, 3)), rng.normal(size=(4, 3))
    >>> K1, K2 = X1 @ X1.T, X2 @ X2.T
    >>> model = KronRLS(alpha=1.0).fit(K1, K2, rng.normal(size=(5, 4)))
    >>> model.predict(K1[:2], K2).shape
    (2, 4)
    """

    _ranking = False

    def _default_score(self, y, p, rows):
        return concordance_index(y, p)

    def holdout_predictions(self, setting, alpha=None, n_folds=None, random_state=0):
        """Cross-validation predictions on the training pairs under one of the four prediction settings.

        Parameters
        ----------
        setting : {"A", "B", "C", "D"}
            A: leave the pair out (known rows and columns); B: leave the row out (new rows); C: leave the column
            out (new columns); D: leave the row and the column out (new rows and columns; the training pairs share
            neither). In one-domain mode (``symmetry`` set) A leaves out the edge in both directions, and B / C / D
            leave out every pair touching the row node / the column node / both nodes.
        alpha : float, optional
            Regularization to evaluate (default: the fitted one).
        n_folds : int, optional
            None: leave one group (pair, edge, row, column, node) out. An int: k-fold over those groups, by
            explicit retraining.
        random_state : int, default=0
            Seed of the fold assignment (``n_folds`` only).

        Returns
        -------
        P : ndarray of shape (n1, n2), or (q,) aligned with the training triplets for incomplete labels
            Each entry is predicted by the model trained without the pairs the setting holds out with it; NaN
            where no split predicts it (one domain, B / C with folds: both nodes in one fold).

        Notes
        -----
        Closed forms (complete labels, ``n_folds=None``): with ``symmetry=None``, A-C cost a few
        ``O(n1 n2 (n1 + n2))`` products and D retrains over the smaller domain (``min(n1, n2)`` eigendecompositions)
        with the closed form over the other; one-domain A is :func:`iokr.linalg.kron_ridge_leave_edge_out`
        (``O(n^4)``). One-domain B / C / D (``n`` / ``n`` / ``n (n + 1) / 2`` refits of the closed form on the
        remaining nodes), incomplete labels (conjugate gradient per split) and k-fold are computed by explicit
        retraining.
        """
        alpha = self._check_cv_args(setting, alpha, n_folds)
        if n_folds is not None or not self.complete_ or (self.one_domain_ and setting != "A"):
            return self._retrain_holdout(setting, alpha, n_folds, random_state)
        eig1, eig2 = self.eigen_
        if self.one_domain_:
            sign = _SYMMETRY[self.symmetry]
            V, s = eig1.eigenvectors, eig1.eigenvalues
            Ysym = 0.5 * (self.Y_ + sign * self.Y_.T)
            A = kron_ridge_dual(V, s, V, s, Ysym, alpha) + (self.Y_ - Ysym) / alpha
            return kron_ridge_leave_edge_out(V, s, self.Y_, A, alpha, sign)
        if setting == "D":
            return self._leave_row_and_column_out([alpha])[0]
        return kron_ridge_holdout(eig1.eigenvectors, eig1.eigenvalues, eig2.eigenvectors, eig2.eigenvalues, self.Y_,
                             alpha, setting)


    def _leave_row_and_column_out(self, alphas):
        """Setting-D closed form for a grid (complete labels, two domains): every eigendecomposition is shared."""
        eig1, eig2 = self.eigen_
        # Loop over the smaller domain, closed form over the larger one.
        if self.shape_[0] <= self.shape_[1]:
            return leave_row_and_column_out(self.K1_, eig2, self.Y_, alphas)
        return leave_row_and_column_out(self.K2_, eig1, self.Y_.T, alphas).transpose(0, 2, 1)

    def _holdout_path(self, alphas, setting, n_folds, random_state):
        if setting == "D" and n_folds is None and self.complete_ and not self.one_domain_:
            alphas = [self._check_cv_args(setting, a, n_folds) for a in alphas]
            yield from self._leave_row_and_column_out(alphas)
            return
        yield from super()._holdout_path(alphas, setting, n_folds, random_state)


class ConditionalRankRLS(_PairwiseRLS):
    """Conditional ranking with Kronecker kernels: RankRLS loss centered per conditioning (row) node.

    Minimizes ``sum_v sum_{e, e' in E_v} (y_e - y_e' - f(e) + f(e'))^2 + lambda ||f||^2`` where ``E_v`` are the
    labelled pairs of row node ``v`` (Pahikkala et al. 2013, eq. 6 and 30-33): the columns are ranked conditioned
    on each row. Attributes as :class:`KronRLS`.

    Parameters
    ----------
    alpha : float, default=1.0
        Regularization ``lambda`` (as in :class:`KronRLS`).
    kernel1, kernel2 : Kernel, str, default="precomputed"
        Kernels of the conditioning (row) and ranked (column) domains, as in :class:`KronRLS`.
    symmetry : {None, "symmetric", "reciprocal"}, default=None
        One-domain pairwise kernels, as in :class:`KronRLS`.
    max_iter : int, optional
        Iteration cap of the iterative solver on incomplete labels (early stopping).
    tol : float, default=1e-10
        The iterative solver stops when the true relative residual ``||b - M a|| / ||b||`` of the pair system is
        at most ``tol`` (reported in ``cg_info_``); see Notes.
    solver : {"cg", "minres"}, default="cg"
        Iterative solver on incomplete labels. MINRES minimizes the residual over the same Krylov space, so it
        reaches ``tol`` in at most as many operator products (``benchmarks/bench_kron_solvers.py``).

    Notes
    -----
    With complete labels the loss matrix is ``L = C kron I`` (``C`` the n2 x n2 centering matrix) and the solution of
    ``(L Kbar + lambda I) a = L y`` lies in ``range(L)``, where it solves
    ``((C K2 C) kron K1 + lambda I) a = L y``: a Kronecker system with factors ``K1`` and ``C K2 C``, solved in
    closed form for any PSD kernels (Corollary 2). Symmetric/reciprocal kernels and incomplete labels use conjugate
    gradient on ``(L Kq L + lambda I) a = L y`` (SPD, same solution). Scores are meaningful up to a per-row shift.
    """

    _ranking = True

    def _default_score(self, y, p, rows):
        return 1.0 - pairwise_rank_loss(y, p, rows)

    def holdout_predictions(self, setting, alpha=None, n_folds=None, random_state=0):
        """Cross-validation predictions under one of the four settings (see :meth:`KronRLS.holdout_predictions`).

        The ranking loss leaves a free offset per row; predictions for rows that keep training labels (settings A
        and C) include the least-squares row intercept of the model that made them, so scores from different
        hold-out models are comparable within a row. Setting B returns row-centered predictions (a whole row comes
        from one model); setting D (and B by retraining) the plain kernel scores ``K1 A K2^T``.

        Parameters
        ----------
        setting : {"A", "B", "C", "D"}
            Held-out unit: pair, row, column, or row and column (see :meth:`KronRLS.holdout_predictions`).
        alpha : float, optional
            Regularization to evaluate (default: the fitted one).
        n_folds : int, optional
            None: leave one group out (closed forms where they exist). An int: k-fold by explicit retraining.
        random_state : int, default=0
            Seed of the fold assignment (``n_folds`` only).

        Returns
        -------
        P : ndarray of shape (n1, n2), or (q,) aligned with the training triplets for incomplete labels
            Each entry predicted by the model trained without the pairs the setting holds out with it.

        Notes
        -----
        Closed forms (complete labels, ``symmetry=None``, ``n_folds=None``), all from ``K1 = V S1 V^T`` and
        ``C K2 C = U S2 U^T``: conditional ranking is KronRLS with an unpenalized intercept per row, a penalized
        least-squares fit, so the model trained without a set ``S`` of pairs equals the full model refitted with
        ``y_S`` replaced by its own predictions, ``(I - H_SS) f_S = (H y)_S - H_SS y_S``. A: ``H_SS`` is the
        diagonal of ``H`` (:func:`_ranking_holdout_a`); B: leave-row-out of KronRLS on ``(K1, C K2 C, Y C)``;
        C: ``H_SS`` for a column is diagonal in the eigenbasis of ``K1`` (:func:`_ranking_holdout_c`); D: ``n1``
        row refits, each with the closed-form column hold-out (:func:`_ranking_holdout_d`). Other cases (one
        domain, incomplete labels, ``n_folds``) retrain explicitly on the setting's splits.
        """
        alpha = self._check_cv_args(setting, alpha, n_folds)
        if n_folds is not None or not self.complete_ or self.one_domain_:
            return self._retrain_holdout(setting, alpha, n_folds, random_state)
        eig1, eig2 = self.eigen_
        V, s1, U, s2 = eig1.eigenvectors, eig1.eigenvalues, eig2.eigenvectors, eig2.eigenvalues
        Y = self.Y_
        if setting == "A":
            return _ranking_holdout_a(V, s1, U, s2, Y, alpha)
        if setting == "C":
            return _ranking_holdout_c(V, s1, U, s2, Y, alpha)
        if setting == "D":
            return _ranking_holdout_d(self.K1_, self.K2_, eig2, Y, alpha)
        _, Yc = self._effective(self.K2_, Y)
        return kron_ridge_holdout(V, s1, U, s2, Yc, alpha, "B")


class TwoStepRLS(BaseEstimator):
    """Two-step kernel ridge regression: ``A = (K1 + alpha1 I)^{-1} Y (K2 + alpha2 I)^{-1}`` (complete labels).

    A ridge regression over rows followed by one over columns (Pahikkala et al. 2014; Stock et al. 2018); its
    fitted values ``H1 Y H2`` (``Hk = Kk (Kk + alpha_k I)^{-1}``) make all four cross-validation settings
    closed-form, as in RLScore's ``TwoStepRLS``.

    Parameters
    ----------
    alpha1, alpha2 : float, default=1.0
        Row and column regularization, > 0.
    kernel1, kernel2 : Kernel or str, default="precomputed"
        Kernels of the row and column domains; with "precomputed", ``X1`` / ``X2`` are Gram matrices in ``fit``
        and test-by-train blocks in ``predict``.

    Attributes
    ----------
    dual_coef_ : ndarray of shape (n1, n2)
    """

    def __init__(self, alpha1=1.0, alpha2=1.0, kernel1="precomputed", kernel2="precomputed"):
        self.alpha1 = alpha1
        self.alpha2 = alpha2
        self.kernel1 = kernel1
        self.kernel2 = kernel2

    _train_gram = _PairwiseRLS._train_gram
    _test_block = _PairwiseRLS._test_block

    def fit(self, X1, X2, Y):
        """Fit on complete labels.

        Parameters
        ----------
        X1 : ndarray of shape (n1, n1) if ``kernel1="precomputed"``, else (n1, n_features1)
            Row objects.
        X2 : ndarray of shape (n2, n2) if ``kernel2="precomputed"``, else (n2, n_features2)
            Column objects.
        Y : ndarray of shape (n1, n2)
            Complete label matrix.

        Returns
        -------
        self : TwoStepRLS
            The fitted estimator.
        """
        from .._validation import check_positive_scalar

        a1 = check_positive_scalar(self.alpha1, "alpha1", "TwoStepRLS")
        a2 = check_positive_scalar(self.alpha2, "alpha2", "TwoStepRLS")
        self.X1_fit_, self.kernel1_, K1 = self._train_gram(X1, self.kernel1, "kernel1")
        self.X2_fit_, self.kernel2_, K2 = self._train_gram(X2, self.kernel2, "kernel2")
        Y = check_array_2d(Y, "Y").astype(np.float64)
        if Y.shape != (K1.shape[0], K2.shape[0]):
            raise ValueError(f"'Y' must have shape ({K1.shape[0]}, {K2.shape[0]}) matching X1 and X2, got {Y.shape}.")
        self.shape_ = Y.shape
        self.Y_ = Y
        self.eigen_ = (EigenPath(K1, name="K1"), EigenPath(K2, name="K2"))
        self.alphas_ = (a1, a2)
        eig1, eig2 = self.eigen_
        self.dual_coef_ = eig1.solve(eig2.solve(Y.T, a2).T, a1)
        return self

    def predict(self, X1_test, X2_test):
        """Score all test pairs.

        Parameters
        ----------
        X1_test : ndarray of shape (m1, n1) if precomputed (test-by-train), else (m1, n_features1)
            Test row objects.
        X2_test : ndarray of shape (m2, n2) if precomputed (test-by-train), else (m2, n_features2)
            Test column objects.

        Returns
        -------
        scores : ndarray of shape (m1, m2)
            Predicted score of every (row, column) test pair.
        """
        check_is_fitted(self, "dual_coef_")
        return self._test_block(X1_test, 1) @ self.dual_coef_ @ self._test_block(X2_test, 2).T

    def holdout_predictions(self, setting, alpha1=None, alpha2=None):
        """Closed-form cross-validation predictions under one of the four settings.

        Parameters
        ----------
        setting : {"A", "B", "C", "D"}
            "A": pair (by self-consistent imputation of the held-out label); "B": row; "C": column; "D": row and
            column (exact).
        alpha1, alpha2 : float, optional
            Row and column regularization to evaluate (default: the fitted ones).

        Returns
        -------
        P : ndarray of shape (n1, n2)
            Each entry predicted by the model trained without the pairs the setting holds out with it.
        """
        check_is_fitted(self, "dual_coef_")
        if setting not in SETTINGS:
            raise ValueError(f"'setting' must be one of {SETTINGS}, got {setting!r}.")
        a1 = self.alphas_[0] if alpha1 is None else alpha1
        a2 = self.alphas_[1] if alpha2 is None else alpha2
        eig1, eig2 = self.eigen_

        def hat(eig, alpha):
            """Hat matrix, its diagonal and ``1 - diag`` from the complement weights (no cancellation)."""
            Q, s = eig.eigenvectors, eig.eigenvalues
            return (Q * (s / (s + alpha))) @ Q.T, (Q * Q) @ (s / (s + alpha)), (Q * Q) @ (alpha / (s + alpha))

        (H1, h1, c1), (H2, h2, c2) = hat(eig1, a1), hat(eig2, a2)
        h1, c1, h2, c2 = h1[:, None], c1[:, None], h2[None, :], c2[None, :]
        Y = self.Y_
        if setting == "A":
            return (H1 @ Y @ H2 - h1 * h2 * Y) / (c1 + h1 * c2)  # 1 - h1 h2 = (1 - h1) + h1 (1 - h2)
        if setting == "B":
            YH2 = Y @ H2
            return (H1 @ YH2 - h1 * YH2) / c1
        if setting == "C":
            H1Y = H1 @ Y
            return (H1Y @ H2 - H1Y * h2) / c2
        loo_cols = (Y @ H2 - Y * h2) / c2
        return (H1 @ loo_cols - h1 * loo_cols) / c1

"""Shared wiring of the Kronecker pairwise estimators: parameters, kernels, fit on complete labels or triplets,
prediction of pairs, and cross-validation predictions under the four prediction settings.

The numerics live in :mod:`iokr.linalg` (closed forms, hold-out algebra, conjugate gradient on the sampled pair
kernel, and the explicit splits of the settings); the explicit retraining on those splits where no closed form
applies in :mod:`._pairwise_retrain`, and the pooled scoring of hold-out predictions (the ``cv_path`` alias, and the
searches of :mod:`iokr.model_selection`) in :mod:`._pairwise_scores`.
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
    NystromPreconditioner,
    SampledKroneckerOperator,
    block_cg,
    kron_ranking_factors,
    kron_ridge_dual,
    kron_ridge_symmetric_dual,
    minres,
    sampled_kron_features,
)
from ..linalg._pairwise_splits import check_setting
from ..linalg.developer import BlockCentering
from ._pairwise_retrain import retrain_holdout
from ._pairwise_scores import pairwise_cv_scores

SYMMETRY = {None: None, "symmetric": 1, "reciprocal": -1}


def check_triplets(Y, n1, n2):
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


class PairKernelsMixin:
    """Training Gram matrices and test-by-train blocks of the row (1) and column (2) domains."""

    def _train_gram(self, X, kernel_spec, name):
        kernel = make_kernel(kernel_spec, name=name)
        if kernel == "precomputed":
            return None, kernel, check_square_gram(X, name.replace("kernel", "X")).astype(np.float64)
        X = check_array_2d(X, name.replace("kernel", "X"))
        K = np.asarray(kernel(X), dtype=np.float64)
        return X, kernel, K

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


class _PairwiseRLS(PairKernelsMixin, BaseEstimator):
    """Shared fit/predict of the Kronecker estimators; subclasses set ``_ranking`` and ``_closed_holdout``."""

    _ranking = False

    def __init__(self, alpha=1.0, kernel1="precomputed", kernel2="precomputed", symmetry=None, max_iter=None,
                 tol=1e-10, solver="minres", preconditioner_rank=None):
        self.alpha = alpha
        self.kernel1 = kernel1
        self.kernel2 = kernel2
        self.symmetry = symmetry
        self.max_iter = max_iter
        self.tol = tol
        self.solver = solver
        self.preconditioner_rank = preconditioner_rank

    # ----------------------------------------------------------------------------------------------- validation
    def _check_params(self):
        name = type(self).__name__
        alpha = self.alpha
        if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or not np.isfinite(alpha) or alpha < 0:
            raise ValueError(f"The 'alpha' parameter of {name} must be a float in the range [0, inf). Got {alpha!r}.")
        if self.symmetry not in SYMMETRY:
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
        rank = self.preconditioner_rank
        if rank is not None:
            if isinstance(rank, bool) or not isinstance(rank, numbers.Integral) or rank < 1:
                raise ValueError(
                    f"The 'preconditioner_rank' parameter of {name} must be a positive int or None. Got {rank!r}.")
            if self.solver != "cg" or self.symmetry is not None or not alpha > 0:
                raise ValueError(
                    f"The 'preconditioner_rank' parameter of {name} needs solver='cg', symmetry=None and alpha > 0 "
                    f"(got solver={self.solver!r}, symmetry={self.symmetry!r}, alpha={alpha!r}).")
        return float(alpha)

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
        sign = SYMMETRY[self.symmetry]
        self.one_domain_ = sign is not None
        K1, K2 = self._fit_grams(X1, X2)
        n1, n2 = self.shape_
        self.complete_ = not isinstance(Y, tuple)
        if self.complete_:
            Y = check_array_2d(Y, "Y").astype(np.float64)
            if Y.shape != (n1, n2):
                raise ValueError(
                    f"'Y' must be the complete label matrix of shape (n1, n2) = ({n1}, {n2}) matching X1 and X2, "
                    f"got {Y.shape}. For incomplete labels pass a (rows, cols, values) triplet."
                )
            self.Y_ = Y
        else:
            self.rows_, self.cols_, self.values_ = check_triplets(Y, n1, n2)
        self._check_alpha_route(alpha)
        self.alpha_ = alpha
        self.eigen_ = None
        if self._closed():
            self.dual_coef_ = self._fit_closed(K1, K2, Y, alpha, sign)
            self.n_iter_ = 0
        else:
            if self.complete_:
                rows, cols = (a.ravel() for a in np.indices((n1, n2)))
                self.rows_, self.cols_, self.values_ = rows.astype(np.intp), cols.astype(np.intp), Y.ravel()
            self.dual_coef_ = self._fit_cg(K1, K2, alpha, sign)
        return self

    def _fit_grams(self, X1, X2):
        """Training Grams of both domains (one domain: ``X2`` must be None or equal to ``X1``)."""
        name = type(self).__name__
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
        self.K1_, self.K2_ = K1, K2
        self.X1_fit_, self.X2_fit_ = X1_fit, X2_fit
        self.kernel1_, self.kernel2_ = kernel1, kernel2
        self.shape_ = (K1.shape[0], K2.shape[0])
        return K1, K2

    def _closed(self):
        """Complete labels have a closed form, except for one-domain conditional ranking."""
        return self.complete_ and (not self.one_domain_ or not self._ranking)

    def _check_alpha_route(self, alpha):
        name = type(self).__name__
        if self._closed() and alpha == 0:
            raise ValueError(f"The 'alpha' parameter of {name} must be > 0 for complete labels (closed form). Got 0.")
        if not self._closed() and alpha == 0 and self.max_iter is None:
            raise ValueError(
                f"{name} with alpha=0 on incomplete labels needs 'max_iter' (early stopping is then the regularizer)."
            )

    def _fit_closed(self, K1, K2, Y, alpha, sign):
        if sign is not None:
            eig = EigenPath(K1, name="K1")
            self.eigen_ = (eig, eig)
        else:
            K2_eff = kron_ranking_factors(K2, Y)[0] if self._ranking else K2
            self.eigen_ = (EigenPath(K1, name="K1"), EigenPath(K2_eff, name="K2"))
        return self._closed_dual(alpha)

    def _closed_dual(self, alpha):
        """Dual coefficients at ``alpha`` from the cached eigendecompositions (complete labels)."""
        eig1, eig2 = self.eigen_
        sign = SYMMETRY[self.symmetry]
        if sign is not None:
            # (K kron K) S + alpha I has inverse S (K kron K + alpha I)^{-1} + (I - S) / alpha (S commutes).
            return kron_ridge_symmetric_dual(eig1.eigenvectors, eig1.eigenvalues, self.Y_, alpha, sign)
        # Ranking (loss matrix C kron I): Kronecker ridge on (K1, C K2 C) with per-row centered labels (Corollary 2).
        Y = self.Y_ - self.Y_.mean(axis=1, keepdims=True) if self._ranking else self.Y_
        return kron_ridge_dual(eig1.eigenvectors, eig1.eigenvalues, eig2.eigenvectors, eig2.eigenvalues, Y, alpha)

    def _refit_alpha(self, alpha):
        """Refit at another ``alpha`` through the cached eigendecompositions (closed form only); returns self."""
        check_is_fitted(self, "eigen_")
        if self.eigen_ is None:
            raise ValueError(f"{type(self).__name__} was fitted by an iterative solver; refit it with fit().")
        self.set_params(alpha=float(alpha))
        self.alpha_ = float(alpha)
        self.dual_coef_ = self._closed_dual(self.alpha_)
        return self

    def _fit_cg(self, K1, K2, alpha, sign):
        rows, cols, values = self.rows_, self.cols_, self.values_
        op = SampledKroneckerOperator(K1, K2, rows, cols, sign=sign)
        if self._ranking:
            # (L Kq + alpha I) a = L y has its solution in range(L), where it equals the SPD system
            # (L Kq L + alpha I) a = L y (L, the per-row centering of eq. 31, is a projection): CG applies.
            row_groups = np.unique(rows, return_inverse=True)[1].ravel()
            L = BlockCentering(row_groups, np.ones(row_groups.max() + 1))
            rhs = L.apply(values)

            def matmat(B):
                return L.apply(op.matmat(L.apply(B))) + alpha * B
        else:
            rhs = values

            def matmat(B):
                return op.matmat(B) + alpha * B

        precond = None
        if self.preconditioner_rank is not None:
            # P = Phi Phi^T + alpha I from the top Kronecker eigenpairs (L Phi for the centred ranking system).
            rank = min(self.preconditioner_rank, K1.shape[0] * K2.shape[0])
            Phi, _ = sampled_kron_features(K1, K2, rows, cols, rank)
            precond = NystromPreconditioner(L.apply(Phi) if self._ranking else Phi, alpha)
        if self.solver == "minres":
            coef, info = minres(lambda v: matmat(v[:, None])[:, 0], rhs, rtol=self.tol, max_iter=self.max_iter,
                                warn=self.max_iter is None)
        else:
            coef, info = block_cg(matmat, rhs, rtol=self.tol, max_iter=self.max_iter, preconditioner=precond,
                                  warn=self.max_iter is None)
        self.n_iter_ = info.n_iter
        self.cg_info_ = info
        self.edge_coef_ = coef
        return op.scatter(coef)

    # -------------------------------------------------------------------------------------------------- predict
    def _effective_dual(self):
        sign = SYMMETRY[self.symmetry]
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
    def _check_cv_args(self, setting, alpha, n_folds):
        check_is_fitted(self, "dual_coef_")
        check_setting(setting, n_folds)
        if alpha is None:
            return self.alpha_
        if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or not np.isfinite(alpha) or alpha < 0 \
                or (alpha == 0 and self.max_iter is None):
            raise ValueError(f"'alpha' must be a float > 0 (or 0 with max_iter set), got {alpha!r}.")
        return float(alpha)

    def _closed_holdout(self, setting, alpha):  # pragma: no cover - overridden
        """Closed-form hold-out predictions (complete labels, leave one group out), or None where none exists."""
        raise NotImplementedError

    def _holdout(self, setting, alpha, n_folds, random_state):
        """The route of :meth:`holdout_predictions`: a sequence of alphas is stacked, one alpha is dispatched."""
        if np.ndim(alpha) == 1:
            return np.stack(list(self._holdout_path(alpha, setting, n_folds, random_state)))
        alpha = self._check_cv_args(setting, alpha, n_folds)
        if n_folds is None and self.complete_:
            closed = self._closed_holdout(setting, alpha)
            if closed is not None:
                return closed
        return retrain_holdout(self, setting, alpha, n_folds, random_state)

    def _holdout_path(self, alphas, setting, n_folds, random_state):
        """Hold-out predictions for each alpha, one at a time (subclasses share work across alphas)."""
        for a in alphas:
            yield self._holdout(setting, a, n_folds, random_state)

    def _labelled(self):
        """Labelled pairs as ``(rows, cols, values)``; all entries (row-major) for complete labels."""
        if self.complete_:
            n1, n2 = self.shape_
            rows, cols = (a.ravel().astype(np.intp) for a in np.indices((n1, n2)))
            return rows, cols, self.Y_.ravel()
        return self.rows_, self.cols_, self.values_

    def cv_path(self, alphas, setting, scoring=None, n_folds=None, random_state=0):
        """Cross-validated score of each ``alpha`` under a prediction setting (a thin alias).

        Kept for existing callers: it scores :meth:`holdout_predictions` exactly as
        :class:`~iokr.model_selection.KronRLSCV` / :class:`~iokr.model_selection.ConditionalRankRLSCV` do, which
        also pick the best alpha and refit; prefer those.

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
            Cross-validated score of each alpha (higher is better), on all pooled hold-out predictions.

        Notes
        -----
        KronRLS setting D on complete labels (two domains, ``n_folds=None``) decomposes every leave-one-row-out
        Gram matrix once for the whole grid (:func:`iokr.linalg.leave_row_and_column_out`); other settings and
        estimators evaluate the alphas one at a time.
        """
        check_is_fitted(self, "dual_coef_")
        return pairwise_cv_scores(self, alphas, setting, scoring, n_folds, random_state)[0]

"""RankRLS: regularized least-squares ranking, global or query-wise, with closed-form leave-query-out and
leave-pair-out cross-validation (Pahikkala 2008, section 2.3.3; Pahikkala et al. 2009).

The loss ``sum over pairs (i, j) in the same query of ((y_i - y_j) - (f_i - f_j))^2`` is ``(y - f)^T L (y - f)`` with
``L`` block diagonal, ``l_q I - 1 1^T`` per query of size ``l_q`` (the Laplacian of the complete preference graph;
``normalize_queries=True`` uses the centering matrix ``I - 1 1^T / l_q`` instead, as RLScore's ``QueryRankRLS``).
Minimizing it plus ``alpha ||f||^2`` gives ``(L K + alpha I) a = L y``. With ``W = L^{1/2}`` (per query
``sqrt(l_q) C_q`` or ``C_q``) the solution is ``a = W (W K W + alpha I)^{-1} W y``: one symmetric eigendecomposition
of ``G = W K W`` serves every ``alpha`` (:class:`iokr.linalg.EigenPath`).
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from .._validation import check_array_2d, check_finite, check_positive_scalar, check_square_gram
from ..kernels import make_kernel
from ..linalg import EigenPath, cholesky_shifted, row_slices
from ..metrics import pairwise_rank_loss

__all__ = ["RankRLS"]


class RankRLS(BaseEstimator):
    """Regularized least-squares ranking (magnitude-preserving pairwise squared loss).

    Parameters
    ----------
    alpha : float, default=1.0
        Regularization ``lambda`` > 0 of ``(L K + lambda I) a = L y``.
    kernel : Kernel or str, default="linear"
        ``"linear"`` solves the primal ``(X^T L X + lambda I) w = X^T L y`` when that is smaller (no bias term, as
        RLScore's ``GlobalRankRLS``); a Kernel object or name uses the dual; ``"precomputed"`` takes Gram matrices.
    normalize_queries : bool, default=False
        Weight each query's pair loss by ``1 / l_q`` (centering matrix instead of the Laplacian).

    Attributes
    ----------
    dual_coef_ : ndarray of shape (n,)
        Dual coefficients ``a`` (scores ``k(x, X) a``).
    coef_ : ndarray of shape (n_features,)
        Primal weights (``kernel="linear"`` only).
    eigen_ : EigenPath or None
        Eigendecomposition of ``G = W K W``, built on the first cross-validation call (fit uses a Cholesky solve).
    qids_ : ndarray of shape (n,)
        Query index of each training example (0..n_queries-1).

    Notes
    -----
    Leave-query-out: removing a whole query leaves the other blocks of ``L`` unchanged, so with ``z = W y`` the
    model trained without query ``S`` satisfies ``W_SS f_S = z_S - [(G + lambda I)^{-1}]_SS^{-1} [(G + lambda I)^{-1}
    z]_S`` (the ridge hold-out formula on ``(G, z)``); ``W_SS = s_q C`` fixes ``f_S`` up to a constant, which no
    within-query ranking sees.

    Leave-pair-out (global ranking): the complete-graph loss equals ``c_m min_b ||y - f - b 1||^2`` (``c_m = m``, or 1
    when normalized), i.e. ridge regression with an unpenalized intercept and regularization ``lambda / c_m``. Leaving
    a pair out leaves ``m - 2`` examples, so the hold-out predictions are those of that intercept-ridge smoother
    ``H = C K C (C K C + mu I)^{-1} + 1 1^T / m`` with ``mu = lambda / c_{m-2}``, by the exact hold-out formula
    ``f_S = (I - H_SS)^{-1} (H y - H_SS y_S)`` on 2 x 2 blocks (Pahikkala et al. 2008, AKRR).

    References
    ----------
    T. Pahikkala. New kernel functions and learning methods for text and data mining. PhD thesis, 2008.
    T. Pahikkala, E. Tsivtsivadze, A. Airola, J. Jarvinen, J. Boberg. An efficient algorithm for learning to rank
    from preference graphs. Machine Learning 75(1), 2009.

    Examples
    --------
    >>> import numpy as np
    >>> from iokr.estimators.rankrls import RankRLS
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(20, 3)); y = X @ [1.0, -2.0, 0.5]
    >>> model = RankRLS(alpha=1.0).fit(X, y)
    >>> model.predict(X[:2]).shape
    (2,)
    """

    def __init__(self, alpha=1.0, kernel="linear", normalize_queries=False):
        self.alpha = alpha
        self.kernel = kernel
        self.normalize_queries = normalize_queries

    # ------------------------------------------------------------------------------------------------------ fit
    def fit(self, X, y, qids=None):
        """Fit on ``X`` (n, d) (Gram (n, n) when precomputed), scores ``y`` (n,) and optional query ids (n,).

        Returns
        -------
        self
        """
        name = type(self).__name__
        alpha = check_positive_scalar(self.alpha, "alpha", name)
        if not isinstance(self.normalize_queries, (bool, np.bool_)):
            raise ValueError(
                f"The 'normalize_queries' parameter of {name} must be a bool. Got {self.normalize_queries!r}."
            )
        kernel = make_kernel(self.kernel)
        if kernel == "precomputed":
            X = check_square_gram(X, "X").astype(np.float64)
        else:
            X = check_array_2d(X, "X").astype(np.float64)
        n = X.shape[0]
        y = np.asarray(y, dtype=np.float64)
        if y.ndim != 1 or y.shape[0] != n:
            raise ValueError(f"'y' must be a 1-D array of {n} scores (one per row of X), got shape {y.shape}.")
        check_finite(y, "y")
        if qids is None:
            groups = np.zeros(n, dtype=np.intp)
        else:
            qids = np.asarray(qids)
            if qids.shape != (n,):
                raise ValueError(f"'qids' must be a 1-D array of {n} query ids (one per row of X), got {qids.shape}.")
            groups = np.unique(qids, return_inverse=True)[1].ravel().astype(np.intp)
        counts = np.bincount(groups)
        self.qids_ = groups
        self.n_queries_ = counts.size
        self._scale = np.ones(counts.size) if self.normalize_queries else np.sqrt(counts.astype(np.float64))
        self.kernel_ = kernel
        self.alpha_ = alpha
        self.y_ = y
        self.X_fit_ = X
        self.linear_primal_ = isinstance(self.kernel, str) and self.kernel == "linear"
        self.n_features_in_ = X.shape[1]
        self._gram = None
        self._centered_eigen = None
        self.eigen_ = None
        if self.linear_primal_ and X.shape[1] < n:
            Xw = self._apply_w(X)
            primal = EigenPath(Xw.T @ Xw, name="X^T L X")
            self.coef_ = primal.solve(Xw.T @ self._apply_w(y), alpha)
            self.dual_coef_ = None
        else:
            # One alpha needs only a Cholesky solve (~n^3/3 flops); the eigendecomposition (~9 n^3) is built lazily
            # for the cross-validation paths.
            self.dual_coef_ = self._apply_w(cholesky_shifted(self._weighted_gram(), alpha, name="W K W").solve(
                self._apply_w(y)))
            if self.linear_primal_:
                self.coef_ = X.T @ self.dual_coef_
        return self

    def _apply_w(self, V):
        """``W V`` with ``W = L^{1/2}``: subtract query means, scale by ``sqrt(l_q)`` (or 1 when normalized)."""
        groups = self.qids_
        counts = np.bincount(groups, minlength=self.n_queries_).astype(np.float64)
        V = np.asarray(V, dtype=np.float64)
        flat = V.reshape(V.shape[0], -1)
        means = np.zeros((self.n_queries_, flat.shape[1]))
        np.add.at(means, groups, flat)
        means /= counts[:, None]
        out = (flat - means[groups]) * self._scale[groups][:, None]
        return out.reshape(V.shape)

    def _train_gram(self):
        if self._gram is None:
            X = self.X_fit_
            self._gram = X if self.kernel_ == "precomputed" else np.asarray(self.kernel_(X), dtype=np.float64)
        return self._gram

    def _weighted_gram(self):
        """``G = W K W`` (symmetric; ``W`` is block diagonal and symmetric)."""
        return self._apply_w(self._apply_w(self._train_gram()).T).T

    def _eigen(self):
        if self.eigen_ is None:
            self.eigen_ = EigenPath(self._weighted_gram(), name="W K W")
        return self.eigen_

    # -------------------------------------------------------------------------------------------------- predict
    def decision_function(self, X):
        """Ranking scores of shape (n_test,); ``X`` is test-by-train when the kernel is precomputed."""
        check_is_fitted(self, "alpha_")
        if self.kernel_ == "precomputed":
            K = check_array_2d(X, "X").astype(np.float64)
            if K.shape[1] != self.X_fit_.shape[0]:
                raise ValueError(
                    f"'X' must be a precomputed test-by-train kernel with {self.X_fit_.shape[0]} columns, "
                    f"got shape {K.shape}."
                )
            return K @ self.dual_coef_
        X = check_array_2d(X, "X")
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"'X' has {X.shape[1]} features, but the model was fitted with {self.n_features_in_}.")
        if self.linear_primal_:
            return X @ self.coef_
        out = np.empty(X.shape[0])
        for sl in row_slices(X.shape[0], 8 * self.X_fit_.shape[0] * (1 + self.kernel_.temporaries_per_entry)):
            out[sl] = np.asarray(self.kernel_(X[sl], self.X_fit_)) @ self.dual_coef_
        return out

    predict = decision_function

    # ---------------------------------------------------------------------------------------- cross-validation
    def _alpha(self, alpha):
        return self.alpha_ if alpha is None else check_positive_scalar(alpha, "alpha", "RankRLS cross-validation")

    def leave_query_out(self, alpha=None):
        """Leave-query-out predictions, shape (n,), each query centered (rankings within a query are exact).

        Parameters
        ----------
        alpha : float, optional
            Regularization to evaluate (default: the fitted one); the eigendecomposition is reused.
        """
        check_is_fitted(self, "alpha_")
        if self.n_queries_ < 2:
            raise ValueError("leave_query_out needs at least two queries (fit with 'qids').")
        alpha = self._alpha(alpha)
        eig = self._eigen()
        z = self._apply_w(self.y_)
        Mz = eig.solve(z, alpha)
        out = np.empty_like(z)
        for q in range(self.n_queries_):
            rows = np.flatnonzero(self.qids_ == q)
            block = eig.shifted_inverse_block(rows, alpha)
            g = z[rows] - np.linalg.solve(block, Mz[rows])
            out[rows] = g / self._scale[q]
        return out

    def leave_pair_out(self, pairs, alpha=None):
        """Leave-pair-out predictions of a global ranker: for each pair, the model trained without both examples.

        Parameters
        ----------
        pairs : tuple (first, second) of int arrays of length p
        alpha : float, optional

        Returns
        -------
        predictions : ndarray of shape (p, 2)
            Scores of ``first`` and ``second`` (shared per-pair offset; compare within a row only).
        """
        check_is_fitted(self, "alpha_")
        if self.n_queries_ != 1:
            raise NotImplementedError("leave_pair_out is implemented for global ranking (fit without qids).")
        n = self.y_.size
        first, second = (np.asarray(p) for p in pairs)
        if first.shape != second.shape or first.ndim != 1 or not (np.issubdtype(first.dtype, np.integer)
                                                                   and np.issubdtype(second.dtype, np.integer)):
            raise ValueError("'pairs' must be two 1-D integer arrays of equal length.")
        if first.size and (min(first.min(), second.min()) < 0 or max(first.max(), second.max()) >= n):
            raise ValueError(f"'pairs' indices must lie in [0, {n}).")
        if np.any(first == second):
            raise ValueError("'pairs' must pair two different examples.")
        if n < 3:
            raise ValueError("leave_pair_out needs at least 3 training examples.")
        alpha = self._alpha(alpha)
        c_rest = 1.0 if self.normalize_queries else float(n - 2)
        H = self._intercept_smoother(alpha / c_rest)
        y = self.y_
        fitted = H @ y
        a, d = 1.0 - H[first, first], 1.0 - H[second, second]
        b, c = -H[first, second], -H[second, first]
        u = fitted[first] - H[first, first] * y[first] - H[first, second] * y[second]
        v = fitted[second] - H[second, first] * y[first] - H[second, second] * y[second]
        det = a * d - b * c
        return np.column_stack([(d * u - b * v) / det, (a * v - c * u) / det])

    def _intercept_smoother(self, mu):
        """``H = C K C (C K C + mu I)^{-1} + 1 1^T / n``, the hat matrix of ridge with an unpenalized intercept.

        For the linear primal it is formed from the centered features (``d x d`` eigenproblem), where the rank
        deficiency of ``C K C`` is exact instead of round-off eigenvalues competing with a tiny ``mu``.
        """
        n = self.y_.size
        if self.linear_primal_ and self.X_fit_.shape[1] < n:
            if getattr(self, "_centered_eigen", None) is None:
                Xc = self.X_fit_ - self.X_fit_.mean(axis=0)
                self._centered_eigen = (Xc, EigenPath(Xc.T @ Xc, name="X^T C X"))
            Xc, eig = self._centered_eigen
            F = Xc @ eig.eigenvectors
            return (F / (eig.eigenvalues + mu)) @ F.T + 1.0 / n
        eig = self._eigen()
        c_m = 1.0 if self.normalize_queries else float(n)
        s = eig.eigenvalues / c_m  # eigenvalues of C K C (G = c_m C K C)
        Q = eig.eigenvectors
        return (Q * (s / (s + mu))) @ Q.T + 1.0 / n

    def cv_path(self, alphas, cv="lpo"):
        """Cross-validated ranking accuracy for each alpha, reusing one eigendecomposition.

        Parameters
        ----------
        alphas : sequence of float > 0
        cv : {"lpo", "lqo"}
            "lpo": fraction of correctly ordered held-out pairs over all pairs with different labels (RLScore's
            leave-pair-out performance); "lqo": mean over queries of the within-query concordance index.

        Returns
        -------
        scores : ndarray of shape (n_alphas,)
        """
        check_is_fitted(self, "alpha_")
        if cv == "lpo":
            i, j = np.triu_indices(self.y_.size, k=1)
            keep = self.y_[i] != self.y_[j]
            hi = np.where(self.y_[i] > self.y_[j], i, j)[keep]
            lo = np.where(self.y_[i] > self.y_[j], j, i)[keep]
            scores = []
            for a in alphas:
                P = self.leave_pair_out((hi, lo), alpha=a)
                scores.append(np.mean((P[:, 0] > P[:, 1]) + 0.5 * (P[:, 0] == P[:, 1])))
            return np.array(scores)
        if cv == "lqo":
            return np.array([1.0 - pairwise_rank_loss(self.y_, self.leave_query_out(a), self.qids_) for a in alphas])
        raise ValueError(f"'cv' must be 'lpo' or 'lqo', got {cv!r}.")


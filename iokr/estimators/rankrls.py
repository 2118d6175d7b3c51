"""RankRLS: regularized least-squares ranking, global or query-wise, with closed-form leave-query-out and
leave-pair-out cross-validation (Pahikkala 2008, section 2.3.3; Pahikkala et al. 2009).

The loss ``sum over pairs (i, j) in the same query of ((y_i - y_j) - (f_i - f_j))^2`` is ``(y - f)^T L (y - f)`` with
``L`` block diagonal, ``l_q I - 1 1^T`` per query of size ``l_q`` (the Laplacian of the complete preference graph;
``normalize_queries=True`` uses the centering matrix ``I - 1 1^T / l_q`` instead, as RLScore's ``QueryRankRLS``).
Minimizing it plus ``alpha ||f||^2`` gives ``(L K + alpha I) a = L y``. With ``W = L^{1/2}`` (per query
``sqrt(l_q) C_q`` or ``C_q``) the solution is ``a = W (W K W + alpha I)^{-1} W y``: one symmetric eigendecomposition
of ``G = W K W`` serves every ``alpha`` (:class:`iokr.linalg.EigenPath`).

:class:`PreferenceRankRLS` is the same loss over an explicit list of preference pairs (a preference multigraph)
instead of all pairs of a query (Pahikkala et al. 2009; RLScore's ``PPRankRLS``).
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from .._validation import check_array_2d, check_finite, check_n_features, check_positive_scalar, check_square_gram
from ..kernels import make_kernel
from ..linalg import EigenPath, cholesky_shifted, row_slices
from ..metrics import concordance_index, pairwise_rank_loss

__all__ = ["PreferenceRankRLS", "RankRLS"]


def _dual_scores(model, X):
    """Scores ``k(X, X_fit) a`` (chunked), or ``X w`` for the linear primal, of a fitted RankRLS-like model."""
    if model.kernel_ == "precomputed":
        K = check_array_2d(X, "X").astype(np.float64)
        if K.shape[1] != model.X_fit_.shape[0]:
            raise ValueError(
                f"'X' must be a precomputed test-by-train kernel with {model.X_fit_.shape[0]} columns, "
                f"got shape {K.shape}."
            )
        return K @ model.dual_coef_
    X = check_array_2d(X, "X")
    check_n_features(X, model.n_features_in_, "X", type(model).__name__)
    if model.linear_primal_:
        return X @ model.coef_
    out = np.empty(X.shape[0])
    for sl in row_slices(X.shape[0], 8 * model.X_fit_.shape[0] * (1 + model.kernel_.temporaries_per_entry)):
        out[sl] = np.asarray(model.kernel_(X[sl], model.X_fit_)) @ model.dual_coef_
    return out


class _RankScores:
    """``decision_function`` / ``predict`` shared by the RankRLS estimators (dual or linear-primal scores)."""

    def decision_function(self, X):
        """Compute ranking scores.

        Parameters
        ----------
        X : array-like of shape (n_test, d), or (n_test, n) test-by-train Gram when the kernel is precomputed
            Test inputs.

        Returns
        -------
        scores : ndarray of shape (n_test,)
            Ranking score of each test example (higher ranks first).
        """
        check_is_fitted(self, "alpha_")
        return _dual_scores(self, X)

    predict = decision_function


class RankRLS(_RankScores, BaseEstimator):
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
        """Fit the ranker.

        Parameters
        ----------
        X : array-like of shape (n, d), or (n, n) Gram when ``kernel="precomputed"``
            Training inputs.
        y : array-like of shape (n,)
            Scores to rank by (higher ranks first).
        qids : array-like of shape (n,), optional
            Query id of each example; pairs are compared within a query only. One global query by default.

        Returns
        -------
        self : RankRLS
            The fitted estimator.
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

    # ---------------------------------------------------------------------------------------- cross-validation
    def _alpha(self, alpha):
        return self.alpha_ if alpha is None else check_positive_scalar(alpha, "alpha", "RankRLS cross-validation")

    def leave_query_out(self, alpha=None):
        """Leave-query-out predictions, shape (n,), each query centered (rankings within a query are exact).

        Parameters
        ----------
        alpha : float, optional
            Regularization to evaluate (default: the fitted one); the eigendecomposition is reused.

        Returns
        -------
        predictions : ndarray of shape (n,)
            Score of every example from the model trained without its query, centered within the query.
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
            Training examples held out together, pair by pair.
        alpha : float, optional
            Regularization to evaluate (default: the fitted one).

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

    def holdout(self, indices, alpha=None):
        """Hold-out predictions of a global ranker: the model trained without the examples ``indices``.

        Parameters
        ----------
        indices : 1-D int array of length h (distinct, 1 <= h <= n - 2)
            Training examples held out.
        alpha : float, optional
            Regularization to evaluate (default: the fitted one).

        Returns
        -------
        predictions : ndarray of shape (h,)
            Scores of the held-out examples (one model, so they rank each other; shared offset is arbitrary).

        Notes
        -----
        The loss on the ``m - h`` remaining examples is ridge regression with an unpenalized intercept and
        regularization ``mu = lambda / c_{m-h}`` (see the class Notes), a penalized least-squares fit. The model
        trained without ``S`` therefore equals the model trained on all examples with ``y_S`` replaced by its own
        predictions, which gives ``(I - H_SS) f_S = (H y)_S - H_SS y_S`` with the intercept-ridge smoother ``H``
        at ``mu`` (Pahikkala 2008, section 2.3.3; the same identity as :meth:`leave_pair_out`).
        """
        check_is_fitted(self, "alpha_")
        if self.n_queries_ != 1:
            raise NotImplementedError("holdout is implemented for global ranking (fit without qids); "
                                      "use leave_query_out for query-wise ranking.")
        n = self.y_.size
        idx = np.asarray(indices)
        if idx.ndim != 1 or not (np.issubdtype(idx.dtype, np.integer) or idx.size == 0):
            raise ValueError(f"'indices' must be a 1-D integer array, got dtype {idx.dtype} and shape {idx.shape}.")
        if idx.size == 0 or idx.size > n - 2:
            raise ValueError(f"'indices' must hold between 1 and n - 2 = {n - 2} examples, got {idx.size}.")
        if idx.min() < 0 or idx.max() >= n or np.unique(idx).size != idx.size:
            raise ValueError(f"'indices' must be distinct indices in [0, {n}).")
        alpha = self._alpha(alpha)
        c_rest = 1.0 if self.normalize_queries else float(n - idx.size)
        H_SS, Hy_S = self._intercept_smoother_parts(idx, alpha / c_rest)
        return np.linalg.solve(np.eye(idx.size) - H_SS, Hy_S - H_SS @ self.y_[idx])

    def _intercept_smoother_parts(self, rows, mu):
        """``H[rows][:, rows]`` and ``(H y)[rows]`` of :meth:`_intercept_smoother` in ``O(h^2 r)``, not ``O(n^2)``."""
        n = self.y_.size
        if self.linear_primal_ and self.X_fit_.shape[1] < n:
            self._intercept_smoother(mu)  # builds the centered primal decomposition once
            Xc, eig = self._centered_eigen
            F = Xc @ eig.eigenvectors
            w = 1.0 / (eig.eigenvalues + mu)
        else:
            eig = self._eigen()
            c_m = 1.0 if self.normalize_queries else float(n)
            s = eig.eigenvalues / c_m  # eigenvalues of C K C (G = c_m C K C)
            F, w = eig.eigenvectors, s / (s + mu)
        cache = getattr(self, "_projected_y", None)
        if cache is None or cache[0] is not eig:
            self._projected_y = cache = (eig, F.T @ self.y_)
        Fty = cache[1]
        F_S = F[rows]
        return (F_S * w) @ F_S.T + 1.0 / n, F_S @ (w * Fty) + self.y_.mean()

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
            Regularization values to evaluate.
        cv : {"lpo", "lqo"} or sequence of 1-D int arrays
            "lpo": fraction of correctly ordered held-out pairs over all pairs with different labels (RLScore's
            leave-pair-out performance); "lqo": mean over queries of the within-query concordance index; a sequence
            of folds (index arrays): mean over folds of the concordance index of each fold's hold-out predictions
            (:meth:`holdout`; global ranking only), as RLScore's ``KfoldRankRLS``.

        Returns
        -------
        scores : ndarray of shape (n_alphas,)
            Cross-validated ranking accuracy of each alpha (higher is better).
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
        if not isinstance(cv, str):
            folds = [np.asarray(fold) for fold in cv]
            if not folds:
                raise ValueError("'cv' as a sequence of folds must contain at least one fold.")
            return np.array([np.mean([concordance_index(self.y_[fold], self.holdout(fold, alpha=a))
                                      for fold in folds]) for a in alphas])
        if cv == "lqo":
            return np.array([1.0 - pairwise_rank_loss(self.y_, self.leave_query_out(a), self.qids_) for a in alphas])
        raise ValueError(f"'cv' must be 'lpo', 'lqo' or a sequence of folds, got {cv!r}.")



def _check_pairs(pairs, n):
    """``pairs`` as ``(preferred, other)`` arrays or an (p, 2) array -> two intp arrays of length p."""
    if isinstance(pairs, np.ndarray) and pairs.ndim == 2 and pairs.shape[1] == 2:
        first, second = pairs[:, 0], pairs[:, 1]
    elif isinstance(pairs, (tuple, list)) and len(pairs) == 2:
        first, second = (np.asarray(p) for p in pairs)
    else:
        raise ValueError("'pairs' must be a tuple (preferred, other) of 1-D integer arrays or an array of shape "
                         f"(n_pairs, 2), got {type(pairs).__name__} of shape {np.shape(pairs)}.")
    if first.shape != second.shape or first.ndim != 1 or not (np.issubdtype(first.dtype, np.integer)
                                                               and np.issubdtype(second.dtype, np.integer)):
        raise ValueError(f"'pairs' must hold two 1-D integer arrays of equal length, got dtypes {first.dtype}, "
                         f"{second.dtype} and shapes {first.shape}, {second.shape}.")
    if first.size == 0:
        raise ValueError("'pairs' must contain at least one preference, got none.")
    lo, hi = min(first.min(), second.min()), max(first.max(), second.max())
    if lo < 0 or hi >= n:
        raise ValueError(f"'pairs' indices must lie in [0, {n}) (the rows of X), got range [{lo}, {hi}].")
    if np.any(first == second):
        raise ValueError("'pairs' must pair two different examples (found i preferred over i).")
    return first.astype(np.intp), second.astype(np.intp)


class PreferenceRankRLS(_RankScores, BaseEstimator):
    """RankRLS trained from explicit preference pairs ("example i is preferred over example j").

    Minimizes ``sum_k (m_k - (f(x_{i_k}) - f(x_{j_k})))^2 + lambda ||f||^2`` over preference pairs ``(i_k, j_k)``
    with margins ``m_k`` (1 by default, as RLScore's ``PPRankRLS``). Repeated pairs count as many times as they
    occur.

    Parameters
    ----------
    alpha : float, default=1.0
        Regularization ``lambda`` > 0.
    kernel : Kernel or str, default="linear"
        ``"linear"`` solves the primal ``(X^T L X + lambda I) w = X^T C^T m`` when ``n_features < n``; a Kernel object
        or name uses the dual; ``"precomputed"`` takes Gram matrices.

    Attributes
    ----------
    dual_coef_ : ndarray of shape (n,)
        Dual coefficients ``a`` (scores ``k(x, X) a``); None for the linear primal.
    coef_ : ndarray of shape (n_features,)
        Primal weights (``kernel="linear"`` only).
    n_pairs_ : int

    Notes
    -----
    Let ``C`` (p x n) be the incidence matrix of the preference graph (row k has +1 at ``i_k`` and -1 at ``j_k``),
    so the pair differences are ``C f`` and the loss is ``||m - C K a||^2``. With ``L = C^T C`` (the Laplacian of
    the preference multigraph; Pahikkala 2008, section 2.3.3, with the label differences replaced by ``m``), the
    gradient of ``||m - C K a||^2 + lambda a^T K a`` vanishes when ``K (L K a + lambda a - C^T m) = 0``, so
    ``(L K + lambda I) a = C^T m`` gives a minimizer (the unique one in ``range(K)`` predictions-wise). Since
    ``(L K + lambda I) C^T = C^T (C K C^T + lambda I)``, the same ``a`` is ``C^T (C K C^T + lambda I)^{-1} m``:
    an SPD system in pair space, used when ``p <= n`` (Cholesky); otherwise the ``n x n`` system is solved by LU.
    ``C 1 = 0``, so a constant feature (RLScore's linear-kernel bias) changes nothing.

    References
    ----------
    T. Pahikkala, E. Tsivtsivadze, A. Airola, J. Jarvinen, J. Boberg. An efficient algorithm for learning to rank
    from preference graphs. Machine Learning 75(1), 2009.

    Examples
    --------
    >>> import numpy as np
    >>> from iokr.estimators.rankrls import PreferenceRankRLS
    >>> X = np.arange(12.0).reshape(6, 2)
    >>> model = PreferenceRankRLS(alpha=1.0).fit(X, (np.array([5, 4, 3]), np.array([0, 1, 2])))
    >>> bool(model.predict(X[5:]) > model.predict(X[:1]))
    True
    """

    def __init__(self, alpha=1.0, kernel="linear"):
        self.alpha = alpha
        self.kernel = kernel

    def fit(self, X, pairs, margins=None):
        """Fit on training inputs and preference pairs between them.

        Parameters
        ----------
        X : ndarray of shape (n, n_features), or (n, n) if ``kernel="precomputed"``
            Training inputs (or their Gram matrix).
        pairs : tuple (preferred, other) of 1-D int arrays of length p, or ndarray of shape (p, 2)
            Row indices of ``X``: ``preferred[k]`` is ranked above ``other[k]``.
        margins : ndarray of shape (p,), optional
            Target score differences (default 1).

        Returns
        -------
        self : PreferenceRankRLS
            The fitted estimator.
        """
        name = type(self).__name__
        alpha = check_positive_scalar(self.alpha, "alpha", name)
        kernel = make_kernel(self.kernel)
        if kernel == "precomputed":
            X = check_square_gram(X, "X").astype(np.float64)
        else:
            X = check_array_2d(X, "X").astype(np.float64)
        n = X.shape[0]
        first, second = _check_pairs(pairs, n)
        p = first.size
        if margins is None:
            m = np.ones(p)
        else:
            m = np.asarray(margins, dtype=np.float64)
            if m.shape != (p,):
                raise ValueError(f"'margins' must be a 1-D array of {p} values (one per pair), got shape {m.shape}.")
            check_finite(m, "margins")
        self.kernel_ = kernel
        self.alpha_ = alpha
        self.X_fit_ = X
        self.n_features_in_ = X.shape[1]
        self.n_pairs_ = p
        self.linear_primal_ = isinstance(self.kernel, str) and self.kernel == "linear"
        rhs = np.bincount(first, weights=m, minlength=n) - np.bincount(second, weights=m, minlength=n)  # C^T m
        if self.linear_primal_ and X.shape[1] < n:
            D = X[first] - X[second]  # C X
            self.coef_ = cholesky_shifted(D.T @ D, alpha, name="X^T L X").solve(X.T @ rhs)
            self.dual_coef_ = None
            return self
        K = X if kernel == "precomputed" else np.asarray(kernel(X), dtype=np.float64)
        if p <= n:
            # C K C^T[k, l] = K[i_k, i_l] - K[i_k, j_l] - K[j_k, i_l] + K[j_k, j_l]
            CK = K[first] - K[second]
            pair_gram = CK[:, first] - CK[:, second]
            z = cholesky_shifted(0.5 * (pair_gram + pair_gram.T), alpha, name="C K C^T").solve(m)
            a = np.bincount(first, weights=z, minlength=n) - np.bincount(second, weights=z, minlength=n)
        else:
            from scipy.linalg import solve

            L = np.zeros((n, n))
            np.add.at(L, (first, first), 1.0)
            np.add.at(L, (second, second), 1.0)
            np.add.at(L, (first, second), -1.0)
            np.add.at(L, (second, first), -1.0)
            system = L @ K
            system.flat[:: n + 1] += alpha
            a = solve(system, rhs, check_finite=False)
        self.dual_coef_ = a
        if self.linear_primal_:
            self.coef_ = X.T @ a
        return self


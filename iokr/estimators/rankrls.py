"""RankRLS: regularized least-squares ranking, global or query-wise, with closed-form leave-query-out,
leave-pair-out and k-fold hold-out (Pahikkala 2008, section 2.3.3; Pahikkala et al. 2009).

The loss ``sum over pairs (i, j) in the same query of ((y_i - y_j) - (f_i - f_j))^2`` is ``(y - f)^T L (y - f)`` with
``L`` block diagonal, ``l_q I - 1 1^T`` per query of size ``l_q`` (the Laplacian of the complete preference graph;
``normalize_queries=True`` uses the centering matrix ``I - 1 1^T / l_q`` instead, as RLScore's ``QueryRankRLS``).
Minimizing it plus ``alpha ||f||^2`` gives ``(L K + alpha I) a = L y``. With ``W = L^{1/2}`` (per query
``sqrt(l_q) C_q`` or ``C_q``; :class:`~iokr.linalg.developer.BlockCentering`) the solution is ``a = W (W K W + alpha I)^{-1} W y``:
one symmetric eigendecomposition of ``G = W K W`` serves every ``alpha`` (:class:`iokr.linalg.EigenPath`), and the
hold-out values come from :mod:`iokr.linalg._ranking_holdout`.

:class:`PreferenceRankRLS` (module :mod:`iokr.estimators.preference_rankrls`) is the same loss over an explicit list
of preference pairs (a preference multigraph) instead of all pairs of a query.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from .._validation import check_finite, check_positive_scalar
from ..linalg import (
    EigenPath,
    cholesky_shifted,
    complete_graph_holdout,
    complete_graph_pair_holdout,
    query_holdout_predictions,
)
from ..linalg.developer import BlockCentering, EigenShift, check_pairs
from ..metrics import concordance_index, pairwise_rank_loss
from ._rank_scores import _RankScores, check_fit_inputs
from .preference_rankrls import PreferenceRankRLS

__all__ = ["PreferenceRankRLS", "RankRLS", "comparable_pairs", "pair_accuracy"]


def comparable_pairs(y):
    """All pairs of examples with different scores, the better one first: two int arrays ``(higher, lower)``."""
    i, j = np.triu_indices(y.size, k=1)
    keep = y[i] != y[j]
    higher = np.where(y[i] > y[j], i, j)[keep]
    return higher, np.where(y[i] > y[j], j, i)[keep]


def pair_accuracy(predictions):
    """Per pair of :func:`comparable_pairs`: 1 if ordered right, 1/2 on a tie, 0 otherwise; shape (p,)."""
    predictions = np.asarray(predictions)
    return (predictions[:, 0] > predictions[:, 1]) + 0.5 * (predictions[:, 0] == predictions[:, 1])


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
        Eigendecomposition of ``G = W K W``, built on the first hold-out call (fit uses a Cholesky solve); for global
        ranking (one query) deflated of the constant vector, which spans the null space of ``W``.
    qids_ : ndarray of shape (n,)
        Query index of each training example (0..n_queries-1).

    Notes
    -----
    Every hold-out value comes from :meth:`holdout_predictions`; :meth:`leave_query_out`, :meth:`leave_pair_out`,
    :meth:`holdout` and :meth:`cv_path` are thin aliases.

    Leave-query-out: removing a whole query leaves the other blocks of ``L`` unchanged, so with ``z = W y`` the
    model trained without query ``S`` satisfies ``W_SS f_S = z_S - [(G + lambda I)^{-1}]_SS^{-1} [(G + lambda I)^{-1}
    z]_S`` (the ridge hold-out formula on ``(G, z)``); ``W_SS = s_q C`` fixes ``f_S`` up to a constant, which no
    within-query ranking sees. Any union of whole queries is held out the same way (grouped k-fold).

    Leave-pair-out and k-fold (global ranking): the complete-graph loss equals ``c_m min_b ||y - f - b 1||^2``
    (``c_m = m``, or 1 when normalized), i.e. ridge regression with an unpenalized intercept and regularization
    ``lambda / c_m``. Leaving ``h`` examples out leaves ``m - h``, so the hold-out predictions are those of that
    intercept-ridge model at ``mu = lambda / c_{m-h}``: the ridge hold-out formula with the intercept solver
    (:func:`~iokr.linalg.complete_graph_holdout`), equal to the retrained ranker's scores up to one offset per set.

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
        alpha, kernel, X = check_fit_inputs(self, X)
        if not isinstance(self.normalize_queries, (bool, np.bool_)):
            raise ValueError(f"The 'normalize_queries' parameter of {type(self).__name__} must be a bool. "
                             f"Got {self.normalize_queries!r}.")
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
        self.qids_ = groups
        self.n_queries_ = int(groups.max()) + 1 if n else 0
        self._centering = BlockCentering.complete_graphs(groups, normalized=bool(self.normalize_queries))
        self.kernel_ = kernel
        self.y_ = y
        self.X_fit_ = X
        self.linear_primal_ = isinstance(self.kernel, str) and self.kernel == "linear"
        self.n_features_in_ = X.shape[1]
        self._gram = None
        self.eigen_ = None
        self._set_alpha(alpha)
        return self

    def _set_alpha(self, alpha):
        """Coefficients at ``alpha``: the linear primal when smaller, else the dual through ``eigen_`` when it is
        already built (a cross-validation refit) or one Cholesky solve (~n^3/3 flops against ~9 n^3 for the
        eigendecomposition, which is built lazily for the hold-out values)."""
        self.alpha_ = alpha
        W = self._centering
        if self.linear_primal_ and self.X_fit_.shape[1] < self.y_.size:
            Xw = W.apply(self.X_fit_)
            self.coef_ = EigenPath(Xw.T @ Xw, name="X^T L X").solve(Xw.T @ W.apply(self.y_), alpha)
            self.dual_coef_ = None
            return
        if self.eigen_ is not None:
            self.dual_coef_ = W.apply(self.eigen_.solve(W.apply(self.y_), alpha))
        else:
            self.dual_coef_ = W.apply(cholesky_shifted(self._weighted_gram(), alpha, name="W K W").solve(
                W.apply(self.y_)))
        if self.linear_primal_:
            self.coef_ = self.X_fit_.T @ self.dual_coef_

    def _train_gram(self):
        if self._gram is None:
            X = self.X_fit_
            self._gram = X if self.kernel_ == "precomputed" else np.asarray(self.kernel_(X), dtype=np.float64)
        return self._gram

    def _weighted_gram(self):
        """``G = W K W`` (symmetric; ``W`` is block diagonal and symmetric)."""
        return self._centering.sandwich(self._train_gram())

    def _eigen(self):
        if self.eigen_ is None:
            self.eigen_ = EigenPath(self._weighted_gram(), name="W K W", deflate_constant=self.n_queries_ == 1)
        return self.eigen_

    # ---------------------------------------------------------------------------------------------- hold-out
    def _alpha(self, alpha):
        return self.alpha_ if alpha is None else check_positive_scalar(alpha, "alpha", "RankRLS cross-validation")

    def holdout_predictions(self, holdouts=None, alpha=None, *, pairs=None):
        """Closed-form hold-out predictions: the scores of the models trained without each hold-out set.

        Parameters
        ----------
        holdouts : list of 1-D int arrays, optional
            Hold-out sets. Global ranking (fit without ``qids``): any sets of 1 to ``n - 2`` distinct examples.
            Query-wise ranking: each set a union of whole queries. None (and no ``pairs``): leave-query-out, each
            query held out on its own.
        alpha : float, optional
            Regularization to evaluate (default: the fitted one); the eigendecomposition is reused.
        pairs : tuple (first, second) of int arrays of length p, optional
            Leave-pair-out instead (global ranking only): both examples of a pair held out together, pair by pair.

        Returns
        -------
        predictions : ndarray of shape (n,), list of ndarray of shape (|H|,), or ndarray of shape (p, 2)
            Leave-query-out: every example's score from the model trained without its query, centered within the
            query. ``holdouts``: one array per set (query-wise: centered within each query; global: one shared
            offset per set). ``pairs``: scores of ``first`` and ``second`` (compare within a row only).
        """
        check_is_fitted(self, "alpha_")
        if pairs is not None:
            if holdouts is not None:
                raise ValueError("holdout_predictions takes 'holdouts' or 'pairs', not both.")
            return self._leave_pair_out(pairs, self._alpha(alpha))
        if holdouts is None:
            if self.n_queries_ < 2:
                raise ValueError("leave_query_out needs at least two queries (fit with 'qids').")
            order = np.argsort(self.qids_, kind="stable")
            holdouts = np.split(order, np.cumsum(np.bincount(self.qids_))[:-1])
            out = np.empty(self.y_.size)
            for rows, pred in zip(holdouts, self.holdout_predictions(holdouts, alpha), strict=True):
                out[rows] = pred
            return out
        holdouts = [self._check_holdout(rows, f"holdouts[{k}]") for k, rows in enumerate(holdouts)]
        alpha = self._alpha(alpha)
        if self.n_queries_ == 1:
            return complete_graph_holdout(self._eigen(), self.y_, holdouts, alpha,
                                          normalized=bool(self.normalize_queries))
        return query_holdout_predictions(EigenShift(self._eigen(), alpha), self._centering, self.y_, holdouts)

    def _check_holdout(self, indices, name):
        n = self.y_.size
        idx = np.asarray(indices)
        if idx.ndim != 1 or not (np.issubdtype(idx.dtype, np.integer) or idx.size == 0):
            raise ValueError(f"'{name}' must be a 1-D integer array, got dtype {idx.dtype} and shape {idx.shape}.")
        if idx.size == 0 or idx.size > n - 2:
            raise ValueError(f"'{name}' must hold between 1 and n - 2 = {n - 2} examples, got {idx.size}.")
        if idx.min() < 0 or idx.max() >= n or np.unique(idx).size != idx.size:
            raise ValueError(f"'{name}' must be distinct indices in [0, {n}).")
        if self.n_queries_ > 1 and not self._centering.whole_groups(idx):
            raise NotImplementedError(f"'{name}' splits a query: with several queries the closed form holds out "
                                      "whole queries (leave_query_out, or sets of whole queries).")
        return idx.astype(np.intp, copy=False)

    def _leave_pair_out(self, pairs, alpha):
        if self.n_queries_ != 1:
            raise NotImplementedError("leave_pair_out is implemented for global ranking (fit without qids).")
        n = self.y_.size
        first, second = check_pairs(*pairs, n)
        if n < 3:
            raise ValueError("leave_pair_out needs at least 3 training examples.")
        return complete_graph_pair_holdout(self._eigen(), self.y_, first, second, alpha,
                                           normalized=bool(self.normalize_queries))

    def leave_query_out(self, alpha=None):
        """Leave-query-out predictions, each query centered: ``holdout_predictions(alpha=alpha)``.

        Parameters
        ----------
        alpha : float, optional
            Regularization to evaluate (default: the fitted one); the eigendecomposition is reused.

        Returns
        -------
        predictions : ndarray of shape (n,)
            Score of every example from the model trained without its query, centered within the query.
        """
        return self.holdout_predictions(alpha=alpha)

    def leave_pair_out(self, pairs, alpha=None):
        """Leave-pair-out predictions of a global ranker: ``holdout_predictions(pairs=pairs, alpha=alpha)``.

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
        return self.holdout_predictions(pairs=pairs, alpha=alpha)

    def holdout(self, indices, alpha=None):
        """Hold-out predictions for one set: ``holdout_predictions([indices], alpha)[0]``.

        Parameters
        ----------
        indices : 1-D int array of length h (distinct, 1 <= h <= n - 2)
            Training examples held out (with several queries: whole queries).
        alpha : float, optional
            Regularization to evaluate (default: the fitted one).

        Returns
        -------
        predictions : ndarray of shape (h,)
            Scores of the held-out examples (one model, so they rank each other; shared offset is arbitrary).
        """
        check_is_fitted(self, "alpha_")
        return self.holdout_predictions([self._check_holdout(indices, "indices")], alpha)[0]

    def cv_path(self, alphas, cv="lpo"):
        """Cross-validated ranking accuracy for each alpha, from :meth:`holdout_predictions`.

        Parameters
        ----------
        alphas : sequence of float > 0
            Regularization values to evaluate.
        cv : {"lpo", "lqo"} or sequence of 1-D int arrays
            "lpo": fraction of correctly ordered held-out pairs over all pairs with different labels (RLScore's
            leave-pair-out performance); "lqo": mean over queries of the within-query concordance index; a sequence
            of folds (index arrays): mean over folds of each fold's ranking accuracy (the concordance index for
            global ranking, as RLScore's ``KfoldRankRLS``; with queries, whole queries per fold and the mean
            within-query concordance). :class:`~iokr.model_selection.RankRLSCV` searches the same way.

        Returns
        -------
        scores : ndarray of shape (n_alphas,)
            Cross-validated ranking accuracy of each alpha (higher is better).
        """
        check_is_fitted(self, "alpha_")
        if isinstance(cv, str) and cv == "lpo":
            pairs = comparable_pairs(self.y_)
            return np.array([np.mean(pair_accuracy(self.holdout_predictions(pairs=pairs, alpha=a))) for a in alphas])
        if not isinstance(cv, str):
            folds = [np.asarray(fold) for fold in cv]
            if not folds:
                raise ValueError("'cv' as a sequence of folds must contain at least one fold.")
            return np.array([np.mean([self.ranking_accuracy(fold, pred) for fold, pred in
                                      zip(folds, self.holdout_predictions(folds, alpha=a), strict=True)])
                             for a in alphas])
        if cv == "lqo":
            return np.array([1.0 - pairwise_rank_loss(self.y_, self.leave_query_out(a), self.qids_) for a in alphas])
        raise ValueError(f"'cv' must be 'lpo', 'lqo' or a sequence of folds, got {cv!r}.")

    def ranking_accuracy(self, rows, predictions):
        """Ranking accuracy of hold-out predictions of training examples, within their queries.

        Parameters
        ----------
        rows : 1-D int array of length h
            Training examples.
        predictions : ndarray of shape (h,)
            Their hold-out scores.

        Returns
        -------
        accuracy : float
            Concordance index with the training scores (global ranking), or its mean over the queries of
            ``rows`` that have two different scores.
        """
        check_is_fitted(self, "alpha_")
        if self.n_queries_ == 1:
            return concordance_index(self.y_[rows], predictions)
        return 1.0 - pairwise_rank_loss(self.y_[rows], predictions, self.qids_[rows])

"""PreferenceRankRLS: least-squares ranking from an explicit list of preference pairs (a preference multigraph;
Pahikkala et al. 2009; RLScore's ``PPRankRLS``)."""

from __future__ import annotations

import numpy as np
from scipy.linalg import solve
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from .._validation import check_finite, check_positive_scalar
from ..linalg import EigenPath, cholesky_shifted, holdout_predictions, loo_residuals
from ..linalg.developer import EigenShift, check_holdouts, check_pairs
from ._rank_scores import _RankScores, check_fit_inputs

__all__ = ["PreferenceRankRLS"]


def _check_pairs(pairs, n):
    """``pairs`` as ``(preferred, other)`` arrays or an (p, 2) array -> two intp arrays of length p."""
    if isinstance(pairs, np.ndarray) and pairs.ndim == 2 and pairs.shape[1] == 2:
        first, second = pairs[:, 0], pairs[:, 1]
    elif isinstance(pairs, (tuple, list)) and len(pairs) == 2:
        first, second = (np.asarray(p) for p in pairs)
    else:
        raise ValueError("'pairs' must be a tuple (preferred, other) of 1-D integer arrays or an array of shape "
                         f"(n_pairs, 2), got {type(pairs).__name__} of shape {np.shape(pairs)}.")
    first, second = check_pairs(first, second, n)
    if first.size == 0:
        raise ValueError("'pairs' must contain at least one preference, got none.")
    return first, second


def _pair_gram(K, first, second):
    """``C K C^T`` (symmetrized): ``K[i_k, i_l] - K[i_k, j_l] - K[j_k, i_l] + K[j_k, j_l]``, shape (p, p)."""
    CK = K[first] - K[second]
    pair_gram = CK[:, first] - CK[:, second]
    return 0.5 * (pair_gram + pair_gram.T)


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
    pairs_ : tuple (preferred, other) of ndarray of int, shape (p,)
        The fitted preference pairs.
    margins_ : ndarray of shape (p,)
    eigen_ : EigenPath or None
        Eigendecomposition of the pair Gram ``C K C^T``, built on the first :meth:`holdout_predictions` call.

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

    In pair space the model is kernel ridge regression of the margins ``m`` on the pair Gram ``C K C^T``, so
    leaving preferences out is the ridge hold-out formula there (:meth:`holdout_predictions`).

    References
    ----------
    T. Pahikkala, E. Tsivtsivadze, A. Airola, J. Jarvinen, J. Boberg. An efficient algorithm for learning to rank
    from preference graphs. Machine Learning 75(1), 2009.

    Examples
    --------
    >>> import numpy as np
    >>> from iokr.estimators import PreferenceRankRLS
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
        alpha, kernel, X = check_fit_inputs(self, X)
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
        self.pairs_, self.margins_ = (first, second), m
        self.eigen_ = None
        self.linear_primal_ = isinstance(self.kernel, str) and self.kernel == "linear"
        rhs = np.bincount(first, weights=m, minlength=n) - np.bincount(second, weights=m, minlength=n)  # C^T m
        if self.linear_primal_ and X.shape[1] < n:
            D = X[first] - X[second]  # C X
            self.coef_ = cholesky_shifted(D.T @ D, alpha, name="X^T L X").solve(X.T @ rhs)
            self.dual_coef_ = None
            return self
        K = X if kernel == "precomputed" else np.asarray(kernel(X), dtype=np.float64)
        if p <= n:
            z = cholesky_shifted(_pair_gram(K, first, second), alpha, name="C K C^T").solve(m)
            a = np.bincount(first, weights=z, minlength=n) - np.bincount(second, weights=z, minlength=n)
        else:
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

    def holdout_predictions(self, holdouts=None, alpha=None):
        """Predict held-out preferences by the model trained without them (closed form).

        The predictions are the score differences ``f(x_i) - f(x_j)`` of the held-out pairs. The model is ridge regression of the margins on the pair Gram ``C K C^T`` (see Notes), so the hold-out
        values are :func:`~iokr.linalg.holdout_predictions` there, from one eigendecomposition of the pair Gram
        (``O(p^3)``, reused for every alpha). Repeated pairs are separate preferences: holding one out keeps its copy.

        Parameters
        ----------
        holdouts : list of 1-D int arrays, optional
            Sets of preferences (positions in the fitted pairs) held out together. None: leave-one-preference-out.
        alpha : float, optional
            Regularization to evaluate (default: the fitted one).

        Returns
        -------
        predictions : ndarray of shape (p,), or list of ndarray of shape (|H|,)
            Predicted score differences of the held-out preferences (one per fitted pair without ``holdouts``).
        """
        check_is_fitted(self, "alpha_")
        alpha = self.alpha_ if alpha is None else check_positive_scalar(alpha, "alpha", "PreferenceRankRLS hold-out")
        if self.eigen_ is None:
            X = self.X_fit_
            K = X if self.kernel_ == "precomputed" else np.asarray(self.kernel_(X), dtype=np.float64)
            self.eigen_ = EigenPath(_pair_gram(K, *self.pairs_), name="C K C^T")
        solver = EigenShift(self.eigen_, alpha)
        if holdouts is None:
            return self.margins_ - loo_residuals(solver, solver.prepare(self.margins_))
        return holdout_predictions(solver, self.margins_, check_holdouts(holdouts, self.n_pairs_, "holdouts"))

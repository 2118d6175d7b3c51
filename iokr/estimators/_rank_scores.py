"""Shared by the RankRLS estimators: input checks at fit, and scores ``k(x, X) a`` (chunked) or ``x w`` (linear
primal) of the fitted model."""

from __future__ import annotations

import numpy as np
from sklearn.utils.validation import check_is_fitted

from .._validation import check_array_2d, check_n_features, check_positive_scalar, check_square_gram
from ..kernels import make_kernel
from ..linalg.developer import row_slices


def check_fit_inputs(estimator, X):
    """``(alpha, kernel, X)`` checked at fit: alpha > 0, the kernel object, ``X`` (or its Gram) as float64."""
    alpha = check_positive_scalar(estimator.alpha, "alpha", type(estimator).__name__)
    kernel = make_kernel(estimator.kernel)
    if kernel == "precomputed":
        return alpha, kernel, check_square_gram(X, "X").astype(np.float64)
    return alpha, kernel, check_array_2d(X, "X").astype(np.float64)


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


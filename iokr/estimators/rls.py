"""Kernel regularized least squares (RLS, kernel ridge regression; with ``center=True`` an unpenalized intercept)."""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from .._validation import check_array_2d, check_positive_scalar
from ..linalg import cholesky_shifted
from ..linalg.developer import CholeskyShift, InterceptShift, ridge_solution, row_slices
from ._sides import InputSide


def check_y_given(y, owner):
    """Raise the ValueError scikit-learn expects from a supervised estimator called with ``y=None``."""
    if y is None:
        raise ValueError(f"{owner} requires y to be passed, but the target y is None; pass 'y' of shape (n,) or "
                         "(n, n_targets).")


def n_samples(X):
    """Number of examples of ``X`` (any sequence or array-like) without converting it when it has a length."""
    shape = getattr(X, "shape", None)
    if shape is not None and len(shape):  # arrays and sparse matrices (whose len() is ambiguous)
        return shape[0]
    try:
        return len(X)
    except TypeError:  # array-likes that only define __array__
        return np.asarray(X).shape[0]


def check_targets(y, n, name="y"):
    """Validate regression targets: finite, 1-D (n,) or 2-D (n, k), returned as float64."""
    if hasattr(y, "toarray") and not isinstance(y, np.ndarray):  # scipy.sparse: np.asarray makes a 0-d object array
        raise TypeError(f"Sparse matrices are not supported for '{name}'; pass a dense array ({name}.toarray()), "
                        f"got a {type(y).__name__} of shape {y.shape}.")
    y = np.asarray(y)
    if y.ndim not in (1, 2):
        raise ValueError(f"'{name}' must be 1-D (n,) or 2-D (n, n_targets), got shape {y.shape}.")
    y2 = check_array_2d(y.reshape(y.shape[0], -1), name, allow_empty_rows=True).astype(np.float64, copy=False)
    if y.shape[0] != n:
        raise ValueError(f"'X' has {n} examples but '{name}' has {y.shape[0]}.")
    return y2.reshape(y.shape)


class RLS(RegressorMixin, BaseEstimator):
    """Kernel regularized least squares: ``f(x) = k(x, X) (K + alpha I)^{-1} y``.

    Minimizes ``sum_i (y_i - f(x_i))^2 + alpha ||f||^2`` (Pahikkala 2008, eq. 2.42), the objective of
    scikit-learn's ``KernelRidge`` and of RLScore's ``RLS``: no scaling of ``alpha`` by ``n``. With ``center=True``
    the model is ``f(x) = k(x, X) c + b`` with an unpenalized intercept ``b`` (as scikit-learn's
    ``Ridge(fit_intercept=True)``, which centers features and targets); without it there is no intercept.

    Parameters
    ----------
    alpha : float, default=1.0
        Regularization, > 0.
    kernel : Kernel or str, default="linear"
        Kernel object, a name (``"gaussian"``, ...) or ``"precomputed"`` (then ``X`` is a Gram matrix).
    center : bool, default=False
        Center the kernel feature map on the training mean and fit an unpenalized intercept (the targets' share of
        centering). Before this, ``center=True`` centered the features only and predicted ``ybar`` too low.
    normalize : bool, default=False
        Scale the (centered) feature map to unit norm (in kernel form).
    working_memory : float, optional
        Budget in MiB for the temporaries of ``predict``; the global setting by default.

    Attributes
    ----------
    dual_coef_ : ndarray of shape (n,) or (n, n_targets)
        ``(K + alpha I)^{-1} y`` (with ``center``: the intercept model's coefficients, summing to zero).
    intercept_ : float or ndarray of shape (n_targets,)
        Unpenalized intercept; 0.0 without ``center``.
    jitter_ : float
        Jitter the Cholesky factorization needed (0.0 normally).
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from iokr.estimators.rls import RLS
    >>> X = np.arange(6.0).reshape(3, 2)
    >>> RLS(alpha=1.0).fit(X, [0.0, 1.0, 2.0]).predict(X[:1]).shape
    (1,)
    """

    def __init__(self, alpha=1.0, kernel="linear", center=False, normalize=False, working_memory=None):
        self.alpha = alpha
        self.kernel = kernel
        self.center = center
        self.normalize = normalize
        self.working_memory = working_memory

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True  # y of shape (n, n_targets) is fitted by the same solve
        tags.input_tags.pairwise = isinstance(self.kernel, str) and self.kernel == "precomputed"
        return tags

    def _fit_gram(self, X):
        self.input_ = InputSide(self.kernel, self.center, self.normalize, type(self).__name__)
        gram = self.input_.fit_gram(X)
        self.n_features_in_ = self.input_.n_features_in
        return gram

    def fit(self, X, y):
        """Fit the kernel ridge regression.

        Parameters
        ----------
        X : array-like of shape (n, d), or (n, n) Gram when ``kernel="precomputed"``
            Training inputs.
        y : array-like of shape (n,) or (n, k)
            Training targets.

        Returns
        -------
        self : RLS
            The fitted estimator.
        """
        alpha = check_positive_scalar(self.alpha, "alpha", type(self).__name__)
        check_y_given(y, type(self).__name__)
        gram = self._fit_gram(X)
        y = check_targets(y, gram.shape[0])
        self._set_coefficients(gram, y, alpha)
        return self

    def _set_coefficients(self, gram, y, alpha):
        factor = cholesky_shifted(gram, alpha, name="kernel")
        solver = CholeskyShift(factor)
        self._set_solution(InterceptShift(solver) if self.center else solver, gram, y, jitter=factor.jitter)

    def _set_solution(self, solver, gram, y, *, jitter=0.0):
        """Coefficients from a shifted solver of the transformed training Gram at ``alpha`` (of the intercept model
        with ``center``): the fit's Cholesky factor, or the factorization an :class:`~iokr.model_selection.RLSCV`
        search already holds."""
        self.jitter_ = float(jitter)
        self.dual_coef_, self.intercept_ = ridge_solution(solver, gram, y, intercept=self.center)
        return self

    def predict(self, X, *, input_diag=None):
        """Predict targets, in row chunks under the memory budget.

        Parameters
        ----------
        X : array-like of shape (m, d), or (m, n) test-by-train Gram when precomputed
            Test inputs.
        input_diag : array-like of shape (m,), optional
            ``k(x, x)`` of the test inputs; needed only with a precomputed, normalized kernel.

        Returns
        -------
        y_pred : ndarray of shape (m,) or (m, n_targets)
            Predicted targets.
        """
        check_is_fitted(self, "dual_coef_")
        X, input_diag = self.input_.check_test(X, input_diag)
        m = X.shape[0]
        out = np.empty((m,) + self.dual_coef_.shape[1:])
        for rows in row_slices(m, 8 * 3 * max(self.input_.n_train, 1), self.working_memory):
            out[rows] = self.input_.test_block(X, rows, input_diag) @ self.dual_coef_
        return out + self.intercept_

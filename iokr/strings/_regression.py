"""Multi-output kernel ridge regression shared by the string estimators (Model 1 of sec. 2, basis options of sec. 3).

One factorization serves every output (``W = M_Y (K + alpha I)^{-1} M_X^T``, eq. 3): the exact fit goes through
:class:`~iokr.linalg.EigenPath` (which also gives leave-one-out predictions in closed form) or
:func:`~iokr.linalg.cholesky_shifted`; approximations fit a subset-of-regressors model on a selected basis
(:mod:`._basis`). Prediction is chunked over test rows under the working-memory budget.
"""

from __future__ import annotations

import numpy as np

from .._validation import check_array_2d, check_positive_scalar
from ..kernels import make_kernel
from ..linalg import EigenPath, cholesky_shifted, loo_residuals
from ..linalg.developer import EigenShift, row_slices
from ._basis import BASIS_METHODS, KernelColumns, fit_subset, select_basis, take


def _n_items(X):
    return X.shape[0] if isinstance(X, np.ndarray) else len(X)


class KernelRidgeOutputs:
    """Fitted multi-output kernel ridge model ``g(x) = K(x, X_basis) coef``.

    Parameters
    ----------
    kernel : Kernel or "precomputed"
    alpha : float
    basis : {"full", "random", "cholesky", "greedy"}
    n_basis : int or None
    random_state : int or None
    owner : str
        Estimator name for messages.
    """

    def __init__(self, kernel, alpha, basis="full", n_basis=None, random_state=None, owner="estimator"):
        self.kernel = make_kernel(kernel, "kernel")
        self.alpha = check_positive_scalar(alpha, "alpha", owner)
        if basis not in BASIS_METHODS:
            raise ValueError(f"The 'basis' parameter of {owner} must be one of {BASIS_METHODS}. Got {basis!r} instead.")
        self.basis = basis
        self.n_basis = n_basis
        self.random_state = random_state
        self.owner = owner

    def _gram_train(self, X):
        if self.kernel == "precomputed":
            K = check_array_2d(X, "X")
            if K.shape[0] != K.shape[1]:
                raise ValueError(f"With kernel='precomputed', 'X' must be a square Gram matrix at fit; got {K.shape}.")
            return K
        return self.kernel(X)

    def fit(self, X, Y, *, loo=False):
        """Fit on inputs ``X`` and dense targets ``Y`` (m, N2); with ``loo`` also return held-out predictions.

        The exact fit returns leave-one-out predictions ``y_i - A_i / G_ii`` (:func:`~iokr.linalg.loo_residuals`,
        ``G = (K + alpha I)^{-1}``, ``A = G Y``; the same as ``(f_i - h_ii y_i) / (1 - h_ii)`` without forming
        ``1 - h_ii``); approximations return in-sample predictions (there is no closed form), which are optimistic.
        """
        Y = np.asarray(Y, dtype=np.float64)
        m = Y.shape[0]
        if self.basis == "full":
            K = self._gram_train(X)
            if K.shape[0] != m:
                raise ValueError(f"'X' describes {K.shape[0]} samples but there are {m} outputs.")
            self.basis_ = None
            self.X_fit_ = X
            if loo:
                solver = EigenShift(EigenPath(K, name="K_X"), self.alpha)
                token = solver.prepare(Y)
                self.coef_ = solver.solve_prepared(token)
                return Y - loo_residuals(solver, token, self.coef_)
            self.coef_ = cholesky_shifted(K, self.alpha, name="K_X").solve(Y)
            return None
        if self.n_basis is None:
            raise ValueError(f"The 'n_basis' parameter of {self.owner} is required when basis={self.basis!r}.")
        n_basis = int(self.n_basis)
        if n_basis < 1:
            raise ValueError(f"The 'n_basis' parameter of {self.owner} must be an int >= 1. Got {self.n_basis!r}.")
        if self.kernel == "precomputed":
            columns = KernelColumns(None, None, gram=check_array_2d(X, "X"))
        else:
            columns = KernelColumns(self.kernel, X)
        S = select_basis(self.basis, columns, m, Y, n_basis, self.random_state)
        C = columns(S)
        self.basis_ = S
        self.X_fit_ = None if self.kernel == "precomputed" else take(X, S)
        self.coef_ = fit_subset(C, S, Y, self.alpha)
        return C @ self.coef_ if loo else None

    def predict_chunks(self, X, working_memory=None):
        """Yield ``(rows, predictions)`` over chunks of test rows."""
        n = _n_items(X)
        n_out = self.coef_.shape[1]
        n_fit = self.coef_.shape[0]
        for rows in row_slices(n, 8 * (n_fit + n_out) * 2, working_memory):
            Xr = X[rows] if isinstance(X, np.ndarray) else X[rows.start : rows.stop]
            if self.kernel == "precomputed":
                Kr = check_array_2d(Xr, "X")
                if self.basis_ is not None:
                    Kr = Kr[:, self.basis_]
                if Kr.shape[1] != n_fit:
                    raise ValueError(
                        f"With kernel='precomputed', 'X' must have one column per training sample ({n_fit}); "
                        f"got {Kr.shape[1]}."
                    )
            else:
                Kr = self.kernel(list(Xr) if not isinstance(Xr, np.ndarray) else Xr, self.X_fit_)
            yield rows, Kr @ self.coef_

    def predict(self, X):
        parts = [p for _, p in self.predict_chunks(X)]
        return np.vstack(parts)

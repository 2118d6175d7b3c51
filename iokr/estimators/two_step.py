"""TwoStepRLS: two-step kernel ridge regression on complete pairwise labels.

Parameter checking, kernels and wiring only; the dual coefficients and the closed-form hold-out of all four settings
are :func:`iokr.linalg.two_step_dual` and :func:`iokr.linalg.two_step_holdout`.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from .._validation import check_array_2d, check_positive_scalar
from ..linalg import EigenPath, two_step_dual, two_step_holdout
from ..linalg._pairwise_splits import check_setting
from ._pairwise import PairKernelsMixin

__all__ = ["TwoStepRLS"]


class TwoStepRLS(PairKernelsMixin, BaseEstimator):
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
        self.dual_coef_ = two_step_dual(*self.eigen_, Y, a1, a2)
        return self

    def _refit_alphas(self, alpha1, alpha2):
        """Refit at other regularization values through the cached eigendecompositions; returns self."""
        check_is_fitted(self, "dual_coef_")
        self.set_params(alpha1=float(alpha1), alpha2=float(alpha2))
        self.alphas_ = (float(alpha1), float(alpha2))
        self.dual_coef_ = two_step_dual(*self.eigen_, self.Y_, *self.alphas_)
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

        Notes
        -----
        The formulas are those of :func:`iokr.linalg.two_step_holdout`; the search over both regularizations is
        :class:`~iokr.model_selection.TwoStepRLSCV`.
        """
        check_is_fitted(self, "dual_coef_")
        check_setting(setting)
        a1 = self.alphas_[0] if alpha1 is None else alpha1
        a2 = self.alphas_[1] if alpha2 is None else alpha2
        return two_step_holdout(*self.eigen_, self.Y_, a1, a2, setting)

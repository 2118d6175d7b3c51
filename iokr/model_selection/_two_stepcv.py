"""TwoStepRLS with both regularizations chosen by closed-form hold-out under a pairwise prediction setting."""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from .._docstrings import fill_doc, parameters
from ..estimators._pairwise_scores import pooled_score
from ..estimators.two_step import TwoStepRLS
from ..linalg._pairwise_splits import count_pairwise_splits, scheme_name
from ..linalg.developer import check_alphas
from ._pairwise_search import check_pair_search, kernel_settings
from ._search import DEFAULT_ALPHAS, SEARCH_DOCS, PathSearchMixin, apply_setting

__all__ = ["TwoStepRLSCV"]


class TwoStepRLSCV(PathSearchMixin, BaseEstimator):
    """TwoStepRLS whose row and column regularizations are chosen by closed-form cross-validation.

    Every pair ``(alpha1, alpha2)`` of the grid ``alphas x alphas2`` is scored on the closed-form hold-out
    predictions of :meth:`TwoStepRLS.holdout_predictions` (all four settings are closed-form), from one pair of
    eigendecompositions per kernel setting; no model is retrained until the final refit, which reuses them too.

    Parameters
    ----------
    alphas : array-like of shape (n_alphas,), default=DEFAULT_ALPHAS
        Grid of the row regularization ``alpha1``, all > 0.
    alphas2 : array-like of shape (n_alphas2,), optional
        Grid of the column regularization ``alpha2``; default the same as ``alphas``.
    param_grid : dict, optional
        Kernel parameters to search (keys ``"kernel1[__<name>]"`` / ``"kernel2[__<name>]"``).
    setting : {"A", "B", "C", "D"}, default="A"
        The ``cv`` of this search: pair, row, column, or row and column new at prediction time (leave one out;
        TwoStepRLS has no k-fold route).
    scoring : {"concordance", "mse", "row_concordance"} or callable, optional
        Score of the pooled hold-out predictions, greater is better (default ``"concordance"``; see
        :class:`~iokr.model_selection.KronRLSCV`).
    store_cv_results : bool, default=False
        Keep every setting's hold-out predictions, each of shape (n1, n2), in
        ``cv_results_["holdout_predictions"]``.
    kernel1, kernel2 : Kernel or str, default="precomputed"
        Kernels of the row and column domains, as in :class:`~iokr.estimators.TwoStepRLS`.

    Attributes
    ----------
    alpha_ : float
        Best ``alpha1`` (``cv_results_["param_alpha"]`` holds ``alpha1``, ``param_alpha2`` the column values).
    alpha2_ : float
        Best ``alpha2``.
    best_params_, best_score_, best_index_, cv_results_, cv_scheme_, n_splits_
        As :class:`~iokr.model_selection.KronRLSCV` (``params`` rows carry ``"alpha"`` = alpha1 and ``"alpha2"``).
    best_estimator_ : TwoStepRLS
        Refit on all data at the best values through the search's eigendecompositions.
    """

    def __init__(self, alphas=DEFAULT_ALPHAS, alphas2=None, param_grid=None, setting="A", scoring=None,
                 store_cv_results=False, kernel1="precomputed", kernel2="precomputed"):
        self.alphas = alphas
        self.alphas2 = alphas2
        self.param_grid = param_grid
        self.setting = setting
        self.scoring = scoring
        self.store_cv_results = store_cv_results
        self.kernel1 = kernel1
        self.kernel2 = kernel2

    @fill_doc(fit_parameters=parameters(TwoStepRLS.fit), **SEARCH_DOCS)
    def fit(self, X1, X2, Y):
        """Score the grid by closed-form hold-out, then refit :attr:`best_estimator_` on all data.

        Parameters
        ----------
        %(fit_parameters)s

        %(returns)s
        """
        owner, alphas1, scorer = check_pair_search(self)
        alphas2 = alphas1 if self.alphas2 is None else check_alphas(self.alphas2, "alphas2", owner)
        rows, scores, predictions = [], [], []
        best = (-np.inf, None)  # (score, model): the refit reuses the best kernel setting's eigendecompositions
        for kernels in kernel_settings(self.param_grid, owner):
            params = apply_setting({"kernel1": self.kernel1, "kernel2": self.kernel2}, kernels)
            model = TwoStepRLS(alpha1=float(alphas1[0]), alpha2=float(alphas2[0]), **params).fit(X1, X2, Y)
            n1, n2 = model.shape_
            pair_rows = np.repeat(np.arange(n1), n2)
            for a1 in alphas1:
                for a2 in alphas2:
                    P = model.holdout_predictions(self.setting, a1, a2)
                    scores.append([pooled_score(scorer, model.Y_.ravel(), pair_rows, P)])
                    rows.append({**kernels, "alpha": float(a1), "alpha2": float(a2)})
                    if self.store_cv_results:
                        predictions.append(P)
                    if scores[-1][0] > best[0]:  # strict: ties go to the first setting, as in _finish
                        best = (scores[-1][0], model)
        pair_cols = np.tile(np.arange(n2), n1)
        n_splits = count_pairwise_splits(self.setting, pair_rows, pair_cols, False)
        self._finish(rows, scores, [row["alpha"] for row in rows], scheme_name(self.setting), n_splits,
                     stored={"holdout_predictions": predictions} if self.store_cv_results else None)
        self.alpha2_ = float(self.best_params_["alpha2"])
        self.best_estimator_ = best[1]._refit_alphas(self.alpha_, self.alpha2_)
        return self

    def predict(self, X1_test, X2_test):
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.predict(X1_test, X2_test)

    predict.__doc__ = TwoStepRLS.predict.__doc__  # the same contract, served by best_estimator_

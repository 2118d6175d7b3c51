"""Alpha (and kernel-parameter) search for the Kronecker pairwise estimators under a prediction setting.

The estimators give the hold-out prediction of every labelled pair for a grid of alphas
(``holdout_predictions``: closed forms of :mod:`iokr.linalg` where they exist, explicit retraining on the
setting's splits of :mod:`iokr.linalg._pairwise_splits` otherwise). Scores are computed once on all pooled
hold-out predictions (as ``cross_val_predict`` then a metric, :mod:`iokr.estimators._pairwise_scores`): one
held-out pair, row or column is too small a test set for a concordance index or a ranking loss. ``split_test_scores`` therefore has one column (the pooled score) and
``std_test_score`` is 0; ``n_splits_`` still counts the train/test splits the hold-out values stand for.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from .._docstrings import fill_doc, parameters
from ..estimators._pairwise_scores import pairwise_cv_scores, resolve_pair_scoring
from ..estimators.kron import KronRLS
from ..linalg._pairwise_splits import check_setting, count_pairwise_splits, scheme_name
from ..linalg.developer import check_alphas
from ._search import DEFAULT_ALPHAS, SEARCH_DOCS, PathSearchMixin, apply_setting, expand_grid

#: The estimator's own parameters a search forwards to it (documented by the estimator, shown again by the search).
ESTIMATOR_PARAMETERS = ("kernel1, kernel2", "symmetry", "max_iter", "tol", "solver", "preconditioner_rank")


def check_pair_search(search, n_folds=None):
    """``(owner, alphas, scorer)`` of a pairwise search: its ``alphas``, ``setting`` and ``scoring``, checked."""
    owner = type(search).__name__
    alphas = check_alphas(search.alphas, "alphas", owner)
    check_setting(search.setting, n_folds)
    return owner, alphas, resolve_pair_scoring(search.scoring, "concordance", owner)


def kernel_settings(param_grid, owner):
    """Every combination of the ``kernel1`` and ``kernel2`` settings of ``param_grid`` (one empty dict without)."""
    rows, cols = expand_grid(param_grid, ("kernel1", "kernel2"), owner)
    return [{**g1, **g2} for g1 in rows for g2 in cols]


@fill_doc(fit_parameters=parameters(KronRLS.fit), **SEARCH_DOCS)  # KronRLS.fit is ConditionalRankRLS.fit too
class PairwiseSearchBase(PathSearchMixin, BaseEstimator):
    """Shared fit/predict of :class:`KronRLSCV` and :class:`ConditionalRankRLSCV`; subclasses set ``_estimator``."""

    _estimator = None

    def __init__(self, alphas=DEFAULT_ALPHAS, param_grid=None, setting="A", n_folds=None, random_state=0,
                 scoring=None, store_cv_results=False, kernel1="precomputed", kernel2="precomputed", symmetry=None,
                 max_iter=None, tol=1e-10, solver="minres", preconditioner_rank=None):
        self.alphas = alphas
        self.param_grid = param_grid
        self.setting = setting
        self.n_folds = n_folds
        self.random_state = random_state
        self.scoring = scoring
        self.store_cv_results = store_cv_results
        self.kernel1 = kernel1
        self.kernel2 = kernel2
        self.symmetry = symmetry
        self.max_iter = max_iter
        self.tol = tol
        self.solver = solver
        self.preconditioner_rank = preconditioner_rank

    def _estimator_params(self):
        return {"kernel1": self.kernel1, "kernel2": self.kernel2, "symmetry": self.symmetry,
                "max_iter": self.max_iter, "tol": self.tol, "solver": self.solver,
                "preconditioner_rank": self.preconditioner_rank}

    def fit(self, X1, X2, Y):
        """Score every (kernel setting, alpha) by pooled hold-out predictions, then refit the best on all data.

        Parameters
        ----------
        %(fit_parameters)s

        %(returns)s
        """
        owner, alphas, _ = check_pair_search(self, self.n_folds)  # fail before any fit
        rows, scores, used, predictions = [], [], [], []
        best = (-np.inf, None)  # (score, model): the refit reuses the best kernel setting's factorizations
        for kernels in kernel_settings(self.param_grid, owner):
            # Fitted once per kernel setting at the first alpha: the factorizations serve the whole grid.
            params = apply_setting(self._estimator_params(), kernels)
            model = self._estimator(alpha=float(alphas[0]), **params).fit(X1, X2, Y)
            path, held = pairwise_cv_scores(model, alphas, self.setting, self.scoring, self.n_folds, self.random_state,
                                            keep_predictions=self.store_cv_results, owner=owner)
            scores += [[score] for score in path]
            rows += [{**kernels, "alpha": float(alpha)} for alpha in alphas]
            used += [float(alpha) for alpha in alphas]
            predictions += held
            if path.max() > best[0]:  # strict: ties go to the first setting, as in _finish
                best = (path.max(), model)
        labelled_rows, cols, _ = model._labelled()
        n_splits = count_pairwise_splits(self.setting, labelled_rows, cols, model.one_domain_, self.n_folds,
                                         self.random_state)
        self._finish(rows, scores, used, scheme_name(self.setting, self.n_folds), n_splits,
                     stored={"holdout_predictions": predictions} if self.store_cv_results else None)
        self.best_estimator_ = self._refit_best(best[1], X1, X2, Y)
        return self

    def _refit_best(self, model, X1, X2, Y):
        """The best setting's model at the best alpha: the closed form reuses its eigendecompositions."""
        if model.eigen_ is not None:
            return model._refit_alpha(self.alpha_)
        params = apply_setting(self._estimator_params(), {k: v for k, v in self.best_params_.items() if k != "alpha"})
        return self._estimator(alpha=self.alpha_, **params).fit(X1, X2, Y)

    def predict(self, X1_test, X2_test=None, pairs=None):
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.predict(X1_test, X2_test, pairs=pairs)

    predict.__doc__ = KronRLS.predict.__doc__  # the same contract (both estimators'), served by best_estimator_

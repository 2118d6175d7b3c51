"""ConditionalRankRLS with alpha (and kernel parameters) chosen by hold-out under a pairwise prediction setting."""

from __future__ import annotations

from .._docstrings import fill_doc, parameters
from ..estimators.conditional_ranking import ConditionalRankRLS
from ._pairwise_search import ESTIMATOR_PARAMETERS, PairwiseSearchBase

__all__ = ["ConditionalRankRLSCV"]


@fill_doc(estimator_parameters=parameters(ConditionalRankRLS, *ESTIMATOR_PARAMETERS))
class ConditionalRankRLSCV(PairwiseSearchBase):
    """ConditionalRankRLS whose regularization (and kernel parameters) are chosen by cross-validation in a setting.

    Every alpha is scored on the hold-out prediction of every labelled pair
    (:meth:`ConditionalRankRLS.holdout_predictions`): closed forms on complete two-domain labels (settings A-C from
    the eigendecompositions of ``K1`` and ``C K2 C``, D by ``n1`` row refits), explicit retraining otherwise.

    Parameters
    ----------
    alphas : array-like of shape (n_alphas,), default=DEFAULT_ALPHAS
        Regularization values, all > 0.
    param_grid : dict, optional
        Kernel parameters to search (keys as in :class:`~iokr.model_selection.KronRLSCV`).
    setting : {"A", "B", "C", "D"}, default="A"
        The ``cv`` of this search: pair, row, column, or row and column new at prediction time.
    n_folds : int, optional
        None: leave one group out (closed forms where they exist). An int >= 2: k-fold by explicit retraining.
    random_state : int, default=0
        Seed of the fold assignment (``n_folds`` only).
    scoring : {"row_concordance", "concordance", "mse"} or callable, optional
        Score of the pooled hold-out predictions, greater is better; default ``"row_concordance"``, the concordance
        within each row (conditioning node) averaged over rows, i.e. one minus the per-row pairwise rank loss. A
        callable gets ``(y, p)``.
    store_cv_results : bool, default=False
        Keep every setting's hold-out predictions in ``cv_results_["holdout_predictions"]``.
    %(estimator_parameters)s

    Attributes
    ----------
    alpha_, best_params_, best_score_, best_index_, cv_results_, cv_scheme_, n_splits_
        As :class:`~iokr.model_selection.KronRLSCV`.
    best_estimator_ : ConditionalRankRLS
        The best setting refitted on all data (complete two-domain labels: through the search's eigendecompositions).

    Notes
    -----
    The ranking loss leaves each row's offset free, so the hold-out predictions of settings A and C carry the
    least-squares row intercept of the model that made them (:meth:`ConditionalRankRLS.holdout_predictions`). The
    pooled score equals :meth:`ConditionalRankRLS.cv_path`.
    """

    _estimator = ConditionalRankRLS

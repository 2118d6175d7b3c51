"""KronRLS with alpha (and kernel parameters) chosen by hold-out under a pairwise prediction setting."""

from __future__ import annotations

from .._docstrings import fill_doc, parameters
from ..estimators.kron import KronRLS
from ._pairwise_search import ESTIMATOR_PARAMETERS, PairwiseSearchBase
from ._search import SEARCH_DOCS

__all__ = ["KronRLSCV"]


@fill_doc(estimator_parameters=parameters(KronRLS, *ESTIMATOR_PARAMETERS),
          best_attributes=SEARCH_DOCS["best_attributes"])
class KronRLSCV(PairwiseSearchBase):
    """KronRLS whose regularization (and kernel parameters) are chosen by cross-validation in a prediction setting.

    Every alpha is scored on the hold-out prediction of every labelled pair (:meth:`KronRLS.holdout_predictions`):
    closed forms on complete labels (settings A-C from one pair of eigendecompositions, D from one
    eigendecomposition per row of the smaller domain, shared by the whole grid, then two products of shape
    ``(n_small - 1, n_large) x (n_large, n_large)`` per row and alpha: :func:`iokr.linalg.leave_row_and_column_out`),
    explicit retraining on the setting's splits otherwise (incomplete labels, ``n_folds``, one-domain B-D).

    Parameters
    ----------
    alphas : array-like of shape (n_alphas,), default=DEFAULT_ALPHAS
        Regularization values, all > 0.
    param_grid : dict, optional
        Kernel parameters to search, keys ``"kernel1"``, ``"kernel2"``, ``"kernel1__<name>"`` or
        ``"kernel2__<name>"`` (e.g. ``{"kernel1__gamma": [0.1, 1.0]}``); each kernel setting is factored once.
    setting : {"A", "B", "C", "D"}, default="A"
        The ``cv`` of this search: what is new at prediction time. A: the pair (known rows and columns); B: the row;
        C: the column; D: both (see :meth:`KronRLS.holdout_predictions`).
    n_folds : int, optional
        None: leave one group (pair / row / column / row and column) out, in closed form where one exists. An int
        >= 2: k-fold over those groups, by explicit retraining.
    random_state : int, default=0
        Seed of the fold assignment (``n_folds`` only).
    scoring : {"concordance", "mse", "row_concordance"} or callable, optional
        Score of the pooled hold-out predictions, greater is better: concordance index over all pairs (the
        default), negated mean squared error, or the concordance within each row averaged over rows (one minus the
        per-row pairwise rank loss). A callable gets ``(y, p)``, the flat labels and hold-out predictions of all
        predicted pairs.
    store_cv_results : bool, default=False
        Keep every setting's hold-out predictions in ``cv_results_["holdout_predictions"]``.
    %(estimator_parameters)s

    Attributes
    ----------
    %(best_attributes)s
    cv_results_ : dict
        ``params``, ``param_alpha``, ``param_<name>``, ``mean_test_score``, ``std_test_score`` (0: one pooled
        score), ``rank_test_score``, ``split_test_scores`` of shape (n_settings, 1), and with
        ``store_cv_results`` ``holdout_predictions``: per setting in ``params`` order, an array of shape (n1, n2)
        (complete labels) or (q,) (triplets, in their order); NaN where no split predicts a pair.
    best_estimator_ : KronRLS
        The best setting refitted on all data (complete labels: through the search's own eigendecompositions).
    cv_scheme_ : str
        E.g. ``"setting B: leave one row out"``.
    n_splits_ : int
        Number of train/test splits the hold-out predictions stand for (e.g. ``n1`` for leave-one-row-out).

    Notes
    -----
    The score is computed once on all pooled hold-out predictions (module notes of
    :mod:`iokr.model_selection._pairwise_search`); it equals :meth:`KronRLS.cv_path`.

    Examples
    --------
    >>> import numpy as np
    >>> from iokr.model_selection import KronRLSCV
    >>> rng = np.random.default_rng(0)
    >>> F1, F2 = rng.normal(size=(6, 3)), rng.normal(size=(5, 3))
    >>> search = KronRLSCV(alphas=[0.1, 1.0], setting="B").fit(F1 @ F1.T, F2 @ F2.T, rng.normal(size=(6, 5)))
    >>> search.alpha_ in (0.1, 1.0), search.n_splits_
    (True, 6)
    """

    _estimator = KronRLS

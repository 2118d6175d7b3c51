"""Pooled scores of the Kronecker pairwise estimators' hold-out predictions, one per alpha.

Hold-out predictions of every labelled pair (``holdout_predictions``: closed forms of :mod:`iokr.linalg` or explicit
retraining) are scored once on all pooled pairs, as ``cross_val_predict`` then a metric: one held-out pair, row or
column is too small a test set for a concordance index or a ranking loss. ``KronRLS.cv_path`` /
``ConditionalRankRLS.cv_path`` and the searches of :mod:`iokr.model_selection` (``KronRLSCV``,
``ConditionalRankRLSCV``, ``TwoStepRLSCV``) score through these functions, so their scores agree.
"""

from __future__ import annotations

import numpy as np

from ..metrics import concordance_index, pairwise_rank_loss

__all__ = ["PAIR_SCORERS", "pairwise_cv_scores", "pooled_score", "resolve_pair_scoring"]


def _neg_mse(y, p, rows):
    return -float(np.mean((y - p) ** 2))


def _concordance(y, p, rows):
    return concordance_index(y, p)


def _row_concordance(y, p, rows):
    return 1.0 - pairwise_rank_loss(y, p, rows)


#: Named pair scores (greater is better): concordance index over all pairs, negated mean squared error, and the
#: concordance within each row averaged over rows, i.e. one minus the per-row pairwise rank loss (Pahikkala et al.
#: 2013, eq. 4; :class:`~iokr.model_selection.RankRLSCV`'s "concordance" with the rows as queries).
PAIR_SCORERS = {"concordance": _concordance, "mse": _neg_mse, "row_concordance": _row_concordance}


def resolve_pair_scoring(scoring, default, owner):
    """A scorer ``f(y, p, rows)``: ``scoring`` by name, a callable ``scoring(y, p)``, or ``default`` for None."""
    scoring = default if scoring is None else scoring
    if callable(scoring):
        return lambda y, p, rows: scoring(y, p)
    if isinstance(scoring, str) and scoring in PAIR_SCORERS:
        return PAIR_SCORERS[scoring]
    raise ValueError(f"The 'scoring' parameter of {owner} must be None, one of {sorted(PAIR_SCORERS)} or a callable "
                     f"scoring(y, p). Got {scoring!r} instead.")


def pooled_score(scorer, values, rows, P):
    """Score of hold-out predictions ``P`` (any shape, flattened like ``values``) over the pairs they cover."""
    P = np.ravel(P)
    keep = ~np.isnan(P)
    return float(scorer(values[keep], P[keep], rows[keep]))


def pairwise_cv_scores(model, alphas, setting, scoring=None, n_folds=None, random_state=0, keep_predictions=False,
                       owner=None):
    """Pooled hold-out score of each alpha for a fitted KronRLS / ConditionalRankRLS.

    Parameters
    ----------
    model : KronRLS or ConditionalRankRLS
        Fitted; its cached factorizations serve every alpha.
    alphas : sequence of float
    setting : {"A", "B", "C", "D"}
    scoring : None, str or callable, optional
        See :func:`resolve_pair_scoring`; None is ``"row_concordance"`` for ranking models and ``"concordance"``
        otherwise.
    n_folds, random_state
        As the estimator's ``holdout_predictions``.
    keep_predictions : bool, default=False
        Also return the hold-out predictions of every alpha.
    owner : str, optional
        Name in error messages (default: the model's class).

    Returns
    -------
    scores : ndarray of shape (n_alphas,)
    predictions : list of ndarray
        Per alpha, shape (n1, n2) (complete labels) or (q,) (triplets); empty unless ``keep_predictions``.
    """
    default = "row_concordance" if model._ranking else "concordance"
    scorer = resolve_pair_scoring(scoring, default, owner or type(model).__name__)
    rows, _, values = model._labelled()
    scores, predictions = [], []
    for P in model._holdout_path(alphas, setting, n_folds, random_state):
        scores.append(pooled_score(scorer, values, rows, P))
        if keep_predictions:
            predictions.append(P)
    return np.array(scores), predictions

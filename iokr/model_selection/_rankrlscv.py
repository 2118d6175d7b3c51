"""RankRLS with alpha (and kernel parameters) chosen by closed-form leave-query-out, leave-pair-out or k-fold.

Every hold-out value is :meth:`iokr.estimators.RankRLS.holdout_predictions` (the algebra of
:mod:`iokr.linalg._ranking_holdout`): one eigendecomposition of the weighted Gram per kernel setting serves the
whole alpha grid, and the refit of :attr:`RankRLSCV.best_estimator_` reuses it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from .._docstrings import fill_doc, parameters
from ..estimators import RankRLS
from ..estimators.rankrls import comparable_pairs, pair_accuracy
from ..linalg.developer import check_alphas
from ._scoring import check_scoring
from ._search import DEFAULT_ALPHAS, SEARCH_DOCS, PathSearchMixin, apply_setting, expand_grid, per_example
from ._splits import holdout_splits


@dataclass(frozen=True)
class _Splits:
    """The hold-out scheme of one search: comparable pairs (leave-pair-out) or hold-out sets, and which are scored."""

    scheme: str
    holdouts: list | None = None
    pairs: tuple | None = None
    scored: np.ndarray | None = None


def _has_comparable_pair(y, groups):
    """True when some group holds two different scores (a pair a ranking accuracy can count)."""
    return any(np.unique(y[groups == g]).size > 1 for g in np.unique(groups))


def _ranks_within(values, groups):
    """1-based rank of each value within its group, highest first, ties averaged."""
    from scipy.stats import rankdata  # noqa: PLC0415 - start-up time: scipy.stats takes 0.5 s to import

    ranks = np.empty(values.shape[0])
    for g in np.unique(groups):
        where = groups == g
        ranks[where] = rankdata(-values[where], method="average")
    return ranks


@fill_doc(**SEARCH_DOCS)
class RankRLSCV(PathSearchMixin, BaseEstimator):
    """RankRLS whose regularization (and kernel parameters) are chosen by exact closed-form cross-validation.

    Parameters
    ----------
    alphas : array-like of shape (n_alphas,), default=DEFAULT_ALPHAS
        Regularization values ``lambda`` > 0.
    param_grid : dict, optional
        Kernel parameters, keys ``"kernel"`` or ``"kernel__<name>"``; each setting is decomposed once.
    cv : None, int, splitter or iterable, default=None
        ``None``: leave-query-out when ``fit`` gets ``qids`` with two queries or more, else leave-pair-out over all
        pairs with different scores (RLScore's leave-pair-out, :meth:`RankRLS.cv_path` with ``cv="lpo"``). An int
        is ``GroupKFold`` over the queries (``KFold`` over the examples for global ranking); a splitter or iterable
        of ``(train, test)`` pairs must train on the complement of the test side and, with queries, hold out whole
        queries.
    scoring : "concordance" or callable, default="concordance"
        ``"concordance"``: per split, the fraction of pairs with different scores ordered right by the hold-out
        predictions (ties 1/2), within queries and averaged over the split's queries; splits without such a pair
        are not scored. A callable gets ``(y_true, y_pred)`` of one split (a pair of two examples for leave-pair-out)
        and returns a float; every split is scored. Greater is better.
    store_cv_results : bool, default=False
        Keep every hold-out prediction and rank in ``cv_results_``.
    kernel : Kernel or str, default="linear"
        As in :class:`~iokr.estimators.RankRLS`.
    normalize_queries : bool, default=False
        As in :class:`~iokr.estimators.RankRLS`.

    Attributes
    ----------
    %(best_attributes)s
    cv_results_ : dict
        ``params``, ``param_alpha``, ``param_<name>``, ``mean_test_score``, ``std_test_score``,
        ``rank_test_score``, ``split_test_scores`` (n_settings, n_splits). With ``store_cv_results``, also
        ``holdout_predictions`` and ``holdout_ranks``: one array per setting, in ``params`` order. Leave-pair-out:
        shape (n_pairs, 2), the pairs of :attr:`holdout_pairs_`, ranks 1 or 2 within the pair (1.5 on ties).
        Hold-out sets: shape (n,) (stacked in split order when splits repeat examples), predictions centered
        within each query (with queries) or from the model of the example's hold-out set (global ranking), ranks
        1-based within the example's query (with queries) or hold-out set, highest first, ties averaged.
    best_estimator_ : RankRLS
        Refit on all data with the best setting, through the decomposition the search already holds.
    holdout_pairs_ : tuple of two ndarray of int, or None
        Leave-pair-out: the pairs ``(higher, lower)`` of examples with different scores; None otherwise.
    cv_scheme_ : str
    n_splits_ : int
        Number of scored splits.

    Notes
    -----
    The hold-out predictions are exact: with queries, those of the ranker retrained without the held-out queries
    (centered within each query, which no within-query ranking sees); for global ranking, those of the ranker
    retrained without the held-out examples up to one offset per hold-out set (see :class:`~iokr.estimators.RankRLS`).

    Examples
    --------
    >>> import numpy as np
    >>> from iokr.model_selection import RankRLSCV
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(30, 3)); y = X @ [1.0, -1.0, 0.5] + 0.1 * rng.normal(size=30)
    >>> search = RankRLSCV(alphas=[0.1, 1.0, 10.0], cv=5).fit(X, y)
    >>> search.cv_scheme_, search.n_splits_
    ('KFold(5)', 5)
    """

    def __init__(self, alphas=DEFAULT_ALPHAS, param_grid=None, cv=None, scoring="concordance",
                 store_cv_results=False, kernel="linear", normalize_queries=False):
        self.alphas = alphas
        self.param_grid = param_grid
        self.cv = cv
        self.scoring = scoring
        self.store_cv_results = store_cv_results
        self.kernel = kernel
        self.normalize_queries = normalize_queries

    @fill_doc(fit_parameters=parameters(RankRLS.fit, "X", "y", "qids"), **SEARCH_DOCS)
    def fit(self, X, y, qids=None):
        """Search the grid by closed-form hold-out, then refit :attr:`best_estimator_` on all data.

        Parameters
        ----------
        %(fit_parameters)s

        %(returns)s
        """
        owner = type(self).__name__
        scoring = check_scoring(self.scoring, owner, {"concordance"})
        (kernel_grid,) = expand_grid(self.param_grid, ("kernel",), owner)
        alphas = check_alphas(self.alphas, "alphas", owner)
        base = {"kernel": self.kernel, "normalize_queries": self.normalize_queries}
        rows, scores, stored, splits = [], [], [], None
        best = (-np.inf, None, -1)  # (mean score, fitted model, row): the refit reuses the model's decomposition
        for setting in kernel_grid:
            model = RankRLS(alpha=float(alphas[0]), **apply_setting(base, setting)).fit(X, y, qids)
            if splits is None:
                splits = self._splits(model, owner)
            for alpha in alphas:
                split_scores, values = self._evaluate(model, splits, float(alpha), scoring)
                rows.append({**setting, "alpha": float(alpha)})
                scores.append(split_scores)
                stored.append(values)
                if np.mean(split_scores) > best[0]:
                    best = (float(np.mean(split_scores)), model, len(rows) - 1)
        extra = None
        if self.store_cv_results:
            extra = {"holdout_predictions": [p for p, _ in stored], "holdout_ranks": [r for _, r in stored]}
        self._finish(rows, scores, [row["alpha"] for row in rows], splits.scheme, len(scores[0]), extra)
        self.holdout_pairs_ = splits.pairs
        _, model, row = best
        if row == self.best_index_:
            model.set_params(alpha=self.alpha_)._set_alpha(self.alpha_)
            self.best_estimator_ = model
        else:  # a tie resolved differently by the two orderings: refit from scratch
            self.best_estimator_ = RankRLS(alpha=self.alpha_, **apply_setting(base, self.best_params_)).fit(X, y, qids)
        self.n_features_in_ = self.best_estimator_.n_features_in_
        return self

    def _splits(self, model, owner):
        """The hold-out scheme for the fitted ``model`` (its checked scores and query indices)."""
        y, groups, n = model.y_, model.qids_, model.y_.size
        queries = model.n_queries_ > 1
        if self.cv is None and not queries:
            pairs = comparable_pairs(y)
            if pairs[0].size == 0 or n < 3:
                raise ValueError(f"{owner}: leave-pair-out needs at least 3 examples and two different scores in "
                                 f"'y'; got n_samples={n} with {np.unique(y).size} distinct scores.")
            return _Splits("leave-pair-out", pairs=pairs)
        if self.cv is None:
            holdouts, scheme = holdout_splits(None, n, groups, y, owner)
            scheme = "leave-query-out"
        else:
            holdouts, scheme = holdout_splits(self.cv, n, groups if queries else None, y, owner)
        for k, rows in enumerate(holdouts):
            if queries and not model._centering.whole_groups(rows):
                raise ValueError(f"{owner}: split {k} holds out part of a query; with queries every test side must be "
                                 "a set of whole queries (use an int cv, GroupKFold or LeaveOneGroupOut on qids).")
            if not queries and rows.size > n - 2:
                raise ValueError(f"{owner}: split {k} holds out {rows.size} of {n} examples; global ranking needs at "
                                 "least 2 examples on every training side.")
        scored = np.arange(len(holdouts))
        if not callable(self.scoring):
            scored = np.array([k for k, rows in enumerate(holdouts) if _has_comparable_pair(y[rows], groups[rows])],
                              dtype=np.intp)
            if scored.size == 0:
                raise ValueError(f"{owner}: no split holds two examples of one query with different scores; the "
                                 "concordance cannot be computed.")
        return _Splits(scheme, holdouts=holdouts, scored=scored)

    def _evaluate(self, model, splits, alpha, scoring):
        """Per-split scores at ``alpha`` and (with ``store_cv_results``) the hold-out predictions and ranks."""
        y = model.y_
        if splits.pairs is not None:
            P = model.holdout_predictions(pairs=splits.pairs, alpha=alpha)
            if callable(scoring):
                split_scores = [float(scoring(y[[i, j]], p)) for i, j, p in zip(*splits.pairs, P, strict=True)]
            else:
                split_scores = list(pair_accuracy(P))
            if not self.store_cv_results:
                return split_scores, None
            return split_scores, (P, 1.0 + (P[:, ::-1] > P) + 0.5 * (P[:, ::-1] == P))
        predictions = model.holdout_predictions(splits.holdouts, alpha)
        split_scores = []
        for k in splits.scored:
            rows, pred = splits.holdouts[k], predictions[k]
            split_scores.append(float(scoring(y[rows], pred)) if callable(scoring) else
                                model.ranking_accuracy(rows, pred))
        if not self.store_cv_results:
            return split_scores, None
        n, stacked = y.size, np.concatenate(predictions)
        ranks = np.concatenate([_ranks_within(p, model.qids_[rows])
                            for rows, p in zip(splits.holdouts, predictions, strict=True)])
        return split_scores, (per_example(splits.holdouts, stacked, n), per_example(splits.holdouts, ranks, n))

    def decision_function(self, X):
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.decision_function(X)

    decision_function.__doc__ = RankRLS.decision_function.__doc__  # the same contract, served by best_estimator_
    predict = decision_function

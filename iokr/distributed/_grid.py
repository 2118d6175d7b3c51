"""Parameter grids x cross-validation folds as independent tasks: fit on the training part, score the held-out part.

``grid_search`` runs the same task function locally, so the distributed result is identical to the local one
(each task is deterministic given its parameters and fold).
"""

from __future__ import annotations

import numpy as np
from sklearn.base import clone
from sklearn.model_selection import ParameterGrid, check_cv

from ..decoding.developer import order_by_score
from ._cluster import gather_all, hold


def top1_retrieval(estimator, X_test, Y_test):
    """Fraction of held-out examples whose own output scores best among all held-out outputs (ties: first)."""
    S = estimator.decision_function(X_test, Y_test)
    return float(np.mean([order_by_score(S[i])[0] == i for i in range(S.shape[0])]))


def _fit_score(estimator, params, X, Y, train, test, scoring):
    model = clone(estimator).set_params(**params).fit(X[train], Y[train])
    return float(scoring(model, X[test], Y[test]))


def _tasks(param_grid, cv, X, Y):
    settings = list(ParameterGrid(param_grid))
    splits = list(check_cv(cv).split(X, Y))
    return settings, splits


def _summarize(settings, splits, scores):
    scores = np.asarray(scores, dtype=np.float64).reshape(len(settings), len(splits))
    mean = scores.mean(axis=1)
    best = int(np.argmax(mean))  # first best setting on ties, as scikit-learn's GridSearchCV
    return {"params": settings, "split_scores": scores, "mean_score": mean, "best_index": best,
            "best_params": settings[best]}


def grid_search(estimator, param_grid, X, Y, *, cv=5, scoring=top1_retrieval):
    """Local reference run of :func:`distributed_grid_search` (same tasks, same order)."""
    X, Y = np.asarray(X), np.asarray(Y)
    settings, splits = _tasks(param_grid, cv, X, Y)
    scores = [_fit_score(estimator, params, X, Y, train, test, scoring)
              for params in settings for train, test in splits]
    return _summarize(settings, splits, scores)


def distributed_grid_search(client, estimator, param_grid, X, Y, *, cv=5, scoring=top1_retrieval, retries=2):
    """Every (parameter setting, fold) pair as one Dask task.

    Parameters
    ----------
    client : dask.distributed.Client
    estimator : estimator with ``fit(X, Y)``
    param_grid : dict or list of dicts
        As scikit-learn's ``ParameterGrid``.
    X, Y : ndarray
    cv : int or splitter, default=5
        As scikit-learn's ``check_cv`` (splits are made once, on the client).
    scoring : callable, default=top1_retrieval
        ``scoring(fitted, X_test, Y_test) -> float``, greater is better.
    retries : int, default=2

    Returns
    -------
    result : dict
        ``params`` (list of settings), ``split_scores`` (n_settings, n_splits), ``mean_score``, ``best_index``,
        ``best_params``.

    Raises
    ------
    DistributedRunError
        If any task failed after its retries.
    """
    X, Y = np.asarray(X), np.asarray(Y)
    settings, splits = _tasks(param_grid, cv, X, Y)
    X_f, Y_f = hold(client, X), hold(client, Y)
    futures = [client.submit(_fit_score, estimator, params, X_f, Y_f, train, test, scoring, retries=retries,
                             pure=False) for params in settings for train, test in splits]
    scores = gather_all(client, futures, "distributed_grid_search")
    return _summarize(settings, splits, scores)

"""Hold-out predictions of the Kronecker pairwise estimators by explicit retraining on a setting's splits.

The route of ``KronRLS.holdout_predictions`` / ``ConditionalRankRLS.holdout_predictions`` where no closed form
applies: incomplete labels, k-fold (``n_folds``), one-domain settings B-D and one-domain conditional ranking.
"""

from __future__ import annotations

import numpy as np

from ..linalg._pairwise_splits import pairwise_splits

__all__ = ["retrain_holdout"]


def retrain_holdout(model, setting, alpha, n_folds=None, random_state=0):
    """Cross-validation predictions of a fitted pairwise model by explicit retraining on the splits of a setting.

    Parameters
    ----------
    model : KronRLS or ConditionalRankRLS
        Fitted; its training Grams and labels are reused.
    setting : {"A", "B", "C", "D"}
        See :func:`~iokr.model_selection.pairwise_splits`.
    alpha : float
        Regularization of every refit.
    n_folds : int, optional
        None: leave one group out; an int: k-fold.
    random_state : int, default=0
        Seed of the fold assignment.

    Returns
    -------
    P : ndarray of shape (n1, n2) for complete labels, else (q,) aligned with the training triplets
        Each pair predicted by the model of its split; NaN where no split predicts it (one domain, settings B / C:
        both nodes in the same fold).

    Notes
    -----
    Each split refits the model's class (same parameters, precomputed training Grams): in closed form on the
    sub-matrices when the training pairs form a complete grid (complete labels, settings B-D, ordinary or
    symmetric regression), otherwise by conjugate gradient on the training triplets.
    """
    rows, cols, values = model._labelled()
    out = np.full(values.size, np.nan)
    for train, test in pairwise_splits(setting, rows, cols, model.one_domain_, n_folds, random_state):
        if train.any():
            out[test] = _refit_predict(model, alpha, rows[train], cols[train], values[train], rows[test], cols[test])
    return out.reshape(model.shape_) if model.complete_ else out


def _refit_predict(model, alpha, r, c, v, r_test, c_test):
    """Refit on the labelled pairs ``(r, c, v)`` and score the test pairs."""
    params = {"alpha": alpha, "kernel1": "precomputed", "kernel2": "precomputed", "symmetry": model.symmetry,
              "max_iter": model.max_iter, "tol": model.tol, "solver": model.solver,
              "preconditioner_rank": model.preconditioner_rank}
    one = model.one_domain_
    K1, K2 = model.K1_, None if one else model.K2_
    R, C = np.unique(r), np.unique(c)
    grid = (model.complete_ and alpha > 0 and r.size == R.size * C.size
            and (not one or (np.array_equal(R, C) and not model._ranking)))
    if grid:
        refit = type(model)(**params).fit(K1[np.ix_(R, R)], None if one else K2[np.ix_(C, C)], model.Y_[np.ix_(R, C)])
        K1t, K2t = K1[:, R], None if one else K2[:, C]
    else:
        refit = type(model)(**params).fit(K1, K2, (r, c, v))
        K1t, K2t = K1, K2
    pred = refit.predict(K1t, K2t, pairs=(r_test, c_test))
    if model._ranking:
        # The ranking loss leaves each row's offset free: score with the least-squares intercept of the rows
        # that have training labels (rows new to the model keep the plain kernel score).
        n1 = model.shape_[0]
        resid = v - refit.predict(K1t, K2t, pairs=(r, c))
        counts = np.bincount(r, minlength=n1)
        offset = np.bincount(r, weights=resid, minlength=n1) / np.maximum(counts, 1)
        pred = pred + offset[r_test]
    return pred

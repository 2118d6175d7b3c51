"""Settings of retrieval chosen on the training documents of a split: closed-form k-fold CV by MRR.

Every training document's held-out fold is its candidate list: from the model trained on the other folds
(:class:`~iokr.model_selection.IOKRCV`, no refitting), each held-out source document ranks the target documents of
its own fold, and the setting with the best mean reciprocal rank is kept. The test documents take no part.

The searched settings are the regularization ``alpha`` and, with :func:`select_setting`, the preprocessing of the
features (:class:`~._features.Features`: TF-IDF, or LSA per language, plain or standardized). The unsupervised
transforms (TF-IDF vocabulary and weights, LSA directions, standardization, IOKR's centering) are fitted once on all
training documents of the split, the held-out folds included (they never see the alignment); the alignment of a
held-out fold is used only to score it.

Ties. The hold-out MRR saturates on easy data (fold candidate lists of ~120 documents), so equal best scores are
common. Among settings with the best mean score the largest ``alpha`` is kept (the most regularized of equally good
models: a flat CV curve at small alphas then chooses the end of its flat part, not the end of the grid), and among
feature settings the first in grid order (TF-IDF, then LSA by increasing dimension, plain before standardized).
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.model_selection import KFold

from ...exceptions import GridEdgeWarning
from ...model_selection import IOKRCV, fold_candidate_sets
from ._features import Features, SplitFeatures

#: Alphas searched when ``alpha="cv"``: eleven decades. The hold-out MRR is flat below ~1e-3 on TF-IDF and plain LSA
#: features of the shared parallel text and peaks at 1-10 on standardized LSA; above 1e2 it collapses.
DEFAULT_ALPHAS = tuple(np.logspace(-6, 4, 11).tolist())
#: Folds of the training documents.
CV_FOLDS = 5


def _folds(n_train, n_folds, seed):
    return list(KFold(n_folds, shuffle=True, random_state=seed).split(np.arange(n_train)))


def _alpha_scores(split, alphas, folds):
    """Mean hold-out MRR of every alpha on one :class:`RetrievalSplit` (in ``alphas`` order)."""
    search = IOKRCV(alphas=list(alphas), input_kernel="precomputed", output_kernel="linear", cv=folds,
                    scoring="mrr").fit(split.gram_train, split.Y_train,
                                       candidate_sets=fold_candidate_sets(split.Y_train, folds))
    return np.asarray(search.cv_results_["mean_test_score"], dtype=np.float64)


def best_setting(scores, alphas):
    """Index ``(setting, alpha)`` of the best mean score under the tie rule of this module.

    Parameters
    ----------
    scores : ndarray of shape (n_settings, n_alphas)
        Mean hold-out scores, greater is better.
    alphas : sequence of float

    Returns
    -------
    setting, alpha : int
        Row and column of the first setting, in order, reaching the best score, at its largest alpha doing so.
    """
    scores = np.asarray(scores, dtype=np.float64)
    best = scores.max()
    order = np.argsort(alphas, kind="stable")[::-1]  # largest alpha first
    for row in range(scores.shape[0]):
        for column in order:
            if scores[row, column] == best:
                return row, int(column)
    raise ValueError("'scores' must be finite.")


def select_alpha(split, alphas=DEFAULT_ALPHAS, n_folds=CV_FOLDS, seed=0):
    """Alpha of a :class:`RetrievalSplit` by closed-form k-fold MRR on its training documents.

    Returns
    -------
    alpha : float
        The largest alpha with the best mean hold-out MRR.
    cv_mrr : float
        The chosen alpha's mean hold-out MRR.
    """
    scores = _alpha_scores(split, alphas, _folds(split.Y_train.shape[0], n_folds, seed))
    _, column = best_setting(scores[None, :], alphas)
    return float(alphas[column]), float(scores[column])


def select_setting(split, grid, alphas=DEFAULT_ALPHAS, n_folds=CV_FOLDS, seed=0):
    """Features and alpha of a split by closed-form k-fold MRR on its training documents.

    Parameters
    ----------
    split : RetrievalSplit or SplitFeatures
        TF-IDF features of the split (:func:`~._protocol.make_split`).
    grid : sequence of Features
        Preprocessing settings searched; LSA dimensions not below the number of training documents are left out
        (with a warning).
    alphas : sequence of float, default=DEFAULT_ALPHAS
    n_folds : int, default=CV_FOLDS
    seed : int, default=0
        Seed of the folds.

    Returns
    -------
    choice : dict
        ``{"features": Features, "alpha": float, "cv_mrr": float, "scores": ndarray (n_settings, n_alphas),
        "grid": tuple of Features}`` (``grid``: the settings actually searched, rows of ``scores``).
    """
    split_features = split if isinstance(split, SplitFeatures) else SplitFeatures(split)
    grid = tuple(grid)
    if not grid or not all(isinstance(f, Features) for f in grid):
        raise ValueError(f"'grid' must be a non-empty sequence of Features, got {grid!r}.")
    n_train = split_features.n_train
    searched = tuple(f for f in grid if f.lsa is None or f.lsa < n_train)
    if len(searched) < len(grid):
        left_out = sorted({f.lsa for f in grid if f not in searched})
        if not searched:
            raise ValueError(f"'lsa' ({', '.join(map(str, left_out))}) must be smaller than the number of training "
                             f"documents ({n_train}).")
        warnings.warn(f"retrieval: LSA dimensions {left_out} need more than the {n_train} training documents; "
                      "left out of the grid.", UserWarning, stacklevel=2)
    folds = _folds(n_train, n_folds, seed)
    scores = np.array([_alpha_scores(split_features.get(f), alphas, folds) for f in searched])
    row, column = best_setting(scores, alphas)
    return {"features": searched[row], "alpha": float(alphas[column]), "cv_mrr": float(scores[row, column]),
            "scores": scores, "grid": searched}


def warn_grid_edges(chosen, alphas=DEFAULT_ALPHAS, what="alpha"):
    """One :class:`~iokr.exceptions.GridEdgeWarning` when any split chose an end of a grid of numbers."""
    edges = sorted({a for a in chosen if np.isclose(a, min(alphas)) or np.isclose(a, max(alphas))})
    if edges and len(set(alphas)) > 1:
        warnings.warn(f"retrieval: cross-validation chose {what}={edges} at an edge of the grid "
                      f"[{min(alphas):g}, {max(alphas):g}] in {sum(a in edges for a in chosen)} of {len(chosen)} "
                      f"splits; the CV curve may continue beyond it (pass a fixed {what} or a wider grid).",
                      GridEdgeWarning, stacklevel=3)

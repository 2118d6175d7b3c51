"""Regularization of retrieval chosen on the training documents of a split: closed-form k-fold CV by MRR.

Every training document's held-out fold is its candidate list: from the model trained on the other folds
(:class:`~iokr.model_selection.IOKRCV`, no refitting), each held-out source document ranks the target documents of
its own fold, and the alpha with the best mean reciprocal rank is kept. The test documents take no part.
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.model_selection import KFold

from ...decoding import CandidateSets
from ...exceptions import GridEdgeWarning
from ...model_selection import IOKRCV

#: Alphas searched when ``alpha="cv"``: eight decades. On the shared parallel text the training-side CV MRR is flat
#: (to 4 decimals) below about 5e-3 (``reports/model_selection.md``), so splits pick the smallest value, with a
#: warning, and any value in the flat part ranks alike.
DEFAULT_ALPHAS = tuple(np.logspace(-6, 2, 9).tolist())
#: Folds of the training documents.
CV_FOLDS = 5


def fold_candidate_sets(Y, folds):
    """Candidate set of every example: the outputs of its own held-out fold (its own output among them)."""
    indices = [None] * Y.shape[0]
    for _, test in folds:
        for i in test:
            indices[i] = test
    return CandidateSets(Y, indices)


def select_alpha(split, alphas=DEFAULT_ALPHAS, n_folds=CV_FOLDS, seed=0):
    """Alpha of a :class:`RetrievalSplit` by closed-form k-fold MRR on its training documents.

    Returns
    -------
    alpha : float
    cv_mrr : float
        The chosen alpha's mean hold-out MRR.
    """
    n_train = split.Y_train.shape[0]
    folds = list(KFold(n_folds, shuffle=True, random_state=seed).split(np.arange(n_train)))
    search = IOKRCV(alphas=list(alphas), input_kernel="precomputed", output_kernel="linear", cv=folds,
                    scoring="mrr").fit(split.gram_train, split.Y_train,
                                       candidate_sets=fold_candidate_sets(split.Y_train, folds))
    return float(search.alpha_), float(search.best_score_)


def warn_grid_edges(chosen, alphas=DEFAULT_ALPHAS):
    """One :class:`~iokr.exceptions.GridEdgeWarning` when any split chose an end of the alpha grid."""
    edges = sorted({a for a in chosen if np.isclose(a, min(alphas)) or np.isclose(a, max(alphas))})
    if edges:
        warnings.warn(f"retrieval: cross-validation chose alpha={edges} at an edge of the grid "
                      f"[{min(alphas):g}, {max(alphas):g}] in {sum(a in edges for a in chosen)} of {len(chosen)} "
                      "splits; the CV curve may continue beyond it (pass a fixed alpha or a wider grid).",
                      GridEdgeWarning, stacklevel=3)

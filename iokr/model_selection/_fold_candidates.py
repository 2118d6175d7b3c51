"""Candidate sets of a cross-validation: every held-out example ranked among the outputs of its own fold.

The surrogate of a real candidate set that structured-output CV scores on when the real sets are unknown at training
time (the metabolite app's ``fold`` lists, cross-lingual retrieval): a wrong prediction then competes with the
other held-out outputs, none of which the fold's model saw.
"""

from __future__ import annotations

import numpy as np

from ..decoding import CandidateSets


def fold_candidate_sets(Y, folds):
    """Candidate set of every example: the outputs of its held-out fold, its own output among them.

    Parameters
    ----------
    Y : array-like or sparse matrix of shape (n, n_output_features)
        Outputs of all examples.
    folds : ndarray of shape (n,) or list of (train, test) index pairs
        The fold of each example (integer labels), or the splits of a cross-validation whose test sides cover each
        example exactly once.

    Returns
    -------
    sets : CandidateSets
        ``sets.indices[i]`` lists the examples of ``i``'s fold: in increasing order for labels, in the order of its
        test side for splits.
    """
    n = Y.shape[0]
    if isinstance(folds, np.ndarray) and folds.ndim == 1:
        if folds.shape[0] != n:
            raise ValueError(f"fold_candidate_sets: {folds.shape[0]} fold labels for {n} outputs.")
        members = {f: np.flatnonzero(folds == f) for f in np.unique(folds)}
        return CandidateSets(Y, [members[f] for f in folds])
    indices = [None] * n
    for _, test in folds:
        for i in test:
            if indices[i] is not None:
                raise ValueError(f"fold_candidate_sets: example {i} is in more than one test side.")
            indices[i] = np.asarray(test)
    missing = [i for i, s in enumerate(indices) if s is None]
    if missing:
        raise ValueError(f"fold_candidate_sets: {len(missing)} examples are in no test side (first: {missing[0]}).")
    return CandidateSets(Y, indices)

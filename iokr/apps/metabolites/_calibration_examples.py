"""Calibration data of the top hit's confidence: hold-out ranked lists on training structures.

The cross-validation loop described in :mod:`._confidence`'s docstring (one model per structure fold, its held-out
structures ranked among their fold and among isomer-like formula lists). It sits above both :mod:`._pipeline` (the
folds, the formula lists and the sliced test kernel it reuses) and :mod:`._confidence` (``top_margins``), so that
``_pipeline`` -> ``_evaluation`` -> ``_confidence`` stays one-way (issue #29).
"""

from __future__ import annotations

import numpy as np

from ...decoding import CandidateSets
from ._confidence import top_margins
from ._grams import TrainingGrams
from ._model import MetaboliteIdentifier
from ._pipeline import _sliced_test_kernel, fold_ids, formula_candidate_sets

__all__ = ["calibration_examples"]


def calibration_examples(train, params, n_folds, seed, base_grams, progress=None):
    """Hold-out ranked lists on training structures (see :mod:`._confidence`): ``(margins, sizes, correct)``.

    Parameters
    ----------
    train : TrainingSet
    params : dict
        :class:`MetaboliteIdentifier` parameters (the cross-validated choice).
    n_folds, seed : int
        The folds of the cross-validation (the same random structure folds).
    base_grams : tuple or TrainingGrams
        ``MetaboliteIdentifier(**params).base_grams(train.spectra)``; each fold's model reads its training side
        and the held-out rows from them (no sub-Gram copies).
    progress : callable, optional
        Called after each fold.
    """
    spectra, Y = train.spectra, np.asarray(train.Y, dtype=np.float64)
    grams = TrainingGrams.of(base_grams)
    folds = fold_ids(len(spectra), n_folds, seed)
    if train.formulas is not None and len(train.formulas) == len(spectra):
        formula_sets, scored = formula_candidate_sets(Y, train.formulas)
    else:
        formula_sets, scored = None, np.zeros(len(spectra), dtype=bool)
    examples = []
    for f in range(n_folds):
        tr, te = np.flatnonzero(folds != f), np.flatnonzero(folds == f)
        if te.size < 2 or tr.size < 2:
            continue
        model = MetaboliteIdentifier(**params).fit(spectra[tr], Y[tr], base_grams=grams.subset(tr))
        K, diag = _sliced_test_kernel(model, grams, te, tr)
        fold_lists = CandidateSets(Y[te], [np.arange(te.size)] * te.size)
        scores = model.score_sets(spectra[te], fold_lists, test_kernel=(K, diag))
        examples.append(top_margins(scores, list(range(te.size))))
        mask = scored[te]
        if mask.any():
            queries = te[mask]
            lists = [formula_sets.indices[i] for i in queries]
            truth = [int(np.flatnonzero(lst == i)[0]) for lst, i in zip(lists, queries, strict=True)]
            scores = _training_list_scores(model, spectra[queries], Y, lists, tr, (K[mask], diag[mask]))
            examples.append(top_margins(scores, truth))
        del model, K, diag, scores  # one fold's model at a time (its fit and factor are n x n arrays)
        if progress is not None:
            progress()
    if not examples:
        raise ValueError("calibration needs at least two structures per fold")
    return tuple(np.concatenate([e[k] for e in examples]) for k in range(3))


def _training_list_scores(model, spectra, Y, lists, training_rows, test_kernel):
    """Scores of queries on lists of training structures (``lists`` index ``Y``), each candidate's structure prior
    taken as if it were not one of the fold model's training structures (``training_rows``).

    A training structure is its own nearest neighbour, so its plain prior is the largest possible; PubChem
    candidates mostly are not training structures, and lists that gave every wrong candidate that bonus would
    calibrate the confidence on lists much harder than the real ones.
    """
    sets = CandidateSets(Y, lists)
    weight = model.prior_weight
    if weight == 0:
        return model.score_sets(spectra, sets, test_kernel=test_kernel)
    model.set_params(prior_weight=0.0)
    try:
        scores = model.score_sets(spectra, sets, test_kernel=test_kernel)
    finally:
        model.set_params(prior_weight=weight)
    in_training = np.zeros(len(Y), dtype=bool)
    in_training[training_rows] = True
    prior = model.structure_prior(Y, leave_self_out=in_training)
    return [s + weight * prior[idx] for s, idx in zip(scores, lists, strict=True)]

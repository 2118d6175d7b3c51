"""Calibration data of the top hit's confidence: hold-out ranked lists on training structures.

The cross-validation loop described in :mod:`._confidence`'s docstring (one model per structure fold, its held-out
structures ranked among their training isomers and decoys (:mod:`._decoys`), or without decoys among their fold and
among isomer-like formula lists). It returns the ranked lists' scores; the calibration's features and fit are
:mod:`._confidence`'s. It sits above :mod:`._pipeline` (the folds, the formula lists and the sliced test kernel it
reuses), so that ``_pipeline`` -> ``_evaluation`` -> ``_confidence`` stays one-way (issue #29).
"""

from __future__ import annotations

import numpy as np

from ....decoding import CandidateSets
from ....kernels import TrainingGrams
from ..model._model import MetaboliteIdentifier
from ._pipeline import _sliced_test_kernel, fold_ids, formula_candidate_sets

__all__ = ["calibration_data_record", "calibration_examples", "decoy_list_scores"]


def calibration_examples(train, params, n_folds, seed, base_grams, progress=None, decoys=None):
    """Hold-out ranked lists on training structures (see :mod:`._confidence`): ``(scores, truth)``, the candidate
    scores of every list and the position of its true structure (for
    :func:`~._confidence.fit_calibration_on_lists`).

    With ``decoys`` (:class:`~._decoys.DecoyLists` of the training structures), each held-out structure that has an
    isomer (a decoy isomer or another training structure of its formula) is ranked among all training structures
    of its formula and its decoys instead (:func:`decoy_list_scores`), and the fold lists are not used.

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
    decoys : DecoyLists, optional
    """
    spectra, Y = train.spectra, np.asarray(train.Y, dtype=np.float64)
    grams = TrainingGrams.of(base_grams)
    folds = fold_ids(len(spectra), n_folds, seed)
    if decoys is not None and (train.formulas is None or len(decoys.indices) != len(spectra)):
        raise ValueError(f"decoy lists for {len(decoys.indices)} structures and formulas for "
                         f"{None if train.formulas is None else len(train.formulas)}; expected {len(spectra)} of each")
    if train.formulas is not None and len(train.formulas) == len(spectra):
        formula_sets, scored = formula_candidate_sets(Y, train.formulas)
    else:
        formula_sets, scored = None, np.zeros(len(spectra), dtype=bool)
    eligible = has_isomer(train.formulas, decoys) if decoys is not None else None
    examples = []
    for f in range(n_folds):
        tr, te = np.flatnonzero(folds != f), np.flatnonzero(folds == f)
        if te.size < 2 or tr.size < 2:
            continue
        model = MetaboliteIdentifier(**params).fit(spectra[tr], Y[tr], base_grams=grams.subset(tr))
        K, diag = _sliced_test_kernel(model, grams, te, tr)
        if decoys is not None:
            mask = eligible[te]
            if mask.any():
                scores, truth = decoy_list_scores(model, spectra[te[mask]], Y, train.formulas, te[mask], decoys,
                                                  (K[mask], diag[mask]))
                examples.append((scores, truth))
        else:
            examples.extend(training_list_examples(model, spectra, Y, tr, te, (K, diag), formula_sets, scored))
        del model, K, diag  # one fold's model at a time (its fit and factor are n x n arrays)
        if progress is not None:
            progress()
    if not examples:
        raise ValueError("calibration needs at least two structures per fold" if decoys is None else
                         "calibration found no held-out training structure with an isomer (no decoy lists)")
    return [s for e in examples for s in e[0]], [t for e in examples for t in e[1]]


def training_list_examples(model, spectra, Y, tr, te, test_kernel, formula_sets, scored):
    """The examples of one fold without decoys: its held-out structures ranked among the fold's held-out structures,
    and (those sharing a formula) among the training structures of their formula filled up by the nearest masses."""
    K, diag = test_kernel
    fold_lists = CandidateSets(Y[te], [np.arange(te.size)] * te.size)
    out = [(model.score_sets(spectra[te], fold_lists, test_kernel=(K, diag)), list(range(te.size)))]
    mask = scored[te]
    if mask.any():
        queries = te[mask]
        lists = [formula_sets.indices[i] for i in queries]
        truth = [int(np.flatnonzero(lst == i)[0]) for lst, i in zip(lists, queries, strict=True)]
        out.append((_training_list_scores(model, spectra[queries], Y, lists, tr, (K[mask], diag[mask])), truth))
    return out


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


def calibration_data_record(decoys, n_folds, features=(), family="logistic"):
    """How the calibration data are formed, for the model file's record and the reports (``n_examples`` and
    ``n_right_top_hits`` are added once the examples exist)."""
    if family == "list_softmax":
        used = ["list softmax of every candidate's score: exp(s1/T) / (exp(b) + sum exp(si/T)), scores per median "
                "margin, temperature T and 'elsewhere' log-mass b fitted"]
    else:
        used = ["margin / median margin", "log list size (weight constrained <= 0)"] + list(features)
    if decoys is None:
        return {"lists": "training structures only: each held-out structure among its fold's held-out structures "
                         "and among the training structures of its formula filled up to 20 by the nearest masses",
                "n_folds": int(n_folds), "features": used, "family": family}
    return {"lists": "each held-out training structure that has an isomer among all training structures of its "
                     "formula (library compounds of the fold model) and its decoys: non-library isomers of its "
                     "formula and non-library structures nearest in mass, from the decoy table, up to a list size "
                     "drawn from the size distribution of PubChem lists; structure prior of the fold model, which "
                     "has not seen the held-out structure",
            "n_folds": int(n_folds), "features": used, "family": family, "decoys": dict(decoys.record)}


def _formula_groups(formulas):
    """``{formula: ndarray of the training structures with it}`` (structures without a formula left out)."""
    groups = {}
    for i, f in enumerate(formulas):
        if f:
            groups.setdefault(f, []).append(i)
    return {f: np.asarray(v, dtype=np.intp) for f, v in groups.items()}


def has_isomer(formulas, decoys):
    """Training structures with a decoy isomer or another training structure of their formula."""
    groups = _formula_groups(formulas)
    return np.array([bool(f) and (decoys.n_isomers[i] > 0 or groups[f].size > 1) for i, f in enumerate(formulas)],
                    dtype=bool)


def decoy_list_scores(model, spectra, Y, formulas, queries, decoys, test_kernel):
    """Scores of held-out training structures on their decoy lists, and the position of each true structure.

    The list of structure ``i`` is every training structure of its formula (``i`` itself among them; those in the
    fold model's training set are library compounds, with their structure prior as any library compound has it),
    then its decoys. The prior is the fold model's own: ``i`` is not among the fold model's training structures,
    so its prior is computed without itself, as for a query whose structure is not in the library.

    Parameters
    ----------
    model : MetaboliteIdentifier
        Fitted on the training structures outside ``queries``.
    spectra : Spectra of length m
        The queries' spectra.
    Y : ndarray of shape (n, p)
        Fingerprints of all training structures.
    formulas : list of n str or None
    queries : ndarray of int, shape (m,)
        Rows of ``Y`` held out from ``model``.
    decoys : DecoyLists
    test_kernel : tuple
        ``model.test_kernel(spectra)``.

    Returns
    -------
    scores : list of m ndarrays
    truth : list of int
    """
    groups = _formula_groups(formulas)
    lists = [groups[formulas[i]] if formulas[i] else np.array([i], dtype=np.intp) for i in queries]
    truth = [int(np.flatnonzero(lst == i)[0]) for lst, i in zip(lists, queries, strict=True)]
    own = model.score_sets(spectra, CandidateSets(Y, lists), test_kernel=test_kernel)
    with_decoys = np.flatnonzero([decoys.indices[i].size > 0 for i in queries])
    other = [np.zeros(0)] * len(queries)
    if with_decoys.size:
        K, diag = test_kernel
        decoy_sets = CandidateSets(decoys.pool, [decoys.indices[queries[q]] for q in with_decoys])
        for q, s in zip(with_decoys, model.score_sets(spectra[with_decoys], decoy_sets,
                                                      test_kernel=(K[with_decoys], diag[with_decoys])), strict=True):
            other[q] = s
    return [np.concatenate([a, b]) for a, b in zip(own, other, strict=True)], truth

"""Features and default of the top hit's confidence, chosen by cross-validation on training decoy lists sized like
users' lists (issue #30, second design).

::

    python -m experiments confidence_calibration --data ../shared/data --set decoys=PATH --set store=STORE.sqlite

Calibration examples as the app forms them (:mod:`iokr.apps.metabolites.candidates._decoys`, ``list_size="pubchem"``): the
training set of ``iokr metabolites evaluate`` (the candidate lists' true structures excluded, one merged spectrum
per structure), 3 structure folds (seed 0); each fold's model (refitted on the other folds) ranks each held-out
structure that has an isomer among the training structures of its formula and its decoys (non-library isomers,
then nearest-mass structures of the decoy table) up to a list size drawn from the log-normal fit of PubChem list
sizes. The same fold model also ranks its held-out structures on the app's training-structure lists (the
calibration without decoys, ``--calibration-decoys none``).

Compared by leave-one-fold-out (a calibration fitted by the app's :func:`fit_calibration` -- size weight
constrained <= 0, degenerate fits refused -- on two folds' examples; log-loss and expected calibration error on
the third fold's sized decoy lists): margin + size; + gap to the 5th; + candidates within one median margin; +
both. The prior of the top hit is not a candidate (it learns the protocol: a held-out structure is never a library
compound). And the calibration without decoys (fitted on the two folds' training-structure lists, margin + size),
scored on the same held-out sized decoy lists.

Criterion, written before any number of this design was seen:
1. features: the set with the lowest mean held-out log-loss (weighted by the folds' list counts) is adopted if it
   beats margin + size by at least 0.005 nats per list, else margin + size; a set whose fit is refused on a fold is
   out;
2. default: the decoy calibration with those features becomes the app's default if its held-out log-loss beats the
   calibration without decoys by at least 0.005 nats per list; else the default stays without decoys.
The evaluated candidate lists (the 60 shared lists) are read for their true structures' names only (the decoy list
sizes' distribution was fitted to their sizes, disclosed in reports/metabolites.md).
"""

from __future__ import annotations

import tarfile
import time
from dataclasses import dataclass

import numpy as np
from sklearn.linear_model import LogisticRegression

from experiments._common.reports import Outputs
from iokr.apps.metabolites import (
    CandidateStore,
    Cleaning,
    Fingerprinter,
    MetaboliteIdentifier,
    fold_ids,
    read_spectra,
    training_set,
)
from iokr.apps.metabolites.candidates._decoys import BUNDLED_DECOYS, decoy_lists, read_decoy_table
from iokr.apps.metabolites.defaults import DEFAULT_FINGERPRINT, DEFAULT_PARAMS
from iokr.apps.metabolites.model._confidence import expected_calibration_error
from iokr.apps.metabolites.selection._calibration_examples import _has_isomer, decoy_list_scores

#: The app's cross-validated choice on the MassBank [M+H]+ training set (reports/metabolites.md), with its prior.
PARAMS = {**DEFAULT_PARAMS, "sigma_mz": 0.001, "output_kernel": "tanimoto", "alpha": 0.1}
FEATURE_SETS = {"margin+size (app)": (), "+prior of top hit": ("prior_top",), "+gap to 5th": ("gap5",),
                "+count within a margin": ("n_within",), "all": ("prior_top", "gap5", "n_within")}
MIN_GAIN = 0.005


@dataclass(frozen=True)
class Config:
    """Spectra, candidate lists (their true structures are excluded from training), the decoy table ("" for the
    bundled one), the SQLite fingerprint store ("" for a temporary one), folds and a structure cap (0: all)."""

    spectra: str = "metabolites/massbank_ms2_posMH_permissive.jsonl.gz"
    candidates: str = "metabolites/pubchem_candidate_sets_dev.tar.gz"
    decoys: str = ""
    store: str = ""
    folds: int = 3
    max_structures: int = 0


QUICK = Config(max_structures=600)
OUTPUTS = Outputs(json="confidence_calibration.json", markdown="confidence_calibration.md", keep=None)


def _examples(train, decoys, folds, log):
    """Per ranked list: fold, correct, margin, size, prior of the top hit, gap to the 5th, scores (raw; scaled in
    :func:`_design`)."""
    Y = np.asarray(train.Y, dtype=np.float64)
    eligible = _has_isomer(train.formulas, decoys)
    rows = []
    for f in range(int(folds.max()) + 1):
        t0 = time.perf_counter()
        tr, te = np.flatnonzero(folds != f), np.flatnonzero((folds == f) & eligible)
        model = MetaboliteIdentifier(**PARAMS).fit(train.spectra[tr], Y[tr])
        scores, truth = decoy_list_scores(model, train.spectra[te], Y, train.formulas, te, decoys,
                                          model.test_kernel(train.spectra[te]))
        prior_y, prior_pool = model.structure_prior(Y), model.structure_prior(decoys.pool)
        groups = {}
        for i, g in enumerate(train.formulas):
            groups.setdefault(g, []).append(i)
        for i, s, t in zip(te, scores, truth, strict=True):
            prior = np.concatenate([prior_y[groups[train.formulas[i]]], prior_pool[decoys.indices[i]]])
            order = np.argsort(-s, kind="stable")
            top = s[order[0]]
            rows.append((f, bool(order[0] == t and np.count_nonzero(s == top) == 1), top - s[order[1]], s.size,
                         prior[order[0]], top - s[order[min(4, s.size - 1)]], s))
        log(f"fold {f}: {te.size} lists, {time.perf_counter() - t0:.0f} s")
    return rows


def _design(rows, names, scale):
    margins = np.array([r[2] for r in rows])
    columns = [margins / scale, np.log(np.array([r[3] for r in rows], dtype=np.float64))]
    for name in names:
        if name == "prior_top":
            columns.append(np.array([r[4] for r in rows]))
        elif name == "gap5":
            columns.append(np.array([r[5] for r in rows]) / scale)
        elif name == "n_within":
            columns.append(np.log1p([np.count_nonzero(r[6] >= r[6].max() - scale) - 1 for r in rows]))
    return np.column_stack(columns)


def _compare(rows):
    folds = np.array([r[0] for r in rows])
    y = np.array([r[1] for r in rows])
    out = {}
    for label, names in FEATURE_SETS.items():
        losses, eces, n = [], [], []
        for f in np.unique(folds):
            fit, test = folds != f, folds == f
            scale = float(np.median([r[2] for r, k in zip(rows, fit, strict=True) if k]))
            X = _design(rows, names, scale)
            model = LogisticRegression(C=100.0, max_iter=1000).fit(X[fit], y[fit])
            p = np.clip(model.predict_proba(X[test])[:, 1], 1e-12, 1 - 1e-12)
            losses.append(float(-np.mean(y[test] * np.log(p) + (~y[test]) * np.log(1 - p))))
            eces.append(expected_calibration_error(p, y[test])[0])
            n.append(int(test.sum()))
        out[label] = {"log_loss": float(np.average(losses, weights=n)), "ece": float(np.average(eces, weights=n)),
                      "per_fold_log_loss": losses, "per_fold_ece": eces}
    base = out["margin+size (app)"]["log_loss"]
    best = min(out, key=lambda k: out[k]["log_loss"])
    chosen = best if base - out[best]["log_loss"] >= MIN_GAIN else "margin+size (app)"
    return out, chosen


def render(report):
    lines = ["# Confidence features chosen by cross-validation on decoy lists", "",
             f"{report['n_training_structures']} training structures, {report['n_examples']} ranked lists "
             f"({report['n_right']} right top hits); decoys: {report['decoys']}.", "",
             f"Chosen: **{report['chosen']}** (criterion: lowest held-out log-loss, adopted only if it beats the "
             f"app's margin + size by >= {MIN_GAIN} nats).", "",
             "| features | held-out log-loss | held-out ECE |", "|---|---|---|"]
    for label, r in report["rows"].items():
        lines.append(f"| {label} | {r['log_loss']:.4f} | {r['ece']:.4f} |")
    return "\n".join(lines) + "\n"


def run(config, data, previous=None, checkpoint=None):
    """Decoy lists, fold models' ranked lists, the comparison and the choice (``previous``, ``checkpoint``
    unused)."""
    t0 = time.perf_counter()
    store = CandidateStore(config.store, Fingerprinter(**DEFAULT_FINGERPRINT))
    spectra, _ = read_spectra(data / config.spectra, require_structure=True)
    with tarfile.open(data / config.candidates) as tar:  # the lists' names only: no candidate is read
        true_keys = [m.name.rsplit("_id=", 1)[1][:14] for m in tar.getmembers() if "_id=" in m.name]
    train = training_set(spectra, store, Cleaning(), true_keys)
    del spectra
    if config.max_structures and len(train.Y) > config.max_structures:
        keep = np.sort(np.random.default_rng(0).choice(len(train.Y), config.max_structures, replace=False))
        train = type(train)(train.spectra[keep], [train.keys[i] for i in keep], train.Y[keep], train.n_spectra,
                            train.n_excluded_structures, train.n_unparsable, train.licenses,
                            [train.formulas[i] for i in keep])
    decoys = decoy_lists(train.formulas, train.keys, read_decoy_table(config.decoys or BUNDLED_DECOYS), store)
    print(f"{len(train.Y)} training structures; {decoys.record}", flush=True)
    rows = _examples(train, decoys, fold_ids(len(train.Y), config.folds, 0), lambda m: print(m, flush=True))
    table, chosen = _compare(rows)
    return {"params": {**PARAMS, "kernels": list(PARAMS["kernels"])}, "n_training_structures": len(train.Y),
            "n_examples": len(rows), "n_right": int(sum(r[1] for r in rows)), "decoys": decoys.record,
            "rows": table, "chosen": chosen, "wall_s": time.perf_counter() - t0}

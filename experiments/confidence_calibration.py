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

from experiments._common.reports import Outputs
from iokr.apps.metabolites import (
    BUNDLED_DECOYS,
    CandidateStore,
    Cleaning,
    Fingerprinter,
    MetaboliteIdentifier,
    decoy_list_scores,
    decoy_lists,
    decoy_store,
    expected_calibration_error,
    fit_calibration,
    fold_ids,
    formula_candidate_sets,
    has_isomer,
    read_decoy_table,
    read_spectra,
    top_hit_features,
    training_list_examples,
    training_set,
)
from iokr.apps.metabolites.defaults import DEFAULT_FINGERPRINT, DEFAULT_PARAMS

#: The app's cross-validated choice on the MassBank [M+H]+ training set (reports/metabolites.md), with its prior.
PARAMS = {**DEFAULT_PARAMS, "sigma_mz": 0.001, "output_kernel": "tanimoto", "alpha": 0.1}
FEATURE_SETS = {"margin+size": (), "+gap to 5th": ("gap_to_5th",), "+count within a margin": ("n_within_margin",),
                "+both": ("gap_to_5th", "n_within_margin")}
BASE = "margin+size"
WITHOUT_DECOYS = "without decoys (training lists), margin+size"
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
OUTPUTS = Outputs(json="confidence_calibration.json", markdown="confidence_calibration.md")  # keeps "## Reading"


def _examples(train, decoys, folds, log):
    """Per fold: the held-out sized decoy lists ``(scores, truth)`` and the training-structure lists (the app's
    calibration without decoys) of the same fold model."""
    Y = np.asarray(train.Y, dtype=np.float64)
    eligible = has_isomer(train.formulas, decoys)
    formula_sets, scored = formula_candidate_sets(Y, train.formulas)
    out = []
    for f in range(int(folds.max()) + 1):
        t0 = time.perf_counter()
        tr, te = np.flatnonzero(folds != f), np.flatnonzero(folds == f)
        model = MetaboliteIdentifier(**PARAMS).fit(train.spectra[tr], Y[tr])
        K, diag = model.test_kernel(train.spectra[te])
        mask = eligible[te]
        decoy = decoy_list_scores(model, train.spectra[te[mask]], Y, train.formulas, te[mask], decoys,
                                  (K[mask], diag[mask]))
        plain = training_list_examples(model, train.spectra, Y, tr, te, (K, diag), formula_sets, scored)
        out.append({"decoy": decoy, "plain": ([s for e in plain for s in e[0]], [t for e in plain for t in e[1]])})
        log(f"fold {f}: {int(mask.sum())} decoy lists (median size "
            f"{np.median([s.size for s in decoy[0]]):.0f}), {len(out[-1]['plain'][0])} training lists, "
            f"{time.perf_counter() - t0:.0f} s")
        del model, K, diag
    return out


def _features(lists, scale, names):
    margins, sizes, correct, gaps, n_within = top_hit_features(lists[0], scale, lists[1])
    return (margins, sizes, correct, {"gaps": gaps if "gap_to_5th" in names else None,
                                      "n_within": n_within if "n_within_margin" in names else None})


def _concat(parts):
    return [s for p in parts for s in p[0]], [t for p in parts for t in p[1]]


def _held_out(fit_lists, test_lists, names):
    """Fit on ``fit_lists`` (the app's fit), log-loss and ECE on ``test_lists``; None when the fit is refused."""
    margins = top_hit_features(fit_lists[0], 1.0)[0]
    finite = margins[np.isfinite(margins)]
    scale = float(np.median(finite))
    m, n, y, extra = _features(fit_lists, scale, names)
    try:
        calibration = fit_calibration(m, n, y, scale=scale, **extra)
    except ValueError as exc:
        return None, str(exc)
    y_test = top_hit_features(test_lists[0], scale, test_lists[1])[2]
    p = np.clip(calibration.confidence(test_lists[0]), 1e-12, 1 - 1e-12)
    loss = float(-np.mean(y_test * np.log(p) + (~y_test) * np.log(1 - p)))
    return {"log_loss": loss, "ece": expected_calibration_error(p, y_test)[0], "n": int(y_test.size),
            "calibration": calibration.to_dict()}, ""


def _compare(folds):
    out = {}
    candidates = {label: ("decoy", names) for label, names in FEATURE_SETS.items()}
    candidates[WITHOUT_DECOYS] = ("plain", ())
    for label, (kind, names) in candidates.items():
        per_fold, problem = [], ""
        for f in range(len(folds)):
            fit = _concat([folds[g][kind] for g in range(len(folds)) if g != f])
            result, problem = _held_out(fit, folds[f]["decoy"], names)
            if result is None:
                break
            per_fold.append(result)
        if problem:
            out[label] = {"refused": problem}
            continue
        n = [r["n"] for r in per_fold]
        out[label] = {"log_loss": float(np.average([r["log_loss"] for r in per_fold], weights=n)),
                      "ece": float(np.average([r["ece"] for r in per_fold], weights=n)), "folds": per_fold}
    usable = [k for k in FEATURE_SETS if "log_loss" in out[k]]
    if not usable:  # every decoy fit refused (too few lists, e.g. a smoke run): nothing to adopt
        return out, "none (every decoy calibration refused)", "none"
    best = min(usable, key=lambda k: out[k]["log_loss"])
    chosen = best if BASE in usable and out[BASE]["log_loss"] - out[best]["log_loss"] >= MIN_GAIN else BASE
    plain = out[WITHOUT_DECOYS].get("log_loss", np.inf)  # a refused fit gives no confidence at all
    default = "decoys" if plain - out[chosen]["log_loss"] >= MIN_GAIN else "none"
    return out, chosen, default


def render(report):
    lines = ["# Confidence features and default chosen by cross-validation on sized decoy lists (issue #30)", "",
             f"{report['n_training_structures']} training structures, {report['n_examples']} sized decoy lists "
             f"({report['n_right']} right top hits); decoys: {report['decoys']}.", "",
             f"Chosen features: **{report['chosen']}**; default calibration: **{report['default']}** (criterion in "
             "the experiment's docstring, written before any number: lowest held-out log-loss on sized decoy "
             f"lists, a gain of >= {MIN_GAIN} nats needed).", "",
             "| calibration | held-out log-loss | held-out ECE | size weight per fold | size weight clipped |",
             "|---|---|---|---|---|"]
    for label, r in report["rows"].items():
        if "refused" in r:
            lines.append(f"| {label} | refused: {r['refused']} | | | |")
            continue
        weights = ", ".join(f"{f['calibration']['size_weight']:.3f}" for f in r["folds"])
        clipped = ", ".join(str(f["calibration"]["size_weight_clipped"]) for f in r["folds"])
        lines.append(f"| {label} | {r['log_loss']:.4f} | {r['ece']:.4f} | {weights} | {clipped} |")
    return "\n".join(lines) + "\n"


def run(config, data, previous=None, checkpoint=None):
    """Sized decoy lists, fold models' ranked lists, the comparison and the choice (``previous``, ``checkpoint``
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
    table = read_decoy_table(config.decoys or BUNDLED_DECOYS)
    decoys = decoy_lists(train.formulas, train.keys, table,
                         decoy_store(config.decoys or BUNDLED_DECOYS, store, Fingerprinter(**DEFAULT_FINGERPRINT)))
    print(f"{len(train.Y)} training structures; {decoys.record}", flush=True)
    folds = _examples(train, decoys, fold_ids(len(train.Y), config.folds, 0), lambda m: print(m, flush=True))
    table, chosen, default = _compare(folds)
    everything = _concat([f["decoy"] for f in folds])
    right = top_hit_features(everything[0], 1.0, everything[1])[2]
    return {"params": {**PARAMS, "kernels": list(PARAMS["kernels"])}, "n_training_structures": len(train.Y),
            "n_examples": len(everything[0]), "n_right": int(right.sum()), "decoys": decoys.record,
            "rows": table, "chosen": chosen, "default": default, "wall_s": time.perf_counter() - t0}

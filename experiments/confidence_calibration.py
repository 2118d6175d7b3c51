"""Decoy table and calibration family of the top hit's confidence, chosen by cross-validation on training decoy
lists (issue #30, third design).

::

    python -m experiments confidence_calibration --data ../shared/data --set store=STORE.sqlite \\
        --set fit_tables=bundled,decoys_moses300.tsv.gz --set target_table=decoys_moses_all.tsv.gz

Calibration examples as the app forms them (:mod:`iokr.apps.metabolites.candidates._decoys`,
``list_size="pubchem"``): per polarity, the training set of ``iokr metabolites evaluate`` (the 60 candidate lists'
true structures excluded, one merged spectrum per structure; [M+H]+ and [M-H]- MassBank files), 3 structure folds
(seed 0); each fold's model (refitted on the other folds) ranks each held-out structure that has an isomer among
the training structures of its formula and its decoys (non-library isomers of its formula, then nearest-mass
structures) up to a list size drawn from the log-normal fit of PubChem list sizes (seed 0).

Decoy tables: ``bundled`` the bundled one (at most 100 MOSES-train isomers per formula, 45,373 structures); a table
of at most 300 isomers per formula from all of MOSES (train, test and scaffold test, 1,936,962 SMILES; 895 MassBank
formulas have isomers there: 103,307 structures, ``python tools/bundle_decoys.py --store``; the cap of 300 was set by
the size of the files the package would ship, 9.6 MB, before any number of this study); and, as the held-out target
only, every MOSES isomer of those formulas (257,420 structures, ``--per-formula 0``; too large to ship, 23 MB).

Designs (fit side): each fitting table x {logistic on margin, size, gap to the 5th, candidates within one median
margin (the current default's features); the list softmax alone (temperature and "elsewhere" mass,
:mod:`iokr.apps.metabolites.model._list_softmax`); the logistic model with the list softmax's log-odds as one more
feature}. References, not eligible: the calibration without decoys (the fold's training-structure lists, margin +
size) and the three families fitted on the full table's lists (not shippable).

Criterion, written and committed before any number of this design was seen:
1. Held-out target: for each polarity and fold f, fold f's held-out structures on lists built from the FULL MOSES
   isomer table (the most PubChem-like lists available from training data: true isomers instead of nearest-mass
   fillers wherever MOSES has them), scored by fold f's model. Every design is fitted (the app's fit:
   ``fit_calibration_on_lists``, size weight <= 0, degenerate fits refused) on the other two folds' lists built
   from its own table and scored on fold f's target lists. Metric: the binary log-loss of the top hit's
   right/wrong, averaged over all held-out target lists of both polarities pooled (each list counts once). The
   held-out ECE is reported beside it and does not decide.
2. Eligible: the six shippable designs (two fitting tables x three families); a design whose fit is refused on any
   fold of either polarity is out.
3. Adoption: the eligible design with the lowest pooled log-loss becomes the app's default if it beats the current
   default (bundled table, logistic on the four features) by at least 0.005 nats per list; otherwise the default
   stays.
4. Shipping check (a cost, not a performance number): if the chosen design needs the larger table and ``make demo``
   with it exceeds about 70 s or 850 MiB on the shared machine, the best design on the bundled table is taken
   instead, by rule 3.
5. The 60 shared lists are read for their true structures' names only here; they are evaluated once, after the
   choice is committed (the third look at them, disclosed).
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
    fit_calibration_on_lists,
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

#: The app's cross-validated choice on both MassBank training sets (reports/metabolites.md), with its prior.
PARAMS = {**DEFAULT_PARAMS, "sigma_mz": 0.001, "output_kernel": "tanimoto", "alpha": 0.1}
FOUR = ("gap_to_5th", "n_within_margin")
#: family label -> (fit_calibration_on_lists features, family)
FAMILIES = {"logistic (4 features)": (FOUR, "logistic"), "list softmax": ((), "list_softmax"),
            "logistic (4 features) + list softmax": (FOUR + ("list_softmax",), "logistic")}
BASE = ("bundled", "logistic (4 features)")
WITHOUT_DECOYS = "without decoys (training lists), margin+size"
MIN_GAIN = 0.005


@dataclass(frozen=True)
class Config:
    """Spectra files (one per polarity), candidate lists (their true structures are excluded from training), the
    fitting decoy tables ("bundled" for the bundled one), the held-out target table, the SQLite fingerprint store ("" for a
    temporary one), folds and a structure cap per polarity (0: all)."""

    spectra: tuple = ("metabolites/massbank_ms2_posMH_permissive.jsonl.gz",
                      "metabolites/massbank_ms2_negMH_permissive.jsonl.gz")
    candidates: str = "metabolites/pubchem_candidate_sets_dev.tar.gz"
    fit_tables: tuple = ("bundled",)
    target_table: str = ""
    store: str = ""
    folds: int = 3
    max_structures: int = 0


QUICK = Config(max_structures=600)
OUTPUTS = Outputs(json="confidence_calibration.json", markdown="confidence_calibration.md")  # keeps "## Reading"


def _table_name(path):
    return "bundled" if path == "bundled" else path.rsplit("/", 1)[-1].removesuffix(".tsv.gz")


def _examples(train, tables, target, folds, log):
    """Per fold: held-out lists ``(scores, truth)`` per decoy table (``tables`` and the ``target``), and the
    training-structure lists (the app's calibration without decoys), all from the same fold model."""
    Y = np.asarray(train.Y, dtype=np.float64)
    formula_sets, scored = formula_candidate_sets(Y, train.formulas)
    everything = {**tables, "target": target}
    out = []
    for f in range(int(folds.max()) + 1):
        t0 = time.perf_counter()
        tr, te = np.flatnonzero(folds != f), np.flatnonzero(folds == f)
        model = MetaboliteIdentifier(**PARAMS).fit(train.spectra[tr], Y[tr])
        K, diag = model.test_kernel(train.spectra[te])
        fold = {}
        for name, decoys in everything.items():
            mask = has_isomer(train.formulas, decoys)[te]
            fold[name] = decoy_list_scores(model, train.spectra[te[mask]], Y, train.formulas, te[mask], decoys,
                                           (K[mask], diag[mask]))
        plain = training_list_examples(model, train.spectra, Y, tr, te, (K, diag), formula_sets, scored)
        fold["plain"] = ([s for e in plain for s in e[0]], [t for e in plain for t in e[1]])
        out.append(fold)
        log(f"fold {f}: " + ", ".join(f"{k} {len(v[0])} lists (median size {np.median([s.size for s in v[0]]):.0f})"
                                       for k, v in fold.items()) + f"; {time.perf_counter() - t0:.0f} s")
        del model, K, diag
    return out


def _concat(parts):
    return [s for p in parts for s in p[0]], [t for p in parts for t in p[1]]


def _held_out(fit_lists, test_lists, features, family):
    """Fit on ``fit_lists`` (the app's fit), per-list log-loss terms and outcomes on ``test_lists``; None with the
    reason when the fit is refused."""
    try:
        calibration = fit_calibration_on_lists(fit_lists[0], fit_lists[1], features, family)
    except ValueError as exc:
        return None, str(exc)
    y = top_hit_features(test_lists[0], 1.0, test_lists[1])[2]
    p = np.clip(calibration.confidence(test_lists[0]), 1e-12, 1 - 1e-12)
    return {"loss": -(y * np.log(p) + (~y) * np.log(1 - p)), "p": p, "y": y,
            "calibration": calibration.to_dict()}, ""


def _designs(table_names):
    designs = {(t, fam): (t, *spec) for t in table_names for fam, spec in FAMILIES.items()}
    designs[("target (full table, reference)", "logistic (4 features) + list softmax")] = (
        "target", FOUR + ("list_softmax",), "logistic")
    designs[("target (full table, reference)", "list softmax")] = ("target", (), "list_softmax")
    designs[(WITHOUT_DECOYS, "logistic margin+size")] = ("plain", (), "logistic")
    return designs


def _compare(per_polarity, table_names):
    """Held-out results per design, pooled over polarities; the choice by the docstring's criterion."""
    rows = {}
    for key, (source, features, family) in _designs(table_names).items():
        parts, problem = [], ""
        for mode, folds in per_polarity.items():
            for f in range(len(folds)):
                fit = _concat([folds[g][source] for g in range(len(folds)) if g != f])
                result, problem = _held_out(fit, folds[f]["target"], features, family)
                if result is None:
                    problem = f"{mode} fold {f}: {problem}"
                    break
                parts.append((mode, f, result))
            if problem:
                break
        label = f"{key[0]} | {key[1]}"
        if problem:
            rows[label] = {"refused": problem}
            continue
        row = {"log_loss": float(np.mean(np.concatenate([r["loss"] for _, _, r in parts]))),
               "n": int(sum(r["y"].size for _, _, r in parts)), "eligible": source in table_names,
               "table": key[0], "family": key[1]}
        for mode in per_polarity:
            mine = [r for m, _, r in parts if m == mode]
            p, y = np.concatenate([r["p"] for r in mine]), np.concatenate([r["y"] for r in mine])
            row[mode] = {"log_loss": float(np.mean(np.concatenate([r["loss"] for r in mine]))),
                         "ece": expected_calibration_error(p, y)[0], "n": int(y.size),
                         "mean_confidence": float(p.mean()), "accuracy": float(y.mean()),
                         "calibrations": [r["calibration"] for r in mine]}
        rows[label] = row
    base = f"{BASE[0]} | {BASE[1]}"
    eligible = [k for k, r in rows.items() if r.get("eligible")]
    if not eligible or base not in eligible:
        return rows, "none (the current default's fit was refused)", base
    best = min(eligible, key=lambda k: rows[k]["log_loss"])
    chosen = best if rows[base]["log_loss"] - rows[best]["log_loss"] >= MIN_GAIN else base
    bundled = [k for k in eligible if rows[k]["table"] == "bundled"]
    best_bundled = min(bundled, key=lambda k: rows[k]["log_loss"])
    fallback = best_bundled if rows[base]["log_loss"] - rows[best_bundled]["log_loss"] >= MIN_GAIN else base
    return rows, chosen, fallback


def render(report):
    lines = ["# Decoy table and calibration family chosen by cross-validation on training decoy lists (issue #30, "
             "third design)", "",
             "Held-out target: each fold's lists built from every MOSES isomer of the training formulas (log-loss "
             "pooled over both polarities; criterion in the experiment's docstring, committed before any number).",
             ""]
    for mode, info in report["polarities"].items():
        lines.append(f"- {mode}: {info['n_training_structures']} training structures; tables: " + "; ".join(
            f"{name}: {rec.get('n_decoys')} decoys, {rec.get('n_structures_with_decoy_isomers')} structures with "
            f"decoy isomers, list sizes reached {_sizes(rec.get('list_sizes_reached'))}"
            for name, rec in info["tables"].items()))
    lines += ["", f"Chosen: **{report['chosen']}**; if the larger table fails the demo budget: **{report['fallback']}**.",
              "", "| decoy table (fit) | family | pooled held-out log-loss | " + " | ".join(
                  f"{m} log-loss / ECE / mean confidence / accuracy (n)" for m in report["polarities"]) + " |",
              "|---|---|---|" + "---|" * len(report["polarities"])]
    for label, r in report["rows"].items():
        table, family = label.split(" | ")
        if "refused" in r:
            lines.append(f"| {table} | {family} | refused: {r['refused']} |" + " |" * len(report["polarities"]))
            continue
        cells = [f"{r[m]['log_loss']:.4f} / {r[m]['ece']:.4f} / {r[m]['mean_confidence']:.3f} / "
                 f"{r[m]['accuracy']:.3f} ({r[m]['n']})" for m in report["polarities"]]
        lines.append(f"| {table} | {family} | {r['log_loss']:.4f} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _sizes(q):
    return f"median {q['median']:.0f}, 10-90 % {q['q10']:.0f}-{q['q90']:.0f}" if q else "none"


def _training(config, data, spectra_path, store, true_keys):
    spectra, _ = read_spectra(data / spectra_path, require_structure=True)
    train = training_set(spectra, store, Cleaning(), true_keys)
    if config.max_structures and len(train.Y) > config.max_structures:
        keep = np.sort(np.random.default_rng(0).choice(len(train.Y), config.max_structures, replace=False))
        train = type(train)(train.spectra[keep], [train.keys[i] for i in keep], train.Y[keep], train.n_spectra,
                            train.n_excluded_structures, train.n_unparsable, train.licenses,
                            [train.formulas[i] for i in keep])
    return train


def run(config, data, previous=None, checkpoint=None):
    """Decoy lists per table, fold models' ranked lists, the comparison and the choice (``previous``,
    ``checkpoint`` unused)."""
    t0 = time.perf_counter()
    fingerprinter = Fingerprinter(**DEFAULT_FINGERPRINT)
    store = CandidateStore(config.store, fingerprinter)
    with tarfile.open(data / config.candidates) as tar:  # the lists' names only: no candidate is read
        true_keys = [m.name.rsplit("_id=", 1)[1][:14] for m in tar.getmembers() if "_id=" in m.name]
    paths = {_table_name(p): (BUNDLED_DECOYS if p == "bundled" else p) for p in config.fit_tables}
    target_path = config.target_table or BUNDLED_DECOYS
    tables = {name: read_decoy_table(path) for name, path in paths.items()}
    target_table = read_decoy_table(target_path)
    per_polarity, info = {}, {}
    for spectra_path in config.spectra:
        mode = "negative" if "neg" in spectra_path else "positive"
        train = _training(config, data, spectra_path, store, true_keys)
        decoys = {name: decoy_lists(train.formulas, train.keys, tables[name],
                                    decoy_store(paths[name], store, fingerprinter)) for name in paths}
        target = decoy_lists(train.formulas, train.keys, target_table, decoy_store(target_path, store, fingerprinter))
        records = {**{k: v.record for k, v in decoys.items()}, "target": target.record}
        print(f"{mode}: {len(train.Y)} training structures; " + "; ".join(
            f"{k}: {r['n_decoys']} decoys" for k, r in records.items()), flush=True)
        per_polarity[mode] = _examples(train, decoys, target, fold_ids(len(train.Y), config.folds, 0),
                                       lambda m, mode=mode: print(f"{mode} {m}", flush=True))
        info[mode] = {"n_training_structures": len(train.Y), "tables": records}
        del decoys, target, train
    rows, chosen, fallback = _compare(per_polarity, list(paths))
    return {"params": {**PARAMS, "kernels": list(PARAMS["kernels"])}, "polarities": info, "rows": rows,
            "chosen": chosen, "fallback": fallback, "wall_s": time.perf_counter() - t0}

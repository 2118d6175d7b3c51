"""Ion modes and precursor types (issue #28): which models should serve negative and rare-type spectra, chosen by
cross-validation on training structures, and the negative-mode figures on the 60 shared lists.

::

    python -m benchmarks.realdata_ion_modes --data ../shared/data --part cv --max-main 1500 --store STORE.sqlite
    python -m benchmarks.realdata_ion_modes --data ../shared/data --part cv --lists formula --joint "" \
        --max-main 1500 --store STORE.sqlite
    python -m benchmarks.realdata_ion_modes --data ../shared/data --part figures --store STORE.sqlite
    python -m benchmarks.realdata_ion_modes --part report

Study rows (``--part cv``): the three MassBank files; every spectrum's precursor type canonicalized
(:func:`canonical_types`: spellings of one ion, e.g. ``[M+CH3COO]-`` and ``[M+CH3COOH-H]-``, merged by charge and
mass shift); the 60 lists' true structures excluded (first InChIKey block); one merged spectrum per structure and
type (:func:`iokr.apps.metabolites.training_set` per type). Structures are split into 3 folds (seed 0) over the
union of all types, so a structure is held out in every polarity and type at once. Each held-out row is ranked
among the held-out structures of its fold that have a spectrum of its polarity's main type (``[M+H]+`` /
``[M-H]-``): the app's fold lists, per polarity; a rare-type row whose structure is not among them is added to its
list. Hold-out ranks come in closed form (``IOKRCV`` through the app's ``_holdout_ranks``) for the app's alpha grid;
ALIGNF weights are fitted on each fold's training side. Model settings: the app's CV choice on MassBank
(:data:`PARAMS`), structure prior off (the CV lists hold only training structures).

Models compared (Q1, Q2):

- ``separate``: one sub-model per polarity, trained on its main type only (the app's sub-models);
- ``joint-alignf``: one model on both main types; input kernels = the 4 base kernels restricted to same-polarity
  pairs, plus the 2 neutral-loss kernels on all pairs (fragments of [M+H]+ and [M-H]- ions differ by two protons,
  neutral losses do not); ALIGNF weighs the 6 kernels;
- ``joint-c<c>``: the same, with the 4 same-polarity weights from ALIGNF and the loss kernels across polarities at
  ``c`` times their ALIGNF weight;
- ``own``: a rare type's own sub-model (trained on that type's rows only), on a learning curve of training sizes.

``--part figures``: ``iokr metabolites evaluate`` (:func:`evaluate_job`, the app's defaults) on the ``[M-H]-`` file
and the CSI:FingerID-style baseline of :mod:`benchmarks._metabolite_baseline` on the same training set and queries;
``--modes positive`` reruns the ``[M+H]+`` evaluation. Writes ``benchmarks/results/ion_modes.json``;
``--part report`` writes ``reports/metabolites_ion_modes.md`` (keeping its hand-written ``## Reading``) with
:mod:`benchmarks._ion_modes_report`, which holds the decision rules (``CRITERIA``, fixed before the first run) and
applies them (``decisions``). ``--lists formula`` ranks every row in the app's isomer-like lists instead
(:func:`formula_lists`; results under ``cv_formula``).
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from iokr.apps.metabolites import (
    CandidateStore,
    Cleaning,
    Feedback,
    TrainingConfig,
    alignf_weights,
    concatenate,
    evaluate_job,
    fold_ids,
    formula_candidate_sets,
    make_output_kernel,
    read_candidate_lists,
    read_massbank_jsonl,
    training_set,
)
from iokr.apps.metabolites._adducts import AdductError, parse_adduct
from iokr.apps.metabolites._grams import TrainingGrams
from iokr.apps.metabolites._model import MetaboliteIdentifier
from iokr.apps.metabolites._pipeline import DEFAULT_GRID, _holdout_ranks
from iokr.decoding import CandidateSets

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks/results/ion_modes.json"
REPORT = ROOT / "reports/metabolites_ion_modes.md"
FILES = {"posMH": "massbank_ms2_posMH_permissive.jsonl.gz", "negMH": "massbank_ms2_negMH_permissive.jsonl.gz",
         "other": "massbank_ms2_other_permissive.jsonl.gz"}
LISTS = "pubchem_candidate_sets_dev.tar.gz"
#: The app's cross-validated choice on the [M+H]+ training structures (reports/metabolites.md), prior off.
PARAMS = {"kernels": ("ppk", "ppk_nl", "binned", "binned_nl"), "weights": "alignf", "sigma_mz": 0.001,
          "sigma_intensity": 0.25, "output_kernel": "tanimoto"}
LOSS_KERNELS = (1, 3)  # positions of ppk_nl and binned_nl in PARAMS["kernels"]
ALPHAS = DEFAULT_GRID["alpha"]
MAIN_TYPES = {1: "[M+H]+", -1: "[M-H]-"}
#: A rare type is studied when it has at least this many training structures (fewer: no CV evidence either way).
MIN_STUDIED = 20
LEARNING_CURVE = (10, 25, 50, 100, 200)
N_FOLDS, SEED = 3, 0
TOP = ("top1", "top5", "top10", "top20")


# -- data ---------------------------------------------------------------------------------------------------------

def canonical_types(texts):
    """``{raw text: canonical type}`` for precursor-type texts; spellings of one ion share a name.

    Two texts are the same ion when :func:`parse_adduct` gives the same molecule count, charge and mass shift
    (to 1 mDa): ``[M+CH3COO]-`` = ``[M+CH3COOH-H]-``, ``[M+HCOO]-`` = ``[M+FA-H]-`` = ``[M+HCO2]-``. The name is
    the canonical text of the group's most frequent spelling. Unreadable texts (``[M]+*``) and empty ones map to
    None.
    """
    counts = Counter(t for t in texts if t)
    groups = {}
    for text, _ in counts.most_common():
        try:
            adduct = parse_adduct(text)
        except AdductError:
            continue
        key = (adduct.n_molecules, adduct.charge, round(adduct.mass_shift, 3))
        groups.setdefault(key, (adduct.name, []))[1].append(text)
    return {text: name for name, members in groups.values() for text in members}


@dataclass
class StudyRows:
    """Merged training spectra, one per (structure, canonical precursor type), with their folds."""

    spectra: object
    Y: np.ndarray
    types: np.ndarray
    polarity: np.ndarray
    keys: np.ndarray
    folds: np.ndarray
    formulas: list

    def main(self, pol):
        return (self.types == MAIN_TYPES[pol]) & (self.polarity == pol)


def read_all_spectra(data):
    spectra = [read_massbank_jsonl(Path(data) / "metabolites" / FILES[name], require_structure=True)[0]
               for name in FILES]
    return concatenate(spectra)


def study_rows(spectra, store, exclude, min_structures=MIN_STUDIED, max_main=None):
    """:class:`StudyRows` of the main types and of every type with ``min_structures`` training structures.

    ``max_main`` subsamples the main types' structures (seeded) to shorten the run; None keeps all.
    """
    names = canonical_types(spectra.field("adduct"))
    types = np.array([names.get(t or "") or "" for t in spectra.field("adduct")], dtype=object)
    cleaning, parts = Cleaning(), []
    for name in [t for t, _ in Counter(types.tolist()).most_common() if t]:
        train = training_set(spectra[np.flatnonzero(types == name)], store, cleaning, exclude)
        rows = np.arange(len(train.spectra))
        if name in MAIN_TYPES.values() and max_main and rows.size > max_main:
            rows = np.sort(np.random.default_rng(SEED).choice(rows.size, max_main, replace=False))
        elif name not in MAIN_TYPES.values() and rows.size < min_structures:
            continue
        parts.append((name, train.spectra[rows], np.asarray(train.Y, dtype=np.float64)[rows],
                      [k[:14] for k in np.asarray(train.keys, dtype=object)[rows]],
                      [train.formulas[r] for r in rows]))
    keys = np.array([k for *_, ks, _ in parts for k in ks], dtype=object)
    unique = sorted(set(keys.tolist()))
    fold_of = dict(zip(unique, fold_ids(len(unique), N_FOLDS, SEED), strict=True))
    row_types = np.array([name for name, s, *_ in parts for _ in range(len(s))], dtype=object)
    return StudyRows(spectra=concatenate([s for _, s, *_ in parts]), Y=np.vstack([p[2] for p in parts]),
                     types=row_types, polarity=np.array([parse_adduct(t).charge > 0 for t in row_types]) * 2 - 1,
                     keys=keys, folds=np.array([fold_of[k] for k in keys]),
                     formulas=[f for p in parts for f in p[4]])


def fold_lists(rows):
    """Each row's CV list: the held-out main-type structures of its fold and polarity (plus itself if absent)."""
    lists = []
    members = {(f, p): np.flatnonzero(rows.main(p) & (rows.folds == f)) for f in range(N_FOLDS) for p in (1, -1)}
    for i in range(len(rows.keys)):
        own = members[(rows.folds[i], rows.polarity[i])]
        lists.append(own if rows.keys[i] in set(rows.keys[own].tolist()) else np.append(own, i))
    return lists


def formula_lists(rows):
    """Each row's isomer-like list (the app's :func:`formula_candidate_sets` over one row per structure): all
    study structures of its molecular formula, any type and fold, filled up to 20 by the nearest masses; and
    whether the row is scored (its formula is shared by another structure)."""
    first = {}
    for i, k in enumerate(rows.keys):
        first.setdefault(k, i)
    reps = np.array(sorted(first.values()))
    sets, scored = formula_candidate_sets(rows.Y[reps], [rows.formulas[r] for r in reps])
    where = {rows.keys[r]: j for j, r in enumerate(reps)}
    lists = [reps[sets.indices[where[k]]] for k in rows.keys]
    return lists, np.array([scored[where[k]] for k in rows.keys])


# -- Grams --------------------------------------------------------------------------------------------------------

def study_grams(rows):
    """``(grams4, grams6)``: :class:`TrainingGrams` over all study rows of the 4 base kernels restricted to
    same-polarity pairs, and the same 4 followed by the 2 loss kernels on all pairs (CSR, shared)."""
    grams = MetaboliteIdentifier(**PARAMS).base_grams(rows.spectra, storage="csr")
    diags, masked, losses = grams.diags, [], []
    other = rows.polarity[:, None] != rows.polarity[None, :]
    for k in range(grams.n_kernels):
        dense = grams.block(k)
        if k in LOSS_KERNELS:
            losses.append(sp.csr_matrix(dense))
        dense[other] = 0.0
        masked.append(sp.csr_matrix(dense))
        del dense
    return (TrainingGrams(masked, diags),
            TrainingGrams(masked + losses, diags + [diags[k] for k in LOSS_KERNELS]))


# -- cross-validation ---------------------------------------------------------------------------------------------

def fold_ranks(grams, Y, sets, eligible, folds, weigh, alphas=ALPHAS):
    """Hold-out ranks ``{alpha: ranks}`` over the rows of ``grams`` (a view), per fold in closed form.

    ``eligible`` marks the rows a fold may train on; every row of the held-out fold is ranked in its set.
    ``weigh(train)`` gives the kernel weights of one fold from its training rows (positions in the view). The
    closed form needs the training side to be the complement of the test side, so each fold's Gram covers its
    training and test rows only (rows in neither take no part).
    """
    output = make_output_kernel(PARAMS["output_kernel"])
    out = {float(a): np.full(len(Y), np.nan) for a in alphas}
    for f in range(N_FOLDS):
        train, test = np.flatnonzero(eligible & (folds != f)), np.flatnonzero(folds == f)
        if not train.size or not test.size:
            continue
        both = np.concatenate([train, test])
        K = grams.combined(weigh(train), both, both)
        local = CandidateSets(sets.pool, [sets.indices[i] for i in both])
        split = [(np.arange(train.size), np.arange(train.size, both.size))]
        for alpha, ranks in _holdout_ranks(K, Y[both], alphas, split, local, output, 256, lambda i, r: 0.0):
            out[float(alpha)][test] = ranks[train.size:]
        del K
    return out


def alignf_on(view, Y):
    """``weigh(train)``: ALIGNF weights of ``view``'s Grams on the training rows."""
    output = make_output_kernel(PARAMS["output_kernel"])
    return lambda train: alignf_weights(view.subset(train), output(Y[train]))


def cross_weighted(view4, Y, c):
    """``weigh(train)`` of ``joint-c``: ALIGNF on the 4 same-polarity kernels; the 2 all-pair loss kernels at
    ``c`` times the weight of their same-polarity versions."""
    fit = alignf_on(view4, Y)

    def weigh(train):
        w = fit(train)
        return np.concatenate([w, c * w[list(LOSS_KERNELS)]])
    return weigh


def run_models(rows, grams4, grams6, joint, log, lists):
    """Hold-out ranks of ``separate`` and the joint variants: ``{model: {alpha: ranks over all rows}}``."""
    Y, sets = rows.Y, CandidateSets(rows.Y, lists)
    separate = {float(a): np.full(len(Y), np.nan) for a in ALPHAS}
    for pol in (1, -1):
        t0 = time.perf_counter()
        R = np.flatnonzero(rows.polarity == pol)
        view = grams4.subset(R)
        ranks = fold_ranks(view, Y[R], CandidateSets(Y, [sets.indices[i] for i in R]), rows.main(pol)[R],
                           rows.folds[R], alignf_on(view, Y[R]))
        for a, r in ranks.items():
            separate[a][R] = r
        log(f"separate {MAIN_TYPES[pol]}: {time.perf_counter() - t0:.0f} s")
    results = {"separate": separate}
    eligible = rows.main(1) | rows.main(-1)
    for variant in joint:
        t0 = time.perf_counter()
        weigh = alignf_on(grams6, Y) if variant == "alignf" else cross_weighted(grams4, Y, float(variant))
        name = "joint-alignf" if variant == "alignf" else f"joint-c{variant}"
        results[name] = fold_ranks(grams6, Y, sets, eligible, rows.folds, weigh)
        log(f"{name}: {time.perf_counter() - t0:.0f} s")
    return results


def own_model_curve(rows, grams4, log, lists, sizes=LEARNING_CURVE):
    """``{type: {n: {alpha: ranks over all rows}}}``: each rare type's own sub-model trained on ``n`` of its
    structures per fold (drawn from the other folds, seeded)."""
    sets = lists
    curves = {}
    for name in sorted(set(rows.types.tolist()) - set(MAIN_TYPES.values())):
        R = np.flatnonzero(rows.types == name)
        view, Y, folds = grams4.subset(R), rows.Y[R], rows.folds[R]
        sub = CandidateSets(rows.Y, [sets[i] for i in R])
        n_train = min(int(np.sum(folds != f)) for f in range(N_FOLDS))
        per_size = {}
        for n in [s for s in sizes if s < n_train] + [n_train]:
            out = {float(a): np.full(len(rows.Y), np.nan) for a in ALPHAS}
            rng = np.random.default_rng(SEED)
            for f in range(N_FOLDS):
                eligible = np.zeros(R.size, dtype=bool)
                eligible[rng.choice(np.flatnonzero(folds != f), n, replace=False)] = True
                held = np.where(folds == f, f, -1)  # fold_ranks then runs this fold only
                for a, r in fold_ranks(view, Y, sub, eligible, held, alignf_on(view, Y)).items():
                    out[a][R[folds == f]] = r[folds == f]
            per_size[n] = out
        curves[name] = per_size
        log(f"own {name}: {R.size} rows, training sizes {list(per_size)}")
    return curves


# -- summaries ----------------------------------------------------------------------------------------------------

def topk(ranks, folds=None, formula=False):
    """Top-k (%) of finite-or-missed ranks and ``score`` = mean of top-1/10/20 (formula lists: of top-1/5/10, as
    the app's formula score); per fold then averaged when ``folds`` is given (the app's fold score), else pooled."""
    def row(r):
        r = np.where(np.isnan(r), np.inf, r)
        out = {f"top{k}": float(np.mean(r <= k) * 100) if r.size else float("nan") for k in (1, 5, 10, 20)}
        out["score"] = (out["top1"] + out["top5" if formula else "top10"] + out["top10" if formula else "top20"]) / 3
        return out
    if folds is None:
        return {**row(np.asarray(ranks)), "n": int(len(ranks))}
    per = [row(np.asarray(ranks)[folds == f]) for f in np.unique(folds)]
    return {**{k: float(np.mean([p[k] for p in per])) for k in per[0]}, "n": int(len(ranks))}


def summarize_models(rows, results, scored=None):
    """Per model and alpha: the fold score of each polarity's main type, and pooled top-k of each rare type;
    with ``scored`` (formula lists), over the scored rows only and with the formula score."""
    formula = scored is not None
    scored = np.ones(len(rows.keys), dtype=bool) if scored is None else scored
    out = {}
    for model, per_alpha in results.items():
        out[model] = {}
        for alpha, ranks in per_alpha.items():
            entry = {}
            for pol, name in MAIN_TYPES.items():
                m = rows.main(pol) & scored
                entry[name] = topk(ranks[m], rows.folds[m], formula)
            for name in sorted(set(rows.types.tolist()) - set(MAIN_TYPES.values())):
                entry[name] = topk(ranks[(rows.types == name) & scored], formula=formula)
            out[model][str(alpha)] = entry
    return out


def chosen_alphas(summary):
    """Per model: the alpha of each polarity (``separate``: each sub-model its own; joint: one alpha, by the mean
    of the two polarities' fold scores)."""
    chosen = {}
    for model, per_alpha in summary.items():
        if model == "separate":
            chosen[model] = {name: max(per_alpha, key=lambda a, n=name: per_alpha[a][n]["score"])
                             for name in MAIN_TYPES.values()}
        else:
            best = max(per_alpha, key=lambda a: np.mean([per_alpha[a][n]["score"] for n in MAIN_TYPES.values()]))
            chosen[model] = dict.fromkeys(MAIN_TYPES.values(), best)
    return chosen


def summarize_curves(rows, curves, scored=None):
    formula = scored is not None
    scored = np.ones(len(rows.keys), dtype=bool) if scored is None else scored
    return {name: {str(n): {str(a): topk(r[(rows.types == name) & scored], formula=formula)
                            for a, r in per_alpha.items()}
                   for n, per_alpha in per_size.items()} for name, per_size in curves.items()}


# -- runs ---------------------------------------------------------------------------------------------------------

def _update_results(path, key, value):
    path = Path(path)
    results = json.loads(path.read_text()) if path.exists() else {}
    results[key] = value
    path.write_text(json.dumps(results, indent=1, default=str))


def run_cv(args, log):
    """Q1 / Q2: the study rows, their Grams, the models' hold-out ranks, the rare types' own-model curves."""
    t_start = time.perf_counter()
    data = Path(args.data) / "metabolites"
    store = CandidateStore(args.store, TrainingConfig().fingerprinter())
    exclude = [lst.true_key for lst in read_candidate_lists(data / LISTS, store) if lst.true_key]
    spectra = read_all_spectra(args.data)
    raw_types = Counter(spectra.field("adduct"))
    rows = study_rows(spectra, store, exclude, max_main=args.max_main)
    del spectra
    counts = {t: {"rows": int(np.sum(rows.types == t)), "structures": len(set(rows.keys[rows.types == t]))}
              for t in sorted(set(rows.types.tolist()))}
    log(f"study rows: {len(rows.keys)} ({counts}); {len(set(rows.keys.tolist()))} structures")
    t0 = time.perf_counter()
    grams4, grams6 = study_grams(rows)
    timings = {"rows_s": t0 - t_start, "grams_s": time.perf_counter() - t0}
    log(f"Grams: {timings['grams_s']:.0f} s")
    lists, scored = (fold_lists(rows), None) if args.lists == "fold" else formula_lists(rows)
    results = run_models(rows, grams4, grams6, args.joint, log, lists)
    summary = summarize_models(rows, results, scored)
    timings["models_s"] = time.perf_counter() - t_start - sum(timings.values())
    cv = {"params": {**PARAMS, "kernels": list(PARAMS["kernels"])}, "alphas": list(ALPHAS), "folds": N_FOLDS,
          "seed": SEED, "max_main": args.max_main, "n_excluded_lists": len(exclude),
          "raw_types": {k or "": v for k, v in raw_types.items()},
          "canonical": canonical_types(list(raw_types)), "study_counts": counts, "models": summary,
          "chosen_alphas": chosen_alphas(summary), "timings_s": timings}
    key = "cv" if args.lists == "fold" else f"cv_{args.lists}"
    cv["lists"] = args.lists
    if scored is not None:
        cv["scored_rows"] = {t: int(np.sum(scored & (rows.types == t))) for t in counts}
    _update_results(args.output, key, cv)
    t0 = time.perf_counter()
    cv["own_curves"] = summarize_curves(rows, own_model_curve(rows, grams4, log, lists), scored)
    timings["own_s"] = time.perf_counter() - t0
    timings["total_s"] = time.perf_counter() - t_start
    _update_results(args.output, key, cv)
    return cv


def run_figures(args, log):
    """Q4: the app's evaluation on the [M-H]- file, the baseline on the same training set and queries; optionally
    the [M+H]+ evaluation again."""
    from benchmarks.realdata_metabolite_baseline import run_baseline  # noqa: PLC0415 - only this part needs it

    data = Path(args.data) / "metabolites"
    config = TrainingConfig(store_path=args.store)
    figures = json.loads(Path(args.output).read_text()).get("figures", {}) if Path(args.output).exists() else {}
    runs = [(name, FILES[file]) for name, file in (("negative", "negMH"), ("positive", "posMH"),
                                                    ("negative_no_prior", "negMH")) if name in args.modes.split(",")]
    for name, file in runs:
        t0, c0 = time.perf_counter(), time.process_time()
        run_config = TrainingConfig(store_path=args.store, prior_weight=0.0) if name.endswith("no_prior") else config
        summary = evaluate_job(data / file, data / LISTS, run_config, feedback=Feedback(log=log))
        keep = ("per_structure", "per_spectrum", "n_lists", "n_lists_with_spectra", "n_query_spectra",
                "n_train_structures", "n_train_spectra", "chosen", "weights", "cv", "timings_s", "confidence")
        figures[name] = {k: summary.get(k) for k in keep}
        figures[name].update(wall_s=time.perf_counter() - t0, cpu_s=time.process_time() - c0)
        log(f"{name}: {summary['per_structure']} / {summary['per_spectrum']}")
        if name == "negative":
            t0, c0 = time.perf_counter(), time.process_time()
            figures["negative_baseline"] = run_baseline(data / file, data / LISTS, summary["chosen"], config)
            figures["negative_baseline"].update(wall_s=time.perf_counter() - t0, cpu_s=time.process_time() - c0)
            _update_results(args.output, "figures", figures)
    _update_results(args.output, "figures", figures)
    return figures


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(ROOT.parent / "shared/data"))
    parser.add_argument("--part", choices=("cv", "figures", "report"), required=True)
    parser.add_argument("--store", default="", help="SQLite fingerprint store (cache; temporary when empty)")
    parser.add_argument("--joint", default="alignf,1.0",
                        help="joint variants: 'alignf' and/or cross-polarity loss weights c (comma-separated)")
    parser.add_argument("--max-main", type=int, default=None,
                        help="subsample the [M+H]+ and [M-H]- training structures to this many (seeded)")
    parser.add_argument("--lists", choices=("fold", "formula"), default="fold",
                        help="CV lists: fold lists per polarity, or isomer-like formula lists (results key cv_formula)")
    parser.add_argument("--modes", default="negative",
                        help="figures to compute: 'negative' (with the baseline), 'positive' (the [M+H]+ check), "
                             "'negative_no_prior' (structure prior off)")
    parser.add_argument("--output", default=str(RESULTS))
    parser.add_argument("--report", default=str(REPORT))
    args = parser.parse_args(argv)
    args.joint = [v for v in args.joint.split(",") if v]

    def log(message):
        print(time.strftime("%H:%M:%S"), message, flush=True)

    if args.part == "cv":
        run_cv(args, log)
    elif args.part == "figures":
        run_figures(args, log)
    else:
        from benchmarks._ion_modes_report import write_report  # noqa: PLC0415 - the report needs no data

        write_report(args.output, args.report)


if __name__ == "__main__":
    main()

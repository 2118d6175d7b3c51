"""The study's stages: training data, kernels, gamma and alpha selection, final fits and the report record."""

from __future__ import annotations

import dataclasses
import json
import os
import platform
import time
from pathlib import Path

import numpy as np

from experiments._common.timing import peak_rss_mib
from experiments.mpiokr_metabolites.models import (
    GAMMAS,
    N_FOLDS,
    PARAMS,
    Kernels,
    Recorder,
    SplitGram,
    TrainingData,
    alpha_cv_search,
    cached_grams,
    cv_rows_from_log,
    final_fit,
    load,
    reverse_cv,
    spectra_key,
    standin_sets,
    structure_info,
)
from iokr.apps.metabolites import (
    MetaboliteIdentifier,
    evaluate_lists,
    make_output_kernel,
)
from iokr.decoding import CandidateSets
from iokr.estimators import GroupedInput, InputSide, OutputSide
from iokr.kernels import WeightedSum


def load_training(args, data, cache, log):
    """The data, the (optionally subsampled) training structures, their masses and formulas, and which of them are
    candidates of the 60 lists."""
    spectra, lists, store, cleaning, train = load(Path(data) / "metabolites", args.store or None, cache)
    if args.subsample:
        keep = np.sort(np.random.default_rng(args.seed).choice(len(train.keys), args.subsample, replace=False))
        train = dataclasses.replace(train, spectra=train.spectra[keep], Y=train.Y[keep],
                                    keys=[train.keys[i] for i in keep])
    Y = np.asarray(train.Y, dtype=np.float64)
    masses, formulas = structure_info(train, store)
    list_keys = {k for lst in lists for k in lst.keys}
    is_list_candidate = np.array([k[:14] in list_keys for k in train.keys])
    log(f"training: {Y.shape[0]} structures from {train.n_spectra} spectra; {int(is_list_candidate.sum())} of them "
        f"are candidates of the 60 lists (never used as training candidates)")
    return TrainingData(spectra, lists, store, cleaning, train, Y, masses, formulas, is_list_candidate)


def build_kernels(d, cache, log):
    """Base Grams (cached), ALIGNF weights and the combined kernel; the queries are numbered in scoring order."""
    recorder = Recorder()
    evaluate_lists(recorder, d.spectra, d.lists, d.store, d.cleaning)
    offsets, start = {}, 0
    for q in recorder.calls:
        offsets[spectra_key(q)] = start
        start += len(q)
    grams, diags, tests, test_diags, gram_times = cached_grams(d.train, recorder.calls, cache, log)
    weights = MetaboliteIdentifier(**PARAMS).combined_training_gram(grams, diags, d.Y)[1]
    base = [SplitGram(G, T, dg) for G, T, dg in zip(grams, tests, test_diags, strict=True)]
    kernel = WeightedSum(base, weights)
    output = make_output_kernel(PARAMS["output_kernel"])
    log(f"ALIGNF weights {np.round(weights, 4).tolist()}")
    return Kernels(base, weights, kernel, output, offsets, gram_times)


def gamma_stage(kern, Y, X, splits, names, stage):
    """Reverse-model hold-out errors per gamma, per base kernel (separate) and for the combined kernel (joint);
    read from ``stage`` when an earlier invocation saved them."""
    if stage.exists():
        return json.loads(stage.read_text())
    t0 = time.perf_counter()
    groups = [np.array([k]) for k in range(len(kern.base))]
    per_kernel = GroupedInput(kern.base, kern.weights, groups, True, True).fit_grams(X)
    transformed = dict(zip(names, per_kernel, strict=True))
    del per_kernel
    transformed["combined"] = InputSide(kern.kernel, True, True).fit_gram(X)
    K_y = OutputSide(kern.output, True, True).fit(Y).train_gram
    gamma_cv = {"gammas": list(GAMMAS), "errors": reverse_cv(transformed, K_y, splits, GAMMAS),
                "seconds": time.perf_counter() - t0}
    del transformed, K_y
    stage.write_text(json.dumps(gamma_cv))
    return gamma_cv


def fold_standin_sets(d, folds, size):
    """Training candidate sets and evaluation lists, each structure's drawn from its own fold.

    Its training candidate set is never a structure another fold holds out (no held-out structure enters training
    as a candidate) and its evaluation list is itself + its fold's stand-ins.
    """
    n = d.Y.shape[0]
    train_sets, eval_sets = [None] * n, [None] * n
    for f in range(N_FOLDS):
        members = np.flatnonzero(folds == f)
        allowed = np.zeros(n, bool)
        allowed[members] = True
        allowed &= ~d.is_list_candidate
        for j, standin in zip(members, standin_sets(d.masses, d.formulas, members, allowed, size), strict=True):
            train_sets[j] = standin
            eval_sets[j] = np.concatenate([[j], standin])
    return train_sets, CandidateSets(d.Y, eval_sets)


def _alpha_from_log(name, spec, log_path, log):
    """``name``'s alpha from the CV scores a stopped run logged (the folds it completed)."""
    kind, gamma, fraction = spec
    rows = cv_rows_from_log(log_path, name)
    best = max(rows, key=lambda r: r["score"])
    res = {"kind": kind, "gamma": gamma, "fraction": fraction, "alpha": best["alpha"], "cv": rows,
           "cv_seconds": float("nan"), "cv_folds": sorted({f for r in rows for f in r["folds"]}), "cv_log": log_path}
    log(f"{name}: alpha {best['alpha']} by CV on folds {res['cv_folds']} (from {log_path})")
    return res


def _alpha_by_cv(name, spec, alphas, alpha_cv, stage, cv_args, log):
    """``name``'s alpha by 3-fold hold-out (``alpha_cv_search``); the rows are saved in ``alpha_cv`` / ``stage``."""
    kind, gamma, fraction = spec
    kernel, output, X, Y, splits, train_sets, eval_sets, seed = cv_args
    key = f"{name}|{gamma}|{alphas}"
    if key not in alpha_cv:
        t0 = time.perf_counter()
        _, rows = alpha_cv_search(kind, gamma, fraction, alphas, kernel, output, X, Y, splits, train_sets,
                                  eval_sets, seed)
        for row in rows:
            for f, score in enumerate(row["fold_scores"]):
                log(f"  {name} fold {f} alpha {row['alpha']}: score {score:.1f}")
        alpha_cv[key] = {"rows": rows, "seconds": time.perf_counter() - t0}
        stage.write_text(json.dumps(alpha_cv))
    cv = alpha_cv[key]
    best = max(cv["rows"], key=lambda r: r["score"])
    log(f"{name}: alpha {best['alpha']} by CV (score {best['score']:.2f}; CV {cv['seconds']:.0f} s)")
    return {"kind": kind, "gamma": gamma, "fraction": fraction, "alpha": best["alpha"],
            "cv": cv["rows"], "cv_seconds": cv["seconds"]}


def select_alphas(models, alphas, args, stage, cv_args, log):
    """Per model: alpha read from a run log (``--cv-log``), shared with an earlier model (``--alpha-from``), or by
    3-fold hold-out, in that order of precedence."""
    alpha_cv = json.loads(stage.read_text()) if stage.exists() else {}
    shared = dict(item.split("=") for item in args.alpha_from.split(",") if item)
    from_log = dict(item.split("=") for item in args.cv_log.split(",") if item)
    results = {}
    for name, spec in models.items():
        if name in from_log:
            results[name] = _alpha_from_log(name, spec, from_log[name], log)
        elif name in shared:
            kind, gamma, fraction = spec
            source = results[shared[name]]
            results[name] = {"kind": kind, "gamma": gamma, "fraction": fraction, "alpha": source["alpha"],
                             "cv": None, "cv_seconds": 0.0, "alpha_from": shared[name]}
            log(f"{name}: alpha {source['alpha']} of {shared[name]} (no CV of its own)")
        else:
            results[name] = _alpha_by_cv(name, spec, alphas, alpha_cv, stage, cv_args, log)
    return results


def final_fits(results, args, d, kern, X, names, cache, log):
    """Fit each model on all training structures and score the 60 lists once (stage cached); the stand-in set sizes."""
    n = d.Y.shape[0]
    final_sets = standin_sets(d.masses, d.formulas, np.arange(n), ~d.is_list_candidate, args.size)
    sizes = np.array([len(s) for s in final_sets])
    stage = cache / f"final_{n}_{args.seed}_{args.size}_{args.fraction}.json"
    finals = json.loads(stage.read_text()) if stage.exists() else {}
    for name, res in results.items():
        key = f"{name}|{res['gamma']}|{res['alpha']}"
        if key not in finals:
            finals[key] = final_fit(res, kern.kernel, kern.output, X, d.Y, final_sets, names, kern.offsets, d.spectra,
                                    d.lists, d.store, d.cleaning, args.seed)
            stage.write_text(json.dumps(finals, default=float))
        res.update(finals[key])
        log(f"{name}: fit {res['fit_s']:.0f} s, per structure {res['per_structure']}, per spectrum "
            f"{res['per_spectrum']}")
    return sizes


def _report_notes(results):
    """Notes on the models whose alpha is borrowed (``--alpha-from``) or read from a stopped run's log."""
    return ([f"- {name} uses the alpha that cross-validation chose for {r['alpha_from']} (``--alpha-from``), "
             "without a CV of its own: the separate approximation's CV refits cost several minutes each on "
             "this shared machine and the run had to fit the time budget. The paper reports no difference "
             "between all and 1% candidates; the joint rows show whether CV picks the same alpha for both."
             for name, r in results.items() if r.get("alpha_from")]
            + [f"- {name}: alpha chosen by the CV score on fold(s) {r['cv_folds']} of the 3 only (read from the log "
               "of the run that computed them, scores as logged with one decimal; that run was stopped there for time: the separate approximation's refits "
               "with 3 gamma groups take minutes each on this shared machine); top-k of the CV not kept."
               for name, r in results.items() if r.get("cv_log")])


def build_report(args, d, kern, sizes, gamma_cv, gammas, alphas, results, summary, t_start, log_lines):
    """The JSON report (``gammas`` = (joint, separate per base kernel))."""
    gamma_joint, gamma_sep = gammas
    published = {k: summary[k] for k in ("published", "published_optimistic") if k in summary}
    return {
        "command": "OPENBLAS_NUM_THREADS=1 python -m experiments mpiokr_metabolites --data DATA "
                   f"--set size={args.size} --set fraction={args.fraction} --set seed={args.seed}",
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "machine": platform.platform(),
        "threads": os.environ.get("OPENBLAS_NUM_THREADS"),
        "n_train_structures": d.Y.shape[0], "n_train_spectra": d.train.n_spectra,
        "n_excluded_structures": d.train.n_excluded_structures,
        "n_list_candidates_in_training": int(d.is_list_candidate.sum()),
        "n_query_spectra": summary["n_query_spectra"], "n_lists": summary["n_lists"],
        "standin": {"size": args.size, "fraction": args.fraction, "set_sizes": [int(sizes.min()), int(sizes.max())],
                    "n_memberships_all": int(sizes.sum())},
        "weights": kern.weights.tolist(), "gamma_cv": gamma_cv, "gamma_joint": gamma_joint,
        "gamma_separate": dict(zip(PARAMS["kernels"], gamma_sep, strict=True)), "alphas": alphas,
        "gram_times": kern.gram_times, "published": published, "models": results,
        "total_s": time.perf_counter() - t_start, "peak_rss_mib": peak_rss_mib(), "log": log_lines,
        "notes": _report_notes(results),
    }

"""The study's two parts: cross-validation on training structures (Q1, Q2) and the figures on the shared lists
(Q4), each returning its section of the results."""

from __future__ import annotations

import time
from collections import Counter

import numpy as np

from experiments.ion_modes.models import ALPHAS, PARAMS, own_model_curve, run_models, study_grams
from experiments.ion_modes.rows import (
    N_FOLDS,
    SEED,
    canonical_types,
    fold_lists,
    formula_lists,
    read_study_spectra,
    study_rows,
)
from experiments.ion_modes.summaries import chosen_alphas, summarize_curves, summarize_models
from experiments.metabolite_baseline import run_baseline
from iokr.apps.metabolites import CandidateStore, Feedback, TrainingConfig, read_candidate_lists
from iokr.apps.metabolites import evaluate as evaluate_lists_once

#: What the figures keep of ``evaluate``'s summary.
FIGURE_KEYS = ("per_structure", "per_spectrum", "n_lists", "n_lists_with_spectra", "n_query_spectra",
               "n_train_structures", "n_train_spectra", "chosen", "weights", "cv", "timings_s", "confidence")


def _study_inputs(config, data, log):
    """``(rows, raw type counts, number of excluded lists)`` of the spectra files, the lists' structures left out."""
    store = CandidateStore(config.store, TrainingConfig().fingerprinter())
    exclude = [lst.true_key for lst in read_candidate_lists(data / config.candidates, store) if lst.true_key]
    spectra = read_study_spectra([data / p for p in (config.positive, config.negative, config.other) if p])
    raw_types = Counter(spectra.field("adduct"))
    rows = study_rows(spectra, store, exclude, config.min_structures, max_main=config.max_main)
    return rows, raw_types, len(exclude)


def run_cv(config, data, lists_kind, joint, log, checkpoint=lambda cv: None):
    """Q1 / Q2 on ``lists_kind`` ("fold" or "formula") CV lists: the study rows, their Grams, the models' hold-out
    ranks and the rare types' own-model curves; ``checkpoint(cv)`` receives the section before the curves."""
    t_start = time.perf_counter()
    rows, raw_types, n_excluded = _study_inputs(config, data, log)
    counts = {t: {"rows": int(np.sum(rows.types == t)), "structures": len(set(rows.keys[rows.types == t]))}
              for t in sorted(set(rows.types.tolist()))}
    log(f"study rows: {len(rows.keys)} ({counts}); {len(set(rows.keys.tolist()))} structures")
    t0 = time.perf_counter()
    grams4, grams6 = study_grams(rows)
    timings = {"rows_s": t0 - t_start, "grams_s": time.perf_counter() - t0}
    log(f"Grams: {timings['grams_s']:.0f} s")
    lists, scored = (fold_lists(rows), None) if lists_kind == "fold" else formula_lists(rows)
    summary = summarize_models(rows, run_models(rows, grams4, grams6, joint, log, lists), scored)
    timings["models_s"] = time.perf_counter() - t_start - sum(timings.values())
    cv = {"params": {**PARAMS, "kernels": list(PARAMS["kernels"])}, "alphas": list(ALPHAS), "folds": N_FOLDS,
          "seed": SEED, "max_main": config.max_main, "n_excluded_lists": n_excluded,
          "raw_types": {k or "": v for k, v in raw_types.items()},
          "canonical": canonical_types(list(raw_types)), "study_counts": counts, "models": summary,
          "chosen_alphas": chosen_alphas(summary), "timings_s": timings, "lists": lists_kind,
          "min_structures": config.min_structures, "learning_curve": list(config.learning_curve)}
    if scored is not None:
        cv["scored_rows"] = {t: int(np.sum(scored & (rows.types == t))) for t in counts}
    checkpoint(cv)
    t0 = time.perf_counter()
    cv["own_curves"] = summarize_curves(rows, own_model_curve(rows, grams4, log, lists, config.learning_curve),
                                        scored)
    timings["own_s"] = time.perf_counter() - t0
    timings["total_s"] = time.perf_counter() - t_start
    return cv


def _timed(compute):
    """``compute()``'s dict with its wall and CPU seconds added (``wall_s``, ``cpu_s``)."""
    t0, c0 = time.perf_counter(), time.process_time()
    result = compute()
    result.update(wall_s=time.perf_counter() - t0, cpu_s=time.process_time() - c0)
    return result


def run_figures(config, data, figures, log, checkpoint=lambda figures: None):
    """Q4: the app's evaluation (``evaluate``, its defaults) on the [M-H]- file and the CSI:FingerID-style
    baseline on the same training set and queries; the [M+H]+ evaluation and the prior-off [M-H]- one when asked.
    ``figures`` holds earlier results (updated in place and returned)."""
    files = {"negative": config.negative, "positive": config.positive, "negative_no_prior": config.negative}
    lists = data / config.candidates
    for name in [m for m in ("negative", "positive", "negative_no_prior") if m in config.figures]:
        prior = {"prior_weight": 0.0} if name.endswith("no_prior") else {}
        training = TrainingConfig(store_path=config.store, n_folds=config.figure_folds, **prior)

        def evaluate(path=data / files[name], training=training):
            summary = evaluate_lists_once(path, lists, training, feedback=Feedback(log=log)).summary
            return {k: summary.get(k) for k in FIGURE_KEYS}
        figures[name] = _timed(evaluate)
        log(f"{name}: {figures[name]['per_structure']} / {figures[name]['per_spectrum']}")
        if name == "negative":
            chosen = figures[name]["chosen"]
            figures["negative_baseline"] = _timed(lambda c=chosen: run_baseline(
                data / config.negative, lists, c, TrainingConfig(store_path=config.store, n_folds=config.figure_folds)))
            checkpoint(figures)
    return figures

"""Training on single vs merged spectra (issue 20), chosen by per-spectrum isomer-like CV, scored once on the 60 lists.

    OPENBLAS_NUM_THREADS=1 python -m experiments single_spectra_metabolites --data /path/to/shared/data
        [--output reports] [--set k=2,3] [--set alphas=0.1,0.3,1,3,10] [--set skip_lists=True]

Training sets (the 60 lists' true structures excluded, as in the app's evaluate job; 4,485 structures):

- ``merged``: one merged spectrum per training structure (the app's default);
- ``single (k=..)``: ``k`` single spectra per training structure (seeded random draw among its spectra; all of them
  when it has fewer; the ``k=2`` spectra are among the ``k=3`` ones), each with its structure's fingerprint
  (repeated output rows);
- ``both (k=..)``: the merged spectrum and the same ``k`` single spectra of every structure.

Single training spectra are cleaned like the per-spectrum evaluation queries (the app's :class:`Cleaning`, then at
most 100 peaks, as :func:`evaluate_lists` does for queries). Model: the app's combined input kernel (PPK, neutral-loss
PPK, binned, binned neutral-loss; ``sigma_mz=0.001``) with the kernel weights held fixed at the app's ALIGNF weights on
the 4,485 merged training structures (so the comparison changes only the training spectra), Tanimoto output kernel,
dense IOKR on the precomputed combined Gram (computed once over all rows of all three sets).

Cross-validation (training structures only): the app's 3 structure folds (``fold_ids``, seed 0); every spectrum of a
structure is on one side of a fold. Queries: up to 2 single spectra of each held-out structure whose molecular formula
another training structure shares (cleaned like evaluation queries), each ranked among the training structures of its
formula filled to 20 by the nearest monoisotopic mass (:func:`formula_candidate_sets`; the "per-spectrum, isomer-like
lists" of ``reports/metabolites.md``). Criterion (fixed before any number was seen): score = mean of top-1, top-5 and
top-10 (%), per fold then averaged over folds; the argmax over (training set, alpha) is chosen.

Then the chosen setting and the app's merged default (alpha = 0.1) are each fitted on all training structures and
scored once on the 60 lists, per structure and per spectrum (:func:`evaluate_lists`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from experiments._common.reports import Outputs
from experiments._common.timing import peak_rss_mib
from iokr import IOKR, config_context
from iokr.apps.metabolites import (
    DEFAULT_FINGERPRINT,
    DEFAULT_GRID,
    DEFAULT_PARAMS,
    SCORING_WORKING_MEMORY,
    CandidateStore,
    Cleaning,
    Fingerprinter,
    MetaboliteIdentifier,
    clean_spectra,
    concatenate,
    evaluate_lists,
    fold_ids,
    formula_candidate_sets,
    make_output_kernel,
    normalized_gram,
    read_candidate_lists,
    read_spectra,
    training_set,
    weighted_sum,
)
from iokr.datasets import BUNDLED_METABOLITES
from iokr.decoding import CandidateSets
from iokr.metrics import true_candidate_rank

#: The app's model at its cross-validated defaults (alpha is searched here).
PARAMS = {**DEFAULT_PARAMS, "output_kernel": DEFAULT_GRID["output_kernel"][0], "sigma_mz": DEFAULT_GRID["sigma_mz"][0]}
APP_ALPHA = 0.1  # the app's alpha, chosen by its fold CV on merged spectra (reports/metabolites.md)
N_FOLDS, QUERIES_PER_STRUCTURE = 3, 2


@dataclass(frozen=True)
class Config:
    """Single spectra per training structure (``k``), the alphas searched, the draw's seed, and whether to skip
    the scoring on the 60 lists (cross-validation only); spectra and lists relative to the data folder."""

    k: tuple = (2, 3)
    alphas: tuple = (0.1, 0.3, 1.0, 3.0, 10.0)
    seed: int = 0
    skip_lists: bool = False
    spectra: str = "metabolites/massbank_ms2_posMH_permissive.jsonl.gz"
    candidates: str = "metabolites/pubchem_candidate_sets_dev.tar.gz"


#: k = 2 and two alphas (on the bundled subset in the smoke run).
QUICK = Config(k=(2,), alphas=(0.1, 1.0))
OUTPUTS = Outputs(json="single_spectra_metabolites.json", markdown="single_spectra_metabolites.md", keep=None)


def _as_query(spectra, cleaning):
    """Cleaned single spectra as the evaluation's per-spectrum queries (at most ``max_peaks_merged`` peaks)."""
    return clean_spectra(spectra, min_relative_intensity=0.0, max_peaks=cleaning.max_peaks_merged,
                         remove_precursor=False)


def combined_gram(weights, A, B=None, working_memory=None):
    """``sum_k w_k Kn_k(A, B)`` of the app's base kernels (one base block in memory at a time) and the unit diagonal
    of ``A`` (the app's ``MetaboliteIdentifier._combined`` / ``test_kernel`` with fixed weights, no input Gaussian)."""
    probe = MetaboliteIdentifier(**PARAMS)
    diag = np.zeros(len(A))

    def weighted_blocks():  # one base block computed at a time, dropped once added
        nonlocal diag
        for w, kernel in zip(weights, probe._base_kernels(), strict=True):
            G, da, _ = normalized_gram(kernel, A, B, working_memory=working_memory)
            diag += w * MetaboliteIdentifier._unit_diag(da)
            yield w, G
            del G

    return weighted_sum(weighted_blocks()), diag


def _design(merged, single, cleaning, k, seed):
    """Training rows (merged + k single per structure), CV queries and the formula lists.

    Returns a dict with the row spectra, each row's structure and kind, the query spectra and their structures.
    """
    index = {key: i for i, key in enumerate(merged.keys)}
    single_struct = np.array([index.get(key, -1) for key in single.keys])
    n_struct = len(merged.keys)
    rng = np.random.default_rng(seed)
    by_struct = [[] for _ in range(n_struct)]
    for i, s in enumerate(single_struct):
        if s >= 0:
            by_struct[s].append(i)
    perm = [rng.permutation(np.asarray(b, dtype=np.intp)) for b in by_struct]
    _, scored = formula_candidate_sets(np.zeros((n_struct, 1)), merged.formulas)
    train_single = np.concatenate([p[:k] for p in perm])
    draw = np.concatenate([np.arange(min(k, p.size)) for p in perm])  # position in the structure's seeded draw
    query_single = np.concatenate([p[:QUERIES_PER_STRUCTURE] for s, p in enumerate(perm) if scored[s]])
    rows = concatenate([merged.spectra, _as_query(single.spectra[train_single], cleaning)])
    return {
        "rows": rows,
        "row_struct": np.concatenate([np.arange(n_struct), single_struct[train_single]]),
        "row_kind": np.array(["merged"] * n_struct + ["single"] * train_single.size),
        "row_draw": np.concatenate([np.zeros(n_struct, dtype=np.intp), draw]),
        "queries": _as_query(single.spectra[query_single], cleaning),
        "query_struct": single_struct[query_single],
        "n_single_spectra": int((single_struct >= 0).sum()),
    }


def _ranks(est, Q, qdiag, sets, truth):
    """Rank of each query's true candidate (ties averaged), as :meth:`MetaboliteIdentifier.score_sets` scores."""
    with config_context(working_memory=SCORING_WORKING_MEMORY):
        rankings = est.rank(Q, sets, input_diag=qdiag)
    out = np.empty(len(rankings))
    for j, r in enumerate(rankings):
        s = np.full(r.n_candidates, -np.inf)
        s[r.order] = r.scores
        out[j] = true_candidate_rank(s, truth[j])
    return out


def variants(ks):
    """Training sets: ``"merged"``, then ``"single (k=..)"`` and ``"both (k=..)"`` for each ``k``."""
    return ["merged"] + [f"{kind} (k={k})" for kind in ("single", "both") for k in ks]


def _variant_rows(design, variant):
    """Rows of a training set (see :func:`variants`) in the design's Gram."""
    kind, draw = design["row_kind"], design["row_draw"]
    if variant == "merged":
        return np.flatnonzero(kind == "merged")
    name, k = variant.split(" (k=")
    single = (kind == "single") & (draw < int(k.rstrip(")")))
    return np.flatnonzero(single | (kind == "merged") if name == "both" else single)


def cross_validate_variants(design, K, Q, qdiag, Y, formulas, alphas, seed, names, log=print):
    """Per-spectrum isomer-like CV ranks of every (training set, alpha): ``{(variant, alpha): ranks}`` over queries.

    One fit per fold and training set; the Cholesky factor is recomputed per alpha on the same transformed Gram.
    """
    n_struct = Y.shape[0]
    folds = fold_ids(n_struct, N_FOLDS, seed)
    sets, _ = formula_candidate_sets(Y, formulas)
    qs = design["query_struct"]
    truth_all = np.array([int(np.flatnonzero(sets.indices[s] == s)[0]) for s in qs])
    output = make_output_kernel(PARAMS["output_kernel"])
    Yrows = Y[design["row_struct"]]
    ranks = {(v, float(a)): np.full(qs.size, np.nan) for v in names for a in alphas}
    timings = {}
    for f in range(N_FOLDS):
        q = np.flatnonzero(folds[qs] == f)
        fold_sets = CandidateSets(Y, [sets.indices[s] for s in qs[q]])
        for variant in names:
            rows = _variant_rows(design, variant)
            tr = rows[folds[design["row_struct"][rows]] != f]
            t0 = time.perf_counter()
            est = IOKR(alpha=float(alphas[0]), input_kernel="precomputed", output_kernel=output)
            # Private steps of IOKR.fit, so the transformed Grams are built once for the whole alpha grid.
            gram = est._fit_sides(K[np.ix_(tr, tr)], Yrows[tr])
            Qf = Q[np.ix_(q, tr)]
            for alpha in alphas:
                est.set_params(alpha=float(alpha))
                est._fit_coefficients(gram, float(alpha))
                ranks[(variant, float(alpha))][q] = _ranks(est, Qf, qdiag[q], fold_sets, truth_all[q])
            del est, gram, Qf
            timings[f"fold{f}_{variant}_s"] = time.perf_counter() - t0
            log(f"fold {f} {variant}: {tr.size} rows, {q.size} queries, {timings[f'fold{f}_{variant}_s']:.0f} s, "
                f"peak RSS {peak_rss_mib():.0f} MiB")
    return ranks, folds, timings


def cv_table(ranks, folds, query_struct):
    """Fold-averaged top-k and score (mean of top-1/5/10) per setting, with the paired difference against the best
    merged setting (per structure, then mean and standard error over structures)."""
    fold_of = folds[query_struct]
    rows = []
    for (variant, alpha), r in ranks.items():
        per_fold = []
        for f in range(N_FOLDS):
            rf = r[fold_of == f]
            per_fold.append([100.0 * np.mean(rf <= k) for k in (1, 5, 10)])
        top = np.mean(per_fold, axis=0)
        rows.append({"training": variant, "alpha": alpha, "top1": float(top[0]), "top5": float(top[1]),
                     "top10": float(top[2]), "score": float(np.mean(per_fold)),
                     "fold_scores": [float(np.mean(p)) for p in per_fold]})
    best_merged = max((row for row in rows if row["training"] == "merged"), key=lambda row: row["score"])
    base = ranks[("merged", best_merged["alpha"])]
    structures = np.unique(query_struct)
    pos = np.searchsorted(structures, query_struct)
    for row in rows:
        r = ranks[(row["training"], row["alpha"])]
        for k in (1, 10):
            diff = (r <= k).astype(float) - (base <= k)
            per_s = np.bincount(pos, diff, structures.size) / np.bincount(pos, minlength=structures.size)
            row[f"d_top{k}_vs_merged"] = float(100.0 * per_s.mean())
            row[f"se_top{k}_vs_merged"] = float(100.0 * per_s.std(ddof=1) / np.sqrt(structures.size))
    return rows


def _fitted_identifier(design, K, Y, weights, variant, alpha):
    """A :class:`MetaboliteIdentifier` whose IOKR is fitted on the precomputed combined Gram of ``variant``'s rows
    (fixed weights): its ``test_kernel`` and ``score_sets`` are the app's."""
    rows = _variant_rows(design, variant)
    model = MetaboliteIdentifier(**{**PARAMS, "weights": [float(w) for w in weights], "alpha": float(alpha)})
    gram = K if rows.size == K.shape[0] else K[np.ix_(rows, rows)]
    model.iokr_ = IOKR(alpha=float(alpha), input_kernel="precomputed",
                       output_kernel=make_output_kernel(PARAMS["output_kernel"])).fit(gram, Y[design["row_struct"][rows]])
    model.weights_ = np.asarray(weights, dtype=np.float64)
    model.base_kernels_ = model._base_kernels()
    model.train_spectra_ = design["rows"][rows]
    model.train_raw_diags_ = [kern.compute_diag(model.train_spectra_) for kern in model.base_kernels_]
    return model


def _summary(result):
    keep = ("per_structure", "per_spectrum", "n_query_spectra", "n_lists_with_spectra")
    out = {k: result[k] for k in keep}
    out["spectrum_ranks"] = {d["list"]: d.get("spectrum_ranks") for d in result["lists"]}
    out["structure_ranks"] = {d["list"]: d.get("rank") for d in result["lists"]}
    return out


def _score_lists(report, label, timing, model, spectra, lists, store, cleaning):
    """Score ``model`` once on the 60 lists into ``report["lists"][label]``, timed as ``timing``."""
    t0 = time.perf_counter()
    report.setdefault("lists", {})[label] = _summary(evaluate_lists(model, spectra, lists, store, cleaning))
    report["timings_s"][timing] = time.perf_counter() - t0


def _record_choice(report, table):
    """Store the CV table and the best (training set, alpha) by score in ``report``, print them; return the best
    row."""
    best = max(table, key=lambda row: row["score"])
    report["cv"], report["chosen"] = table, {"training": best["training"], "alpha": best["alpha"]}
    for row in table:
        print(f"{row['training']:>14} alpha={row['alpha']:<5} top1 {row['top1']:.1f} top5 {row['top5']:.1f} "
              f"top10 {row['top10']:.1f} score {row['score']:.2f} d_top1 {row['d_top1_vs_merged']:+.1f} "
              f"(se {row['se_top1_vs_merged']:.1f})", flush=True)
    print(f"chosen: {report['chosen']}", flush=True)
    return best


def run(config, data, previous=None, checkpoint=None):
    """CV table and choice, then the 60-list scores of the app's default and of the choice; ``checkpoint(report)``
    after the CV and after each scoring (``previous`` unused)."""
    t_start = time.perf_counter()
    report = {"command": "python -m experiments single_spectra_metabolites --data DATA "
                         f"--set k={','.join(str(k) for k in config.k)} "
                         f"--set alphas={','.join(str(a) for a in config.alphas)}"
                         + (" --set skip_lists=True" if config.skip_lists else ""),
              "params": {k: (list(v) if isinstance(v, tuple) else v) for k, v in PARAMS.items()},
              "k": list(config.k), "alphas": list(config.alphas), "seed": config.seed, "timings_s": {}}

    def save():
        report["timings_s"]["total_s"] = time.perf_counter() - t_start
        report["peak_rss_mib"] = peak_rss_mib()
        if checkpoint:
            checkpoint(report)

    store = CandidateStore("", Fingerprinter(**DEFAULT_FINGERPRINT))
    store.attach_cache(BUNDLED_METABOLITES["fingerprint_cache"])
    spectra, _ = read_spectra(data / config.spectra, require_structure=True)
    lists = read_candidate_lists(data / config.candidates, store)
    exclude = [lst.true_key for lst in lists if lst.true_key]
    cleaning = Cleaning()
    merged = training_set(spectra, store, cleaning, exclude)
    single = training_set(spectra, store, cleaning, exclude, merge=False)
    store.detach_cache()
    Y = np.asarray(merged.Y, dtype=np.float64)
    print(f"read: {len(merged.keys)} structures, {len(single.keys)} single spectra, "
          f"{time.perf_counter() - t_start:.0f} s", flush=True)

    t0 = time.perf_counter()
    app = MetaboliteIdentifier(**{**PARAMS, "alpha": APP_ALPHA})
    merged_grams = app.base_grams(merged.spectra)
    app.fit(merged.spectra, Y, base_grams=merged_grams)  # the app's default model (ALIGNF on merged structures)
    del merged_grams
    weights = app.weights_
    report["weights"] = [float(w) for w in weights]
    report["timings_s"]["merged_alignf_fit_s"] = time.perf_counter() - t0
    print(f"ALIGNF weights (merged): {np.round(weights, 4).tolist()}", flush=True)

    design = _design(merged, single, cleaning, max(config.k), config.seed)
    names = variants(config.k)
    report.update({"n_train_structures": len(merged.keys), "n_single_spectra": design["n_single_spectra"],
                   "n_rows": {v: int(_variant_rows(design, v).size) for v in names},
                   "n_cv_queries": len(design["queries"]),
                   "n_cv_query_structures": int(np.unique(design["query_struct"]).size)})
    print(f"rows: {report['n_rows']}, CV queries {report['n_cv_queries']}", flush=True)
    t0 = time.perf_counter()
    K, _ = combined_gram(weights, design["rows"])
    Q, qdiag = combined_gram(weights, design["queries"], design["rows"])
    report["timings_s"]["grams_s"] = time.perf_counter() - t0
    print(f"Grams {K.shape} and {Q.shape}: {report['timings_s']['grams_s']:.0f} s, peak RSS {peak_rss_mib():.0f} MiB",
          flush=True)

    t0 = time.perf_counter()
    ranks, folds, fold_times = cross_validate_variants(design, K, Q, qdiag, Y, merged.formulas, config.alphas, config.seed,
                                                        names)
    report["timings_s"]["cv_s"] = time.perf_counter() - t0
    report["timings_s"].update(fold_times)
    best = _record_choice(report, cv_table(ranks, folds, design["query_struct"]))
    del Q
    save()
    if config.skip_lists:
        return report

    _score_lists(report, "merged (app default, alpha=0.1)", "lists_merged_s", app, spectra, lists, store, cleaning)
    del app
    save()
    if (best["training"], best["alpha"]) != ("merged", APP_ALPHA):
        t0 = time.perf_counter()
        model = _fitted_identifier(design, K, Y, weights, best["training"], best["alpha"])
        del K
        report["timings_s"]["chosen_fit_s"] = time.perf_counter() - t0
        _score_lists(report, f"{best['training']} (CV choice, alpha={best['alpha']})", "lists_chosen_s", model,
                     spectra, lists, store, cleaning)
    for name, result in report["lists"].items():
        print(name, result["per_structure"], result["per_spectrum"], flush=True)
    save()
    return report


def render(report):
    """The CV table (training set x alpha), the choice, and the 60-list scores."""
    lines = ["# Training on single vs merged spectra", "", f"Command: `{report['command']}`.", "",
             f"{report['n_train_structures']} training structures, {report['n_single_spectra']} single spectra, "
             f"{report['n_cv_queries']} CV queries; ALIGNF weights (merged) {report['weights']}.", "",
             "| training | alpha | top-1 | top-5 | top-10 | score | d top-1 vs merged (se) |",
             "|---|---|---|---|---|---|---|"]
    for row in report["cv"]:
        lines.append(f"| {row['training']} | {row['alpha']} | {row['top1']:.1f} | {row['top5']:.1f} | "
                     f"{row['top10']:.1f} | {row['score']:.2f} | {row['d_top1_vs_merged']:+.1f} "
                     f"({row['se_top1_vs_merged']:.1f}) |")
    lines += ["", f"Chosen: {report['chosen']}.", ""]
    for name, result in report.get("lists", {}).items():
        lines.append(f"- {name}: per structure {result['per_structure']}, per spectrum {result['per_spectrum']}")
    return "\n".join(lines) + "\n"

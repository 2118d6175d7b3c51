"""Real-data results of the core engine (issue 2): cross-lingual retrieval and bibtex multi-label.

    python -m experiments core --data /path/to/shared/data [--output reports] [--set skip=bibtex] [--set update=True]
        [--set baselines=False] [--render-only] [--set splits=10]

Retrieval: IOKR (linear kernels on TF-IDF, centered and normalized, alpha=1.0 fixed a priori), EN->ES and ES->EN,
10 random 50/50 splits of the 1,189 aligned chapters, candidates = all test chapters of the other language.
IOKR with the CLI defaults (issue 19, ``iokr retrieval evaluate`` with no option): features (TF-IDF, or LSA per
language of 16-512 dimensions, plain or standardized) and alpha (1e-6..1e4) chosen jointly per split by closed-form
5-fold CV of MRR on the training chapters, on the same splits.
Baseline (issue 19, on by default): LSA + CCA nearest neighbour on the same splits, LSA dimension and component count
by 3-fold CV on the training pairs (``experiments/baselines/retrieval.py``).
Bibtex: standard Mulan split; alpha and the input kernel chosen by 5-fold CV of example-F1 on the training split;
candidates = the distinct label sets of the training split.
"""

from __future__ import annotations

import warnings
from collections import Counter
from dataclasses import dataclass
from functools import partial

import numpy as np

from experiments._common.reports import Outputs
from experiments._common.timing import measure
from experiments.baselines.retrieval import CV_FOLDS, retrieval_verdict, run_cca_baseline
from iokr import IOKR
from iokr.apps.multilabel import evaluate_multilabel
from iokr.apps.retrieval import DEFAULT_ALPHAS, feature_grid, make_split, retrieval_ranks, select_alpha
from iokr.cli.retrieval import DIRECTIONS, run_retrieval
from iokr.datasets import load_arff, load_parallel_text
from iokr.kernels import Gaussian
from iokr.metrics import mean_reciprocal_rank, top_k_accuracy

#: Heading of the hand-written reading at the end of core.md, kept when the report is regenerated.
READING = "## Reading of the retrieval baseline (issue 19)"
#: The baseline's direction keys: the CCA is fitted with English as its first block.
BASELINE_DIRECTION = {"en-es": "a-b", "es-en": "b-a"}
SECTIONS = ("retrieval", "retrieval_default", "retrieval_cv", "bibtex")


@dataclass(frozen=True)
class Config:
    """The study's choices.

    Attributes
    ----------
    splits : int
        Retrieval splits (fewer for a smoke run).
    skip : tuple of str
        Sections not run, among :data:`SECTIONS` (retrieval_cv: IOKR with alpha by CV on the same splits;
        retrieval_default: IOKR with the CLI defaults on the same splits).
    baselines : bool
        Run the LSA + CCA retrieval baseline; when False and updating, the previous baseline rows are kept when
        their splits are the same.
    update : bool
        Keep the sections of the existing ``core.json`` that are skipped in this run.
    """

    splits: int = 10
    skip: tuple = ()
    baselines: bool = True
    update: bool = False


#: One retrieval split, IOKR at alpha 1 and with the CLI defaults; no CV row, no baseline (its LSA grid needs
#: hundreds of chapters), no bibtex.
QUICK = Config(splits=1, skip=("bibtex", "retrieval_cv"), baselines=False)
OUTPUTS = Outputs(json="core.json", markdown="core.md", keep=READING)


def _retrieval(data, baselines, n_splits=10):
    timing = measure(lambda: run_retrieval(data / "parallel_text", list(DIRECTIONS), splits=n_splits, alpha=1.0,
                                           seed=0))
    n_docs, retrieval = timing.result
    for r in retrieval.values():
        r.pop("ranks", None)  # per-query ranks: 6,000 numbers per direction, not needed by the report
    section = {"n_documents": n_docs, "splits": n_splits, "alpha": 1.0, "seconds": timing.wall, "results": retrieval}
    if baselines:
        _, english, spanish = load_parallel_text(data / "parallel_text")
        section["cca_baseline"] = run_cca_baseline(english, spanish, n_splits=n_splits, seed=0)
    return section


def _retrieval_default(data, n_splits=10):
    """IOKR with the command line's defaults (features and alpha by CV), warnings recorded; same splits."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        timing = measure(lambda: run_retrieval(data / "parallel_text", list(DIRECTIONS), splits=n_splits,
                                               alpha="cv", seed=0, features=feature_grid()))
    _, results = timing.result
    for r in results.values():
        r.pop("ranks", None)
    return {"alphas": list(DEFAULT_ALPHAS), "grid": [f.as_dict() for f in feature_grid()], "seconds": timing.wall,
            "warnings": sorted({f"{w.category.__name__}: {w.message}" for w in caught}), "results": results}


#: IOKR's alpha grid when chosen by CV (the retrieval CV curves of reports/model_selection.md are flat below 1e-3).
CV_ALPHAS = tuple(np.logspace(-6, 2, 9).tolist())


def _retrieval_cv(data, n_splits=10, seed=0):
    """IOKR with alpha chosen per split and direction by IOKRCV's closed-form k-fold MRR on the training pairs: the
    folds of the CCA baseline (``KFold(CV_FOLDS, shuffle=True, random_state=seed)`` over the training chapters),
    each held-out chapter ranking the target chapters of its own fold; same splits as :func:`_retrieval`."""
    _, english, spanish = load_parallel_text(data / "parallel_text")
    docs = {"en": english, "es": spanish}
    out = {"alphas": list(CV_ALPHAS), "cv_folds": CV_FOLDS}
    for direction in DIRECTIONS:
        source, target = (docs[k] for k in direction.split("-"))
        rng = np.random.default_rng(seed)  # evaluate_retrieval's splits
        n = len(source)
        n_train = round(0.5 * n)
        records, seconds = [], 0.0
        for _ in range(n_splits):
            permutation = rng.permutation(n)
            timing = measure(partial(_cv_split, source, target, permutation[:n_train], permutation[n_train:], seed))
            alpha, cv_mrr, ranks = timing.result
            seconds += timing.wall
            records.append({**{f"top{k}": top_k_accuracy(ranks, k) for k in (1, 5, 10)},
                            "mrr": mean_reciprocal_rank(ranks), "alpha": alpha, "cv_mrr": cv_mrr})
        out[direction] = {key: (float(np.mean([r[key] for r in records])), float(np.std([r[key] for r in records])))
                          for key in ("top1", "top5", "top10", "mrr")}
        out[direction].update(per_split=records, seconds=seconds)
    return out


def _cv_split(source, target, train, test, seed):
    """One split of :func:`_retrieval_cv`: alpha by the retrieval app's closed-form k-fold MRR on the training pairs
    (:func:`iokr.apps.retrieval.select_alpha`, with the CCA baseline's folds), then the test ranks at that alpha."""
    split = make_split(source, target, train, test)
    alpha, cv_mrr = select_alpha(split, CV_ALPHAS, n_folds=CV_FOLDS, seed=seed)
    return alpha, cv_mrr, retrieval_ranks(IOKR(alpha=alpha, input_kernel="precomputed"), split)


def _bibtex_fit(bib):
    X_train, Y_train = load_arff(bib / "bibtex-train.arff.gz", 159)
    X_test, Y_test = load_arff(bib / "bibtex-test.arff.gz", 159)
    X_train, X_test = X_train.toarray(), X_test.toarray()
    kernels = ["linear"] + [Gaussian(g / X_train.shape[1]) for g in (1.0, 5.0)]
    return evaluate_multilabel(X_train, Y_train, X_test, Y_test, alphas=(0.1, 1.0, 10.0), input_kernels=kernels)


def _bibtex(data):
    timing = measure(lambda: _bibtex_fit(data / "multilabel" / "bibtex"))
    return {**timing.result, "seconds": timing.wall,
            "published_example_f1": {"IOKR": 44.9, "SISOKR": 44.1, "SPEN": 42.2, "DVN": 44.7}}


def _retrieval_lines(section, cv=None, default=None):
    lines = ["## Cross-lingual retrieval (1,189 chapters)", "",
             f"| direction | method | top-1 % | top-5 % | top-10 % | MRR | seconds ({section['splits']} splits) |",
             "|---|---|---|---|---|---|---|"]
    base = section.get("cca_baseline")
    for direction, r in section["results"].items():
        seconds = sum(r["timings_s"].values()) if "timings_s" in r else section["seconds"] / len(DIRECTIONS)
        rows = [("IOKR (alpha 1)", r, f"{seconds:.0f}")]
        if default:
            d = default["results"][direction]
            rows.append(("IOKR (CLI defaults: features and alpha by 5-fold CV)", d,
                         f"{sum(d['timings_s'].values()):.0f}"))
        if cv:
            rows.append((f"IOKR (alpha by {cv['cv_folds']}-fold CV)", cv[direction], f"{cv[direction]['seconds']:.0f}"))
        if base:
            rows.append(("LSA + CCA, cosine NN", base[BASELINE_DIRECTION[direction]],
                         f"{sum(base['seconds_per_split']):.0f} (both directions)"))
        for name, s, secs in rows:
            lines.append(f"| {direction} | {name} | " + " | ".join(
                f"{s[k][0]:.1f} +- {s[k][1]:.1f}" for k in ("top1", "top5", "top10"))
                + f" | {s['mrr'][0]:.3f} +- {s['mrr'][1]:.3f} | {secs} |")
    if base:
        lines += ["", _baseline_notes(base, cv), ""]
        if default:
            lines += [_default_notes(default), ""]
        for d in section["results"]:
            b, b_s = base[BASELINE_DIRECTION[d]], sum(base["seconds_per_split"])
            if default:
                r = default["results"][d]
                lines.append(f"- **{d}**, CLI defaults: " + retrieval_verdict(r, b, sum(r["timings_s"].values()), b_s))
            if cv:
                lines.append(f"- **{d}**, alpha by CV: " + retrieval_verdict(cv[d], b, cv[d]["seconds"], b_s))
            lines.append(f"- **{d}**, alpha 1: " + retrieval_verdict(
                section["results"][d], b, sum(section["results"][d].get("timings_s", {}).values()), b_s))
    return lines


def _baseline_notes(base, cv=None):
    grid = "; ".join(f"LSA {d}: components {', '.join(map(str, ks))}" for d, ks in base["grid"])
    chosen = {d: sorted({tuple(r["chosen"]) for r in base[d]["per_split"]}) for d in ("a-b", "b-a")}
    picks = "; ".join(f"{name}: " + ", ".join(f"LSA {a} / {b} components" for a, b in chosen[key])
                      for name, key in (("EN->ES", "a-b"), ("ES->EN", "b-a")))
    return ("Baseline (issue 19): TF-IDF per language (the same vectorizer settings, fitted on each split's training "
            "chapters), LSA per language (`TruncatedSVD`), scikit-learn `CCA` fitted on the aligned training pairs, "
            "cosine nearest neighbour in the shared space; no translation or dictionary. LSA dimension and component "
            f"count chosen per split and direction by {base['cv_folds']}-fold CV of MRR on the training pairs "
            f"(grid {grid}). Chosen over the splits: {picks}. IOKR (alpha 1): alpha fixed a priori, as in issue 2. "
            + (f"IOKR (alpha by CV): alpha among {len(cv['alphas'])} values {min(cv['alphas']):g}..{max(cv['alphas']):g} "
               "by IOKRCV's closed-form MRR on the same folds as the baseline (each held-out chapter ranks its "
               "fold's chapters); chosen: " + ", ".join(
                   f"{d} {sorted({r['alpha'] for r in cv[d]['per_split']})}" for d in DIRECTIONS) + ". "
               if cv else "")
            + "The verdict compares per-split MRR (same splits, paired), with the corrected resampled "
            "standard error (Nadeau & Bengio 2003: the 10 splits share documents); a tie is a difference under 2 "
            "such errors. Seconds: features + selection + fit + ranking, summed over the splits; the CCA's time "
            "covers both directions (one fit serves both), IOKR's is per direction.")


def _default_notes(default):
    """What the CLI-default rows chose, and the warnings raised."""
    picks = []
    for d, r in default["results"].items():
        counts = Counter((("TF-IDF" if f["features"]["lsa"] is None else f"LSA {f['features']['lsa']}"
                           + (" std" if f["features"]["standardize"] else "")), f["alpha"]) for f in r["per_split"])
        picks.append(f"{d}: " + ", ".join(f"{name} / alpha {a:g} (x{c})" for (name, a), c in sorted(counts.items())))
    dims = sorted({g["lsa"] for g in default["grid"] if g["lsa"] is not None})
    return ("IOKR (CLI defaults): `iokr retrieval evaluate` with no option (`--lsa cv --standardize cv --alpha cv`): "
            f"features among {len(default['grid'])} settings (TF-IDF; LSA per language of {', '.join(map(str, dims))} "
            f"dimensions, plain or standardized) and alpha among {len(default['alphas'])} values "
            f"{min(default['alphas']):g}..{max(default['alphas']):g}, jointly per split by closed-form 5-fold CV of "
            "MRR on the training chapters (ties: the largest alpha, then the first setting). Chosen: "
            + "; ".join(picks) + ". Warnings: " + ("; ".join(default["warnings"]) or "none") + ".")


def _bibtex_lines(result):
    lines = ["## Bibtex (Mulan split, 4,880 train / 2,515 test)", "",
             "| alpha | input kernel | 5-fold CV F1 % |", "|---|---|---|"]
    lines += [f"| {r['alpha']} | {r['input_kernel']} | {r['cv_f1']:.2f} +- {r['cv_f1_std']:.2f} |"
              for r in result["cv_results"]]
    lines += ["", (f"Selected by CV: {result['best']}. Test example-F1: **{result['f1']:.2f} %** (Hamming loss "
                   f"{result['hamming']:.4f}; {result['n_candidate_sets']} candidate label sets). Published: IOKR "
                   "44.9, SISOKR 44.1, SPEN 42.2, DVN 44.7."), ""]
    return lines


def run(config, data, previous=None, checkpoint=None):
    """The sections not skipped, over ``previous`` (the existing results) when updating (``checkpoint`` unused)."""
    unknown = set(config.skip) - set(SECTIONS)
    if unknown:
        raise ValueError(f"skip: expected sections among {SECTIONS}, got {sorted(unknown)}")
    report = dict(previous) if previous else {}
    if "retrieval" not in config.skip:
        previous_base = report.get("retrieval", {}).get("cca_baseline")
        report["retrieval"] = _retrieval(data, config.baselines, config.splits)
        if not config.baselines and previous_base and len(previous_base["seconds_per_split"]) == config.splits:
            report["retrieval"]["cca_baseline"] = {**previous_base, "kept_from_previous_run": True}
    if "retrieval_default" not in config.skip:
        report["retrieval_default"] = _retrieval_default(data, config.splits)
    if "retrieval_cv" not in config.skip:
        report["retrieval_cv"] = _retrieval_cv(data, config.splits)
    if "bibtex" not in config.skip:
        report["bibtex"] = _bibtex(data)
    return report


def render(report):
    """The retrieval table (with the CLI-default, CV and baseline rows present) and the bibtex section."""
    lines = ["# Core engine on real data (issue 2)", "", "Command: `python -m experiments core --data DATA`", "",
             (__doc__ or "").strip().split("\n\n", 2)[-1], ""]
    if "retrieval" in report:
        lines += _retrieval_lines(report["retrieval"], report.get("retrieval_cv"),
                                  report.get("retrieval_default")) + [""]
    if "bibtex" in report:
        lines += _bibtex_lines(report["bibtex"])
    return "\n".join(lines)

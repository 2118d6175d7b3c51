"""``iokr retrieval``: cross-lingual document retrieval on aligned documents (MP-IOKR paper protocol)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ._output import CommandError, Progress, format_table, output_folder, write_json

DIRECTIONS = {"en-es": (1, 2), "es-en": (2, 1)}


def _positive_int(text):
    """argparse type: an int >= 1 (argparse turns the ValueError into a one-line usage error)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer (number of random splits), got {value}")
    return value


def _alpha(value):
    import argparse

    if value == "cv":
        return value
    try:
        number = float(value)
    except ValueError:
        number = float("nan")
    if not number > 0 or number == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number > 0 or 'cv', got {value!r}")
    return number


def _lsa(value):
    """argparse type of ``--lsa``: 'cv', 'none' or a positive int."""
    if value in ("cv", "none"):
        return value
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer (LSA dimension), 'none' or 'cv', got {value!r}")
    return number


def _standardize(value):
    """argparse type of ``--standardize``: 'cv', 'on' or 'off'."""
    if value not in ("cv", "on", "off"):
        raise argparse.ArgumentTypeError(f"expected 'on', 'off' or 'cv', got {value!r}")
    return value


def _features(lsa, standardize):
    """The feature settings searched for ``--lsa`` and ``--standardize`` (a CommandError when impossible)."""
    from ..apps.retrieval import feature_grid

    if lsa == "none" and standardize == "on":
        raise CommandError("--standardize on needs an LSA dimension (--lsa N or cv), not --lsa none")
    return feature_grid(None if lsa == "none" else lsa,
                        standardize if standardize == "cv" else standardize == "on")


def _alpha_text(alpha, results, features=None):
    """How alpha and the features were set, for the summary line and the report."""
    records = [r for result in results.values() for r in result["per_split"]]
    if features is not None and len(features) > 1 or alpha == "cv":
        from ..apps.retrieval import CV_FOLDS, Features

        chosen = sorted({(str(Features(**r["features"])), r["alpha"]) for r in records})
        what = "features and alpha" if features is not None and len(features) > 1 else "alpha"
        fixed = "" if alpha == "cv" else f" (alpha={alpha} fixed)"
        return (f"IOKR {what} by {CV_FOLDS}-fold CV on each split's training documents{fixed} (chosen: "
                + ", ".join(f"{f} / alpha {a:g}" for f, a in chosen) + ")")
    return f"IOKR alpha={alpha}, features {features[0] if features else 'TF-IDF'}"


def register(subparsers):
    parser = subparsers.add_parser("retrieval", help="cross-lingual document retrieval with IOKR")
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    evaluate = actions.add_parser("evaluate", help="top-k over random 50/50 splits")
    evaluate.add_argument("--data", default=None,
                          help="parallel-text .jsonl.gz file or folder (default: the bundled 397-chapter subset)")
    evaluate.add_argument("--direction", choices=[*DIRECTIONS, "both"], default="both")
    evaluate.add_argument("--splits", type=_positive_int, default=10, help="number of random 50/50 splits (>= 1)")
    evaluate.add_argument("--alpha", type=_alpha, default="cv",
                          help="IOKR regularization: a number > 0, or 'cv' (default) to choose it on every split's "
                               "training documents by closed-form 5-fold CV (mean reciprocal rank) over 1e-6..1e4")
    evaluate.add_argument("--lsa", type=_lsa, default="cv",
                          help="LSA dimension per language applied to the TF-IDF before both kernels (fitted on "
                               "each split's training documents): a positive integer, 'none' (the TF-IDF itself), "
                               "or 'cv' (default) to choose among none, 16, 32, 64, 128, 256, 384, 512 with alpha by the "
                               "same CV")
    evaluate.add_argument("--standardize", type=_standardize, default="cv",
                          help="scale every LSA coordinate to unit variance on the training documents: 'on', 'off' "
                               "or 'cv' (default: chosen with --lsa and alpha by the same CV)")
    evaluate.add_argument("--seed", type=int, default=0)
    evaluate.add_argument("--output", required=True, help="folder for summary.json")
    evaluate.add_argument("--report", action="store_true",
                          help="also write report.html with PNG figures (top-k curves, per-query ranks, timings)")
    evaluate.set_defaults(func=run_evaluate)


def run_retrieval(data, directions, splits, alpha, seed, features=None):
    """Evaluate every direction; ``features``: a sequence of Features searched by CV (default: the TF-IDF)."""
    from ..apps.retrieval import Features, evaluate_retrieval
    from ..datasets import load_parallel_text

    loaded = load_parallel_text(data)
    results = {}
    for direction in directions:
        source, target = (loaded[i] for i in DIRECTIONS[direction])
        results[direction] = evaluate_retrieval(source, target, n_splits=splits, alpha=alpha, seed=seed,
                                                features=features or (Features(),),
                                                progress=Progress(splits, f"{direction} splits"))
    return len(loaded[0]), results


def print_results(results):
    rows = [[d, *(f"{r[k][0]:.1f} +- {r[k][1]:.1f}" for k in ("top1", "top5", "top10")),
             f"{r['mrr'][0]:.3f}"] for d, r in results.items()]
    print(format_table(["direction", "top-1 %", "top-5 %", "top-10 %", "MRR"], rows))


def run_evaluate(args):
    from ..datasets._parallel_text import BUNDLED_PARALLEL_TEXT

    directions = list(DIRECTIONS) if args.direction == "both" else [args.direction]
    out_dir = Path(args.output)
    inputs = {"--data": args.data} if args.data is not None else {"bundled --data": BUNDLED_PARALLEL_TEXT}
    features = _features(args.lsa, args.standardize)
    with output_folder(out_dir, overwrite=args.overwrite, inputs=inputs) as tmp:
        n_docs, results = run_retrieval(args.data, directions, args.splits, args.alpha, args.seed, features)
        setting = _alpha_text(args.alpha, results, features)
        print(f"{n_docs} aligned documents, {args.splits} random 50/50 splits, {setting}")
        print_results(results)
        write_json(tmp / "summary.json",
                   {"n_documents": n_docs, "splits": args.splits, "alpha": args.alpha, "lsa": args.lsa,
                    "standardize": args.standardize, "results": results})
        if args.report:
            write_report(results, tmp, n_docs, args.splits, setting)
    if args.report:
        print(f"report: {out_dir / 'report.html'}")
    print(f"summary written to {out_dir / 'summary.json'}")
    return 0


def write_report(results, out_dir, n_docs, splits, alpha):
    """HTML/PNG report of :func:`run_retrieval` results (ranks pooled over the splits of each direction)."""
    import numpy as np

    from ._report import write_evaluation_report

    rank_sets, timings = {}, {}
    for direction, r in results.items():
        pooled = [rank for split in r["ranks"] for rank in split]
        rank_sets[f"IOKR {direction} ({splits} splits pooled)"] = (pooled, len(pooled))
        timings.update({f"{direction} {stage}": seconds for stage, seconds in r["timings_s"].items()})
    rows = [[d, *(f"{r[k][0]:.1f} +- {r[k][1]:.1f}" for k in ("top1", "top5", "top10")), f"{r['mrr'][0]:.3f}"]
            for d, r in results.items()]
    detail = [[d, s + 1, *(f"{rec[k]:.1f}" for k in ("top1", "top5", "top10")), f"{rec['mrr']:.3f}",
               f"{np.median(r['ranks'][s]):.1f}"]
              for d, r in results.items() for s, rec in enumerate(r["per_split"])]
    return write_evaluation_report(
        out_dir, title="Cross-lingual document retrieval (IOKR)", rank_sets=rank_sets, timings=timings,
        summary_table=(["direction", "top-1 %", "top-5 %", "top-10 %", "MRR"], rows),
        notes=[(f"{n_docs} aligned documents, {splits} random 50/50 splits, {alpha}; each test document "
                "ranks all test documents of the other language; ranks of the aligned translation (ties averaged).")],
        detail_table=(["direction", "split", "top-1 %", "top-5 %", "top-10 %", "MRR", "median rank"], detail))

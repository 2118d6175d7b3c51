"""``iokr retrieval``: cross-lingual document retrieval on aligned documents (MP-IOKR paper protocol)."""

from __future__ import annotations

from pathlib import Path

from ..apps.retrieval import evaluate_retrieval
from ..datasets import load_parallel_text
from ._output import Progress, format_table, write_json

DIRECTIONS = {"en-es": (1, 2), "es-en": (2, 1)}


def register(subparsers):
    parser = subparsers.add_parser("retrieval", help="cross-lingual document retrieval with IOKR")
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    evaluate = actions.add_parser("evaluate", help="top-k over random 50/50 splits")
    evaluate.add_argument("--data", default=None,
                          help="parallel-text .jsonl.gz file or folder (default: the bundled 397-chapter subset)")
    evaluate.add_argument("--direction", choices=[*DIRECTIONS, "both"], default="both")
    evaluate.add_argument("--splits", type=int, default=10)
    evaluate.add_argument("--alpha", type=float, default=1.0)
    evaluate.add_argument("--seed", type=int, default=0)
    evaluate.add_argument("--output", required=True, help="folder for summary.json")
    evaluate.set_defaults(func=run_evaluate)


def run_retrieval(data, directions, splits, alpha, seed):
    loaded = load_parallel_text(data)
    results = {}
    for direction in directions:
        source, target = (loaded[i] for i in DIRECTIONS[direction])
        results[direction] = evaluate_retrieval(source, target, n_splits=splits, alpha=alpha, seed=seed,
                                                progress=Progress(splits, f"{direction} splits"))
    return len(loaded[0]), results


def print_results(results):
    rows = [[d, *(f"{r[k][0]:.1f} +- {r[k][1]:.1f}" for k in ("top1", "top5", "top10")),
             f"{r['mrr'][0]:.3f}"] for d, r in results.items()]
    print(format_table(["direction", "top-1 %", "top-5 %", "top-10 %", "MRR"], rows))


def run_evaluate(args):
    directions = list(DIRECTIONS) if args.direction == "both" else [args.direction]
    n_docs, results = run_retrieval(args.data, directions, args.splits, args.alpha, args.seed)
    print(f"{n_docs} aligned documents, {args.splits} random 50/50 splits, IOKR alpha={args.alpha}")
    print_results(results)
    write_json(Path(args.output) / "summary.json",
               {"n_documents": n_docs, "splits": args.splits, "alpha": args.alpha, "results": results})
    return 0

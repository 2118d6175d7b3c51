"""``iokr demo``: the README's main job on bundled real data.

Until the metabolite-identification application lands, the demo is cross-lingual retrieval on the bundled
English/Spanish chapters.
"""

from __future__ import annotations

from pathlib import Path

from ._output import write_json
from .retrieval import DIRECTIONS, print_results, run_retrieval


def register(subparsers):
    parser = subparsers.add_parser("demo", help="run the main job on the bundled real data")
    parser.add_argument("--output", default="results/demo", help="folder for the results")
    parser.set_defaults(func=run)


def run(args):
    n_docs, results = run_retrieval(None, list(DIRECTIONS), splits=5, alpha=1.0, seed=0)
    print(f"Cross-lingual retrieval, {n_docs} bundled chapters, 5 random 50/50 splits")
    print_results(results)
    write_json(Path(args.output) / "retrieval_summary.json", results)
    print(f"results written to {args.output}/")
    return 0

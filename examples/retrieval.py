"""Cross-lingual document retrieval (the MP-IOKR paper's protocol) with its HTML/PNG report.

User guide: docs/retrieval.md. On the bundled 397 chapters (2 random 50/50 splits, both directions, a few seconds):

    python examples/retrieval.py [--data SHARED/parallel_text] [--splits 10] [--report DIR]

``--data`` takes the full 1,189-chapter file (or its folder) of the shared data instead of the bundled subset.
The same run from the command line: ``iokr retrieval evaluate --output DIR --report``.
"""

import argparse
import tempfile
from pathlib import Path

from iokr.apps.retrieval import evaluate_retrieval
from iokr.datasets import load_parallel_text

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--data", default=None, help="parallel-text .jsonl.gz or folder (default: bundled subset)")
parser.add_argument("--splits", type=int, default=2)
parser.add_argument("--report", default=None, help="folder for report.html and its figures (default: a temp dir)")
args = parser.parse_args()

ids, english, spanish = load_parallel_text(args.data)
results = {}
for direction, (source, target) in {"en-es": (english, spanish), "es-en": (spanish, english)}.items():
    results[direction] = evaluate_retrieval(source, target, n_splits=args.splits, alpha=1.0, seed=0)
    r = results[direction]
    print(f"{direction}: top-1 {r['top1'][0]:.1f} +- {r['top1'][1]:.1f} %, top-5 {r['top5'][0]:.1f} %, "
          f"top-10 {r['top10'][0]:.1f} %, MRR {r['mrr'][0]:.3f}  ({len(ids)} chapters, {args.splits} splits; "
          f"fit {r['timings_s']['fit_s']:.2f} s, ranking {r['timings_s']['rank_s']:.2f} s)")

# The report of `iokr retrieval evaluate --report`: top-k curves, per-query rank histogram, timing per stage.
try:
    import matplotlib  # noqa: F401
except ImportError:
    print("matplotlib is not installed: no report (pip install 'iokr[plot]')")
else:
    from iokr.cli.retrieval import write_report

    out = Path(args.report) if args.report else Path(tempfile.mkdtemp(prefix="iokr_retrieval_"))
    paths = write_report(results, out, len(ids), args.splits, 1.0)
    print("report:", paths["html"])

"""Run the benchmarks: ``python -m benchmarks.run [--only NAME ...] [--quick] [--output DIR]``.

Each module ``benchmarks/bench_<name>.py`` defines ``run(quick: bool, data_dir: str | None) -> list[dict]``: one dict per
table row (side-by-side timings of our implementation, the naive formula and the named peer, with their ratios).
Results go to ``DIR/<name>.json`` and ``DIR/<name>.md`` (:func:`benchmarks._harness.write_results`); the table
is printed.
"""

from __future__ import annotations

import argparse
import importlib
from pathlib import Path

from benchmarks._harness import write_results


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", nargs="*", help="benchmark names (bench_<name>.py); all by default")
    parser.add_argument("--quick", action="store_true", help="small shapes, for a smoke run")
    parser.add_argument("--data", default=None, help="path of the shared data folder, for real-data benchmarks")
    parser.add_argument("--output", default="benchmarks/results")
    args = parser.parse_args(argv)
    here = Path(__file__).parent
    names = args.only or sorted(p.stem[len("bench_"):] for p in here.glob("bench_*.py"))
    for name in names:
        module = importlib.import_module(f"benchmarks.bench_{name}")
        print(f"== {name}", flush=True)
        rows = module.run(quick=args.quick, data_dir=args.data)
        # A module may add a verdict in figures after its description (``summary(rows) -> str``).
        doc = (module.__doc__ or "") + ("\n" + module.summary(rows) if hasattr(module, "summary") else "")
        print(write_results(args.output, name, rows, doc, args.quick), flush=True)


if __name__ == "__main__":
    main()

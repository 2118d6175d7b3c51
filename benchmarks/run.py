"""Run the benchmarks: ``python -m benchmarks.run [--only NAME ...] [--quick] [--output DIR]``.

Each module ``benchmarks/bench_<name>.py`` defines ``run(quick: bool, data_dir: str | None) -> list[dict]``: one dict per
table row (side-by-side timings of our implementation, the naive formula and the named peer, with their ratios).
Results go to ``DIR/<name>.json`` and ``DIR/<name>.md``; the table is printed.
"""

from __future__ import annotations

import argparse
import importlib
import json
import platform
import time
from pathlib import Path

import numpy as np


def _format_table(rows):
    if not rows:
        return "(no rows)\n"
    columns = list(dict.fromkeys(key for row in rows for key in row))

    def fmt(value):
        if isinstance(value, float):
            return f"{value:.4g}"
        return str(value)

    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(fmt(row.get(c, "")) for c in columns) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def machine_info():
    try:
        from threadpoolctl import threadpool_info

        blas = [{k: info.get(k) for k in ("internal_api", "num_threads", "version", "architecture")}
                for info in threadpool_info()]
    except ImportError:  # pragma: no cover
        blas = []
    import os

    return {"python": platform.python_version(), "numpy": np.__version__, "machine": platform.machine(),
            "cpus": os.cpu_count(), "blas": blas, "date": time.strftime("%Y-%m-%d %H:%M:%S")}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", nargs="*", help="benchmark names (bench_<name>.py); all by default")
    parser.add_argument("--quick", action="store_true", help="small shapes, for a smoke run")
    parser.add_argument("--data", default=None, help="path of the shared data folder, for real-data benchmarks")
    parser.add_argument("--output", default="benchmarks/results")
    args = parser.parse_args(argv)
    here = Path(__file__).parent
    names = args.only or sorted(p.stem[len("bench_"):] for p in here.glob("bench_*.py"))
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    for name in names:
        module = importlib.import_module(f"benchmarks.bench_{name}")
        print(f"== {name}", flush=True)
        rows = module.run(quick=args.quick, data_dir=args.data)
        table = _format_table(rows)
        print(table, flush=True)
        record = {"benchmark": name, "quick": args.quick, "machine": machine_info(), "rows": rows}
        (out / f"{name}.json").write_text(json.dumps(record, indent=2, default=float))
        (out / f"{name}.md").write_text(f"# {name}\n\n{(module.__doc__ or '').strip()}\n\n{table}")


if __name__ == "__main__":
    main()

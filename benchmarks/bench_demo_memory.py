"""Peak memory and time of ``iokr demo`` (the main job on the bundled data), at two working-memory budgets.

Each row runs ``iokr [--working-memory MIB] demo --output TMP --overwrite`` in a fresh child process and records its
peak resident set size (``ru_maxrss`` of that child only), wall and CPU seconds, the scoring and cross-validation
seconds of its ``summary.json``, and the per-structure and per-spectrum top-k it prints, which must not depend on the
budget. Target (issue 18): peak RSS <= 1024 MiB with wall time no worse than 30 s on a quiet machine.

With ``IOKR_BENCH_BEFORE`` set to the root of a checkout of earlier code, a first row runs that code at the default
budget in the same session (its ``PYTHONPATH``), for a before/after comparison under the same load.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from pathlib import Path

from benchmarks._harness import child_json

_CHILD = """
import json, resource, subprocess, sys, time
cmd = json.loads(sys.argv[1])
t0 = time.perf_counter()
done = subprocess.run(cmd, capture_output=True, text=True)
wall = time.perf_counter() - t0
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"returncode": done.returncode, "wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime,
                  "peak_rss_mib": usage.ru_maxrss / 1024, "stdout": done.stdout[-4000:],
                  "stderr": done.stderr[-2000:]}))
"""

_ROOT = Path(__file__).resolve().parents[1]


def _topk(stdout, kind):
    match = re.search(rf"IOKR \(this run\), per {kind}\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)", stdout)
    return " / ".join(match.groups()) if match else ""


def _row(label, root, budget, quick):
    env = {**os.environ, "PYTHONPATH": str(root)}
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "iokr"] + ([] if budget is None else ["--working-memory", str(budget)])
        cmd += ["demo", "--output", f"{tmp}/demo", "--overwrite"] + (["--folds", "2"] if quick else [])
        # cwd: `python -m` puts the working directory first on sys.path, ahead of PYTHONPATH
        result = child_json(["-c", _CHILD, json.dumps(cmd)], cwd=root, env=env)
        if result["returncode"] != 0:
            raise RuntimeError(f"iokr demo failed:\n{result['stderr']}")
        timings = json.loads(Path(f"{tmp}/demo/summary.json").read_text())["timings_s"]
    return {"code": label, "working_memory_mib": budget or "default (1024)",
            "peak_rss_mib": round(result["peak_rss_mib"]), "target_mib": 1024,
            "peak/target": round(result["peak_rss_mib"] / 1024, 2), "wall_s": round(result["wall_s"], 1),
            "cpu_s": round(result["cpu_s"], 1), "cv_s": round(timings["cross_validation_s"], 1),
            "scoring_s": round(timings["scoring_s"], 1),
            "per_structure_top1/5/10/20": _topk(result["stdout"], "structure"),
            "per_spectrum_top1/5/10/20": _topk(result["stdout"], "spectrum")}


def run(quick=False, data_dir=None):
    rows = []
    before = os.environ.get("IOKR_BENCH_BEFORE")
    if before:
        rows.append(_row(f"before ({Path(before).name})", Path(before).resolve(), None, quick))
    for budget in (None, 256):
        rows.append(_row("this tree", _ROOT, budget, quick))
    return rows

"""Peak memory and time of ``iokr demo`` (the main job on the bundled data), at two working-memory budgets.

Each row runs ``iokr [--working-memory MIB] demo --output TMP --overwrite`` in a fresh child process and records its
peak resident set size (``ru_maxrss`` of that child only), wall and CPU seconds, and the per-structure top-k it
prints, which must not depend on the budget. Target (issue 18): peak RSS <= 1024 MiB with wall time no worse than
30 s on a quiet machine. Reference measured in the same session before candidate pools were kept as stored uint8
counts (``iokr.decoding.CountFeatures``): 2,162 MiB (2,213,888 KB) at the default budget.
"""

from __future__ import annotations

import json
import re
import sys
import tempfile

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


def _per_structure(stdout):
    match = re.search(r"IOKR \(this run\), per structure\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)", stdout)
    return " / ".join(match.groups()) if match else ""


def run(quick=False, data_dir=None):
    rows = []
    for budget in (None, 256):
        with tempfile.TemporaryDirectory() as tmp:
            cmd = [sys.executable, "-m", "iokr"] + ([] if budget is None else ["--working-memory", str(budget)])
            cmd += ["demo", "--output", f"{tmp}/demo", "--overwrite"] + (["--folds", "2"] if quick else [])
            result = child_json(["-c", _CHILD, json.dumps(cmd)])
        if result["returncode"] != 0:
            raise RuntimeError(f"iokr demo failed:\n{result['stderr']}")
        rows.append({"working_memory_mib": budget or "default (1024)", "peak_rss_mib": round(result["peak_rss_mib"]),
                     "target_mib": 1024, "peak/target": round(result["peak_rss_mib"] / 1024, 2),
                     "wall_s": round(result["wall_s"], 1), "cpu_s": round(result["cpu_s"], 1),
                     "per_structure_top1/5/10/20": _per_structure(result["stdout"])})
    return rows

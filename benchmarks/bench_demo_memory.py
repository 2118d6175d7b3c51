"""Peak memory and time of ``iokr demo`` (the main job on the bundled data), at two working-memory budgets.

Each row runs ``iokr [--working-memory MIB] demo --output TMP --overwrite`` in a fresh child process and records its
peak resident set size (``ru_maxrss`` of that child only), wall and CPU seconds, and the per-structure and
per-spectrum top-k it prints, which must not depend on the budget. Target (issue 18): peak RSS <= 1024 MiB with wall
time no worse than 30 s on a quiet machine. Reference measured in the same session before candidate pools were kept
as stored uint8 counts (``iokr.decoding.CountFeatures``): 2,162 MiB (2,213,888 KB) at the default budget.

With ``BENCH_DEMO_BEFORE=DIR`` (a directory holding an older ``iokr`` package, e.g. from ``git archive COMMIT iokr``)
each budget is also run with that code first on the child's path, in the same session and alternating with this
code, so the ``code`` column compares the two under the same machine load.

Where the peak came from (stage trace of VmRSS/VmHWM, default budget, before the lean-job change): imports 155 MiB,
spectra 241, candidate lists read into the in-memory SQLite store 582, training set 616, cross-validation peak 1077,
final model 832, candidate pool built 978, scoring peak 1701 (candidate blocks sized to 768 MiB of the budget). After:
the store is a temporary file (the process keeps SQLite's small page cache, the OS the rest): cross-validation peak
785, pool built 691; scoring blocks capped at 128 MiB (``iokr.decoding._scoring.MAX_CANDIDATE_BLOCK_MIB``, not
slower, bit-identical scores): scoring peak 919.

Time (the wall times below were measured at a load average of 6-8 on 2 cores, so they mostly reflect that load; CPU
seconds compare): in one process, alternating, scoring 60 queries against 30k candidates of the demo's pool at the
default budget took 5.98 / 6.14 s uncapped and 4.91 / 5.55 s with the 128 MiB cap (identical scores); reading the 60
candidate lists into the temporary-file store took 2.20 / 2.42 / 2.55 s against 2.33 / 2.20 / 2.07 s in memory.
"""

from __future__ import annotations

import json
import os
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


def _top_k(stdout, unit):
    match = re.search(rf"IOKR \(this run\), per {unit}\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)", stdout)
    return " / ".join(match.groups()) if match else ""


def _code_versions():
    before = os.environ.get("BENCH_DEMO_BEFORE")
    return [("before", before), ("this", None)] if before else [("this", None)]


def run(quick=False, data_dir=None):
    rows = []
    for budget in (None, 256):
        for code, path in _code_versions():
            env = None
            if path:
                env = {**os.environ, "PYTHONPATH": os.pathsep.join([path, os.environ.get("PYTHONPATH", "")])}
            with tempfile.TemporaryDirectory() as tmp:
                cmd = [sys.executable, "-m", "iokr"] + ([] if budget is None else ["--working-memory", str(budget)])
                cmd += ["demo", "--output", f"{tmp}/demo", "--overwrite"] + (["--folds", "2"] if quick else [])
                # run from the temporary folder: the child's path then starts with PYTHONPATH, not this checkout
                result = child_json(["-c", _CHILD, json.dumps(cmd)], cwd=tmp, env=env)
            if result["returncode"] != 0:
                raise RuntimeError(f"iokr demo failed:\n{result['stderr']}")
            rows.append({"code": code, "working_memory_mib": budget or "default (1024)",
                         "peak_rss_mib": round(result["peak_rss_mib"]), "target_mib": 1024,
                         "peak/target": round(result["peak_rss_mib"] / 1024, 2),
                         "wall_s": round(result["wall_s"], 1), "cpu_s": round(result["cpu_s"], 1),
                         "per_structure_top1/5/10/20": _top_k(result["stdout"], "structure"),
                         "per_spectrum_top1/5/10/20": _top_k(result["stdout"], "spectrum")})
    return rows

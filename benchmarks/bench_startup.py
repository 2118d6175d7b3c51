"""Start-up latency of ``import iokr`` and of the ``iokr`` command's help, against the interpreter's floor.

Each command runs in a fresh interpreter (``sys.executable``, this checkout first on ``PYTHONPATH``, working folder
the checkout, so nothing else named ``iokr`` is imported); the row gives the median and the minimum wall time of the
runs (11, quick: 3) and, from one more run, which heavy modules the command loaded (numpy, scipy, sklearn, matchms,
rdkit, matplotlib, tqdm). ``python -c pass`` and ``python -c "import numpy"`` are the floors. ``from iokr import
IOKR`` shows what the first use of an estimator costs (the imports ``import iokr`` now defers).

Set ``IOKR_STARTUP_BASELINE=<git revision>`` to add the same rows for that revision's ``iokr`` package (extracted with
``git archive`` into a temporary folder), e.g. the commit before the lazy imports.

Targets (issue #15): ``import iokr`` <= 0.5 s, ``iokr --help`` <= 0.3 s. Timings: shared 2-core machine with other
jobs running (``load_1min``: the 1-minute load average when the row started); compare ``min_s`` across rows.
"""

from __future__ import annotations

import io
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from benchmarks._harness import measure_command

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("numpy", "scipy", "sklearn", "matchms", "rdkit", "matplotlib", "tqdm")

COMMANDS = [
    ("python -c pass (floor)", ["-c", "pass"]),
    ("python -c 'import numpy' (floor)", ["-c", "import numpy"]),
    ("python -c 'import iokr'", ["-c", "import iokr"]),
    ("iokr --help", ["-m", "iokr.cli.main", "--help"]),
    ("iokr metabolites --help", ["-m", "iokr.cli.main", "metabolites", "--help"]),
    ("python -c 'from iokr import IOKR'", ["-c", "from iokr import IOKR"]),
]

# Runs a command's code in-process (as `python -c` / `python -m` would), then reports the loaded heavy modules.
_PROBE = """
import json, runpy, sys
args, heavy = json.loads(sys.argv[1]), json.loads(sys.argv[2])
try:
    if args[0] == "-c":
        exec(compile(args[1], "<string>", "exec"), {"__name__": "__main__"})
    else:
        sys.argv = [args[1], *args[2:]]
        runpy.run_module(args[1], run_name="__main__", alter_sys=True)
except SystemExit:
    pass
iokr = sys.modules.get("iokr")
print(json.dumps({"heavy": [m for m in heavy if m in sys.modules], "iokr": getattr(iokr, "__file__", None)}),
      file=sys.stderr)
"""


def _env(tree):
    return {**os.environ, "PYTHONPATH": str(tree)}  # bytecode cached by the warm-up run, as for an install


def _time_command(args, tree, runs):
    return list(measure_command([sys.executable, *args], runs, cwd=tree, env=_env(tree)).walls)


def _probe(args, tree):
    out = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(args), json.dumps(HEAVY)], cwd=tree, env=_env(tree), check=True,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    return json.loads(out.stderr.strip().splitlines()[-1])


def _rows(tree, label, runs):
    rows = []
    for name, args in COMMANDS:
        _time_command(args, tree, 1)  # warm the file cache and the bytecode of this tree
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        times = _time_command(args, tree, runs)
        probe = _probe(args, tree)
        if probe["iokr"] is not None and not probe["iokr"].startswith(str(tree)):
            raise RuntimeError(f"{name}: imported iokr from {probe['iokr']}, expected the tree {tree}")
        rows.append({"command": name, "iokr": label, "median_s": statistics.median(times), "min_s": min(times),
                     "runs": runs, "load_1min": round(load, 2), "heavy_modules_loaded": " ".join(probe["heavy"]) or "-"})
    return rows


def _baseline_tree(revision, folder):
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", revision, "iokr"], check=True,
                             capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        # Our own repository's archive; the "data" filter where this Python has it (3.11.4+, 3.10.12+).
        tar.extractall(folder, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
    return Path(folder)


def run(quick=False, data_dir=None):
    runs = 3 if quick else 11
    rows = _rows(ROOT, "this checkout", runs)
    baseline = os.environ.get("IOKR_STARTUP_BASELINE")
    if baseline:
        with tempfile.TemporaryDirectory() as folder:
            rows += [row for row in _rows(_baseline_tree(baseline, folder), f"baseline {baseline}", runs)
                     if "floor" not in row["command"]]
    return rows

"""A fuzz campaign of at least ``--min-inputs`` inputs: the randomized ``long`` profile of ``tests/fuzz``, repeated.

Each round is one ``pytest tests/fuzz`` run with ``IOKR_HYPOTHESIS_PROFILE=long`` (new random examples every
round); rounds continue until the inputs tried reach ``--min-inputs``. The summary (rounds, seconds, inputs,
accepted, rejected and crashes per reader, the pytest exit code of every round) goes to ``--output`` as JSON::

    python tests/fuzz/campaign.py --min-inputs 100000 --output reports/fuzz.json

``make fuzz`` runs it (``FUZZ_INPUTS`` sets the size). Not collected by pytest.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_round(report_path):
    env = dict(os.environ, IOKR_HYPOTHESIS_PROFILE="long", IOKR_FUZZ_REPORT=str(report_path))
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/fuzz"],
                          check=False, cwd=ROOT, env=env, capture_output=True, text=True)
    tail = done.stdout.strip().splitlines()[-1:] if done.stdout.strip() else []
    if done.returncode:  # keep the failures (hypothesis' minimal examples) beside the report
        Path(report_path).with_suffix(".log").write_text(done.stdout + done.stderr)
    return done.returncode, json.loads(Path(report_path).read_text()), tail


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--min-inputs", type=int, default=100_000)
    parser.add_argument("--output", type=Path, default=ROOT / "reports" / "fuzz.json")
    args = parser.parse_args(argv)
    if args.min_inputs < 1:
        parser.error(f"--min-inputs must be a positive integer, got {args.min_inputs}")
    totals = defaultdict(lambda: {"inputs": 0, "accepted": 0, "rejected": 0, "crashes": 0})
    rounds, start = [], time.perf_counter()
    logs = args.output.parent / "fuzz_failures"
    with tempfile.TemporaryDirectory() as tmp:
        while sum(c["inputs"] for c in totals.values()) < args.min_inputs:
            code, report, tail = run_round(Path(tmp) / f"round{len(rounds)}.json")
            for name, counts in report["formats"].items():
                for key, value in counts.items():
                    totals[name][key] += value
            log = Path(tmp) / f"round{len(rounds)}.log"
            if log.exists():
                logs.mkdir(parents=True, exist_ok=True)
                shutil.move(log, logs / log.name)
            rounds.append({"exit_code": code, "inputs": report["total_inputs"], "crashes": report["total_crashes"],
                           "seconds": report["seconds"], "pytest": tail})
            print(f"round {len(rounds)}: {report['total_inputs']} inputs, {report['total_crashes']} crashes, "
                  f"{report['seconds']} s; total {sum(c['inputs'] for c in totals.values())}", flush=True)
    summary = {
        "profile": "long", "rounds": len(rounds), "seconds": round(time.perf_counter() - start, 1),
        "total_inputs": sum(c["inputs"] for c in totals.values()),
        "total_crashes": sum(c["crashes"] for c in totals.values()),
        "failed_rounds": sum(r["exit_code"] != 0 for r in rounds),
        "formats": {name: dict(c) for name, c in sorted(totals.items())}, "per_round": rounds,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
    return 1 if summary["total_crashes"] or summary["failed_rounds"] else 0


if __name__ == "__main__":
    sys.exit(main())

"""Every script in examples/ runs to completion (each checks its own claims with asserts), so the guide cannot rot.

Header comments of an example declare what it needs:

- ``# requires: rdkit, matchms``: modules that must be importable (skipped otherwise);
- ``# requires-data: multilabel/emotions``: a folder of the shared data, passed as the first argument; run only when
  the environment variable ``IOKR_SHARED_DATA`` names the shared data folder (skipped otherwise).

Scripts run in a subprocess with one BLAS thread (stable on shared CI machines) and temporary files under pytest's
``tmp_path``.
"""

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = sorted(p for p in (Path(__file__).resolve().parents[1] / "examples").glob("*.py")
                  if not p.name.startswith("_"))


def _header(path, key):
    match = re.search(rf"^# {key}: (.+)$", path.read_text(encoding="utf-8"), flags=re.MULTILINE)
    return [] if match is None else [part.strip() for part in match.group(1).split(",") if part.strip()]


def test_examples_are_found():
    assert len(EXAMPLES) >= 8


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_runs(path, tmp_path):
    for module in _header(path, "requires"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{path.name} needs {module}")
    args = []
    for folder in _header(path, "requires-data"):
        shared = os.environ.get("IOKR_SHARED_DATA")
        if not shared or not (Path(shared) / folder).exists():
            pytest.skip(f"{path.name} needs the shared data folder {folder} (set IOKR_SHARED_DATA)")
        args.append(str(Path(shared) / folder))
    threads = {name: "1" for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
    env = {**os.environ, **threads, "MPLBACKEND": "Agg", "TMPDIR": str(tmp_path)}
    done = subprocess.run([sys.executable, str(path), *args], check=False, cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{path.name} failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    assert done.stdout.strip(), f"{path.name} printed nothing"

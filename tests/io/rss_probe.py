"""Run a snippet in a fresh interpreter and measure it: exit code, last line of stderr, seconds and peak RSS.

The snippet runs in a grandchild; its parent (a second interpreter) reads ``getrusage(RUSAGE_CHILDREN).ru_maxrss``
after waiting for it, so the peak is the snippet's own, not that of earlier children of the test process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

_DRIVER = r"""
import json, resource, subprocess, sys, time
start = time.perf_counter()
done = subprocess.run([sys.executable, "-c", sys.argv[1]], capture_output=True, text=True)
seconds = time.perf_counter() - start
rss_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # Linux: KiB
lines = done.stderr.strip().splitlines()
print(json.dumps({"returncode": done.returncode, "stdout": done.stdout, "stderr_last": lines[-1] if lines else "",
                  "stderr_lines": len(lines), "seconds": seconds, "rss_mb": rss_mb}))
"""


def probe(code):
    """Run ``code`` (Python source) with this worktree's ``iokr``; a dict of the measurements."""
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", _DRIVER, code], capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout)


#: Catch the expected error and print it on stdout as one line (a traceback would fail the test), then the seconds
#: the call took (without the interpreter start and the imports, which take seconds on a loaded machine).
CATCH = """
import time
from iokr.exceptions import IOKRDataError
{imports}
start = time.perf_counter()
try:
    {call}
except IOKRDataError as exc:
    print("ERROR", exc)
else:
    print("NO ERROR")
print("CALL_SECONDS", time.perf_counter() - start)
"""

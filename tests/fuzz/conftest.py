"""Fuzz campaign bookkeeping: with ``IOKR_FUZZ_REPORT=path``, write inputs tried and crashes per format as JSON.

The campaign size follows the hypothesis profile registered in ``tests/conftest.py``: ``ci`` (default, small and
derandomized) or ``long`` (randomized, 25x larger). The longer campaign is one command::

    IOKR_HYPOTHESIS_PROFILE=long IOKR_FUZZ_REPORT=round.json python -m pytest -q tests/fuzz

and ``tests/fuzz/campaign.py`` (``make fuzz``) repeats it until a number of inputs is reached, summing the rounds
into ``reports/fuzz.json``.

Each module fuzzes one format; ``fuzz_helpers.run_reader`` counts every input and lets only the library's typed
data errors (:class:`~iokr.exceptions.IOKRDataError` and subclasses) through. ``crashes`` counts failing tests
(each is a crash or hang hypothesis shrank to a minimal input).
"""

import json
import os
import time
from pathlib import Path

import fuzz_helpers
from hypothesis import settings

_START = time.perf_counter()


def _format_of(nodeid):
    # tests/fuzz/test_fuzz_<format>.py::test_...
    name = Path(nodeid.split("::", 1)[0]).stem
    return name[len("test_fuzz_"):] if name.startswith("test_fuzz_") else None


def pytest_runtest_logreport(report):
    fmt = _format_of(report.nodeid)
    if fmt is not None and report.failed and report.when == "call":
        fuzz_helpers.COUNTS[fmt]["crashes"] += 1


def pytest_sessionfinish(session, exitstatus):
    path = os.environ.get("IOKR_FUZZ_REPORT")
    if not path or not fuzz_helpers.COUNTS:
        return
    # Reader names recorded by run_reader are "<format>" or "<format>/<variant>"; crashes are per test module.
    formats = {}
    for name, counts in sorted(fuzz_helpers.COUNTS.items()):
        formats[name] = dict(counts)
    summary = {
        "profile": os.environ.get("IOKR_HYPOTHESIS_PROFILE", "ci"),
        "max_examples_base": settings.default.max_examples,
        "seconds": round(time.perf_counter() - _START, 1),
        "total_inputs": sum(c["inputs"] for c in formats.values()),
        "total_crashes": sum(c["crashes"] for c in formats.values()),
        "formats": formats,
    }
    Path(path).write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")

"""Where the peak resident memory of ``iokr demo`` comes from: ``python -m benchmarks.profile_demo_memory [ARGS]``.

Runs the command (default ``iokr --quiet demo --output /tmp/demo-profile --overwrite``) in this process, samples
``VmRSS`` every 10 ms from a thread, and marks the boundaries of the job's stages (reading, training set, cross-
validation, Grams, calibration, final fit, scoring) by wrapping the functions behind them. Prints one line per
boundary: seconds, ``VmRSS`` there, the largest sample since the previous boundary and ``VmHWM`` (MiB).
Measurements of this kind are in ``benchmarks/results/demo_memory_notes.md``.
"""

from __future__ import annotations

import functools
import sys
import threading
import time

_SAMPLES, _MARKS = [], []
_T0 = time.perf_counter()


def _status():
    values = {}
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith(("VmRSS", "VmHWM")):
                key, value = line.split(":")
                values[key] = int(value.split()[0]) // 1024
    return values


def _sample(stop):
    while not stop.is_set():
        _SAMPLES.append((time.perf_counter() - _T0, _status()["VmRSS"]))
        time.sleep(0.01)


def _mark(name):
    _MARKS.append((time.perf_counter() - _T0, name, _status()))


def _wrap(owner, name, label):
    original = getattr(owner, name)

    @functools.wraps(original)
    def wrapped(*args, **kwargs):
        _mark(f"> {label}")
        try:
            return original(*args, **kwargs)
        finally:
            _mark(f"< {label}")

    setattr(owner, name, wrapped)


def main(argv=None):
    stop = threading.Event()
    sampler = threading.Thread(target=_sample, args=(stop,), daemon=True)
    sampler.start()
    _mark("start")
    from iokr.apps.metabolites.model._model import MetaboliteIdentifier  # noqa: PLC0415
    from iokr.apps.metabolites.selection import _pipeline as pipeline  # noqa: PLC0415
    from iokr.apps.metabolites.workflows import _evaluate, _fit, _train  # noqa: PLC0415 - the imports are measured
    from iokr.cli.main import main as iokr_main  # noqa: PLC0415
    from iokr.model_selection import IOKRCV  # noqa: PLC0415

    _mark("iokr and the metabolite app imported")
    for name in ("read_spectra", "read_candidate_lists", "training_set", "cross_validate", "calibration_examples",
                 "evaluate_lists", "save_identifier"):
        for jobs in (_fit, _train, _evaluate):  # each job module's own binding of the name, where it has one
            if hasattr(jobs, name):
                _wrap(jobs, name, name)
    _wrap(pipeline, "_fold_holdout_ranks", "_fold_holdout_ranks")
    for name in ("base_grams", "combined_training_gram", "fit"):
        _wrap(MetaboliteIdentifier, name, f"MetaboliteIdentifier.{name}")
    _wrap(IOKRCV, "fit", "IOKRCV.fit")
    args = sys.argv[1:] if argv is None else argv
    code = iokr_main(args or ["--quiet", "demo", "--output", "/tmp/demo-profile", "--overwrite"])
    _mark("end")
    stop.set()
    sampler.join()
    previous = 0.0
    print(f"{'s':>7} {'VmRSS':>6} {'max':>6} {'VmHWM':>6}  boundary")
    for t, name, status in _MARKS:
        peak = max([rss for ts, rss in _SAMPLES if previous <= ts <= t], default=status["VmRSS"])
        print(f"{t:7.2f} {status['VmRSS']:6d} {peak:6d} {status['VmHWM']:6d}  {name}")
        previous = t
    return code


if __name__ == "__main__":
    sys.exit(main())

"""The harness every benchmark shares: timing, peak memory, floors measured in the same process, tables and result files.

- timing: :func:`measure` runs a callable ``repeat`` times and keeps the median (or, where a benchmark's docstring
  says "best of", the minimum) of the wall times and of the process CPU times (all threads); :func:`measure_command`
  does the same for a subprocess (CPU of the children); :func:`best_time` / :func:`median_time` are the
  ``(seconds, result)`` shorthands.
- memory: :func:`peak_rss_mib` (``VmHWM`` of this process).
- floors: :func:`sgemm_rate` (float32 GEMM flop/s on a given shape), :func:`gemm_seconds` and :func:`eigh_seconds`
  (dense products and LAPACK ``syevd`` eigendecompositions): what a route cannot beat, measured in the same process
  under the same load as the route itself, so ratios to them are comparable across machines.
- results: :func:`format_table` (the markdown table printed and written), :func:`machine_info`,
  :func:`write_results` (``<name>.json`` and ``<name>.md`` in the format of the committed ``benchmarks/results``),
  :func:`child_json` (a measured configuration run in its own process, for its own peak memory).
"""

from __future__ import annotations

import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from scipy import linalg as sla
from threadpoolctl import threadpool_info, threadpool_limits

from benchmarks._memory import peak_rss_mib

__all__ = [
    "Timing", "best_time", "child_json", "eigh_seconds", "format_table", "gemm_seconds", "machine_info", "measure",
    "measure_command", "median_time", "one_blas_thread", "peak_rss_mib", "rel_diff", "sgemm_rate", "write_json",
    "write_results",
]

_STATS = {"median": statistics.median, "min": min}


@dataclass(frozen=True)
class Timing:
    """Wall and CPU seconds of a measured call (the chosen statistic over its repeats) and its last result.

    ``cpu`` is the process CPU time over all threads (children's for :func:`measure_command`): on a shared machine it
    is the stabler measure of work, the wall time includes waiting for the cores.
    """

    wall: float
    cpu: float
    result: Any = None
    walls: tuple = field(default=())


def _reduce(values, stat):
    if stat not in _STATS:
        raise ValueError(f"stat must be one of {sorted(_STATS)}; got {stat!r}")
    return float(_STATS[stat](values))


def measure(fn, repeat=1, stat="median"):
    """Run ``fn()`` ``repeat`` times; the median (``stat="min"``: the best) wall and CPU seconds, the last result."""
    walls, cpus, out = [], [], None
    for _ in range(repeat):
        start, cpu = time.perf_counter(), time.process_time()
        out = fn()
        cpus.append(time.process_time() - cpu)
        walls.append(time.perf_counter() - start)
    return Timing(_reduce(walls, stat), _reduce(cpus, stat), out, tuple(walls))


def best_time(fn, repeat=1):
    """``(best wall seconds over repeat calls, the last call's result)``."""
    timing = measure(fn, repeat, "min")
    return timing.wall, timing.result


def median_time(fn, repeat=3):
    """``(median wall seconds over repeat calls, the last call's result)``."""
    timing = measure(fn, repeat, "median")
    return timing.wall, timing.result


def _children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure_command(cmd, repeat=1, stat="median", check=True, **kwargs):
    """Run the subprocess ``cmd`` ``repeat`` times (``kwargs`` go to :func:`subprocess.run`, output captured as text).

    Returns a :class:`Timing` whose ``cpu`` is the children's user + system time of the run whose wall time is the
    statistic (the middle run for the median) and whose ``result`` is that run's ``CompletedProcess``.
    """
    runs = []
    for _ in range(repeat):
        c0, t0 = _children_cpu(), time.perf_counter()
        done = subprocess.run(cmd, check=False, capture_output=True, text=True, **kwargs)
        runs.append((time.perf_counter() - t0, _children_cpu() - c0, done))
        if check and done.returncode != 0:
            raise RuntimeError(f"{' '.join(map(str, cmd))} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    walls = [r[0] for r in runs]
    k = int(np.argsort(walls)[len(walls) // 2]) if stat == "median" else int(np.argmin(walls))
    return Timing(_reduce(walls, stat), runs[k][1], runs[k][2], tuple(walls))


def one_blas_thread():
    """Context manager limiting BLAS/OpenMP to one thread (one core each for ours and the peer on a shared machine)."""
    return threadpool_limits(limits=1)


# -- floors -------------------------------------------------------------------------------------------------------
def sgemm_rate(m, c, p, repeat=3, seed=0, cpu=False):
    """Best float32 GEMM rate (flop/s) of an ``(m, p) x (p, c)`` product: wall clock, or all threads' CPU time."""
    rng = np.random.default_rng(seed)
    A = rng.random((m, p), dtype=np.float32)
    B = rng.random((c, p), dtype=np.float32)
    A @ B[:64].T  # warm-up: thread pool start, first-touch of the output
    timing = measure(lambda: A @ B.T, repeat, "min")
    return 2.0 * m * c * p / (timing.cpu if cpu else timing.wall)


def gemm_seconds(A, B, products=1, repeat=3):
    """Best wall seconds of ``products`` dense products ``A @ B`` (a GEMM floor at the shapes a route multiplies)."""
    return best_time(lambda: [A @ B for _ in range(products)], repeat)[0]


def eigh_seconds(M, count=1, repeat=1, stat="min"):
    """:class:`Timing` of ``count`` dense symmetric eigendecompositions of ``M`` (LAPACK ``syevd``): the floor of any
    eigen route."""
    return measure(lambda: [sla.eigh(M, driver="evd", check_finite=False) for _ in range(count)], repeat, stat)


def rel_diff(a, b):
    """Largest absolute difference relative to the largest ``|b|``."""
    return float(np.abs(np.asarray(a) - np.asarray(b)).max() / max(np.abs(b).max(), 1e-300))


# -- tables and result files --------------------------------------------------------------------------------------
def _fmt(value):
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def format_table(rows):
    """A markdown table of ``rows`` (dicts); the columns are every key in order of first appearance."""
    if not rows:
        return "(no rows)\n"
    columns = list(dict.fromkeys(key for row in rows for key in row))
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(_fmt(row.get(c, "")) for c in columns) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def machine_info():
    """Python, numpy, CPU count, BLAS libraries and the date, recorded with every result."""
    blas = [{k: info.get(k) for k in ("internal_api", "num_threads", "version", "architecture")}
            for info in threadpool_info()]
    return {"python": platform.python_version(), "numpy": np.__version__, "machine": platform.machine(),
            "cpus": os.cpu_count(), "blas": blas, "date": time.strftime("%Y-%m-%d %H:%M:%S")}


def write_json(path, record, indent=2, newline=False):
    """``record`` as JSON (numpy scalars as floats) to ``path``."""
    Path(path).write_text(json.dumps(record, indent=indent, default=float) + ("\n" if newline else ""))


def write_results(out_dir, name, rows, doc, quick):
    """Write ``out_dir/<name>.json`` (rows with the machine) and ``out_dir/<name>.md`` (``doc``, then the table).

    Returns the table printed by the runner.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    table = format_table(rows)
    write_json(out / f"{name}.json", {"benchmark": name, "quick": quick, "machine": machine_info(), "rows": rows})
    (out / f"{name}.md").write_text(f"# {name}\n\n{(doc or '').strip()}\n\n{table}")
    return table


def child_json(args, cwd=None, env=None):
    """Run ``python args...`` and return the JSON object on the last line of its standard output."""
    try:
        done = subprocess.run([sys.executable, *args], check=True, capture_output=True, text=True, cwd=cwd, env=env)
    except subprocess.CalledProcessError as exc:
        raise RuntimeError(f"benchmark child failed:\n{exc.stderr[-4000:]}") from None
    return json.loads(done.stdout.strip().splitlines()[-1])

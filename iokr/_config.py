"""Global configuration: working-memory budget, tolerances and jitter schedule.

Every chunked computation in the library asks this module for its memory budget, so one setting
bounds the peak memory of scoring, kernel evaluation and cross-validation alike.
"""

from __future__ import annotations

import numbers
import threading
from contextlib import contextmanager

import numpy as np

_DEFAULTS = {
    # Bytes (in MiB) that one chunked computation may use for its temporary blocks.
    "working_memory": 1024,
    # Relative jitters tried, in order, when a Cholesky factorization fails (times mean diagonal).
    "jitter_schedule": (1e-10, 1e-8, 1e-6, 1e-4),
    # Untrusted files: the longest line a text reader accepts (bytes, after decompression) ...
    "max_line_bytes": 16 * 2**20,
    # ... and the largest decompressed/compressed size ratio accepted once 16 MiB have been decompressed.
    "max_compression_ratio": 100,
}

_local = threading.local()


def _current():
    if not hasattr(_local, "config"):
        _local.config = dict(_DEFAULTS)
    return _local.config


def get_config():
    """Return a copy of the current configuration.

    Returns
    -------
    config : dict
        Keys ``working_memory`` (MiB), ``jitter_schedule`` (tuple of relative jitters), ``max_line_bytes`` and
        ``max_compression_ratio`` (caps of the file readers, see :mod:`iokr.io`).
    """
    return dict(_current())


def set_config(*, working_memory=None, jitter_schedule=None, max_line_bytes=None, max_compression_ratio=None):
    """Set global configuration values (per thread).

    Parameters
    ----------
    working_memory : float, optional
        Memory budget in MiB for the temporary blocks of one chunked computation.
    jitter_schedule : sequence of float, optional
        Increasing relative jitters tried when a Cholesky factorization fails.
    max_line_bytes : int, optional
        Longest line (bytes, after decompression) that the text readers accept; a longer line is an error naming
        the file and the line. Default 16 MiB.
    max_compression_ratio : float, optional
        Largest ratio of decompressed to compressed bytes accepted from a gzip file or a zip member once 16 MiB
        have been decompressed (a "compression bomb" is refused). Default 100.
    """
    config = _current()
    if working_memory is not None:
        config["working_memory"] = _check_working_memory(working_memory)
    if jitter_schedule is not None:
        schedule = tuple(float(j) for j in jitter_schedule)
        if not schedule or any(j <= 0 for j in schedule):
            raise ValueError(
                f"'jitter_schedule' must be a non-empty sequence of positive floats, got {jitter_schedule!r}."
            )
        config["jitter_schedule"] = schedule
    if max_line_bytes is not None:
        if isinstance(max_line_bytes, bool) or not isinstance(max_line_bytes, numbers.Integral) or max_line_bytes < 1:
            raise ValueError(f"'max_line_bytes' must be a positive int (bytes), got {max_line_bytes!r}.")
        config["max_line_bytes"] = int(max_line_bytes)
    if max_compression_ratio is not None:
        if (isinstance(max_compression_ratio, bool) or not isinstance(max_compression_ratio, numbers.Real)
                or not max_compression_ratio >= 1):
            raise ValueError(f"'max_compression_ratio' must be a number >= 1, got {max_compression_ratio!r}.")
        config["max_compression_ratio"] = float(max_compression_ratio)


@contextmanager
def config_context(**changes):
    """Temporarily change the configuration inside a ``with`` block.

    Parameters
    ----------
    **changes : dict
        Keyword arguments of :func:`set_config` (``working_memory``, ``jitter_schedule``).

    Yields
    ------
    None
        The previous configuration is restored when the block exits, even on an exception.
    """
    saved = get_config()
    set_config(**changes)
    try:
        yield
    finally:
        _current().clear()
        _current().update(saved)


def _check_working_memory(value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not np.isfinite(value) or value <= 0:
        raise ValueError(f"'working_memory' must be a positive number of MiB, got {value!r}.")
    return float(value)


def working_memory_bytes(working_memory=None):
    """Budget in bytes: the per-call value when given, else the global one."""
    if working_memory is None:
        working_memory = _current()["working_memory"]
    return int(_check_working_memory(working_memory) * 2**20)


def default_rtol(dtype):
    """Relative tolerance suited to ``dtype`` for exact solvers (float32 vs float64)."""
    return 1e-4 if np.dtype(dtype) == np.float32 else 1e-10

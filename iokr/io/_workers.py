"""Worker processes that die with the process that started them.

A ``ProcessPoolExecutor``'s workers outlive a parent killed by ``SIGKILL`` (or the OOM killer): nothing tells them,
and they wait for work forever, holding their memory and the output's claim (:mod:`._ownership`). :func:`worker_pool`
starts workers that end themselves:

- on Linux, ``prctl(PR_SET_PDEATHSIG, SIGKILL)``: the kernel kills the worker the moment its parent ends;
- everywhere (and as a second line on Linux), a daemon thread in the worker that watches the parent's process id
  every :data:`WATCH_SECONDS` and ends the worker when the parent is gone (the worker is re-parented).

Workers also get the default ``SIGTERM`` action (not the command's handler they inherit by ``fork``), so a plain
``kill`` ends them too.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor

#: Seconds between two checks of the parent by the watching thread.
WATCH_SECONDS = 0.5
_PR_SET_PDEATHSIG = 1


def _set_parent_death_signal():
    """Ask the Linux kernel to send SIGKILL to this process when its parent ends; False where unavailable."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _watch_parent(parent_pid):
    while True:
        if os.getppid() != parent_pid:
            os._exit(1)  # noqa: SLF001 - no cleanup to run: the parent that wanted the results is gone
        time.sleep(WATCH_SECONDS)


def die_with_parent(parent_pid):
    """Worker initializer: end this process when ``parent_pid`` ends (see the module docstring).

    Parameters
    ----------
    parent_pid : int
        The process id of the process that started the worker (``os.getpid()`` there).
    """
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _set_parent_death_signal()
    if os.getppid() != parent_pid:  # the parent ended before the death signal was armed
        os._exit(1)
    threading.Thread(target=_watch_parent, args=(parent_pid,), name="iokr-parent-watch", daemon=True).start()


def worker_pool(max_workers):
    """A ``ProcessPoolExecutor`` whose workers die with this process (see the module docstring).

    Parameters
    ----------
    max_workers : int

    Returns
    -------
    pool : concurrent.futures.ProcessPoolExecutor
    """
    return ProcessPoolExecutor(max_workers=max_workers, initializer=die_with_parent, initargs=(os.getpid(),))

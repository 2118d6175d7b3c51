"""Real ``iokr`` commands in their own process group, for the kill -9 tests: start, find children, wait for the
group to end, and kill what is left whatever the test's outcome (the ``sessions`` fixture's list)."""

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import iokr

ROOT = Path(iokr.__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def _stat_fields(pid):
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[1].split()
    except OSError:
        return None


def _alive(pid, fields):
    """Not a finished zombie: a zombie thread-group leader whose other threads still run (still holding the
    process's files and locks) counts as alive."""
    if fields[0] != b"Z":
        return True
    try:
        return len(os.listdir(f"/proc/{pid}/task")) > 1
    except OSError:
        return False


def _processes(where):
    """Live process ids (see :func:`_alive`) whose /proc stat fields after the command name satisfy ``where``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = _stat_fields(entry)
            if fields is not None and where(fields) and _alive(entry, fields):
                found.append(int(entry))
    return found


def group(pgid):
    """The live processes of process group ``pgid``."""
    return _processes(lambda f: int(f[2]) == pgid)


def children(pid):
    """The live children of ``pid``."""
    return _processes(lambda f: int(f[1]) == pid)


def start(sessions, *args):
    """Start ``python -m iokr --quiet ARGS`` in a new session; remembered in ``sessions`` for the final kill."""
    proc = subprocess.Popen([sys.executable, "-m", "iokr", "--quiet", *map(str, args)], cwd=ROOT, env=ENV,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    sessions.append(proc)
    return proc


def kill_all(sessions):
    """SIGKILL every started process group (missing groups are fine) and reap the leaders."""
    for proc in sessions:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


def wait_for(condition, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def kill_mid_run(proc, n_children=2, timeout=120):
    """Wait for ``proc``'s worker processes, SIGKILL ``proc`` alone, and wait (5 s at most) for its group to end."""
    wait_for(lambda: len(children(proc.pid)) >= n_children or proc.poll() is not None, timeout, "the workers")
    assert proc.poll() is None, proc.stderr.read().decode()
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    wait_for(lambda: not group(proc.pid), 5, "every process of the killed run to end")


def write_structure_table(path, n_rows):
    """A CSV of ``n_rows`` small valid SMILES (repeating every 3200 rows)."""
    lines = ["name,SMILES"] + [f"n{i},{'C' * (1 + i % 40)}O{'C' * (1 + (i // 40) % 40)}{'N' if i % 3 else 'S'}"
                               for i in range(n_rows)]
    path.write_text("\n".join(lines) + "\n")
    return path

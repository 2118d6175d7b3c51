"""Atomic outputs: write beside the target under a temporary name, then rename into place.

Every temporary is named ``.<target name>.tmp-<pid>-<8 hex digits>`` in the target's folder, whether it is a file
(:func:`atomic_open`) or a folder (:func:`atomic_folder`). The name carries the writing process's id, so a later run
can tell the temporaries of a killed run (its process is gone) from those of a run still going, and remove them
(:func:`sweep_temporaries`). SQLite's side files of a temporary (``-journal``, ``-wal``, ``-shm``) count as part of it.

A temporary whose target is claimed by a live run (:mod:`._ownership`) is never stale, whatever its process id says
(the writer may live in another PID namespace); the run holding the claim removes every temporary of its own target
(:func:`sweep_target`), since their writers are gone.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from contextlib import contextmanager
from pathlib import Path

from ._ownership import is_claimed

TEMPORARY_PATTERN = re.compile(r"^\.(?P<target>.+)\.tmp-(?P<pid>\d+)-(?P<token>[0-9a-f]{8})(?:-journal|-wal|-shm)?$")

# Longest target name kept in a temporary's name (file names are limited to 255 bytes on common file systems).
_MAX_NAME = 200


def temporary_path(path):
    """Return a fresh temporary path beside ``path``, following the naming the sweep recognizes.

    Parameters
    ----------
    path : str or Path
        The final target.

    Returns
    -------
    tmp : Path
        ``<folder>/.<name>.tmp-<pid>-<random>``; nothing is created.
    """
    path = Path(path)
    return path.parent / f".{path.name[:_MAX_NAME]}.tmp-{os.getpid()}-{os.urandom(4).hex()}"


@contextmanager
def atomic_open(path, mode="w", **open_kwargs):
    """Open a temporary file that replaces ``path`` only when the ``with`` block succeeds.

    Readers never see half a file, and an interrupted run leaves the previous file (or none) in place.

    Parameters
    ----------
    path : str or Path
        Target file; its folder is created if needed.
    mode : {"w", "wb"}
    **open_kwargs
        Passed to :func:`open` (e.g. ``encoding``).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temporary_path(path)
    # O_EXCL: never follow or reuse an existing name; 0o666 gives the permissions a plain open() would (umask applies).
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with os.fdopen(fd, mode, **open_kwargs) as handle:
            yield handle
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _remove(path):
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


@contextmanager
def atomic_folder(path):
    """Yield a temporary sibling folder that replaces the folder ``path`` only when the ``with`` block succeeds.

    An existing folder at ``path`` is replaced as a whole; whether that is allowed is the caller's decision. On any
    exception (including ``KeyboardInterrupt`` and ``SystemExit``) the temporary folder is removed and ``path`` is left
    as it was.

    Parameters
    ----------
    path : str or Path
        The final folder; its parent is created if needed.

    Yields
    ------
    tmp : Path
        The (empty) temporary folder to write into.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temporary_path(path)
    tmp.mkdir()
    try:
        yield tmp
        # A folder cannot be renamed over a non-empty one: move the old one aside under a temporary name (swept if
        # we die right here), move the new one in, then delete the old one.
        old = None
        if path.is_dir() and not path.is_symlink():
            old = temporary_path(path)
            os.rename(path, old)
        elif path.exists() or path.is_symlink():
            raise FileExistsError(f"cannot replace {path}: it exists and is not a folder")
        try:
            os.rename(tmp, path)
        except BaseException:
            if old is not None:
                os.rename(old, path)
            raise
        if old is not None:
            _remove(old)
    except BaseException:
        _remove(tmp)
        raise


def _process_start_time(pid):
    """Start time (seconds since the epoch) of a running process, or None where /proc is not available."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            fields = handle.read().rsplit(b")", 1)[1].split()
        with open("/proc/stat", "rb") as handle:
            boot = next(float(line.split()[1]) for line in handle if line.startswith(b"btime"))
        return boot + int(fields[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return None


def _pid_running(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True  # another user's process, or cannot tell: keep
    return True


def is_stale(path, max_age=3600.0, now=None):
    """Tell whether a temporary named by :func:`temporary_path` was left by a run that no longer runs.

    Parameters
    ----------
    path : str or Path
        An entry named ``.<name>.tmp-<pid>-<random>``.
    max_age : float, default=3600
        Seconds. Where the start time of processes is unknown (no ``/proc``), a temporary whose process id is in use
        again is stale once it is this old.
    now : float, optional
        Current time (seconds since the epoch), for tests.

    Returns
    -------
    stale : bool
        True when the process that wrote it is gone (its id is free, or now belongs to a process started after the
        temporary was last modified). A temporary of this process, or of a running writer, is never stale.
    """
    path = Path(path)
    match = TEMPORARY_PATTERN.match(path.name)
    if match is None:
        return False
    pid = int(match["pid"])
    if pid == os.getpid() or is_claimed(path.parent / match["target"]):
        return False
    if not _pid_running(pid):
        return True
    try:
        modified = path.lstat().st_mtime
    except OSError:
        return False
    started = _process_start_time(pid)
    if started is not None:
        return started > modified + 1.0  # the id was reused by a later process (1 s for clock granularity)
    return (time.time() if now is None else now) - modified > max_age


def sweep_temporaries(folder, max_age=3600.0):
    """Remove the stale temporaries (see :func:`is_stale`) directly inside ``folder``.

    Parameters
    ----------
    folder : str or Path
        Folder to clean; a missing folder is fine.
    max_age : float, default=3600
        Passed to :func:`is_stale`.

    Returns
    -------
    removed : list of Path
        The entries removed.
    """
    removed = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        path = Path(entry.path)
        if TEMPORARY_PATTERN.match(entry.name) and is_stale(path, max_age):
            _remove(path)
            removed.append(path)
    return removed


def sweep_target(path):
    """Remove every temporary of the target ``path`` (call only while holding its claim, see :mod:`._ownership`).

    Parameters
    ----------
    path : str or Path
        The target; its temporaries are the entries ``.<name>.tmp-<pid>-<random>[-journal|-wal|-shm]`` beside it.

    Returns
    -------
    removed : list of Path
        The entries removed.
    """
    path = Path(path)
    name = path.name[:_MAX_NAME]
    removed = []
    try:
        entries = list(os.scandir(path.parent))
    except OSError:
        return removed
    for entry in entries:
        match = TEMPORARY_PATTERN.match(entry.name)
        if match and match["target"] == name and int(match["pid"]) != os.getpid():
            _remove(Path(entry.path))
            removed.append(Path(entry.path))
    return removed


def write_atomic(path, text):
    """Write ``text`` to ``path`` through a temporary file and a rename, so readers never see half a file.

    Parameters
    ----------
    path : str or Path
        The file to write (its folder is created if needed).
    text : str or bytes
        Written as UTF-8 when a str, as is when bytes (e.g. a PNG).
    """
    if isinstance(text, (bytes, bytearray)):
        with atomic_open(path, "wb") as handle:
            handle.write(text)
        return
    with atomic_open(path, "w", encoding="utf-8") as handle:
        handle.write(text)


def write_json(path, data):
    """Write ``data`` as indented JSON through :func:`write_atomic` (numpy scalars written as floats).

    Parameters
    ----------
    path : str or Path
        The file to write.
    data : object
        JSON-serializable data.
    """
    write_atomic(path, json.dumps(data, indent=2, sort_keys=False, default=float) + "\n")

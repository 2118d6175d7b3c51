"""Exclusive ownership of an output path by one run, across processes and containers sharing the file system.

A run that will write ``path`` first claims it with :func:`claim`: an exclusive ``flock`` on the lock file
``.<name>.iokr-lock`` beside it. The lock belongs to the kernel's open file, not to a process id, so it works across
PID namespaces (a container and its host sharing a folder) and is released by the kernel whatever ends the run
(exit, exception, ``kill -9``, a crash): a lock file left behind by a killed run is simply free, never "stale". The
process id written into the lock file is only informational (it is the owner's id in the owner's namespace), for the
message a second writer gets.

While a run holds the claim on ``path``, every temporary named after ``path`` (see :mod:`._atomic`) belongs to a
previous owner that is gone, whatever its process id says: :func:`claim` returns, and the caller sweeps them.

Where ``fcntl`` is missing (Windows) claims are not enforced (:func:`claim` succeeds, nothing is locked).
"""

from __future__ import annotations

import atexit
import contextlib
import os
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no advisory locks of this kind
    fcntl = None

LOCK_SUFFIX = ".iokr-lock"

# real target path -> (file descriptor, lock file path, owner pid); the claims this process holds.
_held = {}
_atexit_registered = False


class OutputInUseError(OSError):
    """Another live iokr run holds the claim on an output path.

    Attributes
    ----------
    path : Path
        The output path.
    pid : int or None
        The owner's process id as it wrote it (in its own PID namespace), when readable.
    """

    def __init__(self, path, pid):
        self.path, self.pid = Path(path), pid
        who = f"pid {pid}" if pid is not None else "pid unknown"
        super().__init__(f"{path} is in use by another iokr run ({who}); wait for it to finish or choose "
                         "another output.")


def lock_path(path):
    """The lock file that guards ``path``: ``<folder>/.<name>.iokr-lock``.

    Parameters
    ----------
    path : str or Path

    Returns
    -------
    lock : Path
    """
    path = Path(path)
    return path.parent / f".{path.name[:200]}{LOCK_SUFFIX}"


def _real(path):
    return Path(os.path.realpath(os.path.expanduser(path)))


def _read_pid(fd):
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
        return int(text) if text.isdigit() else None
    except OSError:
        return None


def is_claimed(path):
    """Tell whether a live run (this one or another) holds the claim on ``path``.

    Parameters
    ----------
    path : str or Path

    Returns
    -------
    claimed : bool
        False when there is no lock file or nobody holds its lock (a killed run's lock file is free).
    """
    real = _real(path)
    if real in _held:
        return True
    if fcntl is None:
        return False
    try:
        fd = os.open(lock_path(real), os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(fd)  # a probe of our own: closing it never releases another open file's lock
    return False


def claim(path, *, wait=False):
    """Claim ``path`` for this process until :func:`release` (or the process's end).

    Claiming a path this process already holds is a no-op. Symbolic links are resolved: two spellings of one place
    are one claim.

    Parameters
    ----------
    path : str or Path
        The output file or folder (it need not exist; its parent folders are created if needed, and removed again
        by :func:`release` when they are still empty, so a run that fails leaves no trace).
    wait : bool, default=False
        Wait for the current owner to finish instead of raising.

    Returns
    -------
    real : Path
        The resolved path that was claimed.

    Raises
    ------
    OutputInUseError
        Another live run holds the claim (only when ``wait`` is False).
    OSError
        The lock file cannot be created (e.g. a read-only folder).
    """
    global _atexit_registered
    real = _real(path)
    if real in _held or fcntl is None:
        return real
    lock = lock_path(real)
    created = [p for p in (lock.parent, *lock.parent.parents) if not p.exists()]  # removed on release when empty
    lock.parent.mkdir(parents=True, exist_ok=True)
    while True:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            pid = _read_pid(fd)
            os.close(fd)
            raise OutputInUseError(real, pid) from None
        except BaseException:
            os.close(fd)
            raise
        # The previous owner unlinks the lock file when it releases: the file we locked may no longer be the one at
        # that name (then another run may hold the new one). Retry on the file the name now points to.
        try:
            current = os.stat(lock)
            mine = os.fstat(fd)
            same = (current.st_dev, current.st_ino) == (mine.st_dev, mine.st_ino)
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    _held[real] = (fd, lock, os.getpid(), created)
    if not _atexit_registered:
        atexit.register(release_all)
        _atexit_registered = True
    return real


def release(path):
    """Give up this process's claim on ``path`` (and remove its lock file); a path not claimed is ignored.

    Parameters
    ----------
    path : str or Path
    """
    entry = _held.pop(_real(path), None)
    if entry is None:
        return
    fd, lock, owner, created = entry
    if owner != os.getpid():  # a forked child's copy of the table: the claim is its parent's
        return
    with contextlib.suppress(OSError):  # unlinked while still locked, so nobody locks the file we drop
        lock.unlink(missing_ok=True)
    os.close(fd)
    for folder in created:  # deepest first; a folder that received the output (or anything else) stays
        try:
            folder.rmdir()
        except OSError:
            break


def release_all():
    """Give up every claim this process holds (called at the end of each command and at exit)."""
    for real in list(_held):
        release(real)


def held():
    """The paths this process has claimed.

    Returns
    -------
    paths : list of Path
    """
    return list(_held)

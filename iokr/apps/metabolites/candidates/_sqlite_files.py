"""SQLite files of iokr (structure databases, candidate stores): which file is ours, and which error is which.

A path is inspected before SQLite opens it, so nothing is written to a file that is not ours: a device, FIFO or
folder is refused (SQLite would create ``/dev/null-journal`` beside ``/dev/null``), as is an empty file or one
without the SQLite header; an SQLite file is read through a read-only connection and refused unless its ``meta``
table names iokr's schema (:func:`read_meta`).

SQLite reports three different situations through its exceptions, which users must tell apart
(:func:`describe_error`): another process holding a lock (``SQLITE_BUSY``/``SQLITE_LOCKED``: wait or stop it),
a full disk (``SQLITE_FULL``/``ENOSPC``: free space; the file is intact), and damage (``SQLITE_CORRUPT``,
``SQLITE_NOTADB``: rebuild).
"""

from __future__ import annotations

import errno
import os
import sqlite3
import stat
from pathlib import Path
from urllib.parse import quote

from ....exceptions import IOKRDataError

SQLITE_HEADER = b"SQLite format 3\x00"
_BUSY, _LOCKED, _FULL, _CORRUPT, _NOTADB = 5, 6, 13, 11, 26
#: What reading a damaged file can raise: SQLite's errors, and a text that is not UTF-8 (Python's sqlite3 raises
#: UnicodeDecodeError for it, even in SQLite's own schema table).
READ_ERRORS = (sqlite3.Error, UnicodeDecodeError)
#: Seconds a connection waits for another process's lock before the file is reported in use.
BUSY_TIMEOUT_S = 5.0


def is_private(path):
    """Whether ``path`` names SQLite's private temporary file (``""``) or an in-memory database."""
    return str(path) in ("", ":memory:")


def inspect_path(path, what):
    """``"new"`` when ``path`` does not exist, ``"sqlite"`` for a regular file with the SQLite header.

    Raises IOKRDataError, before anything opens the file, for a non-regular path (device, FIFO, folder), an empty
    file and a file that is not SQLite; ``what`` names the file's role ("Candidate store").
    """
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return "new"
    except OSError as exc:
        raise IOKRDataError(f"{what} {path} cannot be inspected ({exc.strerror}).") from None
    if not stat.S_ISREG(info.st_mode):
        raise IOKRDataError(f"{what} {path} is not a regular file (a device, FIFO or folder); give the path of an "
                            "SQLite file or of a file to create.")
    if info.st_size == 0:
        raise IOKRDataError(f"{what} {path} is an empty file, not an iokr SQLite file; delete it or give a new path "
                            "(it was left unchanged).")
    try:
        with open(path, "rb") as handle:
            header = handle.read(len(SQLITE_HEADER))
    except OSError as exc:
        raise IOKRDataError(f"{what} {path} cannot be read ({exc.strerror}).") from None
    if header != SQLITE_HEADER:
        raise IOKRDataError(f"{what} {path} is not an SQLite file (its first bytes are {header[:8]!r}); it was "
                            "left unchanged.")
    return "sqlite"


def connect_read_only(path):
    """A read-only connection (nothing is written, no journal created)."""
    return sqlite3.connect(f"file:{quote(str(Path(path).resolve()))}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_S)


def connect(path):
    """A read-write connection waiting :data:`BUSY_TIMEOUT_S` for other processes' locks."""
    return sqlite3.connect(path, timeout=BUSY_TIMEOUT_S)


def read_meta(connection):
    """The ``meta`` table as a dict; ``None`` when the database has no such table (a foreign database).

    Errors other than a missing table propagate (a lock, damage: see :func:`describe_error`).
    """
    tables = {r[0] for r in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if "meta" not in tables:
        return None if tables else {}
    try:
        return {key: value for key, value in connection.execute("SELECT key, value FROM meta")
                if isinstance(key, str)}
    except sqlite3.OperationalError as exc:
        if error_kind(exc) != "other":
            raise
        return None  # a 'meta' table of another shape: another application's


def error_kind(exc):
    """``"locked"``, ``"full"``, ``"damaged"`` or ``"other"`` for one of :data:`READ_ERRORS` or an ``OSError``."""
    if isinstance(exc, OSError):
        return "full" if exc.errno in (errno.ENOSPC, errno.EDQUOT) else "other"
    if isinstance(exc, UnicodeDecodeError):
        return "damaged"
    code = getattr(exc, "sqlite_errorcode", None)
    primary = code & 0xFF if isinstance(code, int) else None
    text = str(exc).lower()
    if primary in (_BUSY, _LOCKED) or "database is locked" in text or "table is locked" in text:
        return "locked"
    if primary == _FULL or "disk is full" in text:
        return "full"
    if primary in (_CORRUPT, _NOTADB) or "malformed" in text or "not a database" in text:
        return "damaged"
    return "other"


def describe_error(exc, what, path, doing="reading", remedy="rebuild it"):
    """An IOKRDataError for ``exc`` raised while ``doing`` ``what`` ``path``: locked, disk full or damaged, named;
    ``remedy`` is said of a damaged file."""
    kind = error_kind(exc)
    if kind == "locked":
        return IOKRDataError(f"{what} {path} is in use by another process (it holds a lock on the file); wait for it "
                             "to finish or stop it, then run again.")
    if kind == "full":
        return IOKRDataError(f"No space left on device while writing {what.lower()} {path}; free some space and run "
                             "again (nothing was kept of this write).")
    if kind == "damaged":
        return IOKRDataError(f"{what} {path} is damaged ({exc}); {remedy}.")
    return IOKRDataError(f"{what} {path} cannot be {'written' if doing == 'writing' else 'read'} ({exc}).")


def remove_with_journal(path):
    """Delete ``path`` and SQLite's rollback journal / WAL files beside it (a failed write leaves none behind)."""
    for suffix in ("", "-journal", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)

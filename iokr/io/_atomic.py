"""Atomic file output: write to a temporary file beside the target, then rename over it."""

from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from pathlib import Path


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
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, mode, **open_kwargs) as handle:
            yield handle
        # mkstemp creates the file readable by its owner only; give it the permissions a plain open() would.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise

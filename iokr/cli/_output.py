"""What every subcommand shares at its boundary: output safety, atomic writes, progress and log lines, tables.

Nothing here imports numpy or the library's numerical layers, so subcommand modules can import it at the top and
``iokr --help`` stays fast.

Outputs never destroy inputs, and are complete or absent:

- :func:`check_outputs` refuses, before any work, an output that is an input (same file, through links too) or a
  folder containing one, an existing output unless ``--overwrite`` is given, and, ``--overwrite`` or not, a device,
  FIFO, socket or other non-regular file, or a folder where a file is expected (and a file where a folder is); it then
  claims each output for the run (:mod:`iokr.io._ownership`: a second run writing the same output, from any process
  or container on the same file system, gets a one-line "in use by another iokr run" error) and sweeps the
  temporaries previous owners left behind;
- :func:`output_folder` writes a result folder under a temporary sibling name and renames it into place at the end;
  :func:`write_atomic` / :func:`write_json` do the same for one file. On any exception, Ctrl-C or SIGTERM the
  temporary is removed; the temporaries of a killed run (SIGKILL, power loss) are swept by the next run.
"""

from __future__ import annotations

import os
import stat
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

# write_atomic / write_json: the one atomic writer of text and JSON, shared with the apps' exporting
from ..io._atomic import (  # noqa: F401 - write_atomic, write_json: imported from here by the commands
    atomic_folder,
    atomic_open,
    sweep_target,
    sweep_temporaries,
    write_atomic,
    write_json,
)
from ..io._ownership import OutputInUseError, claim, held, release, release_all


class CommandError(Exception):
    """An error to report to the user as one line (exit code 2)."""


# Set by ``iokr --quiet`` (see :func:`set_quiet`); read when a progress object is created and by :func:`log`.
_quiet = False


def set_quiet(quiet):
    """Turn progress and log lines off (``True``) or on; return the previous setting.

    Parameters
    ----------
    quiet : bool
        The new setting.

    Returns
    -------
    previous : bool
        The setting before the call, so callers can restore it.
    """
    global _quiet
    previous, _quiet = _quiet, bool(quiet)
    return previous


def is_quiet():
    """Return True when progress and log lines are off (``iokr --quiet``).

    Returns
    -------
    quiet : bool
        The current setting.
    """
    return _quiet


def log(message):
    """Print one status line on stderr, unless ``--quiet``.

    Parameters
    ----------
    message : str
        The line, without its newline.
    """
    if _quiet:
        return
    if "tqdm" in sys.modules and getattr(sys.stderr, "isatty", lambda: False)():
        from tqdm import tqdm

        tqdm.write(message, file=sys.stderr)  # above a live bar, which is redrawn below
    else:
        print(message, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------------------- outputs


def _same_file(a, b):
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _resolved(path):
    return Path(os.path.realpath(os.path.expanduser(path)))


def _is_within(inner, outer):
    return inner == outer or outer in inner.parents


def _items(paths):
    items = paths.items() if hasattr(paths, "items") else ((str(p), p) for p in paths)
    return [(str(option), Path(path)) for option, path in items if path is not None]


def _non_empty(path):
    if not path.is_dir():
        return path.exists() or path.is_symlink()
    with os.scandir(path) as entries:
        return next(entries, None) is not None


def _kind_problem(path, expect):
    """Why ``path`` cannot be written as an output of kind ``expect`` ("file", "folder" or None), or None."""
    try:
        mode = os.stat(path).st_mode  # through links: what would be replaced or written into
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"cannot be inspected ({exc.strerror or exc})"
    if stat.S_ISDIR(mode):
        return "is a folder: expected a file" if expect == "file" else None
    if not stat.S_ISREG(mode):
        kind = ("a character device" if stat.S_ISCHR(mode) else "a block device" if stat.S_ISBLK(mode)
                else "a FIFO (named pipe)" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode)
                else "not a regular file")
        return f"is {kind}; iokr only writes regular files and folders and never replaces other files"
    return "is a file: expected a folder" if expect == "folder" else None


def check_outputs(outputs, inputs=(), *, overwrite=False, expect=None):
    """Refuse outputs that would destroy an input, or an existing result without ``--overwrite``; claim the others.

    Call it before any work. Each output is then claimed for the run (released by :func:`release_outputs`, which
    ``iokr`` calls when a command ends, or at exit), and the temporaries of killed runs beside it are removed.

    Parameters
    ----------
    outputs : dict of {str: path or None}
        Option name as the user typed it (``"--output"``) -> output file or folder. ``None`` values are skipped.
        A plain list of paths is accepted too (the paths then name themselves in messages).
    inputs : dict of {str: path or None}, default=()
        Option name -> input file or folder, as for ``outputs``.
    overwrite : bool, default=False
        Whether existing outputs may be replaced (``--overwrite``). Inputs are protected regardless.
    expect : {"file", "folder"}, optional
        What the outputs are; an existing folder where a file is expected (or a file where a folder is) is refused.

    Raises
    ------
    CommandError
        With a one-line message naming the option(s) and path(s): an output is an input (same file or folder,
        through symbolic or hard links too); an output folder contains an input or the current folder, or is
        inside an input folder; an output
        exists (a folder counts when not empty) and ``overwrite`` is False; an output is a device, FIFO, socket or
        other non-regular file (always), or of the other ``expect`` kind; another live iokr run has claimed it.
    """
    inputs = _items(inputs)
    cwd, home = _resolved(os.getcwd()), _resolved("~")
    for option, path in _items(outputs):
        real = _resolved(path)
        for in_option, in_path in inputs:
            if _same_file(path, in_path) or (in_path.exists() and real == _resolved(in_path)):
                raise CommandError(f"{option} {path} is the same file as {in_option} {in_path}: an output must not "
                                   "replace an input.")
            if path.is_dir() and _is_within(_resolved(in_path), real):
                raise CommandError(f"{option} {path} contains {in_option} {in_path}: choose an output folder that "
                                   "does not hold the inputs.")
            if in_path.is_dir() and real != _resolved(in_path) and _is_within(real, _resolved(in_path)):
                # a folder input is read by listing it: the run would read its own output as it writes it
                raise CommandError(f"{option} {path} is inside {in_option} {in_path}: choose an output folder "
                                   "outside the input folders.")
        if path.is_dir() and (_is_within(cwd, real) or real == home):
            raise CommandError(f"{option} {path} is the current folder, one of its parents or the home folder: "
                               "choose a folder for the results alone.")
        problem = _kind_problem(path, expect)
        if problem is not None:
            raise CommandError(f"{option} {path} {problem}.")
        if not overwrite and _non_empty(path):
            raise CommandError(f"{option} {path} already exists: pass --overwrite to replace it.")
        try:
            claim(real)
        except OutputInUseError as exc:
            raise CommandError(f"{option} {exc}") from None
        except OSError as exc:  # the folder is read-only, missing a parent we may not create, on a full disk...
            raise CommandError(f"{option} {path} cannot be written ({exc.strerror or exc}).") from None
        if not overwrite and _non_empty(path):  # written by a run that released its claim since the check above
            release(real)
            raise CommandError(f"{option} {path} already exists: pass --overwrite to replace it.")
        sweep_target(real)
        sweep_temporaries(real.parent)


def release_outputs():
    """Release every output this process claimed through :func:`check_outputs` (their lock files are removed)."""
    release_all()


@contextmanager
def output_folder(path, *, overwrite=False, inputs=(), option="--output"):
    """Write a result folder completely or not at all.

    Checks the folder with :func:`check_outputs`, then yields an empty temporary sibling folder
    (``.<name>.tmp-<pid>-<random>``) to write into. When the block succeeds the temporary folder is renamed to
    ``path``, replacing the previous folder as a whole (allowed by ``overwrite``); on any exception, Ctrl-C or
    SIGTERM (``iokr`` turns it into an exception) it is removed and ``path`` is left untouched.

    Parameters
    ----------
    path : str or Path
        The result folder.
    overwrite : bool, default=False
        Whether an existing non-empty folder may be replaced.
    inputs : dict of {str: path or None}, default=()
        The command's inputs (option name -> path), which the folder must neither be nor contain.
    option : str, default="--output"
        The option that gave ``path``, for messages.

    Yields
    ------
    tmp : Path
        The temporary folder. Print final paths as ``Path(path) / name``, not under ``tmp``.

    Raises
    ------
    CommandError
        As :func:`check_outputs`, or when ``path`` is an existing file.
    """
    path = Path(path)
    claimed_before = set(held())
    check_outputs({option: path}, inputs, overwrite=overwrite, expect="folder")
    try:
        if path.is_symlink():  # a link to the results' real place: replace the folder it points to, keep the link
            path = Path(os.path.realpath(path))
        with atomic_folder(path) as tmp:
            yield tmp
    finally:
        for real in set(held()) - claimed_before:  # a claim made here ends here; the caller's claims stay
            release(real)


# --------------------------------------------------------------------------------------------------------- progress


class Progress:
    """Progress of one stage on stderr: a bar with ETA on a terminal, a start and an end line otherwise.

    With ``--quiet`` nothing is printed. Call the object to advance: ``progress()`` counts one more step,
    ``progress(done)`` sets the number of steps done. A stage with a known total ends by itself when the count
    reaches it; otherwise call :meth:`close`, or use the object as a context manager.

    Parameters
    ----------
    total : int or None
        Number of steps of the stage; None when unknown.
    label : str
        Name of the stage, e.g. ``"cross-validation fits"``.
    stream : file object, optional
        Where to print (default: ``sys.stderr`` at creation).
    interactive : bool, optional
        Draw a live bar (tqdm) rather than lines (default: whether ``stream`` is a terminal).

    Examples
    --------
    >>> tick = Progress(18, "cross-validation fits")  # doctest: +SKIP
    >>> for fit in fits:  # doctest: +SKIP
    ...     run(fit)
    ...     tick()
    >>> with Progress(None, "reading spectra") as tick:  # doctest: +SKIP
    ...     for record in records:
    ...         tick()
    """

    def __init__(self, total, label, *, stream=None, interactive=None):
        self.total = None if total is None else int(total)
        self.label = label
        self.done = 0
        self.closed = False
        self._stream = sys.stderr if stream is None else stream
        self._quiet = _quiet
        self._start = time.perf_counter()
        self._lock = threading.Lock()
        self._bar = None
        if self._quiet:
            return
        if interactive is None:
            isatty = getattr(self._stream, "isatty", None)
            interactive = bool(isatty and isatty())
        if interactive:
            try:
                from tqdm import tqdm
            except ImportError:  # pragma: no cover - tqdm is a dependency; lines are a fine fallback
                interactive = False
            else:
                self._bar = tqdm(total=self.total, desc=label, file=self._stream, leave=True, dynamic_ncols=True,
                                 mininterval=0.5)
        if not interactive:
            count = "" if self.total is None else f" ({self.total})"
            self._print(f"{label}: started{count}")
        if self.total == 0:
            self.close()

    def _print(self, line):
        print(line, file=self._stream, flush=True)

    def __call__(self, done=None):
        """Count one more step, or set the number of steps done.

        Parameters
        ----------
        done : int, optional
            Number of steps done so far; one more than before when not given.
        """
        with self._lock:
            previous = self.done
            self.done = previous + 1 if done is None else int(done)
            if self.closed:
                return
            if self._bar is not None and self.done > previous:
                self._bar.update(self.done - previous)
            finished = self.total is not None and self.done >= self.total
        if finished:
            self.close()

    def close(self):
        """End the stage: close the bar, or print ``<label>: done in <seconds> s``."""
        with self._lock:
            if self.closed:
                return
            self.closed = True
        if self._quiet:
            return
        if self._bar is not None:
            self._bar.close()
            return
        count = f" ({self.done})" if self.total is None else ""
        self._print(f"{self.label}: done{count} in {time.perf_counter() - self._start:.1f} s")

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, traceback):
        if exc_type is None:
            self.close()
        else:  # the error is reported by the command; leave no "done" line, close a bar where it stopped
            with self._lock:
                self.closed = True
            if self._bar is not None:
                self._bar.close()
        return False


def progress(total, label):
    """Return the progress callback of one stage: ``progress(total, label) -> callable(done=None)``.

    This is the factory the applications' jobs take (``progress=progress``). See :class:`Progress`.

    Parameters
    ----------
    total : int or None
        Number of steps; None when unknown (then close the object, or use it in a ``with`` block).
    label : str
        Name of the stage.

    Returns
    -------
    progress : Progress
        Call it after each step.
    """
    return Progress(total, label)


def format_table(header, rows):
    """Format rows as a plain-text table with right-aligned columns.

    Parameters
    ----------
    header : list of str
        Column names.
    rows : list of list
        Cells (formatted with ``str``).

    Returns
    -------
    table : str
        Header, a dashed rule and the rows, joined by newlines.
    """
    widths = [max(len(str(x)) for x in column) for column in zip(header, *rows, strict=True)]

    def line(values):
        return "  ".join(str(v).rjust(w) for v, w in zip(values, widths, strict=True))

    return "\n".join([line(header), line(["-" * w for w in widths])] + [line(r) for r in rows])

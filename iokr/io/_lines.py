"""Reading untrusted text files line by line with bounded memory.

:func:`iter_lines` is the one line reader of the library's file readers (MassBank JSONL spectra, ARFF, parallel-text
JSONL). It reads incrementally, detects gzip from the content (not the file name), and never holds more than one
line of at most ``max_line_bytes`` bytes: each line is read with ``readline(limit)``, so an over-long line is refused
after ``limit`` bytes, whatever its length in the file. Caps (defaults in :mod:`iokr._config`, changed with
:func:`iokr.set_config` or per call):

- ``max_line_bytes`` (default :data:`MAX_LINE_BYTES`, 16 MiB): longest line, in bytes after decompression;
- ``max_compression_ratio`` (default :data:`MAX_COMPRESSION_RATIO`, 100): once :data:`RATIO_CHECK_BYTES`
  (16 MiB) have been decompressed from a gzip file, the decompressed size may be at most this many times the
  compressed bytes read so far. Real data compresses 3-20 times (the MassBank JSONL about 6); a "gzip bomb"
  (gigabytes of a repeated line) 400-1000 times.

Every failure is one :class:`~iokr.exceptions.IOKRDataError` line naming the file, the line number and the cap or
the cause.
"""

from __future__ import annotations

import gzip
import os
import zlib
from pathlib import Path

from .._config import get_config
from ..exceptions import IOKRDataError

#: Default longest line (bytes after decompression); see :func:`iokr.set_config` (``max_line_bytes``).
MAX_LINE_BYTES = 16 * 2**20
#: Default largest decompressed/compressed ratio; see :func:`iokr.set_config` (``max_compression_ratio``).
MAX_COMPRESSION_RATIO = 100
#: Decompressed bytes after which the compression ratio is checked (small files may compress arbitrarily well).
RATIO_CHECK_BYTES = 16 * 2**20

_GZIP_MAGIC = b"\x1f\x8b"
#: What reading a damaged or truncated stream raises (BadGzipFile is an OSError; zlib.error: damaged deflate data).
_STREAM_ERRORS = (OSError, EOFError, zlib.error)


def check_expansion(decompressed, compressed, *, where, max_compression_ratio=None, error=IOKRDataError):
    """Refuse data that decompressed to more than ``max_compression_ratio`` times its compressed size, once more
    than :data:`RATIO_CHECK_BYTES` have been decompressed (small inputs may compress arbitrarily well).

    The one check of every reader of compressed input (gzip lines, npz members, archives of lists, gzip copies).

    Parameters
    ----------
    decompressed, compressed : int
        Bytes so far (or declared, to refuse before decompressing).
    where : str
        The file (and line or member) for the message.
    max_compression_ratio : float, optional
        The configured ``max_compression_ratio`` when None.
    error : type, default=IOKRDataError
        The exception raised.
    """
    ratio = get_config()["max_compression_ratio"] if max_compression_ratio is None else max_compression_ratio
    if decompressed > RATIO_CHECK_BYTES and decompressed > ratio * max(compressed, 1):
        raise error(f"{where}: {_size(decompressed)} decompressed from {_size(compressed)} (ratio above the "
                    f"max_compression_ratio cap of {ratio:g}); refusing a likely compression bomb (raise the cap "
                    "with iokr.set_config(max_compression_ratio=...) if the file is trusted).")


def _caps(max_line_bytes, max_compression_ratio):
    config = get_config()
    line = config["max_line_bytes"] if max_line_bytes is None else max_line_bytes
    ratio = config["max_compression_ratio"] if max_compression_ratio is None else max_compression_ratio
    if isinstance(line, bool) or not isinstance(line, int) or line < 1:
        raise ValueError(f"'max_line_bytes' must be a positive int (bytes), got {line!r}.")
    if isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or not ratio >= 1:
        raise ValueError(f"'max_compression_ratio' must be a number >= 1, got {ratio!r}.")
    return line, ratio


def _size(n_bytes):
    return f"{n_bytes / 2**20:g} MiB" if n_bytes >= 2**20 else f"{n_bytes} bytes"


def _is_gzip(raw):
    start = raw.tell() if raw.seekable() else None
    if start is None:
        raise ValueError("iter_lines needs a seekable binary handle (to detect gzip from the content).")
    magic = raw.read(2)
    raw.seek(start)
    return magic == _GZIP_MAGIC


#: Windows-1252 leaves five bytes undefined; they are read as the Latin-1 control characters of the same value.
_CP1252_UNDEFINED = {0x81, 0x8D, 0x8F, 0x90, 0x9D}


def _windows_1252(body):
    return "".join(chr(b) if b in _CP1252_UNDEFINED else bytes([b]).decode("cp1252") for b in body) \
        if any(b in _CP1252_UNDEFINED for b in body) else body.decode("cp1252")


class LegacyLines:
    """``on_legacy`` for :func:`iter_lines`: counts the lines read as Windows-1252, and keeps the first one's number.

    Attributes
    ----------
    count : int
    first : int or None
    """

    def __init__(self):
        self.count, self.first = 0, None

    def __call__(self, number):
        self.count += 1
        self.first = number if self.first is None else self.first

    def note(self):
        """``""``, or one phrase for a read's summary: how many lines were not UTF-8 and where the first one is."""
        if not self.count:
            return ""
        return (f"{self.count} line{'s' * (self.count != 1)} not UTF-8, read as Windows-1252 (the first: line "
                f"{self.first})")


def iter_lines(source, *, what, max_line_bytes=None, max_compression_ratio=None, errors="strict",
               on_legacy=None):
    """Yield ``(line_number, text)`` for each line of a plain or gzip-compressed UTF-8 text file.

    Parameters
    ----------
    source : str, Path or binary file object
        A path, or a seekable binary handle (e.g. a tar member); gzip is detected from the first two bytes.
        A handle is not closed.
    what : str
        What the file is, for messages (e.g. ``"Spectra file"``).
    max_line_bytes : int, optional
        Longest accepted line in bytes (after decompression, without its terminator); the configured ``max_line_bytes`` (16 MiB by default) when None.
    max_compression_ratio : float, optional
        Largest decompressed/compressed ratio of a gzip file, checked once :data:`RATIO_CHECK_BYTES` have been
        decompressed; the configured ``max_compression_ratio`` (100 by default) when None.
    errors : {"strict", "replace", "windows-1252"}, default="strict"
        Undecodable UTF-8: an error naming the line; U+FFFD replacement characters (for formats where text fields
        are not used as identifiers); or the line read as Windows-1252 (the Latin-1 superset older Windows tools
        write: ``°``, ``é``, ``µ`` keep their meaning) with ``on_legacy(line_number)`` called, so the reader can
        say so.
    on_legacy : callable, optional
        Called with the line number of each line read as Windows-1252 (``errors="windows-1252"``).

    Whatever ``errors``, a line holding a NUL byte stops the read: text formats never hold one, binary files and
    UTF-16 text (Windows "Unicode text" exports) do; the message says which.

    Yields
    ------
    line_number : int
        1-based.
    text : str
        The line without its terminator (``\\n`` or ``\\r\\n``).

    Raises
    ------
    IOKRDataError
        The file cannot be opened, a line is longer than ``max_line_bytes``, the compression ratio exceeds
        ``max_compression_ratio``, the bytes are not UTF-8 (``errors="strict"``), or the gzip stream is damaged
        or truncated. The message names the file and the line number.

    Examples
    --------
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "a.txt")
    >>> _ = open(path, "w").write("one\\ntwo\\n")
    >>> list(iter_lines(path, what="Example file"))
    [(1, 'one'), (2, 'two')]
    """
    if errors not in ("strict", "replace", "windows-1252"):
        raise ValueError(f"'errors' must be 'strict', 'replace' or 'windows-1252', got {errors!r}.")
    max_line, max_ratio = _caps(max_line_bytes, max_compression_ratio)
    if isinstance(source, (str, os.PathLike)):
        name = os.fspath(source)
        try:
            raw = open(source, "rb")  # noqa: SIM115 - closed in the finally below
        except OSError as exc:
            raise IOKRDataError(f"Cannot read {what.lower()} {name}: {exc.strerror or exc}.") from None
        owned = True
    else:
        raw, owned = source, False
        name = os.fspath(getattr(source, "name", "<stream>")) if isinstance(getattr(source, "name", None),
                                                                        (str, os.PathLike)) else "<stream>"
    number = 0
    try:
        try:
            stream = gzip.GzipFile(fileobj=raw, mode="rb") if _is_gzip(raw) else raw
        except _STREAM_ERRORS as exc:
            raise IOKRDataError(f"{what} {name}: unreadable ({type(exc).__name__}: {exc}).") from None
        compressed = stream is not raw
        start = raw.tell()
        decompressed = 0
        while True:
            try:
                line = stream.readline(max_line + 1)
            except _STREAM_ERRORS as exc:
                raise IOKRDataError(f"{what} {name}: unreadable after line {number} ({type(exc).__name__}: {exc}); "
                                    "the file is truncated or corrupted.") from None
            if not line:
                return
            number += 1
            body = line[:-2] if line.endswith(b"\r\n") else line[:-1] if line.endswith(b"\n") else line
            if len(body) > max_line:
                raise IOKRDataError(f"{what} {name}: line {number} is longer than the {_size(max_line)} cap "
                                    "(max_line_bytes; raise it with iokr.set_config(max_line_bytes=...) if the "
                                    "file is trusted).")
            decompressed += len(line)
            if compressed and decompressed > RATIO_CHECK_BYTES:
                check_expansion(decompressed, raw.tell() - start, where=f"{what} {name}: at line {number}",
                                max_compression_ratio=max_ratio)
            if b"\x00" in body:
                utf16 = number == 1 and body[:2] in (b"\xff\xfe", b"\xfe\xff")
                raise IOKRDataError(f"{what} {name}: " + ("is UTF-16 text; save it as UTF-8." if utf16 else
                                    f"line {number} holds a NUL byte (byte {body.index(0)} of the line): not a text "
                                    "file."))
            try:
                text = body.decode("utf-8", errors="strict" if errors == "windows-1252" else errors)
            except UnicodeDecodeError as exc:
                if errors != "windows-1252":
                    raise IOKRDataError(f"{what} {name}: line {number} is not UTF-8 text (byte {exc.start} of the "
                                        "line).") from None
                text = _windows_1252(body)
                if on_legacy is not None:
                    on_legacy(number)
            yield number, text
    finally:
        if owned:
            raw.close()


def read_capped(source, *, what, max_bytes):
    """All bytes of a small file (e.g. a JSON manifest), refusing files larger than ``max_bytes``.

    Parameters
    ----------
    source : str or Path
    what : str
        What the file is, for messages.
    max_bytes : int

    Returns
    -------
    data : bytes

    Raises
    ------
    IOKRDataError
        The file cannot be read or is larger than ``max_bytes``.
    """
    path = Path(source)
    try:
        with open(path, "rb") as handle:
            data = handle.read(max_bytes + 1)
    except OSError as exc:
        raise IOKRDataError(f"Cannot read {what.lower()} {path}: {exc.strerror or exc}.") from None
    if len(data) > max_bytes:
        raise IOKRDataError(f"{what} {path} is larger than the {_size(max_bytes)} cap for such files.")
    return data

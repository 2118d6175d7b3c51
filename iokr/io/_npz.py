"""Reading ``.npz`` archives defensively: every way a damaged archive fails becomes one typed error."""

from __future__ import annotations

import tokenize
import zipfile
import zlib
from pathlib import Path

import numpy as np

from ..exceptions import IOKRDataError

#: What reading a damaged archive raises: a broken zip directory or member CRC (BadZipFile), a damaged deflate
#: stream (zlib.error), cut-off data (EOFError, OSError), a bad ``.npy`` header or pickled data refused by
#: ``allow_pickle=False`` (ValueError), a member named in the directory but missing (KeyError), an unsupported zip
#: feature (NotImplementedError).
_ARCHIVE_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, EOFError, OSError, ValueError, KeyError,
                   NotImplementedError, SyntaxError, tokenize.TokenError)  # the last two: NumPy parsing a damaged
# .npy header (a Python dict literal) with ast.literal_eval

_HEADER_READERS = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}


def _check_declared_sizes(path, what, error):
    """Each member's ``.npy`` header must declare exactly the bytes the member holds.

    A damaged header could otherwise declare a huge shape, and NumPy allocates the declared array before reading
    (MemoryError instead of a clear message); a member that is not ``.npy`` would come back as raw bytes.
    """
    with zipfile.ZipFile(path) as archive:
        for info in archive.infolist():
            with archive.open(info) as member:
                try:
                    version = np.lib.format.read_magic(member)
                except ValueError:
                    raise error(f"{what} {path}: member {info.filename!r} is not a .npy array.") from None
                if version not in _HEADER_READERS:
                    continue  # newer header versions: np.load still validates them
                shape, _, dtype = _HEADER_READERS[version](member)
                if dtype.hasobject:
                    raise error(f"{what} {path}: member {info.filename!r} holds Python objects (dtype {dtype}); "
                                "only numeric and string arrays are read.")
                n_bytes = int(np.prod(shape, dtype=object)) * dtype.itemsize
                held = info.file_size - member.tell()
                if n_bytes != held:
                    raise error(f"{what} {path}: member {info.filename!r} declares shape {shape} of {dtype} "
                                f"({n_bytes} bytes) but holds {held} bytes; the file is corrupted.")


def read_npz(path, *, what="Archive", error=IOKRDataError):
    """All arrays of an ``.npz`` file, never unpickling anything.

    Parameters
    ----------
    path : str or Path
        The archive.
    what : str, default="Archive"
        What the file is, for messages (e.g. ``"Model file"``).
    error : type, default=IOKRDataError
        The exception raised for an unreadable file (a subclass of :class:`~iokr.exceptions.IOKRDataError`).

    Returns
    -------
    arrays : dict of str to ndarray
        Every member, loaded into memory.

    Raises
    ------
    IOKRDataError
        (or ``error``) The file does not exist, is not an ``.npz`` archive, is truncated or corrupted, or holds
        object arrays or members that are not ``.npy`` arrays.
    """
    if not Path(path).is_file():
        raise error(f"{what} {path} does not exist.")
    try:
        if not zipfile.is_zipfile(path):
            raise error(f"{what} {path} is not an .npz archive (no zip directory); it is truncated or corrupted.")
        _check_declared_sizes(path, what, error)
        with np.load(path, allow_pickle=False) as data:
            arrays = {name: data[name] for name in data.files}
    except error:
        raise
    except _ARCHIVE_ERRORS as exc:
        raise error(f"{what} {path} is truncated or corrupted (not a readable .npz archive: "
                    f"{type(exc).__name__}: {exc}).") from None
    for name, value in arrays.items():
        if not isinstance(value, np.ndarray):  # NpzFile returns the raw bytes of members without a .npy header
            raise error(f"{what} {path}: member {name!r} is not a .npy array.")
    return arrays

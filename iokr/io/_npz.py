"""Reading ``.npz`` archives defensively and with bounded memory.

Every way a damaged archive fails becomes one typed error, and nothing is decompressed before it has been checked:

- from the zip directory alone: duplicate or non-``.npy`` member names, and members not in the expected set;
- from the ``.npy`` header (the first bytes of the member): object dtypes, a declared shape whose bytes differ from
  what the member holds (NumPy would otherwise allocate a damaged header's huge shape before reading), and, for
  numeric and boolean arrays above :data:`~iokr.io.RATIO_CHECK_BYTES` (16 MiB), a decompressed/compressed ratio
  above the ``max_compression_ratio`` cap: a "zip bomb" (a 1 GiB array of zeros deflates to 1 MB) is refused
  without being inflated. String arrays are exempt: their fixed-width padding legitimately compresses 300 times
  and more (the bundled fingerprint cache's ``formula`` member does);
- while streaming: each member is read in 1 MiB chunks into its preallocated array (no second copy), and the chunks
  feed the caller's checksums, so a damaged member is refused before the next one is inflated.
"""

from __future__ import annotations

import tokenize
import zipfile
import zlib
from pathlib import Path

import numpy as np

from .._config import get_config
from ..exceptions import IOKRDataError
from ._lines import RATIO_CHECK_BYTES

#: What reading a damaged archive raises: a broken zip directory or member CRC (BadZipFile), a damaged deflate
#: stream (zlib.error), cut-off data (EOFError, OSError), a bad ``.npy`` header (ValueError), an unsupported zip
#: feature (NotImplementedError), an encrypted member (RuntimeError), NumPy parsing a damaged ``.npy`` header (a
#: Python dict literal) with ``ast.literal_eval`` (SyntaxError, TokenError).
_ARCHIVE_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, EOFError, OSError, ValueError, KeyError,
                   NotImplementedError, RuntimeError, SyntaxError, tokenize.TokenError)

_HEADER_READERS = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}
#: Bytes read from a member at a time.
CHUNK_BYTES = 2**20


def checked_members(archive, path, *, what, error, expected=None):
    """The ``.npy`` members of an open archive by array name, checked from the zip directory only.

    Parameters
    ----------
    archive : zipfile.ZipFile
    path : str or Path
        For messages.
    what : str
    error : type
    expected : set of str, optional
        Array names (without ``.npy``) the archive must hold exactly; an unknown member is refused by name.

    Returns
    -------
    members : dict of str to zipfile.ZipInfo
    """
    members = {}
    for info in archive.infolist():
        if not info.filename.endswith(".npy"):
            raise error(f"{what} {path}: member {info.filename!r} is not a .npy array.")
        name = info.filename[:-4]
        if name in members:
            raise error(f"{what} {path}: member {info.filename!r} appears twice; the file was altered.")
        if expected is not None and name not in expected:
            raise error(f"{what} {path}: unknown member {info.filename!r} (not listed in the file's metadata); the "
                        "file was altered after it was written.")
        members[name] = info
    if expected is not None and set(expected) - set(members):
        missing = sorted(set(expected) - set(members))
        raise error(f"{what} {path}: member(s) {', '.join(repr(m + '.npy') for m in missing)} listed in its "
                    "metadata are missing; the file is truncated or was altered.")
    return members


def read_member(archive, info, path, *, what, error, expect=None, digests=(), on_header=None,
                max_compression_ratio=None):
    """Stream one ``.npy`` member into a new array, feeding its data bytes to ``digests`` chunk by chunk.

    Parameters
    ----------
    archive : zipfile.ZipFile
    info : zipfile.ZipInfo
    path : str or Path
        For messages.
    what : str
    error : type
    expect : (dtype, shape), optional
        The member's header must declare exactly this dtype and shape.
    digests : sequence of hashlib objects
        Updated with the data bytes in C order (the array's ``tobytes()``); for a Fortran-ordered member the
        bytes are converted after reading.
    on_header : callable, optional
        Called as ``on_header(dtype, shape)`` once the header is checked, before any data is read.
    max_compression_ratio : float, optional
        Cap of the decompressed/compressed ratio of a non-string member above 16 MiB; the configured
        ``max_compression_ratio`` when None.

    Returns
    -------
    array : ndarray
    """
    with archive.open(info) as member:
        try:
            version = np.lib.format.read_magic(member)
        except ValueError:
            raise error(f"{what} {path}: member {info.filename!r} is not a .npy array.") from None
        if version not in _HEADER_READERS:
            raise error(f"{what} {path}: member {info.filename!r} has .npy format version {version}; versions 1.0 "
                        "and 2.0 are read.")
        shape, fortran, dtype = _HEADER_READERS[version](member)
        if dtype.hasobject:
            raise error(f"{what} {path}: member {info.filename!r} holds Python objects (dtype {dtype}); "
                        "only numeric and string arrays are read.")
        if expect is not None and (dtype, tuple(shape)) != (np.dtype(expect[0]), tuple(expect[1])):
            raise error(f"{what} {path}: member {info.filename!r} holds {dtype} of shape {shape}, but the metadata "
                        f"declares {np.dtype(expect[0])} of shape {tuple(expect[1])}; the file was altered.")
        n_bytes = int(np.prod(shape, dtype=object)) * dtype.itemsize
        held = info.file_size - member.tell()
        if n_bytes != held:
            raise error(f"{what} {path}: member {info.filename!r} declares shape {shape} of {dtype} "
                        f"({n_bytes} bytes) but holds {held} bytes; the file is corrupted.")
        ratio = get_config()["max_compression_ratio"] if max_compression_ratio is None else max_compression_ratio
        if (dtype.kind not in "US" and info.file_size > RATIO_CHECK_BYTES
                and info.file_size > ratio * max(info.compress_size, 1)):
            raise error(f"{what} {path}: member {info.filename!r} would decompress {info.compress_size} bytes into "
                        f"{info.file_size} (ratio above the max_compression_ratio cap of {ratio:g}); refusing a "
                        "likely compression bomb (raise the cap with iokr.set_config(max_compression_ratio=...) if "
                        "the file is trusted).")
        if on_header is not None:
            on_header(dtype, tuple(shape))
        flat = np.empty(n_bytes, dtype=np.uint8)
        stream_digests = digests if not (fortran and len(shape) > 1) else ()
        done = 0
        while done < n_bytes:
            chunk = member.read(min(CHUNK_BYTES, n_bytes - done))
            if not chunk:
                raise error(f"{what} {path}: member {info.filename!r} ends after {done} of {n_bytes} bytes; the "
                            "file is truncated or corrupted.")
            flat[done:done + len(chunk)] = np.frombuffer(chunk, dtype=np.uint8)
            for digest in stream_digests:
                digest.update(chunk)
            done += len(chunk)
        member.read(1)  # at the member's end: zipfile checks its CRC-32 here
    if dtype.itemsize == 0 or n_bytes == 0:
        array = np.empty(shape, dtype=dtype)
    else:
        array = flat.view(dtype).reshape(shape, order="F" if fortran else "C")
    if fortran and len(shape) > 1:
        for digest in digests:
            digest.update(np.ascontiguousarray(array).tobytes())
    return array


def read_npz(path, *, what="Archive", error=IOKRDataError, members=None, max_compression_ratio=None):
    """All arrays of an ``.npz`` file, never unpickling anything, with memory bounded by the declared sizes.

    Parameters
    ----------
    path : str or Path
        The archive.
    what : str, default="Archive"
        What the file is, for messages (e.g. ``"Model file"``).
    error : type, default=IOKRDataError
        The exception raised for an unreadable file (a subclass of :class:`~iokr.exceptions.IOKRDataError`).
    members : set of str, optional
        Array names the archive must hold exactly (an unknown member is refused before anything is inflated).
    max_compression_ratio : float, optional
        Largest decompressed/compressed ratio of a non-string member above 16 MiB; the configured value when None.

    Returns
    -------
    arrays : dict of str to ndarray
        Every member, loaded into memory.

    Raises
    ------
    IOKRDataError
        (or ``error``) The file does not exist, is not an ``.npz`` archive, is truncated or corrupted, holds object
        arrays, members that are not ``.npy`` arrays, unknown members, or a member above the compression-ratio cap.
    """
    if not Path(path).is_file():
        raise error(f"{what} {path} does not exist.")
    try:
        if not zipfile.is_zipfile(path):
            raise error(f"{what} {path} is not an .npz archive (no zip directory); it is truncated or corrupted.")
        with zipfile.ZipFile(path) as archive:
            infos = checked_members(archive, path, what=what, error=error, expected=members)
            return {name: read_member(archive, info, path, what=what, error=error,
                                      max_compression_ratio=max_compression_ratio) for name, info in infos.items()}
    except error:
        raise
    except _ARCHIVE_ERRORS as exc:
        raise error(f"{what} {path} is truncated or corrupted (not a readable .npz archive: "
                    f"{type(exc).__name__}: {exc}).") from None

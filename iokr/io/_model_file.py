"""Versioned, checksummed model files without pickle.

A model file is a zip archive in NumPy's ``.npz`` layout: one ``.npy`` member per array, plus the member
``__metadata__.npy`` holding UTF-8 JSON (as a uint8 array) with

- ``format``: ``"iokr-model"``, ``format_version``: :data:`FORMAT_VERSION`;
- ``library_version``: the ``iokr`` version that wrote it; ``kind``: which model (e.g. ``"metabolites"``);
- ``members`` (format version 2): per array, ``{"dtype", "shape", "sha256"}`` (SHA-256 of its C-order bytes);
- ``sha256``: digest of every array (name, dtype, shape, bytes, in name order) and of the rest of the metadata;
- whatever the model adds (hyperparameters, kernel parameters, weights, ...).

Loading reads the metadata first (at most :data:`~iokr.io.MAX_JSON_FILE_BYTES`, parsed by
:func:`~iokr.io.loads_json`), then checks the zip directory before inflating anything: no member outside
``members``, none missing, none above the compression-ratio cap. Each array is then streamed into its
preallocated array while its SHA-256 and the file's digest are computed, and a member whose header or checksum does
not match its metadata is refused before the next one is inflated: memory never exceeds the declared arrays plus
one 1 MiB chunk. Version 1 files (no ``members``) are still read, with the directory checks and the streamed
file digest. Object arrays, unknown formats and newer format versions are refused, so truncated, corrupted or
altered files give one clear :class:`ModelFileError`.
"""

from __future__ import annotations

import hashlib
import json
import re
import zipfile
from pathlib import Path

import numpy as np

from .. import __version__
from ..exceptions import IOKRDataError
from ._atomic import atomic_open
from ._json import MAX_JSON_FILE_BYTES, JSONDataError, loads_json
from ._npz import _ARCHIVE_ERRORS, checked_members, read_member

FORMAT = "iokr-model"
#: Version written; versions 1 (no per-member metadata) to this one are read.
FORMAT_VERSION = 2
_META = "__metadata__"
_HEX64 = re.compile(r"[0-9a-f]{64}")


class ModelFileError(IOKRDataError):
    """A model file is missing, truncated, corrupted, or of an unsupported format."""


def _array_prefix(name, dtype, shape):
    # np.ascontiguousarray gives 0-d arrays the shape (1,): files of version 1 were signed that way.
    return f"{name}|{np.dtype(dtype).str}|{tuple(shape) or (1,)}|".encode()


def _metadata_digest(h, metadata):
    meta = {k: v for k, v in metadata.items() if k != "sha256"}
    h.update(json.dumps(meta, sort_keys=True, separators=(",", ":")).encode())
    return h.hexdigest()


def _digest(arrays, metadata):
    h = hashlib.sha256()
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        h.update(_array_prefix(name, a.dtype, arrays[name].shape))
        h.update(a.tobytes())
    return _metadata_digest(h, metadata)


def save_model_file(path, arrays, metadata, *, kind):
    """Write arrays and JSON-serializable metadata to ``path`` atomically.

    Parameters
    ----------
    path : str or Path
    arrays : dict of str to ndarray
        Numeric, boolean or fixed-width string arrays (object arrays are refused).
    metadata : dict
        JSON-serializable; keys ``format``, ``format_version``, ``library_version``, ``kind`` and ``sha256`` are
        set here.
    kind : str

    Returns
    -------
    path : Path
    """
    path = Path(path)
    arrays = {str(k): np.asarray(v) for k, v in arrays.items()}
    for name, a in arrays.items():
        if a.dtype.hasobject:
            raise TypeError(f"Model array {name!r} has dtype object; only numeric and string arrays are stored.")
        if name == _META:
            raise ValueError(f"Array name {_META!r} is reserved.")
    meta = dict(metadata)
    meta.update(format=FORMAT, format_version=FORMAT_VERSION, library_version=__version__, kind=str(kind))
    meta.pop("sha256", None)
    meta["members"] = {name: {"dtype": a.dtype.str, "shape": list(a.shape),
                              "sha256": hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()}
                       for name, a in sorted(arrays.items())}
    try:
        json.dumps(meta)
    except TypeError as exc:
        raise TypeError(f"Model metadata must be JSON-serializable: {exc}") from None
    meta["sha256"] = _digest(arrays, meta)
    payload = dict(arrays)
    payload[_META] = np.frombuffer(json.dumps(meta, sort_keys=True).encode("utf-8"), dtype=np.uint8)
    with atomic_open(path, "wb") as handle:
        np.savez_compressed(handle, **payload)
    return path


def _declared_members(meta, path):
    """``{name: (dtype, shape, sha256)}`` from a version-2 ``members`` field, checked entry by entry."""
    members = meta.get("members")
    if not isinstance(members, dict) or _META in members:
        raise ModelFileError(f"Model file {path} has corrupted metadata (field 'members' must map array names to "
                             f"their dtype, shape and sha256, got {type(members).__name__}).")
    out = {}
    for name, entry in members.items():
        ok = isinstance(entry, dict) and isinstance(entry.get("dtype"), str) and isinstance(entry.get("sha256"), str)
        ok = ok and _HEX64.fullmatch(entry["sha256"]) is not None and isinstance(entry.get("shape"), list)
        ok = ok and all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in entry["shape"])
        try:
            dtype = np.dtype(entry["dtype"]) if ok else None
        except (TypeError, ValueError, SyntaxError):  # SyntaxError: NumPy parses comma strings with literal_eval
            dtype = None
        if dtype is None or dtype.hasobject:
            raise ModelFileError(f"Model file {path} has corrupted metadata (members[{name[:40]!r}] must be "
                                 "{'dtype': numeric or string dtype, 'shape': [int >= 0, ...], 'sha256': hex}).")
        out[name] = (dtype, tuple(entry["shape"]), entry["sha256"])
    return out


def _read_metadata(archive, infos, path):
    if _META not in infos:
        raise ModelFileError(f"Model file {path} has no iokr metadata; it was not written by iokr.")
    if infos[_META].file_size > MAX_JSON_FILE_BYTES + 4096:
        raise ModelFileError(f"Model file {path}: metadata of {infos[_META].file_size} bytes is above the "
                             f"{MAX_JSON_FILE_BYTES} bytes cap; the file is corrupted.")
    raw_meta = read_member(archive, infos[_META], path, what="Model file", error=ModelFileError)
    if raw_meta.dtype != np.uint8 or raw_meta.ndim != 1:
        raise ModelFileError(f"Model file {path} has corrupted metadata (member {_META!r} must be 1-D uint8, got "
                             f"{raw_meta.dtype} of shape {raw_meta.shape}).")
    try:
        meta = loads_json(raw_meta.tobytes(), what=f"Model file {path}", where="metadata")
    except JSONDataError as exc:
        raise ModelFileError(f"Model file {path} has corrupted metadata ({exc.reason}).") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise ModelFileError(f"Model file {path} is not an iokr model file.")
    version = meta.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ModelFileError(f"Model file {path} has an invalid format version {repr(version)[:40]} (expected an int "
                             f"from 1 to {FORMAT_VERSION}); the file is corrupted.")
    if version > FORMAT_VERSION:
        raise ModelFileError(f"Model file {path} has format version {version!r}; this iokr "
                             f"({__version__}) reads versions up to {FORMAT_VERSION}. Upgrade iokr.")
    return meta


def _read_arrays(archive, path, meta):
    """Every array, streamed in name order into the file digest; version 2: checked against ``members`` first."""
    declared = _declared_members(meta, path) if meta["format_version"] >= 2 else None
    expected = None if declared is None else {*declared, _META}
    infos = checked_members(archive, path, what="Model file", error=ModelFileError, expected=expected)
    infos.pop(_META)
    file_digest = hashlib.sha256()
    arrays = {}
    for name in sorted(infos):
        member_digest = hashlib.sha256()
        array = read_member(archive, infos[name], path, what="Model file", error=ModelFileError,
                            expect=None if declared is None else declared[name][:2],
                            digests=(file_digest, member_digest),
                            on_header=lambda dtype, shape, name=name: file_digest.update(
                                _array_prefix(name, dtype, shape)))
        if declared is not None and member_digest.hexdigest() != declared[name][2]:
            raise ModelFileError(f"Model file {path}: member {name + '.npy'!r} failed its SHA-256 check: the file "
                                 "is corrupted or was modified.")
        arrays[name] = array
    return arrays, _metadata_digest(file_digest, meta)


def load_model_file(path, *, kind=None):
    """Read and verify a model file (format versions 1 and 2), inflating nothing before it has been checked.

    Parameters
    ----------
    path : str or Path
    kind : str, optional
        Expected model kind; another kind raises :class:`ModelFileError`.

    Returns
    -------
    arrays : dict of str to ndarray
    metadata : dict

    Raises
    ------
    ModelFileError
        Missing, truncated or corrupted file; metadata that is not UTF-8 JSON (or nested too deeply, or above 64
        MiB); unknown, missing, duplicated or non-``.npy`` members; a member above the compression-ratio cap
        (:func:`iokr.set_config`, ``max_compression_ratio``); a member whose dtype, shape or SHA-256 differs from
        the metadata; a wrong file digest; an unknown format, a newer format version, or another ``kind``.
    """
    path = Path(path)
    if not path.is_file():
        raise ModelFileError(f"Model file {path} does not exist.")
    try:
        if not zipfile.is_zipfile(path):
            raise ModelFileError(f"Model file {path} is not an .npz archive (no zip directory); it is truncated or "
                                 "corrupted.")
        with zipfile.ZipFile(path) as archive:
            infos = checked_members(archive, path, what="Model file", error=ModelFileError)
            meta = _read_metadata(archive, infos, path)
            arrays, digest = _read_arrays(archive, path, meta)
    except ModelFileError:
        raise
    except _ARCHIVE_ERRORS as exc:
        raise ModelFileError(f"Model file {path} is truncated or corrupted (not a readable .npz archive: "
                             f"{type(exc).__name__}: {exc}).") from None
    if meta.get("sha256") != digest:
        raise ModelFileError(f"Model file {path} failed its SHA-256 check: the file is corrupted or was modified.")
    if kind is not None and meta.get("kind") != kind:
        raise ModelFileError(f"Model file {path} holds a {meta.get('kind')!r} model, expected {kind!r}.")
    return arrays, meta

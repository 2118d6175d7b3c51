"""Versioned, checksummed model files without pickle.

A model file is a zip archive in NumPy's ``.npz`` layout: one ``.npy`` member per array, plus the member
``__metadata__.npy`` holding UTF-8 JSON (as a uint8 array) with

- ``format``: ``"iokr-model"``, ``format_version``: :data:`FORMAT_VERSION`;
- ``library_version``: the ``iokr`` version that wrote it; ``kind``: which model (e.g. ``"metabolites"``);
- ``sha256``: digest of every array (name, dtype, shape, bytes, in name order) and of the rest of the metadata;
- whatever the model adds (hyperparameters, kernel parameters, weights, ...).

Loading refuses object arrays (``allow_pickle=False``), unknown formats, newer format versions and any checksum
mismatch, so truncated or corrupted files give one clear :class:`ModelFileError`.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

from ..exceptions import IOKRDataError
from ._atomic import atomic_open
from ._npz import read_npz

FORMAT = "iokr-model"
FORMAT_VERSION = 1
_META = "__metadata__"


class ModelFileError(IOKRDataError):
    """A model file is missing, truncated, corrupted, or of an unsupported format."""


def _library_version():
    try:
        from .. import __version__
    except ImportError:  # pragma: no cover
        return "unknown"
    return __version__


def _digest(arrays, metadata):
    h = hashlib.sha256()
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        h.update(f"{name}|{a.dtype.str}|{a.shape}|".encode())
        h.update(a.tobytes())
    meta = {k: v for k, v in metadata.items() if k != "sha256"}
    h.update(json.dumps(meta, sort_keys=True, separators=(",", ":")).encode())
    return h.hexdigest()


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
    meta.update(format=FORMAT, format_version=FORMAT_VERSION, library_version=_library_version(), kind=str(kind))
    meta.pop("sha256", None)
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


def load_model_file(path, *, kind=None):
    """Read and verify a model file.

    Parameters
    ----------
    path : str or Path
    kind : str, optional
        Expected model kind; another kind raises :class:`ModelFileError`.

    Returns
    -------
    arrays : dict of str to ndarray
    metadata : dict
    """
    path = Path(path)
    arrays = read_npz(path, what="Model file", error=ModelFileError)
    if _META not in arrays:
        raise ModelFileError(f"Model file {path} has no iokr metadata; it was not written by iokr.")
    raw_meta = arrays.pop(_META)
    if raw_meta.dtype != np.uint8 or raw_meta.ndim != 1:
        raise ModelFileError(f"Model file {path} has corrupted metadata (member {_META!r} must be 1-D uint8, got "
                             f"{raw_meta.dtype} of shape {raw_meta.shape}).")
    try:
        meta = json.loads(raw_meta.tobytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelFileError(f"Model file {path} has corrupted metadata (not UTF-8 JSON: {exc}).") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise ModelFileError(f"Model file {path} is not an iokr model file.")
    version = meta.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ModelFileError(f"Model file {path} has an invalid format version {version!r} (expected an int from 1 "
                             f"to {FORMAT_VERSION}); the file is corrupted.")
    if version > FORMAT_VERSION:
        raise ModelFileError(f"Model file {path} has format version {version!r}; this iokr "
                             f"({_library_version()}) reads versions up to {FORMAT_VERSION}. Upgrade iokr.")
    if meta.get("sha256") != _digest(arrays, meta):
        raise ModelFileError(f"Model file {path} failed its SHA-256 check: the file is corrupted or was modified.")
    if kind is not None and meta.get("kind") != kind:
        raise ModelFileError(f"Model file {path} holds a {meta.get('kind')!r} model, expected {kind!r}.")
    return arrays, meta

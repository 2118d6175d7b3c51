"""The fingerprint cache a bundled candidate collection ships: keys and fingerprints by text digest (``.npz``).

Written by :func:`export_fingerprint_cache`, attached with
:meth:`~..candidates._candidate_store.CandidateStore.attach_cache`, so the bundled lists' fingerprints are not
recomputed on every machine.
"""

from __future__ import annotations

import hashlib

import numpy as np
import scipy.sparse as sp

from ....exceptions import IOKRDataError
from ....io import atomic_open

CACHE_MEMBERS = ("digest", "key14", "formula", "indptr", "cols", "vals", "params", "n_features")


def check_cache(path, data, n_features):
    """Shapes, dtypes and ranges of a fingerprint cache's arrays; IOKRDataError naming the first bad member."""
    def bad(name, expected):
        a = data[name]
        raise IOKRDataError(f"Fingerprint cache {path}: array {name!r} must be {expected}, got dtype {a.dtype} "
                            f"and shape {a.shape}.")

    n = data["digest"].shape[0] if data["digest"].ndim == 1 else -1
    if n < 0 or data["digest"].dtype != np.dtype("S8"):
        bad("digest", "a 1-D array of 8-byte digests (S8)")
    for name in ("key14", "formula"):
        if data[name].shape != (n,) or data[name].dtype.kind != "U":
            bad(name, f"a 1-D string array of length {n}")
    nf = data["n_features"]
    if nf.ndim != 0 or nf.dtype.kind not in "iu" or int(nf) != n_features:
        bad("n_features", f"the integer {n_features} (the fingerprint length)")
    indptr, cols, vals = data["indptr"], data["cols"], data["vals"]
    if indptr.shape != (n + 1,) or indptr.dtype.kind not in "iu" or indptr[0] != 0 or np.any(np.diff(indptr) < 0):
        bad("indptr", f"a non-decreasing 1-D integer array of length {n + 1} starting at 0")
    if cols.ndim != 1 or cols.dtype.kind not in "iu" or cols.shape[0] != indptr[-1] \
            or (cols.size and cols.max() >= n_features):
        bad("cols", f"a 1-D integer array of length indptr[-1] with values below {n_features}")
    if vals.shape != cols.shape or vals.dtype != np.uint8:
        bad("vals", "a uint8 array shaped like 'cols'")


def digest(text):
    return hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest()


def export_fingerprint_cache(store, structures, path):
    """Save keys and fingerprints of ``structures`` as a compact ``.npz`` (no pickle), keyed by text digests.

    Lets a bundled candidate collection ship its fingerprints so they are not recomputed on every machine
    (:meth:`CandidateStore.attach_cache`); the fingerprint parameters are stored and checked on attach.
    Layout: 8-byte BLAKE2b digests of the input texts, first InChIKey blocks, formulas, and the fingerprints as
    CSR (``indptr``, uint16 ``cols``, uint8 ``vals``).
    """
    structures = list(dict.fromkeys(s for s in structures if isinstance(s, str)))
    keys, ok = store.keys_for(structures)
    structures = [s for s, good in zip(structures, ok, strict=True) if good]
    keys = [k for k, good in zip(keys, ok, strict=True) if good]
    write_fingerprint_cache(path, structures, keys, [store.formula_of(s) or "" for s in structures],
                            store.fingerprints(structures), store.fingerprinter)


def write_fingerprint_cache(path, texts, key14, formulas, fingerprints, fingerprinter):
    """Write a cache (:func:`export_fingerprint_cache`'s layout) from fingerprints already computed, e.g. read from
    a structure store: ``texts`` (n) are the structures as written in the table that will be looked up,
    ``key14`` and ``formulas`` (n) theirs, ``fingerprints`` an array or sparse matrix of shape (n, n_features) of
    ``fingerprinter``'s kind (values 0-255)."""
    csr = sp.csr_matrix(fingerprints)
    if csr.shape != (len(texts), fingerprinter.n_features) or not len(key14) == len(texts) == len(formulas):
        raise ValueError(f"fingerprint cache: {len(texts)} texts, {len(key14)} keys, {len(formulas)} formulas and "
                         f"fingerprints of shape {csr.shape}; expected one row of {fingerprinter.n_features} each")
    with atomic_open(path, "wb") as handle:  # a cache is whole or absent
        np.savez_compressed(
            handle, digest=np.array([digest(s) for s in texts], dtype="S8"), key14=np.array(list(key14)),
            formula=np.array(list(formulas)), indptr=csr.indptr.astype(np.int64),
            cols=csr.indices.astype(np.uint16), vals=csr.data.astype(np.uint8),
            params=np.array(repr(sorted(fingerprinter.params().items()))), n_features=np.array(csr.shape[1]))

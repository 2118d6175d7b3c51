"""Candidate pools on disk: a raw row-major data file plus a JSON manifest with per-block checksums.

A pool of 10^7 fingerprints does not fit the working-memory budget, so scoring reads it in row blocks. Reading from
a file opens two failure modes that a memory array does not have, and both must stop the run instead of producing
rankings that look complete:

- the file changes underneath the run (rewritten, appended to, truncated): the size and modification time recorded
  when the file was opened are compared with ``os.fstat`` before and after every read;
- a block is damaged or cut short: every block has a CRC-32 in the manifest, checked the first time the block is
  read (``verify="once"``) or at every read (``verify="always"``); a short read is an error.

Reads use ``os.pread`` rather than a memory map: touching a mapped page past the end of a file truncated after it was
mapped kills the process with SIGBUS, while a short ``pread`` is an ordinary, reportable error.

Layout: ``<path>`` holds the rows back to back (``dtype`` as stored, C order); ``<path>.json`` holds
``{"format", "dtype", "n_rows", "row_width", "n_features", "packed", "block_rows", "crc32": [...]}``. Packed pools
store ``np.packbits`` rows (uint8) and are read back as float32 0/1 rows, like
:class:`~iokr.decoding.PackedBinaryFeatures`.
"""

from __future__ import annotations

import contextlib
import json
import os
import zlib

import numpy as np

from ..exceptions import IOKRDataError
from ..io import load_json_file
from ._candidates import PackedBinaryFeatures

FORMAT = "iokr-candidates-1"
VERIFY_MODES = ("once", "always")


def _manifest_path(path):
    return os.fspath(path) + ".json"


class CandidateFileWriter:
    """Write a candidate pool block by block (the pool never needs to be in memory).

    Parameters
    ----------
    path : str or path-like
        Data file; the manifest goes to ``path + ".json"`` when the writer is closed.
    n_features : int
        Features per candidate (bits, when ``packed``).
    dtype : dtype, default=float32
        Stored dtype of unpacked rows (ignored when ``packed``).
    packed : bool, default=False
        Store 0/1 rows bit-packed (8 features per byte).
    block_rows : int, default=65536
        Rows per checksummed block.

    Examples
    --------
    >>> import numpy as np, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "pool.bin")
    >>> with CandidateFileWriter(path, n_features=3, packed=True, block_rows=2) as writer:
    ...     writer.append(np.array([[1, 0, 1], [0, 1, 1], [1, 1, 1]]))
    >>> CandidateFile(path)[1:3]
    array([[0., 1., 1.],
           [1., 1., 1.]], dtype=float32)
    """

    def __init__(self, path, n_features, *, dtype=np.float32, packed=False, block_rows=65536):
        if int(block_rows) < 1:
            raise ValueError(f"'block_rows' must be a positive int, got {block_rows!r}.")
        self.path = os.fspath(path)
        self.n_features = int(n_features)
        self.packed = bool(packed)
        self.dtype = np.dtype(np.uint8 if self.packed else dtype)
        self.row_width = (self.n_features + 7) // 8 if self.packed else self.n_features
        self.block_rows = int(block_rows)
        self._crcs, self._pending, self._n_rows = [], [], 0
        self._file = open(self.path, "wb")  # noqa: SIM115 - held open across append() calls, closed by close()

    def append(self, rows):
        """Append candidate rows.

        Parameters
        ----------
        rows : array-like of shape (n, n_features) or PackedBinaryFeatures
            Candidate features (0/1 when ``packed``); a :class:`PackedBinaryFeatures` is appended as packed bytes
            (packed files only).
        """
        if isinstance(rows, PackedBinaryFeatures):
            if not self.packed or rows.n_features != self.n_features:
                raise ValueError("PackedBinaryFeatures can only be appended to a packed file with the same n_features.")
            data = np.asarray(rows.packed, dtype=np.uint8)
        else:
            rows = np.asarray(rows)
            if rows.ndim != 2 or rows.shape[1] != self.n_features:
                raise ValueError(f"'rows' must have shape (n, {self.n_features}), got {rows.shape}.")
            if self.packed:
                if rows.size and not np.isin(rows, (0, 1)).all():
                    raise ValueError("A packed candidate file stores 0/1 features; 'rows' has other values.")
                data = np.packbits(rows.astype(np.uint8), axis=1)
            else:
                data = np.ascontiguousarray(rows, dtype=self.dtype)
        self._pending.append(np.ascontiguousarray(data))
        pending_rows = sum(p.shape[0] for p in self._pending)
        if pending_rows >= self.block_rows:
            self._flush(final=False)

    def _flush(self, final):
        data = np.concatenate(self._pending) if self._pending else np.zeros((0, self.row_width), self.dtype)
        n_full = data.shape[0] if final else data.shape[0] - data.shape[0] % self.block_rows
        for start in range(0, n_full, self.block_rows):
            block = data[start:start + self.block_rows]
            raw = block.tobytes()
            self._file.write(raw)
            self._crcs.append(zlib.crc32(raw))
            self._n_rows += block.shape[0]
        self._pending = [data[n_full:]] if n_full < data.shape[0] else []

    def close(self):
        """Write the last block and the manifest."""
        if self._file.closed:
            return
        self._flush(final=True)
        self._file.close()
        manifest = {"format": FORMAT, "dtype": self.dtype.str, "n_rows": self._n_rows, "row_width": self.row_width,
                    "n_features": self.n_features, "packed": self.packed, "block_rows": self.block_rows,
                    "crc32": self._crcs}
        with open(_manifest_path(self.path), "w") as f:
            json.dump(manifest, f)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def write_candidate_file(path, pool, *, packed=None, block_rows=65536, dtype=None):
    """Write a candidate pool to disk and open it as a :class:`CandidateFile`.

    Parameters
    ----------
    path : str or path-like
        Data file; the manifest goes to ``path + ".json"``.
    pool : ndarray, memmap or PackedBinaryFeatures of shape (n_rows, n_features)
        The candidate rows, written block by block.
    packed : bool, optional
        Store 0/1 rows bit-packed; True for a :class:`PackedBinaryFeatures` pool, False otherwise by default.
    block_rows : int, default=65536
        Rows per checksummed block.
    dtype : dtype, optional
        Stored dtype of unpacked rows; the pool's dtype (float32 for a packed pool) by default.

    Returns
    -------
    candidate_file : CandidateFile
        The written pool, opened for reading.
    """
    is_packed = isinstance(pool, PackedBinaryFeatures)
    packed = is_packed if packed is None else bool(packed)
    n_features = pool.shape[1]
    store_dtype = dtype or (np.float32 if is_packed else np.asarray(pool[:0]).dtype)
    with CandidateFileWriter(path, n_features, dtype=store_dtype, packed=packed, block_rows=block_rows) as writer:
        for start in range(0, pool.shape[0], block_rows):
            stop = min(start + block_rows, pool.shape[0])
            if is_packed and packed:
                writer.append(PackedBinaryFeatures(pool.packed[start:stop], n_features))
            else:
                writer.append(np.asarray(pool[start:stop]))
    return CandidateFile(path)


def _read_manifest(path):
    """The manifest at ``path``, checked field by field; IOKRDataError naming the file and the first bad field."""
    # At most 64 MiB, nesting and integer length bounded (iokr.io.load_json_file); one line naming the file.
    manifest = load_json_file(path, what="Candidate-file manifest")
    if not isinstance(manifest, dict):
        raise IOKRDataError(f"{path!r} is not a candidate-file manifest: expected a JSON object, got "
                            f"{type(manifest).__name__}.")
    if manifest.get("format") != FORMAT:
        raise IOKRDataError(f"{path!r} is not an {FORMAT} manifest (format={str(manifest.get('format'))[:40]!r}).")

    def field(name, ok, expected):
        if name not in manifest:
            raise IOKRDataError(f"Manifest {path!r} lacks the field {name!r}.")
        value = manifest[name]
        if not ok(value):
            shown = repr(value) if len(repr(value)) <= 80 else repr(value)[:80] + "..."
            raise IOKRDataError(f"Manifest {path!r}: field {name!r} must be {expected}, got {shown}.")
        return value

    def count(v, low=0):
        return isinstance(v, int) and not isinstance(v, bool) and v >= low

    def numeric_dtype(v):
        try:
            dt = np.dtype(v)
        except (TypeError, ValueError, SyntaxError):  # SyntaxError: NumPy parses comma strings with literal_eval
            return False
        return dt.kind in "biuf" and dt.itemsize > 0

    out = {"format": FORMAT}
    out["dtype"] = field("dtype", lambda v: isinstance(v, str) and numeric_dtype(v), "a numeric NumPy dtype string")
    for name in ("n_rows", "row_width", "n_features"):
        out[name] = field(name, count, "a non-negative int")
    out["block_rows"] = field("block_rows", lambda v: count(v, 1), "a positive int")
    out["packed"] = field("packed", lambda v: isinstance(v, bool), "true or false")
    out["crc32"] = field("crc32", lambda v: isinstance(v, list) and all(count(c) and c < 2**32 for c in v),
                         "a list of CRC-32 values (ints in [0, 2**32))")
    width = (out["n_features"] + 7) // 8 if out["packed"] else out["n_features"]
    if out["row_width"] != width or (out["packed"] and np.dtype(out["dtype"]) != np.uint8):
        raise IOKRDataError(f"Manifest {path!r}: field 'row_width' ({out['row_width']}) and dtype "
                            f"{out['dtype']!r} do not match n_features={out['n_features']} "
                            f"(packed={out['packed']}).")
    return {**manifest, **out}


class CandidateFile:
    """A candidate pool read from disk in row blocks, with change and damage detection.

    Behaves as a read-only 2-D array for scoring: ``shape``, ``ndim``, ``dtype``, ``len`` and row indexing by a
    slice, an int or an integer array. Usable anywhere a pool is (:class:`~iokr.decoding.CandidateSets`,
    ``decision_function``, ``rank``). Pickles as its path (each process reopens and re-verifies it).

    Parameters
    ----------
    path : str or path-like
        Data file written by :class:`CandidateFileWriter` (manifest at ``path + ".json"``).
    verify : {"once", "always"}, default="once"
        Check each block's CRC-32 the first time it is read, or at every read.

    Raises
    ------
    IOKRDataError
        Missing or malformed manifest, a data file whose size does not match it (truncated or extended), a block
        whose checksum does not match, or a file that changed (size or modification time) after it was opened.
    """

    def __init__(self, path, verify="once"):
        if verify not in VERIFY_MODES:
            raise ValueError(f"'verify' must be one of {VERIFY_MODES}, got {verify!r}.")
        self.path = os.fspath(path)
        self.verify = verify
        manifest = _read_manifest(_manifest_path(self.path))
        self.manifest = manifest
        self.stored_dtype = np.dtype(manifest["dtype"])
        self.n_rows, self.row_width = manifest["n_rows"], manifest["row_width"]
        self.n_features, self.packed = manifest["n_features"], manifest["packed"]
        self.block_rows = manifest["block_rows"]
        self.crc32 = list(manifest["crc32"])
        self.row_bytes = self.row_width * self.stored_dtype.itemsize
        expected_blocks = -(-self.n_rows // self.block_rows) if self.n_rows else 0
        if len(self.crc32) != expected_blocks:
            raise IOKRDataError(f"Manifest of {self.path!r} lists {len(self.crc32)} block checksums for "
                                f"{self.n_rows} rows in blocks of {self.block_rows} ({expected_blocks} expected).")
        self._open()

    def _open(self):
        try:
            self._fd = os.open(self.path, os.O_RDONLY)
        except OSError as exc:
            raise IOKRDataError(f"Cannot open candidate file {self.path!r}: {exc.strerror or exc}.") from None
        st = os.fstat(self._fd)
        expected = self.n_rows * self.row_bytes
        if st.st_size != expected:
            os.close(self._fd)
            kind = "truncated" if st.st_size < expected else "longer than its manifest"
            raise IOKRDataError(f"Candidate file {self.path!r} is {kind}: {st.st_size} bytes, the manifest "
                                f"describes {self.n_rows} rows x {self.row_bytes} bytes = {expected} bytes.")
        self._stat = (st.st_size, st.st_mtime_ns)
        self._verified = np.zeros(len(self.crc32), dtype=bool)

    # -- array protocol used by the scoring code -----------------------------------------------------------------
    ndim = 2

    @property
    def shape(self):
        """Shape ``(n_rows, n_features)`` of the pool as read."""
        return (self.n_rows, self.n_features)

    @property
    def dtype(self):
        """Dtype of the rows as read: float32 for packed files, the stored dtype otherwise."""
        return np.dtype(np.float32) if self.packed else self.stored_dtype

    def __len__(self):
        return self.n_rows

    def __getitem__(self, rows):
        if isinstance(rows, tuple):
            raise IndexError("CandidateFile supports row indexing only (a slice, an int or an integer array).")
        if isinstance(rows, slice):
            start, stop, step = rows.indices(self.n_rows)
            if step != 1:
                return self[np.arange(start, stop, step)]
            data = self._read_rows(start, max(stop, start))
        elif isinstance(rows, (int, np.integer)):
            row = int(rows) + (self.n_rows if rows < 0 else 0)
            if not 0 <= row < self.n_rows:
                raise IndexError(f"Row {rows} is out of range for a pool of {self.n_rows} candidates.")
            return self[row:row + 1][0]
        else:
            idx = np.asarray(rows)
            if idx.dtype == bool:
                idx = np.flatnonzero(idx)
            idx = np.where(idx < 0, idx + self.n_rows, idx).astype(np.intp)
            if idx.size and (idx.min() < 0 or idx.max() >= self.n_rows):
                raise IndexError(f"Row indices out of range for a pool of {self.n_rows} candidates.")
            if idx.size == 0:
                data = np.zeros((0, self.row_width), dtype=self.stored_dtype)
            else:
                lo, hi = int(idx.min()), int(idx.max()) + 1
                # One contiguous read of the covering range when it is dense enough, else block by block.
                if hi - lo <= 4 * idx.size + self.block_rows:
                    data = self._read_rows(lo, hi)[idx - lo]
                else:
                    blocks = np.unique(idx // self.block_rows)
                    parts = {int(b): self._read_rows(int(b) * self.block_rows,
                                                     min((int(b) + 1) * self.block_rows, self.n_rows)) for b in blocks}
                    data = np.stack([parts[int(i) // self.block_rows][int(i) % self.block_rows] for i in idx])
        if self.packed:
            return np.unpackbits(data, axis=1, count=self.n_features).astype(np.float32)
        return data

    def packed_rows(self, start, stop):
        """Read raw packed uint8 rows ``[start, stop)`` (packed files only), verified like every read.

        Parameters
        ----------
        start, stop : int
            Row range, ``0 <= start <= stop <= n_rows``.

        Returns
        -------
        rows : ndarray of shape (stop - start, row_width), uint8
            The rows as stored (8 features per byte).
        """
        if not self.packed:
            raise ValueError(f"{self.path!r} is not a packed candidate file.")
        return self._read_rows(start, stop)

    # -- verified reads ------------------------------------------------------------------------------------------
    def _check_unchanged(self):
        st = os.fstat(self._fd)
        path_st = os.stat(self.path)
        if (st.st_size, st.st_mtime_ns) != self._stat or (path_st.st_ino, path_st.st_dev) != (st.st_ino, st.st_dev):
            raise IOKRDataError(
                f"Candidate file {self.path!r} changed while it was in use (size/modification time or the file "
                f"itself differ from when it was opened); results computed from it would mix two versions. "
                f"Reopen it and start the run again."
            )

    def _read_rows(self, start, stop):
        if stop <= start:
            return np.zeros((0, self.row_width), dtype=self.stored_dtype)
        self._check_unchanged()
        first, last = start // self.block_rows, (stop - 1) // self.block_rows
        check = [b for b in range(first, last + 1) if self.verify == "always" or not self._verified[b]]
        # Read whole blocks when some must be verified, so their checksums can be computed.
        read_start = first * self.block_rows if check else start
        read_stop = min((last + 1) * self.block_rows, self.n_rows) if check else stop
        n_bytes = (read_stop - read_start) * self.row_bytes
        buffer = np.empty(n_bytes, dtype=np.uint8)
        got = os.preadv(self._fd, [buffer], read_start * self.row_bytes) if n_bytes else 0
        if got != n_bytes:
            raise IOKRDataError(f"Candidate file {self.path!r}: short read at rows [{read_start}, {read_stop}) "
                                f"({got} of {n_bytes} bytes); the file is truncated.")
        for b in check:
            lo = (b * self.block_rows - read_start) * self.row_bytes
            hi = (min((b + 1) * self.block_rows, self.n_rows) - read_start) * self.row_bytes
            if zlib.crc32(buffer[lo:hi]) != self.crc32[b]:
                raise IOKRDataError(f"Candidate file {self.path!r}: block {b} (rows {b * self.block_rows}...) does "
                                    "not match its checksum; the file is damaged or was modified.")
            self._verified[b] = True
        self._check_unchanged()  # a change during the read would have mixed versions in this block
        data = buffer.view(self.stored_dtype).reshape(read_stop - read_start, self.row_width)
        return data[start - read_start:stop - read_start]

    # -- lifecycle ------------------------------------------------------------------------------------------------
    def close(self):
        """Close the file descriptor (reading afterwards is an error)."""
        if getattr(self, "_fd", None) is not None:
            os.close(self._fd)
            self._fd = None

    def __del__(self):
        with contextlib.suppress(Exception):  # interpreter shutdown
            self.close()

    def __getstate__(self):
        return {"path": self.path, "verify": self.verify, "stat": self._stat}

    def __setstate__(self, state):
        self.__init__(state["path"], state["verify"])
        if self._stat != tuple(state["stat"]):
            raise IOKRDataError(f"Candidate file {self.path!r} differs (size/modification time) from the copy the "
                                "run was started with; a worker would score another version of the pool.")

    def __repr__(self):
        return (f"CandidateFile({self.path!r}, n_rows={self.n_rows}, n_features={self.n_features}, "
                f"packed={self.packed})")

"""A structure store that is a folder of shards by mass range, read shard by shard.

``iokr metabolites index TABLE --output STORE`` (a path without ``.sqlite``) writes::

    STORE/iokr-store.json            the manifest: written last, the store exists only once it does
    STORE/generation-<G>/shard-<B>.sqlite
                                     structures of monoisotopic mass in [B * width, (B + 1) * width) Da, each a
                                     version-3 structure database (:mod:`._database`) whose row ids are the
                                     structures' positions in the store's input rows (1-based, over every table
                                     appended)
    STORE/build/                     an unfinished build (parts parsed so far, :mod:`._shard_build`); absent once
                                     the manifest names the generation it built

The manifest names the format (:data:`STORE_SCHEMA`, :data:`STORE_FORMAT`), the fingerprint, the user's columns, the
shard width and, per shard, its file, mass range, number of structures and size in bytes, and carries a checksum of
its own content. Opening checks the manifest and that every shard it names exists with its recorded size: a shard
deleted or truncated by hand is named in a one-line error, and a folder holding only an unfinished build is refused
as half-built (never read). Each shard is opened (and its own metadata checksum verified) on first use.

Ids handed out by lookups are ``position * 2**16 + shard bin``: sorting them orders candidates by their position in
the input, exactly the order a single-file database of the same table gives them.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from .... import __version__
from ....decoding import CountFeatures, PackedBinaryFeatures
from ....exceptions import IOKRDataError
from ..chemistry._fingerprints import Fingerprinter
from ..chemistry._formulas import FormulaError
from ..chemistry._structures import formula_mass
from ._database import StructureDatabase
from ._store_format import decode_compact, row_checksum

STORE_SCHEMA = "iokr-structure-store"
#: 1: shards by mass range, each a version-3 structure database.
STORE_FORMAT = 1
MANIFEST = "iokr-store.json"
BUILD_FOLDER = "build"
#: Shard bins are numbered below this (ids keep the bin in their low 16 bits).
N_BINS = 1 << 16
_BIN_BITS = 16
#: Daltons around a formula's computed mass whose shards a formula lookup reads (stored and computed masses of one
#: formula agree to far less; the margin only keeps rounding at a shard boundary harmless).
FORMULA_MARGIN = 0.5


def manifest_checksum(manifest):
    """CRC32 of a manifest's content (every key but ``checksum``, as sorted JSON)."""
    body = {k: v for k, v in manifest.items() if k != "checksum"}
    return row_checksum([json.dumps(body, sort_keys=True)])


def manifest_text(manifest):
    """The manifest as written: sorted keys, with its checksum (the same bytes for the same store)."""
    manifest = {**manifest, "checksum": manifest_checksum(manifest)}
    return json.dumps(manifest, sort_keys=True, indent=1) + "\n"


def bin_of(mass, width):
    """The shard bin of a monoisotopic mass: ``floor(mass / width)``, the last bin holding everything beyond."""
    return min(int(mass // width), N_BINS - 1)


def is_store_folder(path):
    """Tell whether ``path`` is a folder holding a sharded store's manifest, an unfinished build of one, or shards.

    Parameters
    ----------
    path : str or Path
        Any path.

    Returns
    -------
    is_store : bool
        True for a store folder, finished or not (opening it says which).
    """
    path = Path(path)
    return path.is_dir() and ((path / MANIFEST).exists() or (path / BUILD_FOLDER / "plan.json").exists()
                              or any(path.glob("generation-*/shard-*.sqlite")))


def read_manifest(path):
    """The manifest of the store folder ``path`` (checked), or None when the folder has none.

    Raises IOKRDataError for a manifest that is not JSON, fails its checksum, or names another format.
    """
    path = Path(path)
    where = f"Structure store {path}"
    try:
        text = (path / MANIFEST).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise IOKRDataError(f"{where}: its manifest {MANIFEST} cannot be read ({exc}).") from None
    try:
        manifest = json.loads(text)
    except ValueError:
        raise IOKRDataError(f"{where} is damaged: {MANIFEST} is not JSON; rebuild it with 'iokr metabolites "
                            "index'.") from None
    if not isinstance(manifest, dict) or manifest.get("schema") != STORE_SCHEMA:
        raise IOKRDataError(f"{where}: {MANIFEST} is not an iokr structure store manifest (no '{STORE_SCHEMA}' "
                            "schema).")
    if manifest.get("format") != STORE_FORMAT:
        raise IOKRDataError(f"{where} has store format {manifest.get('format')!r}; this iokr ({__version__}) reads "
                            f"format {STORE_FORMAT}: re-index it with 'iokr metabolites index'.")
    if manifest.get("checksum") != manifest_checksum(manifest):
        raise IOKRDataError(f"{where} is damaged: {MANIFEST} does not match its checksum; rebuild it with 'iokr "
                            "metabolites index'.")
    return manifest


class ShardedStructureDatabase:
    """A folder of structure-database shards by mass range, answering as one :class:`StructureDatabase`.

    Parameters
    ----------
    path : str or Path
        The store folder (see the module docstring).

    Attributes
    ----------
    path : str
    version : int
        The shards' database version (3).
    fingerprint : dict
    fingerprinter : Fingerprinter
    user_columns : list of str
    n_structures : int
    shard_width : float
        Daltons per shard.
    shards : dict of {int: dict}
        Per bin: ``file``, ``low``, ``high``, ``n_structures``, ``bytes`` (from the manifest).
    """

    #: Whether a path is a store folder (finished or not): :func:`is_store_folder`.
    is_store = staticmethod(is_store_folder)

    def __init__(self, path):
        self.path = str(path)
        folder = Path(path)
        manifest = read_manifest(folder) if folder.is_dir() else None
        if manifest is None:
            if (folder / BUILD_FOLDER).is_dir():
                raise IOKRDataError(f"Structure store {folder} is half-built (a build stopped before it finished); "
                                    "run the same 'iokr metabolites index' command again to finish it.")
            if any(folder.glob("generation-*/shard-*.sqlite")):
                raise IOKRDataError(f"Structure store {folder} is damaged: its manifest {MANIFEST} is missing; "
                                    "rebuild it with 'iokr metabolites index'.")
            raise IOKRDataError(f"Structure store {folder} is not a structure store folder (no {MANIFEST}); build "
                                "one with 'iokr metabolites index TABLE --output FOLDER'.")
        try:
            self.fingerprint = manifest["fingerprint"]
            self.fingerprinter = Fingerprinter(**self.fingerprint)
            self.user_columns = list(manifest["columns"])
            self.n_structures = int(manifest["n_structures"])
            self.shard_width = float(manifest["shard_width"])
            self.shards = {int(s["bin"]): s for s in manifest["shards"]}
            self.generation = int(manifest["generation"])
        except (KeyError, ValueError, TypeError) as exc:
            raise IOKRDataError(f"Structure store {folder} has a damaged manifest ({exc!r}).") from None
        self.version = 3
        self.manifest = manifest
        for shard in self.shards.values():
            self._check_file(shard)
        self._open = {}

    def _check_file(self, shard):
        file = Path(self.path) / shard["file"]
        try:
            size = os.stat(file).st_size
        except FileNotFoundError:
            raise IOKRDataError(f"Structure store {self.path} is missing its shard {shard['file']} (masses "
                                f"{shard['low']:g}-{shard['high']:g} Da); rebuild the store with 'iokr metabolites "
                                "index'.") from None
        if size != shard["bytes"]:
            raise IOKRDataError(f"Structure store {self.path}: shard {shard['file']} holds {size} bytes, not the "
                                f"{shard['bytes']} it was written with (truncated or changed); rebuild the store "
                                "with 'iokr metabolites index'.")

    def shard(self, b):
        """Return the structure database of one shard, opened and checked against the manifest on first use.

        Parameters
        ----------
        b : int
            The shard's bin (a key of :attr:`shards`).

        Returns
        -------
        db : StructureDatabase
            The shard, kept open for later calls (until :meth:`close`).
        """
        db = self._open.get(b)
        if db is None:
            info = self.shards[b]
            self._check_file(info)
            db = StructureDatabase(Path(self.path) / info["file"])
            if db.fingerprint != self.fingerprint or db.n_structures != info["n_structures"] \
                    or db.user_columns != self.user_columns:
                db.close()
                raise IOKRDataError(f"Structure store {self.path}: shard {info['file']} does not hold what the "
                                    "manifest says (fingerprint, columns or number of structures); rebuild the store.")
            self._open[b] = db
        return db

    # -- lookups ----------------------------------------------------------------------------------------------------
    def _merged(self, per_bin):
        ids = [(local << _BIN_BITS) | b for b, local in per_bin if local.size]
        return np.sort(np.concatenate(ids)) if ids else np.zeros(0, dtype=np.int64)

    def by_formula(self, formula):
        """Return the ids of the structures of one canonical formula, in input order.

        Only the shards within :data:`FORMULA_MARGIN` Da of the formula's mass are read (stored masses are the
        formula's, neutral-equivalent for charged parents); every shard when the text is no formula this iokr can
        weigh.

        Parameters
        ----------
        formula : str
            Canonical (Hill) molecular formula.

        Returns
        -------
        ids : ndarray of int64, shape (n_found,)
            Store ids (``position * 2**16 + shard bin``), sorted: the order of the input rows.
        """
        try:
            mass = formula_mass(formula)
        except FormulaError:
            bins = sorted(self.shards)
        else:
            first = bin_of(max(mass - FORMULA_MARGIN, 0.0), self.shard_width)
            last = bin_of(max(mass + FORMULA_MARGIN, 0.0), self.shard_width)
            bins = [b for b in sorted(self.shards) if first <= b <= last]
        return self._merged((b, self.shard(b).by_formula(formula)) for b in bins)

    def by_mass(self, low, high):
        """Return the ids of the structures with ``low <= monoisotopic mass <= high``, in input order.

        Only the shards whose mass range meets the window are read.

        Parameters
        ----------
        low, high : float
            Bounds (Da) of the mass window, both included (a window may span several shards).

        Returns
        -------
        ids : ndarray of int64, shape (n_found,)
            Store ids, sorted (input order); empty unless ``high >= low``.
        """
        if not high >= low:
            return np.zeros(0, dtype=np.int64)
        first, last = bin_of(max(low, 0.0), self.shard_width), bin_of(max(high, 0.0), self.shard_width)
        bins = [b for b in sorted(self.shards) if first <= b <= last]
        return self._merged((b, self.shard(b).by_mass(low, high)) for b in bins)

    def _groups(self, ids):
        """``(shard, positions in ids, local ids)`` per shard the ids name."""
        ids = np.asarray(ids, dtype=np.int64)
        bins, local = ids & (N_BINS - 1), ids >> _BIN_BITS
        for b in np.unique(bins):
            if int(b) not in self.shards:
                raise IOKRDataError(f"Structure store {self.path} has no shard {int(b)} (an id from another store).")
            at = np.flatnonzero(bins == b)
            yield self.shard(int(b)), at, local[at]

    def _by_shard(self, ids, read):
        """``read(shard, local ids)`` per shard, put back in the order of ``ids`` (a list of per-id results)."""
        out = [None] * len(ids)
        for db, at, local in self._groups(ids):
            for i, value in zip(at, read(db, local), strict=True):
                out[i] = value
        return out

    def fingerprints(self, ids, fingerprinter=None, compact=False):
        """Return the fingerprints of ``ids``, read shard by shard.

        Parameters
        ----------
        ids : sequence of int
            Store ids (from :meth:`by_formula` or :meth:`by_mass`), grouped by shard to be read.
        fingerprinter : Fingerprinter, optional
            Passed to each shard's :meth:`StructureDatabase.fingerprints` (other parameters: recomputed).
        compact : bool, default=False
            The stored values as uint8 row blocks, a quarter of the float32 memory; ignored (float32 computed
            afresh) with a ``fingerprinter`` of other parameters.

        Returns
        -------
        fingerprints : ndarray of float32, CountFeatures or PackedBinaryFeatures of shape (len(ids), n_features)
            One row per id, in the order of ``ids``; with ``compact``, :class:`~iokr.decoding.CountFeatures`, or
            :class:`~iokr.decoding.PackedBinaryFeatures` for binary kinds.
        """
        fresh = fingerprinter is not None and fingerprinter.params() != self.fingerprint
        n = (fingerprinter if fresh else self.fingerprinter).n_features
        out = np.zeros((len(ids), n), dtype=np.uint8 if compact and not fresh else np.float32)
        for db, at, local in self._groups(ids):
            if out.dtype == np.uint8:  # the stored bytes, checked row by row, decoded without conversion
                out[at] = decode_compact(db._rows(local, "fp"), n, self.fingerprinter.binary,  # noqa: SLF001
                                         f"Structure database {db.path}", local, dtype=np.uint8)
            else:
                out[at] = db.fingerprints(local, fingerprinter)
        if out.dtype != np.uint8:
            return out
        return PackedBinaryFeatures.from_dense(out) if self.fingerprinter.binary else CountFeatures(out)

    def formulas(self, ids):
        """Return the canonical molecular formula of ``ids``.

        Parameters
        ----------
        ids : sequence of int
            Store ids, from any shards.

        Returns
        -------
        formulas : list of str
            Read shard by shard, put back in the order of ``ids``.
        """
        return self._by_shard(ids, lambda db, local: db.formulas(local))

    def records(self, ids, names=None):
        """Return the output columns of ``ids``, as :meth:`StructureDatabase.records` does.

        Parameters
        ----------
        ids : sequence of int
            Store ids.
        names : dict of str to str, optional
            ``{user column: output name}``, passed to every shard's :meth:`StructureDatabase.records`.

        Returns
        -------
        records : list of dict
            One per id, in the order of ``ids``.
        """
        return self._by_shard(ids, lambda db, local: db.records(local, names))

    def close(self):
        """Close the shards opened so far."""
        for db in self._open.values():
            db.close()
        self._open = {}

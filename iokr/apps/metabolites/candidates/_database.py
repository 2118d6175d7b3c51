"""A local structure database for candidate lookup: built once from a CSV/TSV/SDF, queried by formula or mass.

``iokr metabolites index DB.csv --output DB.sqlite`` parses every structure with RDKit and stores its canonical
molecular formula, monoisotopic mass, full InChIKey, fingerprint and every column the user gave; ``identify``
then selects each query's candidates by canonical formula (any element order in the query) or by neutral mass
within a ppm window. The file is SQLite (no server); it is opened read-only for queries and refused unless it
carries this schema's name and a version this iokr reads (2 or 3). Version 3 stores fingerprints compactly and a
checksum per row, verified whenever a row is read (:mod:`._store_format`): a damaged row is named, never scored.
A row whose mass or formula was rewritten together with its index entry is found under its new values and refused
there.

Tables of PubChemLite, MetFrag (``.psv``, SDF), SIRIUS, GNPS and MZmine are recognized
(:mod:`._structure_tables`). Every structure is indexed as its parent (:mod:`._structures`): salts, hydrates and
mixtures reduced to the largest organic fragment, isotope labels kept in formula and mass, permanently charged
molecules at their neutral-equivalent mass; the user's columns keep the structure text as given. The rows are
parsed by :mod:`._structure_parsing`, shared with the sharded store's build.
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import numpy as np

from .... import __version__
from ....decoding import CountFeatures, PackedBinaryFeatures
from ....exceptions import IOKRDataError
from ....io import LegacyLines
from ....io._atomic import temporary_path
from ..chemistry._fingerprints import Fingerprinter
from ._lookup_check import TableValues
from ._sqlite_files import (
    READ_ERRORS,
    connect_read_only,
    describe_error,
    error_kind,
    inspect_path,
    is_private,
    read_meta,
    remove_with_journal,
)
from ._store_format import MAX_FEATURES, check_rows, decode_compact, row_checksum
from ._structure_parsing import BUILD_COUNTS, check_n_jobs, count_parse_result, parsed_chunks
from ._structure_tables import IDENTIFIER_COLUMNS, clean_value, name_column, pick, read_structure_rows

SCHEMA = "iokr-structure-database"
#: 3: compact fingerprints and a checksum per row (:mod:`._store_format`), the user's columns as a JSON list, no
#: ``key14`` column (the InChIKey's first block). 2: formula, mass, InChIKey and fingerprint of the parent
#: structure, isotopes apart, neutral-equivalent masses of charged structures (version 1 stored salts whole,
#: labelled structures unlabelled and ions at the ion's mass).
VERSION = 3
#: Versions this iokr opens: a version-2 database is read as written (dense fingerprints, no checksums).
READABLE_VERSIONS = (2, 3)

#: Columns every candidate gets in the outputs (derived from the structure), before the user's own columns.
CANDIDATE_COLUMNS = ("identifier", "name", "inchikey", "smiles", "formula", "monoisotopic_mass")


def output_names(user_columns, derived=CANDIDATE_COLUMNS, reserved=(), derived_prefix="db_"):
    """``{user column: output name}``, every output name unique.

    A user column named like a derived candidate column gets ``derived_prefix`` (``db_smiles``: the database's
    established name); one named like a result column (``reserved``: ``query_id``, ``rank``, ``score``,
    ``adduct``, ...) gets ``candidate_`` (``candidate_adduct``); while the new name is still taken (by a reserved,
    derived or other user column, or an earlier new name), ``candidate_`` is prefixed again.
    """
    derived, reserved = set(derived), set(reserved)
    taken = derived | reserved | set(user_columns)
    names = {}
    for column in user_columns:
        if column not in derived and column not in reserved:
            names[column] = column
            continue
        name = (derived_prefix if column in derived else "candidate_") + column
        while name in taken:
            name = f"candidate_{name}"
        taken.add(name)
        names[column] = name
    return names


def decode_fingerprints(blobs, n_features, binary, where):
    """Fingerprint rows of a version-2 database (dense: bit-packed for binary kinds, uint8 counts otherwise), shape
    (len(blobs), n_features) float32; IOKRDataError naming ``where`` when a row has the wrong length."""
    width = (n_features + 7) // 8 if binary else n_features
    if any(not isinstance(b, bytes) or len(b) != width for b in blobs):
        raise IOKRDataError(f"{where} holds fingerprints that are not {width} bytes long; the file is damaged.")
    raw = np.frombuffer(b"".join(blobs), dtype=np.uint8).reshape(len(blobs), width)
    if binary:
        return np.unpackbits(raw, axis=1, count=n_features).astype(np.float32)
    return raw.astype(np.float32)


_CREATE = (
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    ("CREATE TABLE structures (id INTEGER PRIMARY KEY, inchikey TEXT NOT NULL, smiles TEXT NOT NULL, "
     "formula TEXT NOT NULL, mass REAL NOT NULL, fp BLOB NOT NULL, columns TEXT NOT NULL, crc INTEGER NOT NULL)"),
)
#: The stored values of a row, in the order its checksum covers them (the row id first, the checksum last).
_ROW = "id, inchikey, smiles, formula, mass, fp, columns, crc"
#: Version 2 rows: no checksum, a ``key14`` column, dense fingerprints and the user's columns as a JSON object.
_ROW_V2 = "id, key14, inchikey, smiles, formula, mass, fp, columns"


class StructureDatabase:
    """Candidate structures with formula, mass, InChIKey, fingerprint and the user's columns (SQLite).

    Open an existing database with ``StructureDatabase(path)`` (read-only; versions 2 and 3); build one with
    :meth:`build` (version 3: compact fingerprints and a checksum per row, :mod:`._store_format`).

    Parameters
    ----------
    path : str or Path
        An existing database file, opened read-only.
    _connection : sqlite3.Connection, optional
        Internal to :meth:`build`: the open connection of a database it wrote to SQLite's private temporary file
        or to memory (``path`` is then only its name in messages).

    Attributes
    ----------
    path : str
    version : int
    fingerprint : dict
        The parameters of the stored fingerprints (:meth:`Fingerprinter.params`).
    user_columns : list of str
        The source file's columns, in order.
    n_structures : int
    """

    def __init__(self, path, *, _connection=None):
        self.path = str(path)
        if _connection is None:
            if inspect_path(path, "Structure database") == "new":
                raise IOKRDataError(f"Structure database {path} does not exist (build it with 'iokr metabolites "
                                    "index').")
            try:
                _connection = connect_read_only(path)
                meta = read_meta(_connection)
            except READ_ERRORS as exc:
                raise describe_error(exc, "Structure database", path) from None
        else:
            meta = read_meta(_connection)
        self.db = _connection
        try:
            self._read_meta(meta or {})
        except IOKRDataError:
            _connection.close()
            raise

    def _read_meta(self, meta):
        if meta.get("schema") != SCHEMA:
            raise IOKRDataError(f"{self.path} is not an iokr structure database (no '{SCHEMA}' schema); build one "
                                "from a CSV/TSV/SDF with 'iokr metabolites index'.")
        if meta.get("version") not in {str(v) for v in READABLE_VERSIONS}:
            raise IOKRDataError(f"Structure database {self.path} has schema version {meta.get('version')!r}; this "
                                f"iokr reads versions {READABLE_VERSIONS}: re-index it with 'iokr metabolites "
                                f"index' (iokr >= {__version__}).")
        self.version = int(meta["version"])
        if self.version >= 3 and meta.get("checksum") != str(_meta_checksum(meta)):
            raise IOKRDataError(f"Structure database {self.path} is damaged: its metadata (fingerprint, columns) do "
                                "not match their checksum; rebuild it with 'iokr metabolites index'.")
        try:
            self.fingerprint = json.loads(meta["fingerprint"])
            self.user_columns = json.loads(meta["columns"])
            self.n_structures = int(meta["n_structures"])
            self.fingerprinter = Fingerprinter(**self.fingerprint)
            if self.version >= 3:
                self._named = {k: json.loads(meta[k]) for k in ("identifier_column", "name_column")}
        except (KeyError, ValueError, TypeError) as exc:
            raise IOKRDataError(f"Structure database {self.path} has damaged metadata ({exc}).") from None

    # -- building ---------------------------------------------------------------------------------------------------
    @classmethod
    def build(cls, source, output, fingerprinter=None, progress=None, n_jobs=None):
        """Parse every structure of ``source`` and write the structure database ``output``.

        ``output`` may be ``""`` for SQLite's private temporary file, deleted on close, or ``":memory:"`` to hold
        it all in memory. Rows RDKit rejects are counted; rows whose parent's first InChIKey block and formula
        repeat an earlier row are merged into it (the first row's columns kept; an isotope-labelled form keeps a
        row of its own).

        Parameters
        ----------
        source : str or Path
            CSV, TSV or SDF (see the module docstring for the recognized columns).
        output : str or Path
            The database file, written whole or not at all (through a temporary file and a rename; a full disk
            leaves neither the temporary file nor its journal).
        fingerprinter : Fingerprinter, optional
            The fingerprints stored with each structure; ``Fingerprinter()`` (its defaults) when omitted.
        progress : callable, optional
            Called with the number of rows read so far, after every chunk of rows.
        n_jobs : int, optional
            Processes parsing and fingerprinting structures (default: the number of CPUs; tables of fewer than
            :data:`~._structure_parsing.CHUNK_ROWS` rows are parsed in this process).

        Returns
        -------
        db : StructureDatabase
            The database written, open for reading.
        stats : dict
            ``n_rows``, ``n_structures``, ``n_missing`` (rows without a structure text), ``n_unparsable``,
            ``n_duplicates``, the :data:`~._structure_parsing.FLAG_COUNTS` (over the parsed rows), ``seconds``,
            ``structures_per_s``.
        """
        check_n_jobs(n_jobs, "StructureDatabase.build")
        fingerprinter = Fingerprinter() if fingerprinter is None else fingerprinter
        if fingerprinter.n_features > MAX_FEATURES:
            raise IOKRDataError(f"Structure database {output}: fingerprints of {fingerprinter.n_features} columns do "
                                f"not fit the compact format (at most {MAX_FEATURES}).")
        t0 = time.perf_counter()
        legacy = LegacyLines()
        columns, rows, structure_columns = read_structure_rows(source, on_legacy=legacy)
        temporary = is_private(output)
        if temporary:
            connection, tmp = sqlite3.connect(str(output)), None
        else:
            output = Path(output)
            output.parent.mkdir(parents=True, exist_ok=True)
            tmp = temporary_path(output)  # named so the next run writing `output` sweeps it (and its journal)
            try:
                connection = _connect_for_writing(tmp)
            except sqlite3.Error as exc:
                raise describe_error(exc, "Structure database", output, "writing") from None
        try:
            stats, named = cls._fill(connection, columns, rows, structure_columns, fingerprinter, progress, n_jobs)
            meta = {"schema": SCHEMA, "version": str(VERSION), "fingerprint": json.dumps(fingerprinter.params()),
                    "columns": json.dumps(columns), "n_structures": str(stats["n_structures"]),
                    "source": Path(source).name, **{k: json.dumps(v) for k, v in named.items()},
                    **{k: str(stats[k]) for k in BUILD_COUNTS}}
            meta["checksum"] = str(_meta_checksum(meta))
            connection.executemany("INSERT INTO meta VALUES (?, ?)", meta.items())
            connection.execute("CREATE INDEX by_formula ON structures (formula)")
            connection.execute("CREATE INDEX by_mass ON structures (mass)")
            connection.commit()
            if tmp is not None:
                connection.close()
                tmp.replace(output)
                connection = None
        except BaseException as exc:
            if connection is not None:
                connection.close()
            if tmp is not None:
                remove_with_journal(tmp)
            if isinstance(exc, (sqlite3.Error, OSError)) and error_kind(exc) in ("full", "locked", "damaged"):
                label = "(SQLite's temporary file for this run)" if temporary else output
                raise describe_error(exc, "Structure database", label, "writing") from None
            raise
        stats["windows_1252_lines"] = legacy.note()
        stats["seconds"] = time.perf_counter() - t0
        stats["structures_per_s"] = stats["n_rows"] / max(stats["seconds"], 1e-9)
        db = cls(str(output) or "(temporary file)", _connection=connection) if temporary else cls(output)
        return db, stats

    @staticmethod
    def _fill(connection, columns, rows, structure_columns, fingerprinter, progress, n_jobs):
        for statement in _CREATE:
            connection.execute(statement)
        id_col, name_col = pick(columns, IDENTIFIER_COLUMNS), name_column(columns)
        insert = f"INSERT INTO structures ({_ROW}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
        seen = set()
        counts = dict.fromkeys(BUILD_COUNTS, 0)
        for chunk, parsed in parsed_chunks(rows, structure_columns, fingerprinter, n_jobs):
            batch = []
            for row, result in zip(chunk, parsed, strict=True):
                if (result := count_parse_result(counts, result)) is None:
                    continue
                key, smiles, formula, mass, blob = result
                # The first row of a skeleton wins, in file order; an isotope-labelled form (same first block, other
                # formula) is a structure of its own.
                if (key[:14], formula) in seen:
                    counts["n_duplicates"] += 1
                    continue
                seen.add((key[:14], formula))
                # The user's values in column order (identifier and name are read from them by column).
                values = (len(seen), key, smiles, formula, float(mass), blob,
                          json.dumps([row.get(c, "") for c in columns], ensure_ascii=False))
                batch.append((*values, row_checksum(values)))
            connection.executemany(insert, batch)
            if progress is not None:
                progress(counts["n_rows"])
        return {**counts, "n_structures": len(seen)}, {"identifier_column": id_col, "name_column": name_col}

    # -- queries ----------------------------------------------------------------------------------------------------
    def _read(self, sql, args):
        try:
            return self.db.execute(sql, args).fetchall()
        except READ_ERRORS as exc:
            raise describe_error(exc, "Structure database", self.path) from None

    def _ids(self, sql, args):
        return np.array([r[0] for r in self._read(sql, args)], dtype=np.int64)

    def by_formula(self, formula):
        """Return the row ids of the structures of one canonical formula.

        Parameters
        ----------
        formula : str
            Canonical (Hill) molecular formula, as :func:`canonical_formula` writes it.

        Returns
        -------
        ids : ndarray of int64, shape (n_found,)
            Row ids in database order (each row's formula checked against the index in a version-3 database).
        """
        ids = self._ids("SELECT id FROM structures WHERE formula = ? ORDER BY id", (formula,))
        return self._check_lookup(ids, "formula", lambda: self._table.stray_by_formula(ids, formula))

    def by_mass(self, low, high):
        """Return the row ids of the structures with ``low <= monoisotopic mass <= high``.

        Parameters
        ----------
        low, high : float
            Bounds (Da) of the mass window, both included.

        Returns
        -------
        ids : ndarray of int64, shape (n_found,)
            Row ids in database order (each row's mass checked against the index in a version-3 database).
        """
        ids = self._ids("SELECT id FROM structures WHERE mass BETWEEN ? AND ? ORDER BY id", (low, high))
        return self._check_lookup(ids, "mass", lambda: self._table.stray_by_mass(ids, low, high))

    def _check_lookup(self, ids, column, find_stray):
        """``ids`` found through the index on ``column``, once every row's own value (read from the table, not the
        index: :class:`~._lookup_check.TableValues`) fits the lookup: a damaged index entry (a flipped row id or
        key) never brings a row of another formula or mass."""
        if self.version < 3 or ids.size == 0:
            return ids
        if not hasattr(self, "_table"):
            self._table = TableValues(self._read)
        stray = find_stray()
        if stray is not None:
            raise IOKRDataError(f"Structure database {self.path} is damaged: its index on {column} lists row "
                                f"{stray}, whose {column} does not fit the lookup; rebuild it with 'iokr "
                                "metabolites index'.")
        return ids

    def _rows(self, ids, column=None):
        """Whole rows ``ids`` (each verified against its checksum) as dicts, in the order of ``ids``; with
        ``column``, only that column's values (the rows are verified whole all the same)."""
        out = {}
        ids = [int(i) for i in ids]
        columns = _ROW if self.version >= 3 else _ROW_V2
        names = columns.split(", ")
        for start in range(0, len(ids), 900):
            chunk = ids[start:start + 900]
            rows = self._read(f"SELECT {columns} FROM structures WHERE id IN ({','.join('?' * len(chunk))})", chunk)
            if self.version >= 3:
                check_rows(rows, f"Structure database {self.path}", self._identifier_of)
            if column is None:
                out.update((row[0], dict(zip(names, row, strict=True))) for row in rows)
            else:
                at = names.index(column)
                out.update((row[0], row[at]) for row in rows)
        if len(out) < len(set(ids)):
            missing = [i for i in ids if i not in out]
            raise IOKRDataError(f"Structure database {self.path} lost rows {missing[:5]} while being read.")
        return [out[i] for i in ids]

    def _identifier_of(self, row):
        """The identifier in a row as read (for messages about a damaged row)."""
        column = self._named["identifier_column"]
        return clean_value(json.loads(row[6])[self.user_columns.index(column)]) if column else ""

    def fingerprints(self, ids, fingerprinter=None, compact=False):
        """Return the fingerprints of rows ``ids``.

        Parameters
        ----------
        ids : sequence of int
            Row ids (from :meth:`by_formula` or :meth:`by_mass`).
        fingerprinter : Fingerprinter, optional
            Fingerprints wanted: recomputed from the stored SMILES when its parameters are not the stored ones.
        compact : bool, default=False
            For a version-3 database and the stored fingerprints: the stored bytes, read as float32 row blocks, a
            quarter of the float32 pool or less (a pool of 49,000 rows of 2,215 features is 108 MB instead of
            434 MB, and decoding it costs 0.1 s of CPU instead of 0.2-2 s: a fresh float32 pool is mostly page
            faults).

        Returns
        -------
        fingerprints : ndarray of float32, CountFeatures or PackedBinaryFeatures of shape (len(ids), n_features)
            One row per id, in the order of ``ids``; row blocks with ``compact``.
        """
        if fingerprinter is not None and fingerprinter.params() != self.fingerprint:
            return fingerprinter.transform(self._rows(ids, "smiles"))[0]
        where = f"Structure database {self.path}"
        blobs = self._rows(ids, "fp")
        n, binary = self.fingerprinter.n_features, self.fingerprinter.binary
        if self.version >= 3 and compact:
            values = decode_compact(blobs, n, binary, where, ids, dtype=np.uint8)
            return PackedBinaryFeatures.from_dense(values) if binary else CountFeatures(values)
        if self.version >= 3:
            return decode_compact(blobs, n, binary, where, ids)
        return decode_fingerprints(blobs, self.fingerprinter.n_features, self.fingerprinter.binary, where)

    def formulas(self, ids):
        """Return the canonical molecular formula of rows ``ids``.

        Parameters
        ----------
        ids : sequence of int
            Row ids.

        Returns
        -------
        formulas : list of str
            In the order of ``ids``.
        """
        return self._rows(ids, "formula")

    def records(self, ids, names=None):
        """Return the output columns of rows ``ids``: :data:`CANDIDATE_COLUMNS`, then the user's columns.

        Parameters
        ----------
        ids : sequence of int
            Row ids.
        names : dict of str to str, optional
            ``{user column: output name}``; :func:`output_names` with no reserved names by default.

        Returns
        -------
        records : list of dict
            Per id, in the order of ``ids``: ``identifier``, ``name``, ``inchikey``, ``smiles``, ``formula``,
            ``monoisotopic_mass`` (text, 5 decimals), then each user column under its output name.
        """
        names = output_names(self.user_columns) if names is None else names
        out = []
        for row in self._rows(ids):
            key, formula, mass = row["inchikey"], row["formula"], row["mass"]
            if not key or not formula or not row.get("key14", key[:14]):
                raise IOKRDataError(f"Structure database {self.path} holds a row without InChIKey or formula (row "
                                    f"{row['id']}); the file is damaged: rebuild it with 'iokr metabolites index'.")
            if not isinstance(mass, float):
                raise IOKRDataError(f"Structure database {self.path} is damaged: row {row['id']} holds a mass that "
                                    f"is not a number ({mass!r}); rebuild it with 'iokr metabolites index'.")
            try:
                user = self._user_values(row["columns"])
            except (ValueError, TypeError, IndexError):
                raise IOKRDataError(f"Structure database {self.path} holds damaged columns (row {row['id']}).") \
                    from None
            record = {"identifier": user.pop("__identifier", ""), "name": user.pop("__name", ""), "inchikey": key,
                      "smiles": row["smiles"], "formula": formula, "monoisotopic_mass": f"{mass:.5f}"}
            for column, value in user.items():
                record[names.get(column, column)] = value
            out.append(record)
        return out

    def _user_values(self, text):
        """``{column: value}`` of a row's user columns, with ``__identifier`` and ``__name``."""
        if self.version < 3:  # a JSON object carrying the cleaned identifier and name
            user = json.loads(text)
            if not isinstance(user, dict):
                raise TypeError("not an object")
            return user
        values = json.loads(text)
        if not isinstance(values, list) or len(values) != len(self.user_columns):
            raise ValueError("not one value per column")
        user = dict(zip(self.user_columns, values, strict=True))
        for field, column in (("__identifier", "identifier_column"), ("__name", "name_column")):
            user[field] = clean_value(user.get(self._named[column], "")) if self._named[column] else ""
        return user

    def close(self):
        """Close the SQLite connection."""
        self.db.close()


def _meta_checksum(meta):
    """The checksum of a database's metadata: every key and value but the checksum's own, in key order."""
    return row_checksum([text for key in sorted(meta) if key != "checksum" for text in (key, meta[key])])


def _connect_for_writing(path):
    """The connection a new database is written through (a seam for tests that fill the disk)."""
    return sqlite3.connect(path)

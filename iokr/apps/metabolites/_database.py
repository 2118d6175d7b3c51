"""A local structure database for candidate lookup: built once from a CSV/TSV/SDF, queried by formula or mass.

``iokr metabolites index DB.csv --output DB.sqlite`` parses every structure with RDKit and stores its canonical
molecular formula, monoisotopic mass, full InChIKey, fingerprint and every column the user gave; ``identify``
then selects each query's candidates by canonical formula (any element order in the query) or by neutral mass
within a ppm window. The file is SQLite (no server); it is opened read-only for queries and refused unless it
carries this schema's name and version.

Tables of PubChemLite, MetFrag (``.psv``, SDF), SIRIUS, GNPS and MZmine are recognized
(:mod:`._structure_tables`). Every structure is indexed as its parent (:mod:`._structures`): salts, hydrates and
mixtures reduced to the largest organic fragment, isotope labels kept in formula and mass, permanently charged
molecules at their neutral-equivalent mass; the user's columns keep the structure text as given.
"""

from __future__ import annotations

import itertools
import json
import os
import sqlite3
import time
from pathlib import Path
from urllib.parse import quote

import numpy as np

from ...decoding import CountFeatures, PackedBinaryFeatures
from ...exceptions import IOKRDataError
from ...io._atomic import temporary_path
from ...io._workers import worker_pool
from ._fingerprints import Fingerprinter
from ._structure_tables import IDENTIFIER_COLUMNS, clean_value, name_column, pick, read_structure_rows, structure_texts
from ._structures import parent_of

SCHEMA = "iokr-structure-database"
#: 2: formula, mass, InChIKey and fingerprint of the parent structure, isotopes apart, neutral-equivalent masses of
#: charged structures (version 1 stored salts whole, labelled structures unlabelled and ions at the ion's mass).
VERSION = 2

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


def encode_fingerprint(fp, binary):
    """Bytes of one fingerprint row: bit-packed for binary kinds, uint8 counts (clipped at 255) otherwise."""
    fp = np.asarray(fp)
    return np.packbits(fp > 0).tobytes() if binary else np.clip(fp, 0, 255).astype(np.uint8).tobytes()


def decode_fingerprints(blobs, n_features, binary, where, compact=False):
    """Fingerprint rows from their bytes, shape (len(blobs), n_features) float32; IOKRDataError naming ``where``
    when a row has the wrong length.

    With ``compact`` the rows stay as stored, read as float32 block by block: a
    :class:`~iokr.decoding.PackedBinaryFeatures` (binary kinds) or :class:`~iokr.decoding.CountFeatures`.
    """
    width = (n_features + 7) // 8 if binary else n_features
    if any(not isinstance(b, bytes) or len(b) != width for b in blobs):
        raise IOKRDataError(f"{where} holds fingerprints that are not {width} bytes long; the file is damaged.")
    raw = np.frombuffer(b"".join(blobs), dtype=np.uint8).reshape(len(blobs), width)
    if compact:
        return PackedBinaryFeatures(raw, n_features) if binary else CountFeatures(raw)
    if binary:
        return np.unpackbits(raw, axis=1, count=n_features).astype(np.float32)
    return raw.astype(np.float32)


_CREATE = (
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    ("CREATE TABLE structures (id INTEGER PRIMARY KEY, key14 TEXT NOT NULL, inchikey TEXT NOT NULL, "
     "smiles TEXT NOT NULL, formula TEXT NOT NULL, mass REAL NOT NULL, fp BLOB NOT NULL, columns TEXT NOT NULL)"),
)


class StructureDatabase:
    """Candidate structures with formula, mass, InChIKey, fingerprint and the user's columns (SQLite).

    Open an existing database with ``StructureDatabase(path)`` (read-only); build one with :meth:`build`.

    Attributes
    ----------
    path : str
    fingerprint : dict
        The parameters of the stored fingerprints (:meth:`Fingerprinter.params`).
    user_columns : list of str
        The source file's columns, in order.
    n_structures : int
    """

    def __init__(self, path, *, _connection=None):
        self.path = str(path)
        if _connection is None:
            path = Path(path)
            if not path.is_file():
                raise IOKRDataError(f"Structure database {path} does not exist (build it with 'iokr metabolites "
                                    "index').")
            try:
                _connection = sqlite3.connect(f"file:{quote(str(path.resolve()))}?mode=ro", uri=True)
            except sqlite3.Error as exc:
                raise IOKRDataError(f"Structure database {path} cannot be opened ({exc}).") from None
        self.db = _connection
        try:
            meta = dict(self.db.execute("SELECT key, value FROM meta").fetchall())
        except sqlite3.DatabaseError:
            meta = {}
        if meta.get("schema") != SCHEMA:
            raise IOKRDataError(f"{self.path} is not an iokr structure database (no '{SCHEMA}' schema); build one "
                                "from a CSV/TSV/SDF with 'iokr metabolites index'.")
        if meta.get("version") != str(VERSION):
            raise IOKRDataError(f"Structure database {self.path} has schema version {meta.get('version')!r}; this "
                                f"iokr reads version {VERSION}: rebuild it with 'iokr metabolites index'.")
        try:
            self.fingerprint = json.loads(meta["fingerprint"])
            self.user_columns = json.loads(meta["columns"])
            self.n_structures = int(meta["n_structures"])
            self.fingerprinter = Fingerprinter(**self.fingerprint)
        except (KeyError, ValueError, TypeError) as exc:
            raise IOKRDataError(f"Structure database {self.path} has damaged metadata ({exc}).") from None

    # -- building ---------------------------------------------------------------------------------------------------
    @classmethod
    def build(cls, source, output, fingerprinter=None, progress=None, n_jobs=None):
        """Parse every structure of ``source`` and write the database ``output`` (``""`` for SQLite's private
        temporary file, deleted on close; ``":memory:"`` to hold it all in memory). Rows RDKit rejects are
        counted; rows whose parent's first InChIKey block and formula repeat an earlier row are merged into it (the
        first row's columns kept; an isotope-labelled form keeps a row of its own).

        Parameters
        ----------
        source : str or Path
            CSV, TSV or SDF (see the module docstring for the recognized columns).
        output : str or Path
            The database file, written whole or not at all (through a temporary file and a rename).
        fingerprinter : Fingerprinter, optional
        progress : callable, optional
            Called with the number of rows read so far, after every chunk of rows.
        n_jobs : int, optional
            Processes parsing and fingerprinting structures (default: the number of CPUs; tables of fewer than
            :data:`CHUNK_ROWS` rows are parsed in this process).

        Returns
        -------
        db : StructureDatabase
        stats : dict
            ``n_rows``, ``n_structures``, ``n_missing`` (rows without a structure text), ``n_unparsable``,
            ``n_duplicates``, the :data:`FLAG_COUNTS` (over the parsed rows), ``seconds``,
            ``structures_per_s``.
        """
        fingerprinter = Fingerprinter() if fingerprinter is None else fingerprinter
        t0 = time.perf_counter()
        columns, rows, structure_columns = read_structure_rows(source)
        temporary = str(output) in ("", ":memory:")
        if temporary:
            connection, tmp = sqlite3.connect(str(output)), None
        else:
            output = Path(output)
            output.parent.mkdir(parents=True, exist_ok=True)
            tmp = temporary_path(output)  # named so the next run writing `output` sweeps it (and its journal)
            try:
                connection = sqlite3.connect(tmp)
            except sqlite3.Error as exc:
                raise IOKRDataError(f"Cannot write the structure database {output} ({exc}).") from None
        try:
            stats = cls._fill(connection, columns, rows, structure_columns, fingerprinter, progress, n_jobs)
            meta = {"schema": SCHEMA, "version": str(VERSION), "fingerprint": json.dumps(fingerprinter.params()),
                    "columns": json.dumps(columns), "n_structures": str(stats["n_structures"]),
                    "source": Path(source).name, **{k: str(stats[k]) for k in BUILD_COUNTS}}
            connection.executemany("INSERT INTO meta VALUES (?, ?)", meta.items())
            connection.execute("CREATE INDEX by_formula ON structures (formula)")
            connection.execute("CREATE INDEX by_mass ON structures (mass)")
            connection.commit()
            if tmp is not None:
                connection.close()
                tmp.replace(output)
                connection = None
        except BaseException:
            if connection is not None:
                connection.close()
            if tmp is not None:
                tmp.unlink(missing_ok=True)
            raise
        stats["seconds"] = time.perf_counter() - t0
        stats["structures_per_s"] = stats["n_rows"] / max(stats["seconds"], 1e-9)
        db = cls(str(output) or "(temporary file)", _connection=connection) if temporary else cls(output)
        return db, stats

    @staticmethod
    def _fill(connection, columns, rows, structure_columns, fingerprinter, progress, n_jobs):
        for statement in _CREATE:
            connection.execute(statement)
        id_col, name_col = pick(columns, IDENTIFIER_COLUMNS), name_column(columns)
        insert = ("INSERT INTO structures (key14, inchikey, smiles, formula, mass, fp, columns) "
                  "VALUES (?, ?, ?, ?, ?, ?, ?)")
        seen = set()
        counts = dict.fromkeys(BUILD_COUNTS, 0)
        for chunk, parsed in _parsed_chunks(rows, structure_columns, fingerprinter, n_jobs):
            batch = []
            for row, result in zip(chunk, parsed, strict=True):
                counts["n_rows"] += 1
                if result in (MISSING, None):
                    counts["n_missing" if result == MISSING else "n_unparsable"] += 1
                    continue
                key, smiles, formula, mass, blob, flags = result
                for name, flag in zip(FLAG_COUNTS, flags, strict=True):
                    counts[name] += bool(flag)
                # The first row of a skeleton wins, in file order; an isotope-labelled form (same first block, other
                # formula) is a structure of its own.
                if (key[:14], formula) in seen:
                    counts["n_duplicates"] += 1
                    continue
                seen.add((key[:14], formula))
                user = {c: row.get(c, "") for c in columns}
                user["__identifier"] = clean_value(row.get(id_col, "")) if id_col else ""
                user["__name"] = clean_value(row.get(name_col, "")) if name_col else ""
                batch.append((key[:14], key, smiles, formula, mass, blob, json.dumps(user, ensure_ascii=False)))
            connection.executemany(insert, batch)
            if progress is not None:
                progress(counts["n_rows"])
        return {**counts, "n_structures": len(seen)}

    # -- queries ----------------------------------------------------------------------------------------------------
    def _ids(self, sql, args):
        try:
            return np.array([r[0] for r in self.db.execute(sql, args)], dtype=np.int64)
        except sqlite3.DatabaseError as exc:
            raise IOKRDataError(f"Structure database {self.path} cannot be read ({exc}).") from None

    def by_formula(self, formula):
        """Row ids of the structures of one canonical formula (in database order)."""
        return self._ids("SELECT id FROM structures WHERE formula = ? ORDER BY id", (formula,))

    def by_mass(self, low, high):
        """Row ids of the structures with ``low <= monoisotopic mass <= high`` (in database order)."""
        return self._ids("SELECT id FROM structures WHERE mass BETWEEN ? AND ? ORDER BY id", (low, high))

    def _rows(self, ids, columns):
        out = {}
        ids = [int(i) for i in ids]
        try:
            for start in range(0, len(ids), 900):
                chunk = ids[start:start + 900]
                q = f"SELECT id, {columns} FROM structures WHERE id IN ({','.join('?' * len(chunk))})"
                for row in self.db.execute(q, chunk):
                    out[row[0]] = row[1:]
        except sqlite3.DatabaseError as exc:
            raise IOKRDataError(f"Structure database {self.path} cannot be read ({exc}).") from None
        missing = [i for i in ids if i not in out]
        if missing:
            raise IOKRDataError(f"Structure database {self.path} lost rows {missing[:5]} while being read.")
        return [out[i] for i in ids]

    def fingerprints(self, ids, fingerprinter=None):
        """Fingerprints of rows ``ids``, shape (len(ids), n_features) float32; recomputed from the stored SMILES
        when ``fingerprinter`` has other parameters than the stored ones."""
        if fingerprinter is not None and fingerprinter.params() != self.fingerprint:
            smiles = [r[0] for r in self._rows(ids, "smiles")]
            return fingerprinter.transform(smiles)[0]
        blobs = [r[0] for r in self._rows(ids, "fp")]
        return decode_fingerprints(blobs, self.fingerprinter.n_features, self.fingerprinter.binary,
                                   f"Structure database {self.path}")

    def formulas(self, ids):
        """Canonical molecular formula of rows ``ids``."""
        return [r[0] for r in self._rows(ids, "formula")]

    def records(self, ids, names=None):
        """The output columns of rows ``ids``: :data:`CANDIDATE_COLUMNS`, then the user's columns under ``names``
        (``{user column: output name}``; default :func:`output_names` with no reserved names)."""
        names = output_names(self.user_columns) if names is None else names
        out = []
        for key14, key, smiles, formula, mass, columns in self._rows(ids, "key14, inchikey, smiles, formula, "
                                                                       "mass, columns"):
            if not key14 or not key or not formula:
                raise IOKRDataError(f"Structure database {self.path} holds a row without InChIKey or formula; "
                                    "the file is damaged: rebuild it with 'iokr metabolites index'.")
            try:
                user = json.loads(columns)
            except ValueError:
                raise IOKRDataError(f"Structure database {self.path} holds damaged columns.") from None
            record = {"identifier": user.pop("__identifier", ""), "name": user.pop("__name", ""), "inchikey": key,
                      "smiles": smiles, "formula": formula, "monoisotopic_mass": f"{mass:.5f}"}
            for column, value in user.items():
                record[names.get(column, column)] = value
            out.append(record)
        return out

    def close(self):
        self.db.close()


#: Rows parsed per chunk (one chunk per worker task).
CHUNK_ROWS = 2000


#: The parse result of a row without any structure text ('N/A', 'nan', blank): counted apart from unparsable.
MISSING = "missing"
#: What was done to reach the indexed structure, counted over the parsed rows (duplicates included): fragments removed
#: (salts, hydrates, mixtures), charges neutralized, isotope labels kept, a permanent charge kept, and a later
#: structure column used because an earlier one was unparsable (an InChI RDKit rejects, the SMILES read).
FLAG_COUNTS = ("n_parents", "n_neutralized", "n_labelled", "n_charged", "n_structure_fallbacks")
BUILD_COUNTS = ("n_rows", "n_missing", "n_unparsable", "n_duplicates", *FLAG_COUNTS)


def _parse_row(texts, fingerprinter):
    """``(inchikey, smiles, formula, mass, fingerprint bytes, flags)`` of the first of a row's structure texts that
    RDKit reads (:func:`~._structures.parent_of`: the parent structure), None if it reads none, :data:`MISSING`
    if there is none; ``flags`` in :data:`FLAG_COUNTS` order."""
    if not texts:
        return MISSING
    parsed = ((position, parent_of(text)) for position, text in enumerate(texts))
    position, parent = next(((i, p) for i, p in parsed if p is not None), (None, None))
    if parent is None:
        return None
    fp, _ = fingerprinter.transform([parent.mol])
    flags = (parent.reduced, parent.neutralized and not parent.reduced, parent.labelled, parent.charge != 0,
             position > 0)
    return (parent.key, parent.smiles, parent.formula, parent.mass, encode_fingerprint(fp[0], fingerprinter.binary),
            flags)


def _parse_texts(texts, fingerprint):
    fingerprinter = Fingerprinter(**fingerprint)
    return [_parse_row(t, fingerprinter) for t in texts]


def _parsed_chunks(rows, structure_columns, fingerprinter, n_jobs):
    """``(rows, parsed)`` per chunk of :data:`CHUNK_ROWS` rows, parsed in worker processes when there are several
    chunks (RDKit parsing and fingerprints dominate indexing; results keep the file order)."""
    def texts_of(chunk):
        return [structure_texts(r, structure_columns) for r in chunk]

    rows = iter(rows)
    chunks = iter(lambda: list(itertools.islice(rows, CHUNK_ROWS)), [])
    head = list(itertools.islice(chunks, 2))
    chunks = itertools.chain(head, chunks)
    n_jobs = (os.cpu_count() or 1) if n_jobs is None else n_jobs
    if len(head) < 2 or n_jobs <= 1:
        for chunk in chunks:
            yield chunk, _parse_texts(texts_of(chunk), fingerprinter.params())
        return

    with worker_pool(n_jobs) as pool:  # workers die with this process, even on kill -9
        pending = []
        for chunk in chunks:
            pending.append((chunk, pool.submit(_parse_texts, texts_of(chunk), fingerprinter.params())))
            if len(pending) > 2 * n_jobs:  # bounded look-ahead: memory stays a few chunks
                chunk, future = pending.pop(0)
                yield chunk, future.result()
        for chunk, future in pending:
            yield chunk, future.result()

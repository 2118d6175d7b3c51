"""A local structure database for candidate lookup: built once from a CSV/TSV/SDF, queried by formula or mass.

``iokr metabolites index DB.csv --output DB.sqlite`` parses every structure with RDKit and stores its canonical
molecular formula, monoisotopic mass, full InChIKey, fingerprint and every column the user gave; ``identify``
then selects each query's candidates by canonical formula (any element order in the query) or by neutral mass
within a ppm window. The file is SQLite (no server); it is opened read-only for queries and refused unless it
carries this schema's name and version.

Column names of PubChemLite, MetFrag local databases and common exports are recognized (case, spaces and
underscores ignored): structures from ``SMILES`` (or ``IsomericSMILES``, ``CanonicalSMILES``), else ``InChI``;
identifiers from ``Identifier``, ``CID``, ``ID``...; names from ``Name``, ``CompoundName``, ``Title``...
"""

from __future__ import annotations

import csv
import gzip
import itertools
import json
import os
import sqlite3
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from urllib.parse import quote

import numpy as np

from ...decoding import CountFeatures, PackedBinaryFeatures
from ...exceptions import IOKRDataError
from ...io import iter_lines
from ._fingerprints import Fingerprinter, _rdkit, inchikey, inchikey_of_inchi, parse_structure
from ._formulas import FormulaError, canonical_formula, monoisotopic_mass

SCHEMA = "iokr-structure-database"
VERSION = 1

STRUCTURE_COLUMNS = ("smiles", "isomericsmiles", "canonicalsmiles", "inchi", "id1", "structure")
IDENTIFIER_COLUMNS = ("identifier", "id", "cid", "pubchemcid", "pubchemcompoundcid", "compoundid", "dtxsid",
                      "accession", "dbid")
NAME_COLUMNS = ("name", "compoundname", "title", "sdftitle", "iupacname", "pubchemiupacname", "synonym")
#: Columns every candidate gets in the outputs (derived from the structure), before the user's own columns.
CANDIDATE_COLUMNS = ("identifier", "name", "inchikey", "smiles", "formula", "monoisotopic_mass")
#: Largest CSV field accepted (bytes): one field of a structure database is a name or a structure.
MAX_FIELD_BYTES = 1 << 20


def _squash(name):
    return "".join(ch for ch in name.lower() if ch.isalnum())


def _pick(columns, wanted):
    squashed = {_squash(c): c for c in columns}
    return next((squashed[w] for w in wanted if w in squashed), None)


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


def _csv_rows(path):
    """``(columns, rows)`` of a CSV/TSV file, streamed through the capped line reader (:func:`iokr.io.iter_lines`:
    line length, gzip ratio). A UTF-8 byte-order mark is dropped; the delimiter is a tab when the file name says
    ``.tsv``, else the first of tab, comma and semicolon (spreadsheet exports) found in the header."""
    csv.field_size_limit(MAX_FIELD_BYTES)
    lines = (line + "\n" for _, line in iter_lines(path, what="Structure database", errors="replace"))
    first = next(lines, "").lstrip("\ufeff")
    tsv = ".tsv" in path.name.lower()
    delimiter = "\t" if tsv else next((d for d in ("\t", ",", ";") if d in first), ",")
    reader = csv.DictReader(itertools.chain([first], lines), delimiter=delimiter)
    columns = [c.strip() for c in (reader.fieldnames or [])]

    def rows():
        try:
            for row in reader:
                yield {(k or "").strip(): v for k, v in row.items() if k is not None}
        except csv.Error as exc:
            raise IOKRDataError(f"Structure database {path}, line {reader.line_num}: {exc}.") from None
    return columns, rows()


#: Columns an SDF record gets besides its properties: its title line, and its structure (read, not carried).
SDF_TITLE, SDF_SMILES = "SDF_TITLE", "__sdf_smiles"


def _sdf_rows(path):
    """``(columns, rows)`` of an SDF file, one record at a time (RDKit reads from the open file, plain or gzip)."""

    Chem = _rdkit()
    with open(path, "rb") as probe:
        gz = probe.read(2) == b"\x1f\x8b"
    handle = gzip.open(path, "rb") if gz else open(path, "rb")  # noqa: SIM115 - closed by rows() when consumed
    # Columns are the properties seen in the file's first records (a streamed file cannot be looked at twice).
    supplier = Chem.ForwardSDMolSupplier(handle, sanitize=True)
    head = [mol for _, mol in zip(range(1000), supplier, strict=False)]
    columns = [SDF_TITLE]
    for mol in head:
        if mol is not None:
            columns.extend(k for k in mol.GetPropsAsDict() if k not in columns)

    def rows():
        with handle:
            for mol in itertools.chain(head, supplier):
                if mol is None:
                    yield {SDF_TITLE: "", SDF_SMILES: ""}  # counted as unparsable
                    continue
                row = {SDF_TITLE: mol.GetProp("_Name") if mol.HasProp("_Name") else ""}
                row.update({k: str(v) for k, v in mol.GetPropsAsDict().items()})
                row[SDF_SMILES] = Chem.MolToSmiles(mol)
                yield row
    return columns, rows()


def read_structure_rows(path):
    """``(columns, rows, structure_column)`` of a CSV, TSV or SDF structure file (plain or ``.gz``)."""
    path = Path(path)
    if not path.exists():
        raise IOKRDataError(f"Structure database {path} does not exist.")
    if not path.is_file():
        raise IOKRDataError(f"Structure database {path} is not a regular file.")
    name = path.name.lower().removesuffix(".gz")
    if name.endswith((".sdf", ".mol")):
        columns, rows = _sdf_rows(path)
        return columns, rows, [SDF_SMILES]
    if not name.endswith((".csv", ".tsv", ".txt")):
        raise IOKRDataError(f"Structure database {path}: unsupported format; expected .csv, .tsv or .sdf (each "
                            "optionally .gz).")
    columns, rows = _csv_rows(path)
    structure = [c for c in columns if _squash(c) in STRUCTURE_COLUMNS]
    if not structure:
        raise IOKRDataError(f"Structure database {path} has no structure column: expected a column named SMILES "
                            f"or InChI (or {', '.join(STRUCTURE_COLUMNS)}), got {columns}.")
    structure.sort(key=lambda c: STRUCTURE_COLUMNS.index(_squash(c)))
    return columns, rows, structure


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
        temporary file, deleted on close; ``":memory:"`` to hold it all in memory). Rows RDKit rejects are counted; rows whose first InChIKey block repeats an earlier row are merged
        into it (the first row's columns kept).

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
            ``n_rows``, ``n_structures``, ``n_unparsable``, ``n_duplicates``, ``seconds``, ``structures_per_s``.
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
            tmp = output.with_name(f".{output.name}.tmp-{time.time_ns()}")
            try:
                connection = sqlite3.connect(tmp)
            except sqlite3.Error as exc:
                raise IOKRDataError(f"Cannot write the structure database {output} ({exc}).") from None
        try:
            stats = cls._fill(connection, columns, rows, structure_columns, fingerprinter, progress, n_jobs)
            meta = {"schema": SCHEMA, "version": str(VERSION), "fingerprint": json.dumps(fingerprinter.params()),
                    "columns": json.dumps(columns), "n_structures": str(stats["n_structures"]),
                    "source": Path(source).name, "n_rows": str(stats["n_rows"]),
                    "n_unparsable": str(stats["n_unparsable"])}
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
        id_col, name_col = _pick(columns, IDENTIFIER_COLUMNS), _pick(columns, NAME_COLUMNS)
        insert = ("INSERT INTO structures (key14, inchikey, smiles, formula, mass, fp, columns) "
                  "VALUES (?, ?, ?, ?, ?, ?, ?)")
        seen = set()
        counts = {"n_rows": 0, "n_unparsable": 0, "n_duplicates": 0}
        for chunk, parsed in _parsed_chunks(rows, structure_columns, fingerprinter, n_jobs):
            batch = []
            for row, result in zip(chunk, parsed, strict=True):
                counts["n_rows"] += 1
                if result is None:
                    counts["n_unparsable"] += 1
                    continue
                key, smiles, formula, mass, blob = result
                if key[:14] in seen:  # the first row of a skeleton wins, in file order
                    counts["n_duplicates"] += 1
                    continue
                seen.add(key[:14])
                user = {c: row.get(c, "") for c in columns}
                user["__identifier"] = row.get(id_col, "") if id_col else ""
                user["__name"] = row.get(name_col, "") if name_col else ""
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

    def records(self, ids):
        """The output columns of rows ``ids``: :data:`CANDIDATE_COLUMNS`, then the user's columns."""
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
                record[column if column not in record else f"db_{column}"] = value
            out.append(record)
        return out

    def close(self):
        self.db.close()


#: Rows parsed per chunk (one chunk per worker task).
CHUNK_ROWS = 2000


def _parse_row(text, fingerprinter):
    """``(inchikey, smiles, formula, mass, fingerprint bytes)`` of one structure text, or None if RDKit rejects it."""
    mol = parse_structure(text) if text else None
    if mol is None:
        return None
    # The key of a given InChI straight from its text (skips regenerating the InChI from the molecule).
    key = inchikey_of_inchi(text.strip()) if text.startswith("InChI=") else None
    key = key or inchikey(mol)
    if key is None:
        return None
    try:
        formula = canonical_formula(_formula_of(mol))
    except FormulaError:
        return None
    fp, _ = fingerprinter.transform([mol])
    smiles = text.strip() if not text.startswith("InChI=") else _smiles_of(mol)
    return key, smiles, formula, monoisotopic_mass(formula), encode_fingerprint(fp[0], fingerprinter.binary)


def _parse_texts(texts, fingerprint):
    fingerprinter = Fingerprinter(**fingerprint)
    return [_parse_row(t, fingerprinter) for t in texts]


def _parsed_chunks(rows, structure_columns, fingerprinter, n_jobs):
    """``(rows, parsed)`` per chunk of :data:`CHUNK_ROWS` rows, parsed in worker processes when there are several
    chunks (RDKit parsing and fingerprints dominate indexing; results keep the file order)."""
    def texts_of(chunk):
        return [next((r.get(c) for c in structure_columns if (r.get(c) or "").strip()), None) for r in chunk]

    rows = iter(rows)
    chunks = iter(lambda: list(itertools.islice(rows, CHUNK_ROWS)), [])
    head = list(itertools.islice(chunks, 2))
    chunks = itertools.chain(head, chunks)
    n_jobs = (os.cpu_count() or 1) if n_jobs is None else n_jobs
    if len(head) < 2 or n_jobs <= 1:
        for chunk in chunks:
            yield chunk, _parse_texts(texts_of(chunk), fingerprinter.params())
        return

    with ProcessPoolExecutor(max_workers=n_jobs) as pool:
        pending = []
        for chunk in chunks:
            pending.append((chunk, pool.submit(_parse_texts, texts_of(chunk), fingerprinter.params())))
            if len(pending) > 2 * n_jobs:  # bounded look-ahead: memory stays a few chunks
                chunk, future = pending.pop(0)
                yield chunk, future.result()
        for chunk, future in pending:
            yield chunk, future.result()


def _formula_of(mol):
    from rdkit.Chem.rdMolDescriptors import CalcMolFormula  # noqa: PLC0415 - rdkit is an optional dependency

    return CalcMolFormula(mol)


def _smiles_of(mol):
    return _rdkit().MolToSmiles(mol)

"""The file of a :class:`~._candidate_store.CandidateStore` (``--store``): identified before anything is written.

Format 3 (this iokr): table ``meta`` names the schema (:data:`STORE_SCHEMA`), its version, the fingerprint
parameters and how structures are keyed; table ``structures`` holds per input text its parse status, the parent's
first InChIKey block, InChIKey, formula, compact fingerprint (:mod:`._store_format`) and a checksum of the row.
Stores written before (format 2: no schema name, dense fingerprints, no checksums) are caches: they are refused
with the advice to delete them, as is any SQLite file that is not a store (left unchanged).
"""

from __future__ import annotations

from .... import __version__
from ....exceptions import IOKRDataError
from ._sqlite_files import (
    READ_ERRORS,
    connect,
    connect_read_only,
    describe_error,
    inspect_path,
    is_private,
    read_meta,
)

STORE_SCHEMA = "iokr-candidate-store"
STORE_VERSION = 3
#: How a store's structures are keyed, recorded in its ``meta`` table: the parent structure
#: (:func:`~._structures.parent_of`), labelled formulas apart. Stores written before hold salts whole.
STORE_STRUCTURES = "parent-v1"
#: The stored values of a row, in checksum order (the checksum last).
STORE_ROW = ("text", "ok", "key14", "inchikey", "formula", "fp", "crc")

_CREATE = (
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE structures (text TEXT PRIMARY KEY, ok INTEGER NOT NULL, key14 TEXT, inchikey TEXT, "
    "formula TEXT, fp BLOB, crc INTEGER NOT NULL)",
    "CREATE INDEX by_formula ON structures (formula)",
)


def _check_meta(meta, params, label):
    """IOKRDataError unless ``meta`` is that of a format-3 store of fingerprint ``params``."""
    if meta is None or (meta.get("schema") != STORE_SCHEMA and not {"fingerprint", "structures"} <= set(meta)):
        raise IOKRDataError(f"Candidate store {label} is an SQLite database of another application (no "
                            f"'{STORE_SCHEMA}' schema); give a new file (it was left unchanged).")
    if meta.get("schema") != STORE_SCHEMA or meta.get("version") != str(STORE_VERSION):
        raise IOKRDataError(f"Candidate store {label} has format {meta.get('version', '2')}; this iokr "
                            f"({__version__}) writes format {STORE_VERSION}: delete it, it is a cache and is rebuilt "
                            "on the next run.")
    if meta.get("structures") != STORE_STRUCTURES:
        raise IOKRDataError(f"Candidate store {label} was written by an older iokr (structures stored whole, not as "
                            f"their parent: {STORE_STRUCTURES}); delete it to rebuild the cache.")
    if meta.get("fingerprint") != params:
        raise IOKRDataError(f"Candidate store {label} caches fingerprints {meta.get('fingerprint')}, not {params}; "
                            "use another store file.")


def open_store_file(path, params, label):
    """A read-write connection to the store ``path`` (``""``: SQLite's private temporary file; ``":memory:"``),
    created when missing; IOKRDataError, with ``path`` unchanged, for a file that is not a format-3 store of
    fingerprint ``params`` (a ``repr`` of the sorted parameters)."""
    try:
        if not is_private(path) and inspect_path(path, "Candidate store") == "sqlite":
            reader = connect_read_only(path)
            try:
                _check_meta(read_meta(reader), params, label)
            finally:
                reader.close()
        connection = connect(path)
        meta = read_meta(connection)
        if meta == {}:  # a new file: the schema and its meta in one transaction
            connection.execute("BEGIN")  # the tables too: a store is created whole or not at all
            for statement in _CREATE:
                connection.execute(statement)
            connection.executemany("INSERT INTO meta VALUES (?, ?)", [
                ("schema", STORE_SCHEMA), ("version", str(STORE_VERSION)), ("fingerprint", params),
                ("structures", STORE_STRUCTURES)])
            connection.commit()
        else:  # checked again through this connection: another process may have written it in between
            _check_meta(meta, params, label)
    except READ_ERRORS as exc:
        raise describe_error(exc, "Candidate store", label, remedy="delete it to rebuild the cache") from None
    return connection

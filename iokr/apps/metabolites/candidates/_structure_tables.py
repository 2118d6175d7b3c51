"""Structure tables as other tools write them: CSV, TSV, pipe-separated, SDF; their columns recognised.

Column names are compared with case, spaces, underscores and punctuation ignored:

- structures, tried in this order until one parses (a later column used after an earlier one failed is counted):
  ``SMILES``, ``IsomericSMILES``, ``CanonicalSMILES``, ``InChI``, ``id1`` (the shared lists), ``structure``; then
  MZmine feature-table columns ending in ``:smiles`` / ``:inchi`` (``preferred_annotation:`` first, then
  ``compound_db_identity:``, ``spectral_db_matches:`` and the others in file order);
- identifiers: ``Identifier``, ``DatabaseID`` (MetFrag), ``SpectrumID`` (GNPS), ``ID``, ``CID``, ...;
- names: ``Name``, ``Compound_Name`` (GNPS), ``CompoundName``, ``Title``, ..., else MZmine's
  ``<annotation>:compound_name``.

Formats: ``.tsv`` is tab-separated and ``.psv`` pipe-separated (MetFrag local databases); other text files
(``.csv``, ``.txt``) take the first of tab, ``|``, ``,`` and ``;`` found in their header line. SDF records carry
their properties (MetFrag's ``DatabaseID``) and title line.

Values: 'N/A', 'NA', 'nan', 'null', 'None' and blanks are *missing* (counted apart from structures RDKit
rejects); a value wrapped in quotes (GNPS ``"InChI=..."``) is read without them. The user's own columns are
carried to the outputs exactly as written.
"""

from __future__ import annotations

import csv
import gzip
import io
import itertools
import re
from pathlib import Path

from ....exceptions import IOKRDataError
from ....io import iter_lines
from ..chemistry._fingerprints import _rdkit
from ..importing._delimited_text import delimited_rows

STRUCTURE_COLUMNS = ("smiles", "isomericsmiles", "canonicalsmiles", "inchi", "id1", "structure")
#: MZmine feature tables: annotation columns ``<module>:smiles`` / ``<module>:inchi``, these modules first.
MZMINE_PREFERRED = ("preferred_annotation", "compound_db_identity", "spectral_db_matches")
IDENTIFIER_COLUMNS = ("identifier", "databaseid", "spectrumid", "id", "cid", "pubchemcid", "pubchemcompoundcid",
                      "compoundid", "dtxsid", "accession", "dbid")
NAME_COLUMNS = ("name", "compoundname", "title", "sdftitle", "iupacname", "pubchemiupacname", "synonym")
#: Values read as missing (compared in lower case, blanks stripped).
MISSING_VALUES = frozenset({"", "n/a", "na", "nan", "null", "none", "#n/a"})
#: Largest CSV field accepted (bytes): one field of a structure table is a name or a structure.
MAX_FIELD_BYTES = 1 << 20
#: Suffixes of structure tables (each optionally ``.gz``).
TABLE_SUFFIXES = (".csv", ".tsv", ".psv", ".txt")
#: Columns an SDF record gets besides its properties: its title line, and its structure (read, not carried).
SDF_TITLE, SDF_SMILES = "SDF_TITLE", "__sdf_smiles"
#: The structure text of an SDF record RDKit rejects (no SMILES: it is counted as unparsable, not missing).
SDF_REJECTED = "<SDF record RDKit rejects>"


def squash(name):
    """A column name compared without case, spaces, underscores or punctuation."""
    return "".join(ch for ch in name.lower() if ch.isalnum())


def pick(columns, wanted):
    """The first column of ``columns`` whose squashed name is in ``wanted`` (in ``wanted``'s order), or None."""
    squashed = {}
    for c in columns:
        squashed.setdefault(squash(c), c)
    return next((squashed[w] for w in wanted if w in squashed), None)


def _mzmine_rank(column):
    module = column.rsplit(":", 1)[0].strip().lower()
    return MZMINE_PREFERRED.index(module) if module in MZMINE_PREFERRED else len(MZMINE_PREFERRED)


def name_column(columns):
    """The names' column: the first of :data:`NAME_COLUMNS`, else MZmine's ``<annotation>:compound_name``
    (``preferred_annotation:`` first), else None."""
    found = pick(columns, NAME_COLUMNS)
    mzmine = sorted((c for c in columns if ":" in c and squash(c.rsplit(":", 1)[1]) in ("compoundname", "name")),
                    key=_mzmine_rank)
    return found or (mzmine[0] if mzmine else None)


def clean_value(value):
    """A field's text for parsing: ``""`` when missing, surrounding quotes and blanks removed."""
    if not isinstance(value, str):
        return ""
    text = value.strip()
    while len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        text = text[1:-1].strip()
    return "" if text.lower() in MISSING_VALUES else text


def structure_columns(columns):
    """The structure columns of a table, in the order they are tried (see the module docstring)."""
    plain = sorted((c for c in columns if squash(c) in STRUCTURE_COLUMNS),
                   key=lambda c: STRUCTURE_COLUMNS.index(squash(c)))
    mzmine = [c for c in columns if ":" in c and squash(c.rsplit(":", 1)[1]) in ("smiles", "inchi")]

    return plain + sorted(mzmine, key=lambda c: (_mzmine_rank(c), squash(c.rsplit(":", 1)[1]) != "smiles"))


def structure_texts(row, columns):
    """The non-missing structure texts of one row, in the order they are tried."""
    return tuple(t for t in (clean_value(row.get(c)) for c in columns) if t)


def _delimiter(name, header):
    name = name.lower().removesuffix(".gz")
    if name.endswith(".tsv"):
        return "\t"
    if name.endswith(".psv"):
        return "|"
    # A column name may hold another of them ("=cmd|' /C calc'!A0" in a comma table, "Names (IUPAC, CAS)" in a tab
    # table): the first, in this order, that splits the header into a structure column separates; else the first
    # the header's unquoted text holds.
    present = [d for d in ("\t", "|", ",", ";") if d in re.sub(r'"[^"]*"', "", header)]
    return next((d for d in present if structure_columns(next(csv.reader([header], delimiter=d)))),
                present[0] if present else ",")


def _dict_rows(lines, name, where):
    """``(columns, rows)`` of delimited text lines without their LF / CRLF ends (the first line the header; any
    line end, an unclosed quote an error: see :mod:`._delimited_text`)."""
    lines = iter(lines)
    first = next(lines, "").lstrip("\ufeff")
    control = next((c for c in first if ord(c) < 32 and c not in "\t\r"), None)
    if control is not None:  # a binary file (random bytes, a spreadsheet's .xlsx renamed .csv) read as text
        raise IOKRDataError(f"{where} is not a text table: its first line holds the control character "
                            f"{control!r} (a binary file such as .xlsx? save it as CSV or TSV).")
    delimiter = _delimiter(name, first.split("\r", 1)[0])
    return delimited_rows(itertools.chain([first], lines), delimiter, where, MAX_FIELD_BYTES)


def _sdf_records(handle):
    """``(columns, rows)`` of an SDF stream, one record at a time."""
    Chem = _rdkit()
    supplier = Chem.ForwardSDMolSupplier(handle, sanitize=True)
    # Columns are the properties seen in the file's first records (a streamed file cannot be looked at twice).
    head = [mol for _, mol in zip(range(1000), supplier, strict=False)]
    columns = [SDF_TITLE]
    for mol in head:
        if mol is not None:
            columns.extend(k for k in mol.GetPropsAsDict() if k not in columns)

    def rows():
        with handle:
            for mol in itertools.chain(head, supplier):
                if mol is None:
                    yield {SDF_TITLE: "", SDF_SMILES: SDF_REJECTED}
                    continue
                row = {SDF_TITLE: mol.GetProp("_Name") if mol.HasProp("_Name") else ""}
                row.update({k: str(v) for k, v in mol.GetPropsAsDict().items()})
                row[SDF_SMILES] = Chem.MolToSmiles(mol)
                yield row
    return columns, rows()


def _kind(name, where):
    lower = name.lower().removesuffix(".gz")
    if lower.endswith((".sdf", ".mol")):
        return "sdf"
    if lower.endswith(TABLE_SUFFIXES):
        return "text"
    raise IOKRDataError(f"{where}: unsupported format; expected .csv, .tsv, .psv, .txt or .sdf (each optionally "
                        ".gz).")


def _with_structures(columns, rows, kind, where):
    if kind == "sdf":
        return columns, rows, [SDF_SMILES]
    seen, repeated = {}, {}
    for number, name in enumerate(columns, 1):
        if name in seen and name.strip():  # unnamed columns (a spreadsheet's trailing blank cells) may repeat
            repeated.setdefault(name, [seen[name]]).append(number)
        seen.setdefault(name, number)
    if repeated:  # each row is read as {column: value}: a repeated name would keep only its last value
        detail = "; ".join(f"{name!r} (columns {', '.join(map(str, at))})" for name, at in list(repeated.items())[:3])
        raise IOKRDataError(f"{where} names columns more than once: {detail}; rename them so each value is kept.")
    found = structure_columns(columns)
    if not found:
        raise IOKRDataError(f"{where} has no structure column: expected a column named SMILES or InChI (or "
                            f"{', '.join(STRUCTURE_COLUMNS)}, or MZmine's '<annotation>:smiles'), got {columns}.")
    return columns, rows, found


def read_structure_rows(path, what="Structure database", on_legacy=None):
    """``(columns, rows, structure_columns)`` of a structure table file (plain or ``.gz``), streamed. Lines that are
    not UTF-8 are read as Windows-1252 (Excel's "CSV" on Windows), each reported to ``on_legacy(line_number)``."""
    path = Path(path)
    where = f"{what} {path}"
    if not path.exists():
        raise IOKRDataError(f"{where} does not exist.")
    if not path.is_file():
        raise IOKRDataError(f"{where} is not a regular file.")
    kind = _kind(path.name, where)
    if kind == "sdf":
        with open(path, "rb") as probe:
            gz = probe.read(2) == b"\x1f\x8b"
        handle = gzip.open(path, "rb") if gz else open(path, "rb")  # noqa: SIM115 - closed by rows() when consumed
        columns, rows = _sdf_records(handle)
    else:
        # Streamed through the capped line reader (iokr.io.iter_lines: line length, gzip ratio).
        lines = (line for _, line in iter_lines(path, what=what, errors="windows-1252", on_legacy=on_legacy))
        columns, rows = _dict_rows(lines, path.name, where)
    return _with_structures(columns, rows, kind, where)


def structure_rows_of_bytes(name, data, where):
    """``(columns, rows, structure_columns)`` of one table held in memory (a member of an archive)."""
    kind = _kind(name, where)
    if kind == "sdf":
        columns, rows = _sdf_records(io.BytesIO(data))
    else:
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise IOKRDataError(f"{where} is not UTF-8 text ({exc}).") from None
        columns, rows = _dict_rows(iter(re.split(r"\r?\n", text)), name, where)
    return _with_structures(columns, rows, kind, where)

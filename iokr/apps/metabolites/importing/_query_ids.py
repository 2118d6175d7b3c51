"""Query ids that survive any exporter: one per record, unique within a run, and the field they came from.

Exporters disagree on what names a spectrum: MZmine writes ``FEATURE_ID`` (and ``SCANS``, the same number), GNPS
library MGFs repeat ``SCANS=1`` but give a unique ``SPECTRUMID``, mzXML has scan numbers, mzML native ids
(``scan=N``), MSP ``DB#`` and ``Name``, MassBank accessions. The ids of a run come from one field for every
record: the one asked for (``--query-id-field``, matched in any case and under any of its aliases), else the first
of :data:`QUERY_ID_FIELDS` the records have; when that field is missing from some records or repeats, from the
next field that names every record uniquely, else from the records' 1-based positions in the file; the
:class:`QueryIds` says which, and why (for the log and ``parameters.json``).
"""

from __future__ import annotations

from dataclasses import dataclass

from ._msfiles import harmonized_name

#: Fields naming a query, in order of preference (harmonized names: ``FEATURE_ID``, ``SCANS``, ``SPECTRUMID`` /
#: ``DB#`` / MassBank accession / MZmine ``lib_id``, ``TITLE``, mzML native id, MSP / library ``Name``).
QUERY_ID_FIELDS = ("feature_id", "scans", "spectrum_id", "title", "native_id", "name")
#: ``field_used`` when the ids are the records' positions.
POSITIONS = "record position"


@dataclass(frozen=True)
class QueryIds:
    """The query ids of a run.

    Attributes
    ----------
    ids : list of str
        One per record, unique.
    field_used : str
        The harmonized field they come from, or ``"record position"`` (1-based positions in the file).
    note : str
        ``""``, or one line saying why the wanted field was not used (e.g. ``"scans repeats (97 of 100 records share
        a value): query ids from spectrum_id"``).
    """

    ids: list
    field_used: str
    note: str = ""


def _values(metadata, key):
    out = []
    for meta in metadata:
        value = meta.get(key)
        value = None if value is None else str(value).strip()
        out.append(value or None)
    return out


def _why_not(values):
    """Why a field's values cannot be the ids (missing / repeated), or "" when they can."""
    n = len(values)
    missing = sum(v is None for v in values)
    if missing:
        return f"missing in {missing} of {n} records"
    counts = {}
    for v in values:
        counts[v] = counts.get(v, 0) + 1
    shared = sum(c for c in counts.values() if c > 1)
    return f"repeats ({shared} of {n} records share a value)" if shared else ""


def query_ids(metadata, field=None):
    """The query ids of records (see the module docstring).

    Parameters
    ----------
    metadata : list of dict
        ``Spectra.metadata`` of the queries as read (``record`` gives each one's 0-based position in its file).
    field : str, optional
        The field asked for, in any case or alias (``FEATURE_ID``, ``featureid``, ``DB#``).

    Returns
    -------
    QueryIds

    Raises
    ------
    ValueError
        ``field`` is in no record.
    """
    if field:
        wanted = harmonized_name(field)
        if not any(_values(metadata, wanted)):
            present = sorted({k for m in metadata for k, v in m.items() if v not in (None, "")})
            raise ValueError(f"The query-id field {field!r} is in no record (matched in any case); the records' "
                             f"fields are: {', '.join(present) or 'none'}.")
        label = field
    else:
        wanted = next((k for k in QUERY_ID_FIELDS if any(_values(metadata, k))), None)
        label = wanted
    reason = ""
    if wanted is not None:
        values = _values(metadata, wanted)
        reason = _why_not(values)
        if not reason:
            return QueryIds(values, wanted)
    for key in QUERY_ID_FIELDS:
        if key == wanted:
            continue
        values = _values(metadata, key)
        if any(values) and not _why_not(values):
            return QueryIds(values, key, f"{label} {reason}: query ids from {key}")
    ids = [str(int(meta.get("record", i)) + 1) for i, meta in enumerate(metadata)]
    if len(set(ids)) != len(ids):  # records of several files: positions in the run
        ids = [str(i + 1) for i in range(len(metadata))]
    note = (f"{label} {reason}: query ids are the records' 1-based positions" if wanted is not None else
            "no record has an id field (" + ", ".join(QUERY_ID_FIELDS) + "): query ids are the records' 1-based "
            "positions")
    return QueryIds(ids, POSITIONS, note)

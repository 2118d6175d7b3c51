"""mzML and mzXML files (instrument runs converted by ProteoWizard, MZmine, OpenMS): the MS2 scans as records.

Read with pyteomics (a dependency of matchms) rather than through matchms's loaders, which keep neither the
scan's polarity (mzML), its native id or scan number, nor what they skipped: here every MS2 scan becomes a record
``(index, fields, peaks)`` as :mod:`._msfiles` gives them for MGF/MSP, with raw fields

- ``precursor_mz``; ``charge``: the precursor's charge state as written (mzML's is unsigned: its sign is the
  scan's polarity); ``ion_mode``: ``positive`` / ``negative`` from the scan's polarity;
- ``scans``: the scan number (mzXML ``num``; mzML ``scan=N`` / ``scanId=N`` of the native id), ``native_id``
  (mzML ``id``), ``title`` (mzML ``spectrum title``);

and every other scan is passed on as ``(index, None, reason)`` (``"MS1 scans"``, ``"MS3 scans"``), so a read
that finds no MS2 scan says what the file held.
"""

from __future__ import annotations

import re

import numpy as np

from ...exceptions import IOKRDataError

#: Scan number in a native id: Thermo / Bruker / Waters ``scan=N``, Agilent ``scanId=N``.
_SCAN_IN_ID = re.compile(r"(?:^|\s)(?:scan|scanId)=(\d+)(?:\s|$)")


def _array(value):
    """A peak array that pyteomics left undecoded (MS2 arrays only are decoded: MS1 scans cost nothing)."""
    return np.asarray(value.decode() if hasattr(value, "decode") else value, dtype=np.float64)


def _first(value, *keys):
    """The first of ``keys`` in a nested pyteomics dict/list ``value`` (depth first), or None."""
    if isinstance(value, dict):
        for key in keys:
            if key in value:
                return value[key]
        value = list(value.values())
    if isinstance(value, list):
        for item in value:
            if isinstance(item, (dict, list)):
                found = _first(item, *keys)
                if found is not None:
                    return found
    return None


def _mzml_fields(scan):
    native_id = str(scan.get("id") or "")
    number = _SCAN_IN_ID.search(native_id)
    precursors = scan.get("precursorList")
    fields = {"precursor_mz": _first(precursors, "selected ion m/z"), "charge": _first(precursors, "charge state"),
              "native_id": native_id or None, "scans": number.group(1) if number else None,
              "title": scan.get("spectrum title"),
              "ion_mode": "positive" if "positive scan" in scan else "negative" if "negative scan" in scan else None}
    return {k: str(v) for k, v in fields.items() if v is not None}


def _mzxml_fields(scan):
    precursor = (scan.get("precursorMz") or [{}])[0]
    polarity = scan.get("polarity")
    fields = {"precursor_mz": precursor.get("precursorMz"), "charge": precursor.get("precursorCharge"),
              "scans": scan.get("num"),
              "ion_mode": {"+": "positive", "-": "negative"}.get(polarity, polarity)}
    return {k: str(v) for k, v in fields.items() if v is not None}


def iter_ms_xml(path, fmt):
    """Records of an mzML (``fmt="mzml"``) or mzXML (``"mzxml"``) file: ``(index, fields, peaks)`` per MS2 scan,
    ``(index, None, "MS<n> scans")`` per other scan (see the module docstring).

    Raises
    ------
    IOKRDataError
        pyteomics is missing, or the file cannot be parsed (naming the file and the scans read before).
    """
    try:
        if fmt == "mzml":
            from pyteomics.mzml import read  # noqa: PLC0415 - optional dependency (iokr[chem], through matchms)
        else:
            from pyteomics.mzxml import read  # noqa: PLC0415 - see above
    except ImportError:  # pragma: no cover - depends on the environment
        raise IOKRDataError(f"Reading {fmt} files needs pyteomics: pip install 'iokr[chem]'.") from None
    level_key, fields_of = ("ms level", _mzml_fields) if fmt == "mzml" else ("msLevel", _mzxml_fields)
    index = 0
    try:
        with read(str(path), decode_binary=False, use_index=False) as reader:
            for scan in reader:
                level = scan.get(level_key)
                if level != 2:
                    yield index, None, f"MS{level if level is not None else '?'} scans"
                else:
                    mz, intensity = _array(scan.get("m/z array", [])), _array(scan.get("intensity array", []))
                    peaks = np.column_stack([mz, intensity]) if mz.shape == intensity.shape else "malformed peaks"
                    yield index, fields_of(scan), peaks
                index += 1
    except IOKRDataError:
        raise
    except Exception as exc:  # noqa: BLE001 - lxml / pyteomics raise assorted errors on malformed files
        raise IOKRDataError(f"Cannot parse {fmt} file {path} after {index} scans "
                            f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})") from None

"""Streaming readers of MGF and MSP spectrum files (plain or gzip), with the metadata harmonized.

Why not matchms here: importing matchms takes about 4 s (numba) on this machine, which alone exceeds the start-up
budget of ``iokr metabolites identify``; these two formats are simple line formats, read here in one pass through
:func:`iokr.io.iter_lines` (capped line length and gzip compression ratio). The tests check these readers against
matchms's on the same files. mzML, mzXML and JSON go through matchms (:func:`iokr.apps.metabolites.read_spectra`).

Each record becomes ``(index, fields, peaks)``: the record's 0-based position in the file, its ``KEY=value`` /
``Key: value`` fields with lower-case keys, and its peak lines as text pairs. :func:`harmonize` maps the fields of
MZmine, GNPS, MassBank and NIST exports onto one set of names.
"""

from __future__ import annotations

import gzip
from pathlib import Path

from ....io import iter_lines

#: Field names of other tools (lower case) -> the harmonized name.
ALIASES = {
    "pepmass": "precursor_mz", "precursormz": "precursor_mz", "precursor_mz": "precursor_mz",
    "precursor_m/z": "precursor_mz", "selected_ion_m/z": "precursor_mz",
    "charge": "charge", "precursor_charge": "charge", "precursorcharge": "charge",
    "adduct": "adduct", "ion": "adduct", "precursor_type": "adduct", "precursortype": "adduct",
    "ion_type": "adduct", "adduct_type": "adduct",
    "ionmode": "ion_mode", "ion_mode": "ion_mode", "ionmode_": "ion_mode", "polarity": "ion_mode",
    "ion_polarity": "ion_mode", "scan_polarity": "ion_mode",
    "formula": "formula", "molecular_formula": "formula", "molecularformula": "formula",
    "smiles": "smiles", "inchi": "inchi", "inchikey": "inchikey", "inchi_key": "inchikey",
    "name": "name", "compound_name": "name", "compoundname": "name",
    "title": "title", "scans": "scans", "scan_number": "scans", "scannumber": "scans",
    "feature_id": "feature_id", "featureid": "feature_id",
    "spectrumid": "spectrum_id", "spectrum_id": "spectrum_id", "db#": "spectrum_id", "accession": "spectrum_id",
    "license": "license", "licence": "license",
    "mslevel": "ms_level", "ms_level": "ms_level", "spectrum_type": "ms_level", "ms_type": "ms_level",
    "mstype": "ms_level",
}

_COMMENT = ("#", ";", "!", "/")


def open_text(path):
    """A text handle on a plain or gzip file (gzip recognized from its content), with undecodable bytes
    replaced (a stray byte in a comment must not lose the file)."""
    path = Path(path)
    with open(path, "rb") as handle:
        gz = handle.read(2) == b"\x1f\x8b"
    if gz:
        return gzip.open(path, "rt", encoding="utf-8", errors="replace", newline=None)
    return open(path, encoding="utf-8", errors="replace", newline=None)


def _lines(path, on_legacy=None):
    """Numbered lines of a spectrum file, stripped (the shared capped reader: line length and gzip ratio); lines
    ended by a lone CR (classic Mac OS, 'CSV (Macintosh)' exports) are split too. A line that is not UTF-8 is read
    as Windows-1252 and ``on_legacy(line_number)`` called (:func:`iokr.io.iter_lines`)."""
    for number, line in iter_lines(path, what="Spectra file", errors="windows-1252", on_legacy=on_legacy):
        for part in line.split("\r") if "\r" in line else (line,):
            yield number, part.strip().lstrip("\ufeff")


def iter_mgf(path, on_legacy=None):
    """Records of an MGF file: ``(index, fields, peaks)`` (see the module docstring).

    Global parameters before the first ``BEGIN IONS`` are defaults for every record (as in the MGF format).
    """
    defaults, fields, peaks, inside, index = {}, None, None, False, 0
    for _, line in _lines(path, on_legacy):
        if not line or line.startswith(_COMMENT):
            continue
        upper = line.upper()
        if upper == "BEGIN IONS":
            fields, peaks, inside = dict(defaults), [], True
            continue
        if upper == "END IONS":
            if inside:
                yield index, fields, peaks
                index += 1
            inside = False
            continue
        key, sep, value = line.partition("=")
        if sep and not key[:1].isdigit():
            (fields if inside else defaults)[key.strip().lower()] = value.strip()
        elif inside:
            peaks.append(line.split()[:2])
    if inside:  # a last record without END IONS: kept (files cut short by tools), its peaks as read
        yield index, fields, peaks


def iter_msp(path, on_legacy=None):
    """Records of an MSP (NIST) file: ``(index, fields, peaks)``; records are separated by blank lines or start
    at each ``Name:`` line. Peak lines may hold several ``m/z intensity`` pairs separated by ``;``."""
    fields, peaks, index, in_peaks = None, [], 0, False
    for _, line in _lines(path, on_legacy):
        if not line:
            if fields is not None:
                yield index, fields, peaks
                index += 1
            fields, peaks, in_peaks = None, [], False
            continue
        key, sep, value = line.partition(":")
        lower = key.strip().lower()
        if sep and lower == "name" and fields is not None and (peaks or in_peaks):
            yield index, fields, peaks  # the next record starts without a blank line
            index += 1
            fields, peaks, in_peaks = None, [], False
        is_field = sep and not key[:1].isdigit() and not in_peaks
        if is_field:
            fields = {} if fields is None else fields
            fields[lower] = value.strip()
            in_peaks = lower == "num peaks"
            continue
        if fields is None:
            fields = {}
        in_peaks = True
        for pair in line.split(";"):
            if ":" in pair:  # GOLM / AMDIS style: "70:10 76:35" pairs on one line
                peaks.extend(item.split(":", 1) for item in pair.split())
                continue
            tokens = pair.replace(",", " ").split()
            if tokens:
                peaks.append(tokens[:2])
    if fields is not None:
        yield index, fields, peaks


#: MassBank record lines -> harmonized fields: ``(tag, subtag or None)``; the first line of a tag wins.
_MASSBANK_FIELDS = {("ACCESSION", None): "spectrum_id", ("LICENSE", None): "license", ("CH$NAME", None): "name",
                    ("CH$FORMULA", None): "formula", ("CH$SMILES", None): "smiles", ("CH$IUPAC", None): "inchi",
                    ("CH$LINK", "INCHIKEY"): "inchikey", ("AC$MASS_SPECTROMETRY", "ION_MODE"): "ion_mode",
                    ("AC$MASS_SPECTROMETRY", "MS_TYPE"): "ms_level", ("MS$FOCUSED_ION", "PRECURSOR_M/Z"): "precursor_mz",
                    ("MS$FOCUSED_ION", "PRECURSOR_TYPE"): "adduct"}


def iter_massbank_records(path, on_legacy=None):
    """Records of a MassBank record file (``ACCESSION: ...`` ... ``PK$PEAK:`` ... ``//``, one or several per
    file): ``(index, fields, peaks)`` with harmonized field names (``MS_TYPE`` as ``ms_level``)."""
    fields, peaks, index, in_peaks = {}, [], 0, False
    for _, line in _lines(path, on_legacy):
        if line == "//":
            yield index, fields, peaks
            fields, peaks, index, in_peaks = {}, [], index + 1, False
            continue
        tag, sep, value = line.partition(": ")
        if in_peaks and not sep:
            peaks.append(line.split()[:2])
            continue
        in_peaks = tag == "PK$PEAK"
        sub, _, rest = value.partition(" ")
        name = _MASSBANK_FIELDS.get((tag, None)) or _MASSBANK_FIELDS.get((tag, sub))
        if name and name not in fields:
            fields[name] = value.strip() if (tag, None) in _MASSBANK_FIELDS else rest.strip()
    if fields or peaks:
        yield index, fields, peaks


def harmonized_name(key):
    """The harmonized name of a field of any tool, in any case (``FEATURE_ID``, ``Precursor_type``, ``DB#``)."""
    lower = str(key).strip().lower()
    return ALIASES.get(lower.replace(" ", "_"), lower)


def unquote(value):
    """``value`` without one pair of enclosing double or single quotes (GNPS writes ``INCHI="InChI=..."``), and
    whether it had them; anything but text unchanged."""
    if isinstance(value, str):
        text = value.strip()
        if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
            return text[1:-1].strip(), True
    return value, False


def harmonize(fields):
    """The harmonized metadata of one record: the names of :data:`ALIASES` (first alias present wins), other
    fields kept under their lower-case names. ``precursor_mz`` keeps only the first token of ``PEPMASS``
    (``"195.0877 12345"`` is an m/z and an intensity)."""
    out = {}
    for key, value in fields.items():
        name = harmonized_name(key)
        if name not in out or not out[name]:
            out[name] = value
    if isinstance(out.get("precursor_mz"), str) and out["precursor_mz"].strip():
        out["precursor_mz"] = out["precursor_mz"].split()[0]
    return out

"""Spectra readers: the shared MassBank JSONL format, MGF / MSP (:mod:`._msfiles`), mzML / mzXML
(:mod:`._mzfiles`) and matchms JSON, each plain or gzip.

Every reader leaves the precursor ion as the file writes it, raw (see :func:`~._adducts.read_precursor_ion`, the one
place that interprets it): ``adduct`` (ADDUCT / ION / PRECURSOR_TYPE / Precursor_type / MassBank precursor_type,
else a GNPS name's trailing adduct such as "... M+NH4", then with ``adduct_source="name"``), ``ion_mode``
(IONMODE / POLARITY / ion_mode / the scan's polarity) and ``charge`` (CHARGE / the precursor's charge state).
"""

from __future__ import annotations

import gzip
import logging
import math
import tempfile
import zlib
from pathlib import Path

import numpy as np

from ....exceptions import IOKRDataError
from ....io import JSONDataError, LegacyLines, check_expansion, iter_lines, loads_json
from ..chemistry._fingerprints import inchikey, parse_structure
from ..spectra._spectra import Spectra
from ._formats import check_supported, spectrum_format
from ._msfiles import harmonize, harmonized_name, iter_massbank_records, iter_mgf, iter_msp
from ._mzfiles import iter_ms_xml
from ._records import (  # noqa: F401 - ReadReport, adduct_from_name: public through this module too
    IDENTITY_KEYS,
    MISSING,
    ReadReport,
    adduct_from_name,
    as_float,
    as_text,
    ms_level,
    structure_fields,
    usable_peaks,
)

#: Mass of a proton (Da), for the m/z of [M+H]+ ions.
PROTON_MASS = 1.007276


#: Why a file gave no spectrum, when every skipped record has the same reason.
_NOTHING_READ = {
    "missing precursor m/z": " (no record gives a precursor m/z: an EI / GC-MS library such as GOLM's, not MS/MS?)",
    "no peaks": " (no record has peaks: a library exported without its peak lists?)",
}


def _finish(peak_lists, precursors, metadata, report, path, require_precursor):
    if not peak_lists:
        hint = _NOTHING_READ.get(next(iter(report.counts)), "") if len(report.counts) == 1 else ""
        raise IOKRDataError(f"No usable spectrum in {path}: {report.summary()}{hint}.")
    return Spectra.from_peak_lists(peak_lists, np.asarray(precursors, dtype=np.float64), metadata), report


def read_massbank_jsonl(path, *, require_precursor=True, require_structure=False, keep_empty=False):
    """Read spectra in the shared MassBank JSONL format (one record per line; ``.gz`` detected from the content).

    Parameters
    ----------
    path : str or Path
        The JSONL file, optionally gzipped.
    require_precursor : bool, default=True
        Skip records without a numeric positive ``precursor_mz``.
    require_structure : bool, default=False
        Skip records without an InChIKey (needed for training).
    keep_empty : bool, default=False
        Keep records whose peaks are unusable, without their peaks, the reason in ``peak_problem`` (queries: they
        get a status instead of vanishing).

    Returns
    -------
    spectra : Spectra
        Metadata per spectrum: accession (also as ``spectrum_id``), license, name, inchikey, inchi, smiles,
        formula, source, and the raw precursor ion (``adduct``, ``ion_mode``, ``charge``); an MZmine 3 library
        record's ``lib_id`` / ``entry_id`` (as ``spectrum_id``), ``feature_id`` and ``scan_number`` (as ``scans``)
        when it gives them.
    report : ReadReport
        Records skipped (empty spectra, missing precursor, negative intensities, non-numeric fields, bad JSON,
        JSON nested too deeply, integers too long to convert).

    Raises
    ------
    IOKRDataError
        The file is missing, truncated or damaged, a line is not UTF-8, a line is longer than the
        ``max_line_bytes`` cap or a gzip file decompresses beyond the ``max_compression_ratio`` cap (see
        :func:`iokr.io.iter_lines`), or no record is usable.
    """
    report = ReadReport()
    peak_lists, precursors, metadata = [], [], []
    # Lines are capped (iokr.set_config(max_line_bytes=...)); an over-long line, undecodable text or a damaged
    # gzip stream stops the read with one error naming the line. A bad record is skipped with its reason.
    for line_no, line in iter_lines(path, what="Spectra file"):
        if not line.strip():
            continue
        try:
            rec = loads_json(line, what=f"Spectra file {path}", where=f"line {line_no}")
        except JSONDataError as exc:
            report.skip(f"line {line_no}", exc.reason)
            continue
        if not isinstance(rec, dict):
            report.skip(f"line {line_no}", "invalid JSON")
            continue
        rid = as_text(rec.get("accession")) or f"line {line_no}"
        report.see_fields(rec)
        # MZmine 3 library JSON lines: "signals", "adduct", "polarity", "compound_name" (same reader otherwise)
        peaks, peak_problem = usable_peaks(rec.get("peaks", rec.get("signals")), keep_empty, report)
        if peaks is None:
            report.skip(rid, peak_problem)
            continue
        precursor = as_float(rec.get("precursor_mz"))
        if not precursor > 0 and rec.get("precursor_type") == "[M+H]+":
            # The record names the ion but not its m/z: [M+H]+ of the neutral monoisotopic mass.
            precursor = as_float(rec.get("exact_mass")) + PROTON_MASS
        if not precursor > 0:
            if require_precursor:
                report.skip(rid, "missing precursor m/z")
                continue
            precursor = math.nan
        structure = structure_fields(rec.get, report, inchikey=("inchikey_rdkit", "inchikey_record", "inchikey"),
                                      formula=("formula_rdkit", "formula_record", "formula"))
        if require_structure and not structure["inchikey"]:
            report.skip(rid, "missing structure")
            continue
        peak_lists.append(peaks)
        precursors.append(precursor)
        meta = {"accession": as_text(rec.get("accession")), "spectrum_id": as_text(rec.get("accession")),
                "license": as_text(rec.get("license")), "name": as_text(rec.get("name", rec.get("compound_name"))),
                **structure, "source": as_text(rec.get("source_path"))}
        meta.update({k: v for k, v in _mzmine_ids(rec).items() if not meta.get(k)})
        for key, fields in (("adduct", ("precursor_type", "adduct")), ("ion_mode", ("ion_mode", "polarity")),
                            ("charge", ("charge",))):
            value = next((v for v in (as_text(rec.get(f)) for f in fields) if v is not None and v.strip()), None)
            if value is not None:
                meta[key] = value.strip()
        if peak_problem:
            meta["peak_problem"] = peak_problem
        metadata.append(meta)
        report.n_read += 1
    return _finish(peak_lists, precursors, metadata, report, path, require_precursor)


#: MZmine 3 library JSON keys naming an entry -> harmonized id fields (MZmine's DBEntryField: ENTRY_ID is written
#: as "lib_id" and read as "entry_id", MSP "DB#", MGF "SPECTRUMID"; FEATURE_ID "feature_id"; SCAN_NUMBER
#: "scan_number", MGF "SCANS").
_MZMINE_ID_KEYS = (("lib_id", "spectrum_id"), ("entry_id", "spectrum_id"), ("feature_id", "feature_id"),
                   ("scan_number", "scans"))


def _mzmine_ids(rec):
    """The id fields an MZmine library JSON record gives (first key of each harmonized field), as text."""
    ids = {}
    for key, field in _MZMINE_ID_KEYS:
        value = as_text(rec.get(key))
        if field not in ids and value is not None and value.strip():
            ids[field] = value.strip()
    return ids


def _record_metadata(get, rid, index, path, report, id_field=None):
    """One spectrum's metadata from a harmonized record (``get(key)``): structure, identities, raw precursor ion,
    and the field ``id_field`` names (under its harmonized name)."""
    meta = {"accession": rid, "license": as_text(get("license")), "name": as_text(get("name")),
            **structure_fields(get, report), "source": str(path), "record": str(index)}
    keys = IDENTITY_KEYS + ((harmonized_name(id_field),) if id_field else ())
    for key in keys:
        value = as_text(get(key))
        if value is not None and value.strip() and value.strip().lower() not in MISSING:
            meta[key] = value.strip()
    if "adduct" not in meta:
        from_name = adduct_from_name(meta["name"])
        if from_name is not None:
            meta["adduct"], meta["adduct_source"] = from_name, "name"
            report.note("adducts read from the name")
    return meta


def _from_records(records, path, require_precursor, keep_empty=False, id_field=None):
    """Spectra from ``(index, fields, peaks)`` records: ``fields`` is the harmonized metadata (a dict), or None for
    a record that is skipped (``peaks`` then names why, else "unparsable record"); ``peaks`` is anything
    :func:`check_peaks` accepts. ``keep_empty`` keeps records without usable peaks or precursor (for queries,
    which get a status instead of vanishing)."""
    report = ReadReport()
    peak_lists, precursors, metadata = [], [], []
    for i, fields, raw_peaks in records:
        if fields is None:
            report.skip(f"record {i + 1}", raw_peaks if isinstance(raw_peaks, str) else "unparsable record")
            continue
        get = fields.get
        report.see_fields(fields)
        rid = as_text(get("spectrum_id") or get("accession") or get("name")) or f"record {i + 1}"
        level = ms_level(get("ms_level"))
        if level not in (None, 2):
            report.skip(rid, f"MS{level} records")  # SIRIUS / MZmine MGFs hold each feature's MS1 too
            continue
        peaks, peak_problem = usable_peaks(raw_peaks, keep_empty, report)
        if peaks is None:
            report.skip(rid, peak_problem)
            continue
        precursor = as_float(get("precursor_mz"))
        if not precursor > 0 or not math.isfinite(precursor):
            if require_precursor and not keep_empty:
                report.skip(rid, "missing precursor m/z")
                continue
            precursor = math.nan
        peak_lists.append(peaks)
        precursors.append(precursor)
        meta = _record_metadata(get, rid, i, path, report, id_field)
        if peak_problem:
            meta["peak_problem"] = peak_problem
        metadata.append(meta)
        report.n_read += 1
    return _finish(peak_lists, precursors, metadata, report, path, require_precursor)


def _text_records(path, fmt, on_legacy=None):
    if fmt == "massbank":
        yield from iter_massbank_records(path, on_legacy)
        return
    reader = iter_mgf if fmt == "mgf" else iter_msp
    for index, fields, peaks in reader(path, on_legacy):
        yield index, harmonize(fields), peaks


def _matchms_records(path, fmt):
    try:
        from matchms.importing import load_spectra  # noqa: PLC0415 - matchms is an optional dependency
    except ImportError:  # pragma: no cover - depends on the environment
        raise IOKRDataError(f"Reading {fmt} files needs matchms: pip install 'iokr[chem]'.") from None
    logging.getLogger("matchms").setLevel(logging.ERROR)
    n_parsed = 0
    try:
        # matchms harmonizes metadata keys on load (precursor m/z, charge, ion mode, InChI/SMILES fields, names).
        records = iter(load_spectra(str(path), metadata_harmonization=True, ftype=fmt))
    except Exception as exc:  # noqa: BLE001 - matchms/pyteomics raise assorted errors on malformed files
        raise IOKRDataError(f"Cannot parse {fmt} file {path} ({type(exc).__name__}: {exc})") from None
    while True:
        try:
            s = next(records)
        except StopIteration:
            return
        except Exception as exc:  # noqa: BLE001 - see above; only their parsing is wrapped here
            raise IOKRDataError(f"Cannot parse {fmt} file {path} after {n_parsed} records "
                                f"({type(exc).__name__}: {exc})") from None
        if s is None:
            yield n_parsed, None, None
        else:
            # matchms keeps some fields of other tools as they came (ION, PRECURSOR_TYPE): harmonize them too.
            meta = harmonize({str(k).lower(): v for k, v in s.metadata.items()})
            charge = meta.get("charge")
            if isinstance(charge, (int, np.integer)) and not isinstance(charge, bool):
                # a JSON number is signed (matchms: 2 is 2+); as text "2" would read as a charge without a sign
                meta["charge"] = f"{abs(int(charge))}{'+' if charge > 0 else '-'}" if charge else None
            peaks = np.column_stack([s.peaks.mz, s.peaks.intensities]) if s.peaks is not None else []
            yield n_parsed, meta, peaks
        n_parsed += 1


def _structure_key(text, cache):
    """InChIKey of a structure text by RDKit (``""`` when RDKit gives none), None when RDKit rejects the text;
    memoized in ``cache`` (library files repeat each structure over its spectra)."""
    if text not in cache:
        mol = parse_structure(text)
        cache[text] = None if mol is None else (inchikey(mol) or "")
    return cache[text]


def _resolve_structures(spectra, report):
    """Training records' structures by RDKit: the InChIKey of records giving only an InChI or a SMILES, and an
    InChI RDKit cannot read replaced by the record's SMILES when that one reads (counted; the InChI is kept as
    ``inchi_unreadable``), so every later step (fingerprints, formulas) uses the SMILES. A record that gives its
    InChIKey is parsed only when its InChI does not even start with ``InChI=`` (MassBank files give keys: parsing
    every InChI of 18,600 records tripled the read time, 7.6 s to 22 s)."""
    cache = {}
    for meta in spectra.metadata:
        inchi, smiles, key = meta.get("inchi"), meta.get("smiles"), None
        if inchi and (not meta.get("inchikey") or (smiles and not inchi.startswith("InChI="))):
            key = _structure_key(inchi, cache)
            if key is None and smiles:
                key = _structure_key(smiles, cache)
                if key is not None:
                    meta["inchi_unreadable"], meta["inchi"] = inchi, None
                    report.note("unreadable InChIs replaced by the SMILES")
        elif smiles and not meta.get("inchikey"):
            key = _structure_key(smiles, cache)
        if not meta.get("inchikey") and key:
            meta["inchikey"] = key


#: Byte-order marks of UTF-16 text (Windows tools save MSP / MGF exports so).
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


def _utf8_copy(path, tmp_dir):
    """``path`` itself, or a UTF-8 copy in ``tmp_dir`` of a UTF-16 text file (told by its byte-order mark): every
    reader reads UTF-8. The copy is bounded by the file's size (UTF-16 to UTF-8 at most 1.5 times)."""
    with open(path, "rb") as handle:
        head = handle.read(2)
    if head not in _UTF16_BOMS:
        return path
    target = Path(tmp_dir) / path.name.removesuffix(".gz")
    try:
        with open(path, encoding="utf-16", newline="") as src, open(target, "w", encoding="utf-8", newline="") as dst:
            for block in iter(lambda: src.read(1 << 20), ""):
                dst.write(block)
    except (UnicodeError, OSError) as exc:
        raise IOKRDataError(f"Spectra file {path} starts as UTF-16 text but does not decode as such ({exc}).") \
            from None
    return target


def _plain_copy(path, tmp_dir):
    """``path`` itself, or a decompressed copy of a ``.gz`` file in ``tmp_dir`` for readers that need a plain
    file path (matchms's mzML/mzXML/JSON readers)."""
    if not path.name.lower().endswith(".gz"):
        return path

    target = Path(tmp_dir) / path.name[:-3]
    size, written = path.stat().st_size, 0
    try:
        with gzip.open(path, "rb") as src, open(target, "wb") as dst:
            for block in iter(lambda: src.read(1 << 20), b""):
                written += len(block)
                check_expansion(written, size, where=f"Spectra file {path}")
                dst.write(block)
    except (OSError, EOFError, zlib.error) as exc:
        raise IOKRDataError(f"Spectra file {path} is not a readable gzip file ({exc}).") from None
    return target


def _check_msp_is_ms2(spectra, path):
    """One-line error for an MSP library that holds no MS/MS spectrum: no record with a precursor m/z (an EI /
    GC-MS library such as GOLM's or NIST EI) or none with peaks (exported without its peak lists)."""
    if not np.isfinite(spectra.precursor_mz).any():
        raise IOKRDataError(f"Spectra file {path}: no record gives a precursor m/z (PrecursorMZ): an EI / GC-MS "
                            "library (such as GOLM's or NIST EI), not MS/MS spectra.")
    if not spectra.n_peaks.any():
        raise IOKRDataError(f"Spectra file {path}: no record has peaks (an MSP exported without its peak lists?).")


def _check_id_field(spectra, report, id_field, path):
    """One-line error when no record of the file has the query-id field (matched in any case)."""
    key = harmonized_name(id_field)
    if not any(m.get(key) for m in spectra.metadata):
        raise IOKRDataError(f"Spectra file {path}: no record has the query-id field {id_field!r} (matched in any "
                            f"case); the records' fields are: {', '.join(sorted(report.fields)) or 'none'}.")


def read_spectra(path, *, require_precursor=True, require_structure=False, keep_empty=False, id_field=None):
    """Read a spectra file, choosing the reader from the extension (``.gz`` allowed after each).

    ``.mgf`` and ``.msp`` (streaming readers of this package, metadata harmonized as matchms does), MassBank
    record files (told by content: ``ACCESSION:`` first), ``.mzML`` and
    ``.mzXML`` (their MS2 scans, through pyteomics), ``.json`` (GNPS/matchms JSON, through matchms), ``.jsonl``
    (the shared MassBank format). Formats iokr does not read (vendor raw files, mzData, mzVault) are named in the
    error.

    Parameters
    ----------
    path : str or Path
        The spectra file.
    require_precursor : bool, default=True
        Skip records without a positive precursor m/z.
    require_structure : bool, default=False
        Skip records without a structure (training); InChIKeys of records giving only a SMILES or an InChI are
        derived with RDKit, and the SMILES is used where the InChI does not read.
    keep_empty : bool, default=False
        Keep records without peaks, with unusable peaks (kept without them, the reason in ``peak_problem``) or
        without precursor m/z (queries: they get a status in the outputs).
    id_field : str, optional
        A field naming each record (``--query-id-field``), matched in any case and under any name of
        :data:`~._msfiles.ALIASES` (``FEATURE_ID``, ``featureid``); kept under its harmonized name. Not in MassBank
        JSONL files (their id is the accession).

    Returns
    -------
    spectra : Spectra
        Metadata per spectrum: ``accession`` (the record's id), ``record`` (0-based position in the file), the
        structure fields, and when the file gives them ``feature_id``, ``scans`` (mzXML scan number, mzML
        ``scan=N``), ``title``, ``spectrum_id``, ``native_id`` and the raw precursor ion ``adduct`` (with
        ``adduct_source="name"`` when read from a GNPS name), ``ion_mode``, ``charge``.
    report : ReadReport
        Records read, skipped (per reason) and recovered or flagged.

    Raises
    ------
    IOKRDataError
        A missing or unreadable file, a format iokr does not read (named), no usable record (saying what was
        skipped: MS1 / MS3 scans, records without precursor or peaks), or ``id_field`` in no record.
    """
    path = Path(path)
    if not path.exists():
        raise IOKRDataError(f"Spectra file {path} does not exist.")
    check_supported(path)
    if not path.is_file():
        raise IOKRDataError(f"Spectra file {path} is not a regular file.")
    with tempfile.TemporaryDirectory(prefix="iokr-spectra-") as tmp:
        source = _utf8_copy(path, tmp)
        fmt = spectrum_format(source)
        if fmt is None:
            raise IOKRDataError(f"Unknown spectra format for {path}: expected .mgf, .msp, .mzML, .mzXML, .json, "
                                ".jsonl (each optionally .gz) or MassBank records.")
        if fmt == "jsonl":  # structures resolved below, as for the other formats (a SMILES-only MZmine record too)
            spectra, report = read_massbank_jsonl(source, require_precursor=require_precursor and not keep_empty,
                                                  keep_empty=keep_empty)
        elif fmt in ("mgf", "msp", "massbank"):
            legacy = LegacyLines()
            spectra, report = _from_records(_text_records(source, fmt, legacy), path, require_precursor, keep_empty,
                                            id_field)
            if legacy.count:
                report.note(f"lines not UTF-8, read as Windows-1252 (the first: line {legacy.first})", legacy.count)
            if fmt == "msp":
                _check_msp_is_ms2(spectra, path)
        else:
            plain = _plain_copy(source, tmp)
            records = (_matchms_records(plain, fmt) if fmt == "json" else
                       ((i, None if f is None else harmonize(f), p) for i, f, p in iter_ms_xml(plain, fmt)))
            spectra, report = _from_records(records, path, require_precursor, keep_empty, id_field)
    if id_field:
        _check_id_field(spectra, report, id_field, path)
    if require_structure:
        _resolve_structures(spectra, report)
        keys = spectra.field("inchikey")
        keep = [i for i, k in enumerate(keys) if k]
        # Report the dropped records like the JSONL reader does, so n_read stays the number returned.
        for i, k in enumerate(keys):
            if not k:
                report.skip(spectra.metadata[i].get("accession") or f"record {i}", "missing structure")
        report.n_read = len(keep)
        if not keep:
            raise IOKRDataError(f"No spectrum in {path} carries a structure (InChIKey, SMILES or InChI; needed for "
                                "training).")
        if len(keep) < len(spectra):
            spectra = spectra[np.asarray(keep)]
    return spectra, report

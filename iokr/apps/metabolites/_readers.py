"""Spectra readers: the shared MassBank JSONL format (plain or gzip), and MGF / MSP through matchms."""

from __future__ import annotations

import gzip
import logging
import math
import tempfile
import zlib
from pathlib import Path

import numpy as np

from ...exceptions import IOKRDataError
from ...io import JSONDataError, check_expansion, iter_lines, loads_json
from ._fingerprints import inchikey, parse_structure
from ._msfiles import harmonize, iter_mgf, iter_msp, open_text
from ._spectra import Spectra

#: Mass of a proton (Da), for the m/z of [M+H]+ ions.
PROTON_MASS = 1.007276


class ReadReport:
    """What a reader kept and skipped: a count per reason, and the first skipped records.

    Memory stays bounded whatever the number of bad records: only the first :attr:`MAX_EXAMPLES` skipped records
    are kept by id, every other one only adds to its reason's count.

    Attributes
    ----------
    n_read : int
    n_skipped : int
        Records skipped, all reasons together.
    counts : dict of str to int
        Records skipped per reason.
    skipped : list of (record id, reason)
        The first :attr:`MAX_EXAMPLES` skipped records, in file order (``len(skipped) <= n_skipped``).
    """

    #: Skipped records kept by id in :attr:`skipped`.
    MAX_EXAMPLES = 100

    def __init__(self):
        self.n_read = 0
        self.n_skipped = 0
        self.counts = {}
        self.skipped = []

    def skip(self, record, reason):
        """Count ``record`` (an id) as skipped for ``reason``; keep its id among the first ``MAX_EXAMPLES``."""
        self.n_skipped += 1
        self.counts[reason] = self.counts.get(reason, 0) + 1
        if len(self.skipped) < self.MAX_EXAMPLES:
            self.skipped.append((record, reason))

    def summary(self):
        """One line: ``"<n> spectra read, <m> skipped (<count> <reason>, ...)"``, reasons in alphabetical order."""
        if not self.n_skipped:
            return f"{self.n_read} spectra read"
        detail = ", ".join(f"{n} {r}" for r, n in sorted(self.counts.items()))
        return f"{self.n_read} spectra read, {self.n_skipped} skipped ({detail})"


def _as_float(value):
    try:
        out = float(value)
    except (TypeError, ValueError, OverflowError):  # OverflowError: JSON integers beyond the float range
        return math.nan
    return out


def _text(value):
    """A metadata field as text: strings kept, numbers written out, anything else (lists, objects, booleans) None."""
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return None


def _check_peaks(peaks):
    """Peaks as an (n, 2) float array, or a reason string when they are unusable."""
    try:
        arr = np.asarray(peaks, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        return "non-numeric peaks"
    if arr.size == 0:
        return "no peaks"
    if arr.ndim != 2 or arr.shape[1] != 2:
        return "malformed peaks"
    if not np.isfinite(arr).all():
        return "non-finite peaks"
    if arr[:, 1].min() < 0:
        return "negative intensities"
    if arr[:, 0].min() <= 0:
        return "non-positive m/z"
    arr = arr[arr[:, 1] > 0]
    return arr if arr.size else "no peaks"


def _finish(peak_lists, precursors, metadata, report, path, require_precursor):
    if not peak_lists:
        raise IOKRDataError(f"No usable spectrum in {path}: {report.summary()}.")
    return Spectra.from_peak_lists(peak_lists, np.asarray(precursors, dtype=np.float64), metadata), report


def read_massbank_jsonl(path, *, require_precursor=True, require_structure=False):
    """Read spectra in the shared MassBank JSONL format (one record per line; ``.gz`` detected from the content).

    Parameters
    ----------
    path : str or Path
    require_precursor : bool, default=True
        Skip records without a numeric positive ``precursor_mz``.
    require_structure : bool, default=False
        Skip records without an InChIKey (needed for training).

    Returns
    -------
    spectra : Spectra
        Metadata per spectrum: accession, license, name, inchikey, inchi, smiles, formula, source.
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
        rid = _text(rec.get("accession")) or f"line {line_no}"
        peaks = _check_peaks(rec.get("peaks"))
        if isinstance(peaks, str):
            report.skip(rid, peaks)
            continue
        precursor = _as_float(rec.get("precursor_mz"))
        if not precursor > 0 and rec.get("precursor_type") == "[M+H]+":
            # The record names the ion but not its m/z: [M+H]+ of the neutral monoisotopic mass.
            precursor = _as_float(rec.get("exact_mass")) + PROTON_MASS
        if not precursor > 0:
            if require_precursor:
                report.skip(rid, "missing precursor m/z")
                continue
            precursor = math.nan
        inchikey = _text(rec.get("inchikey_rdkit") or rec.get("inchikey_record") or rec.get("inchikey"))
        if require_structure and not inchikey:
            report.skip(rid, "missing structure")
            continue
        peak_lists.append(peaks)
        precursors.append(precursor)
        metadata.append({
            "accession": _text(rec.get("accession")), "license": _text(rec.get("license")),
            "name": _text(rec.get("name")), "inchikey": inchikey, "inchi": _text(rec.get("inchi")),
            "smiles": _text(rec.get("smiles")),
            "formula": _text(rec.get("formula_rdkit") or rec.get("formula_record") or rec.get("formula")),
            "source": _text(rec.get("source_path")), "adduct": _text(rec.get("precursor_type")),
        })
        report.n_read += 1
    return _finish(peak_lists, precursors, metadata, report, path, require_precursor)


#: Metadata carried from a spectrum file to the outputs: the user's identities and the precursor ion.
IDENTITY_KEYS = ("feature_id", "scans", "title", "spectrum_id", "adduct", "ion_mode", "charge")


def _record_metadata(get, rid, index, path):
    """One spectrum's metadata from a harmonized record (``get(key)``): structure, identities, precursor ion."""
    meta = {"accession": rid, "license": _text(get("license")), "name": _text(get("name")),
            "inchikey": _text(get("inchikey")), "inchi": _text(get("inchi")), "smiles": _text(get("smiles")),
            "formula": _text(get("formula")), "source": str(path), "record": str(index)}
    for key in IDENTITY_KEYS:
        value = _text(get(key))
        if value is not None and value.strip() and value.strip().lower() not in ("none", "nan", "n/a", "na"):
            meta[key] = value.strip()
    return meta


def _from_records(records, path, require_precursor, keep_empty=False):
    """Spectra from ``(index, get, peaks)`` records: ``get(key)`` reads the harmonized metadata and ``peaks`` is
    anything :func:`_check_peaks` accepts. ``keep_empty`` keeps records without peaks or precursor (for queries,
    which get a status instead of vanishing)."""
    report = ReadReport()
    peak_lists, precursors, metadata = [], [], []
    for i, get, raw_peaks in records:
        if get is None:
            report.skip(f"record {i + 1}", "unparsable record")
            continue
        rid = _text(get("spectrum_id") or get("accession") or get("name")) or f"record {i + 1}"
        peaks = _check_peaks(raw_peaks)
        if isinstance(peaks, str):
            if not (keep_empty and peaks == "no peaks"):
                report.skip(rid, peaks)
                continue
            peaks = np.zeros((0, 2))
        precursor = _as_float(get("precursor_mz"))
        if not precursor > 0 or not math.isfinite(precursor):
            if require_precursor and not keep_empty:
                report.skip(rid, "missing precursor m/z")
                continue
            precursor = math.nan
        peak_lists.append(peaks)
        precursors.append(precursor)
        metadata.append(_record_metadata(get, rid, i, path))
        report.n_read += 1
    return _finish(peak_lists, precursors, metadata, report, path, require_precursor)


def _text_records(path, fmt):
    reader = iter_mgf if fmt == "mgf" else iter_msp
    for index, fields, peaks in reader(path):
        meta = harmonize(fields)
        yield index, meta.get, peaks


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
            peaks = np.column_stack([s.peaks.mz, s.peaks.intensities]) if s.peaks is not None else []
            yield n_parsed, meta.get, peaks
        n_parsed += 1


def _derive_inchikeys(spectra):
    """InChIKeys of records that give only a SMILES or an InChI (GNPS/MassBank-style training files), by RDKit."""
    for meta in spectra.metadata:
        if not meta.get("inchikey") and (meta.get("inchi") or meta.get("smiles")):
            mol = parse_structure(meta.get("inchi") or meta.get("smiles"))
            meta["inchikey"] = inchikey(mol) if mol is not None else None


#: Spectrum file formats by file-name ending (``.gz`` allowed after each); JSON is told apart from JSONL by content.
SPECTRUM_FORMATS = {".mgf": "mgf", ".msp": "msp", ".mzml": "mzml", ".mzxml": "mzxml", ".jsonl": "jsonl",
                    ".json": "json"}


def _sniff_format(path):
    """The format from the first non-empty line of a (possibly gzipped) file: MGF, MSP, JSON or JSONL; None."""
    try:
        with open_text(path) as handle:
            for _, line in zip(range(50), handle, strict=False):
                text = line.strip().lstrip("\ufeff")
                if not text or text.startswith(("#", ";", "!")):
                    continue
                upper = text.upper()
                if upper == "BEGIN IONS" or upper.startswith(("PEPMASS=", "TITLE=", "CHARGE=")):
                    return "mgf"
                if upper.startswith("NAME:"):
                    return "msp"
                if text.startswith("["):
                    return "json"
                if text.startswith("{"):
                    return "jsonl"
                if text.startswith("<"):
                    return "mzxml" if "mzxml" in text.lower() else "mzml"
                if "=" in text and text.split("=", 1)[0].replace("_", "").isalnum():
                    continue  # an MGF file's global parameters come before its first BEGIN IONS
                return None
    except (OSError, EOFError, UnicodeDecodeError, zlib.error):
        return None
    return None


def _spectrum_format(path):
    """The format from the file name (``.gz`` allowed after the extension), else from the content."""
    name = path.name.lower()
    name = name.removesuffix(".gz")
    fmt = next((f for ext, f in SPECTRUM_FORMATS.items() if name.endswith(ext)), None)
    if fmt in ("json", None):
        sniffed = _sniff_format(path)
        fmt = sniffed if fmt is None or sniffed in ("json", "jsonl") else fmt
    return fmt


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


def read_spectra(path, *, require_precursor=True, require_structure=False, keep_empty=False):
    """Read a spectra file, choosing the reader from the extension (``.gz`` allowed after each).

    ``.mgf`` and ``.msp`` (streaming readers of this package, metadata harmonized as matchms does), ``.mzML``,
    ``.mzXML`` and ``.json`` (GNPS/matchms JSON) through matchms, ``.jsonl`` (the shared MassBank format).

    Parameters
    ----------
    path : str or Path
    require_precursor : bool, default=True
        Skip records without a positive precursor m/z.
    require_structure : bool, default=False
        Skip records without a structure (training); InChIKeys of records giving only a SMILES or an InChI are
        derived with RDKit.
    keep_empty : bool, default=False
        Keep records without peaks or without precursor m/z (queries: they get a status in the outputs).

    Returns
    -------
    spectra : Spectra
        Metadata per spectrum: ``accession`` (the record's id), ``record`` (0-based position in the file), the
        structure fields, and when the file gives them ``feature_id``, ``scans``, ``title``, ``adduct``,
        ``ion_mode``, ``charge``.
    report : ReadReport
    """
    path = Path(path)
    if not path.exists():
        raise IOKRDataError(f"Spectra file {path} does not exist.")
    if not path.is_file():
        raise IOKRDataError(f"Spectra file {path} is not a regular file.")
    fmt = _spectrum_format(path)
    if fmt is None:
        raise IOKRDataError(f"Unknown spectra format for {path}: expected .mgf, .msp, .mzML, .mzXML, .json or "
                            ".jsonl, each optionally .gz.")
    if fmt == "jsonl":
        spectra, report = read_massbank_jsonl(path, require_precursor=require_precursor and not keep_empty,
                                              require_structure=require_structure)
        return spectra, report
    if fmt in ("mgf", "msp"):
        spectra, report = _from_records(_text_records(path, fmt), path, require_precursor, keep_empty)
    else:
        with tempfile.TemporaryDirectory(prefix="iokr-spectra-") as tmp:
            plain = _plain_copy(path, tmp)
            spectra, report = _from_records(_matchms_records(plain, fmt), path, require_precursor, keep_empty)
    if require_structure:
        _derive_inchikeys(spectra)
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
        spectra = spectra[np.asarray(keep)]
    return spectra, report

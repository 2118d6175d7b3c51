"""Spectra readers: the shared MassBank JSONL format (plain or gzip), and MGF / MSP through matchms."""

from __future__ import annotations

import gzip
import math
from pathlib import Path

import numpy as np

from ...exceptions import IOKRDataError
from ...io import JSONDataError, iter_lines, loads_json
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


def _open_text(path):
    path = Path(path)
    with open(path, "rb") as handle:
        gz = handle.read(2) == b"\x1f\x8b"
    return gzip.open(path, "rt", encoding="utf-8") if gz else open(path, encoding="utf-8")


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
            "source": _text(rec.get("source_path")),
        })
        report.n_read += 1
    return _finish(peak_lists, precursors, metadata, report, path, require_precursor)


def _from_matchms(records, path, require_precursor):
    report = ReadReport()
    peak_lists, precursors, metadata = [], [], []
    for i, s in enumerate(records):
        if s is None:
            report.skip(f"record {i}", "unparsable record")
            continue
        get = s.get
        rid = _text(get("spectrum_id") or get("accession") or get("compound_name")) or f"record {i}"
        peaks = _check_peaks(np.column_stack([s.peaks.mz, s.peaks.intensities]) if s.peaks is not None else [])
        if isinstance(peaks, str):
            report.skip(rid, peaks)
            continue
        precursor = _as_float(get("precursor_mz"))
        if not precursor > 0:
            if require_precursor:
                report.skip(rid, "missing precursor m/z")
                continue
            precursor = math.nan
        peak_lists.append(peaks)
        precursors.append(precursor)
        metadata.append({"accession": rid, "license": _text(get("license")), "name": _text(get("compound_name")),
                         "inchikey": _text(get("inchikey")), "inchi": _text(get("inchi")),
                         "smiles": _text(get("smiles")), "formula": _text(get("formula")), "source": str(path)})
        report.n_read += 1
    return _finish(peak_lists, precursors, metadata, report, path, require_precursor)


def _matchms_records(path, fmt):
    try:
        from matchms.importing import load_from_mgf, load_from_msp
    except ImportError:  # pragma: no cover - depends on the environment
        raise IOKRDataError("Reading MGF/MSP needs matchms: pip install 'iokr[chem]'.") from None
    loader = load_from_mgf if fmt == "mgf" else load_from_msp
    records = loader(str(path))
    n_parsed = 0
    while True:
        try:
            # matchms harmonizes metadata keys on load (PEPMASS -> precursor_mz, InChI/SMILES fields, names).
            s = next(records)
        except StopIteration:
            return
        except Exception as exc:  # noqa: BLE001 - matchms/pyteomics raise assorted errors (PyteomicsError,
            # AttributeError, UnicodeDecodeError, ...) on malformed files; only their parsing is wrapped here.
            raise IOKRDataError(f"Cannot parse {fmt.upper()} file {path} after {n_parsed} records "
                                f"({type(exc).__name__}: {exc})") from None
        n_parsed += 1
        yield s


def read_spectra(path, *, require_precursor=True, require_structure=False):
    """Read a spectra file, choosing the reader from the extension.

    ``.jsonl`` / ``.jsonl.gz`` / ``.json`` (shared MassBank format), ``.mgf`` and ``.msp`` (via matchms).

    Returns
    -------
    spectra : Spectra
    report : ReadReport
    """
    path = Path(path)
    if not path.exists():
        raise IOKRDataError(f"Spectra file {path} does not exist.")
    name = path.name.lower()
    if name.endswith((".mgf", ".msp")):
        fmt = name.rsplit(".", 1)[1]
        spectra, report = _from_matchms(_matchms_records(path, fmt), path, require_precursor)
        if require_structure:
            keys = spectra.field("inchikey")
            keep = [i for i, k in enumerate(keys) if k]
            # Report the dropped records like the JSONL reader does, so n_read stays the number returned.
            for i, k in enumerate(keys):
                if not k:
                    report.skip(spectra.metadata[i].get("accession") or f"record {i}", "missing structure")
            report.n_read = len(keep)
            if not keep:
                raise IOKRDataError(f"No spectrum in {path} carries an InChIKey (needed for training).")
            spectra = spectra[np.asarray(keep)]
        return spectra, report
    if name.endswith((".jsonl", ".jsonl.gz", ".json", ".json.gz", ".gz")):
        return read_massbank_jsonl(path, require_precursor=require_precursor, require_structure=require_structure)
    raise IOKRDataError(f"Unknown spectra format for {path}: expected .jsonl(.gz), .mgf or .msp.")

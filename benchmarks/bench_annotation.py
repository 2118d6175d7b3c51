"""Subformula annotation throughput on the MassBank training spectra (issue #20).

All spectra of ``metabolites/massbank_ms2_posMH_permissive.jsonl.gz`` (``--quick``: the first 5,000), cleaned as
training spectra are (:class:`~iokr.apps.metabolites.Cleaning`), annotated by
:func:`iokr.apps.metabolites.chemistry._annotation.annotate` at the default tolerances (10 ppm, 2 mDa floor): "cold" with an
empty subformula cache (every precursor formula enumerated once; the cache keeps the last 512, so a second pass
over 3,000+ formulas would not be warmer). The merged training spectra (one per structure) are annotated too. Reports spectra/s, the share of peaks explained and
the fallbacks. Shared 2-core machine; one run each.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from iokr.apps.metabolites import Cleaning, annotate, read_massbank_jsonl, subformulas


def _row(case, spectra, annotation, seconds):
    rep = annotation.report
    return {"case": case, "n_spectra": len(spectra), "n_peaks": rep.n_peaks, "seconds": seconds,
            "spectra_per_s": len(spectra) / seconds, "peaks_explained_pct": 100.0 * rep.peak_share,
            "spectra_annotated_pct": 100.0 * rep.n_annotated_spectra / max(rep.n_spectra, 1),
            "precursor_formulas": rep.n_precursor_formulas,
            "fallbacks": ", ".join(f"{k}={v}" for k, v in sorted(rep.fallbacks.items())) or "none"}


def run(quick=False, data_dir=None):
    shared = Path(__file__).resolve().parents[2] / "shared" / "data"
    path = Path(data_dir or shared) / "metabolites" / "massbank_ms2_posMH_permissive.jsonl.gz"
    if not path.exists():
        return [{"case": f"skipped: {path} not found"}]
    spectra, _ = read_massbank_jsonl(path)
    cleaning = Cleaning()
    cleaned = cleaning.single(spectra)
    if quick:
        cleaned = cleaned[:5000]
    keep = (cleaned.n_peaks > 0) & (np.array(cleaned.structure_keys()) != "")
    merged, _ = cleaning.merged(cleaned[np.flatnonzero(keep)])
    rows = []
    for case, sample in (("single spectra (cleaned)", cleaned), ("merged, one per structure", merged)):
        subformulas.cache_clear()
        t0 = time.perf_counter()
        annotation = annotate(sample)
        rows.append(_row(case, sample, annotation, time.perf_counter() - t0))
    return rows

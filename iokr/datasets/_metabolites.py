"""Bundled metabolite-identification subset: MassBank spectra, PubChem candidate lists, candidate fingerprints."""

from __future__ import annotations

from pathlib import Path

_DIR = Path(__file__).parent / "data" / "metabolites"

#: Paths of the bundled files (see ``data/metabolites/README.txt`` for sources and licences).
BUNDLED_METABOLITES = {
    "spectra": _DIR / "massbank_subset.jsonl.gz",
    "negative_spectra": _DIR / "massbank_negative_subset.jsonl.gz",
    "candidates": _DIR / "candidate_lists.tar.gz",
    "fingerprint_cache": _DIR / "candidate_fingerprints.npz",
}

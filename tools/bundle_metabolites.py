"""Build the bundled subsets shipped in ``iokr/datasets/data/metabolites`` from the shared data (run once).

A maintainer script, not part of the package (it imports nothing from ``iokr``)::

    python tools/bundle_metabolites.py SHARED_DIR OUT_DIR [positive|negative|both]

``SHARED_DIR`` is the shared data's ``metabolites`` folder. For each polarity, all
MassBank spectra of the candidate lists' true structures (``[M+H]+`` from ``massbank_ms2_posMH_permissive``,
``[M-H]-`` from ``massbank_ms2_negMH_permissive``), plus up to ``per_structure`` spectra of ``n_train`` other
structures drawn at random (seeded); every record keeps its accession and licence. The candidate lists are copied
unchanged. The positive subset (1,600 training structures) predates the negative one (:data:`NEGATIVE`).
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import tarfile
from pathlib import Path

import numpy as np

KEEP = ("accession", "license", "name", "formula_rdkit", "exact_mass", "inchi", "inchikey_rdkit", "instrument_type",
        "collision_energy", "precursor_mz", "precursor_type", "peaks")

#: Source file, output file, training structures and fields kept, per polarity.
POSITIVE = {"source": "massbank_ms2_posMH_permissive.jsonl.gz", "output": "massbank_subset.jsonl.gz",
            "n_train": 1600, "keep": KEEP}
NEGATIVE = {"source": "massbank_ms2_negMH_permissive.jsonl.gz", "output": "massbank_negative_subset.jsonl.gz",
            "n_train": 1000, "keep": (*KEEP, "ion_mode")}


def build(shared_dir, out_dir, n_train=None, per_structure=4, seed=0, polarity=POSITIVE):
    """Write one polarity's subset (and copy the candidate lists); returns ``(n_records, n_true_structures,
    n_training_structures)``."""
    shared_dir, out_dir = Path(shared_dir), Path(out_dir)
    n_train = polarity["n_train"] if n_train is None else n_train
    out_dir.mkdir(parents=True, exist_ok=True)
    lists = shared_dir / "pubchem_candidate_sets_dev.tar.gz"
    with tarfile.open(lists) as tar:
        names = [m.name for m in tar.getmembers() if m.name.endswith(".csv")]
    true = {n.rsplit("_id=", 1)[1][:14] for n in names}
    records = {}
    with gzip.open(shared_dir / polarity["source"], "rt") as handle:
        for line in handle:
            rec = json.loads(line)
            key = (rec.get("inchikey_rdkit") or "")[:14]
            records.setdefault(key, []).append({k: rec.get(k) for k in polarity["keep"]})
    rng = np.random.default_rng(seed)
    others = sorted(k for k in records if k and k not in true)
    chosen = rng.choice(others, size=min(n_train, len(others)), replace=False)
    keep = []
    for key in sorted(true & set(records)):
        keep.extend(records[key])
    for key in sorted(chosen):
        recs = records[key]
        idx = np.unique(np.linspace(0, len(recs) - 1, min(per_structure, len(recs))).round().astype(int))
        keep.extend(recs[i] for i in idx)
    # mtime 0: the same records give the same bytes (the ready model's cache name is a digest of them)
    with gzip.GzipFile(out_dir / polarity["output"], "wb", compresslevel=9, mtime=0) as handle:
        for rec in keep:
            handle.write((json.dumps(rec, separators=(",", ":")) + "\n").encode())
    shutil.copy(lists, out_dir / "candidate_lists.tar.gz")
    return len(keep), len(true & set(records)), len(chosen)


def main(argv=None):
    """Command line: ``SHARED_DIR OUT_DIR [positive|negative|both]`` (default both); prints each subset's counts."""
    parser = argparse.ArgumentParser(prog="python tools/bundle_metabolites.py", description=__doc__.splitlines()[0])
    parser.add_argument("shared_dir", help="the shared data's metabolites folder (MassBank files, candidate lists)")
    parser.add_argument("out_dir", help="where the subsets are written (iokr/datasets/data/metabolites)")
    parser.add_argument("polarity", nargs="?", default="both", choices=("positive", "negative", "both"))
    args = parser.parse_args(argv)
    for name, spec in (("positive", POSITIVE), ("negative", NEGATIVE)):
        if args.polarity in (name, "both"):
            print(name, build(args.shared_dir, args.out_dir, polarity=spec))


if __name__ == "__main__":  # pragma: no cover
    main()

"""Build the bundled subset shipped in ``iokr/datasets/data/metabolites`` from the shared data (run once).

``python -m iokr.apps.metabolites._bundle SHARED_DIR OUT_DIR``: all MassBank spectra of the candidate lists' true
structures, plus up to ``per_structure`` spectra of ``n_train`` other structures drawn at random (seeded); every
record keeps its accession and licence. The candidate lists are copied unchanged.
"""

from __future__ import annotations

import gzip
import json
import shutil
import sys
import tarfile
from pathlib import Path

import numpy as np

KEEP = ("accession", "license", "name", "formula_rdkit", "exact_mass", "inchi", "inchikey_rdkit", "instrument_type",
        "collision_energy", "precursor_mz", "precursor_type", "peaks")


def build(shared_dir, out_dir, n_train=1600, per_structure=4, seed=0):
    shared_dir, out_dir = Path(shared_dir), Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    lists = shared_dir / "pubchem_candidate_sets_dev.tar.gz"
    with tarfile.open(lists) as tar:
        names = [m.name for m in tar.getmembers() if m.name.endswith(".csv")]
    true = {n.rsplit("_id=", 1)[1][:14] for n in names}
    records = {}
    with gzip.open(shared_dir / "massbank_ms2_posMH_permissive.jsonl.gz", "rt") as handle:
        for line in handle:
            rec = json.loads(line)
            key = (rec.get("inchikey_rdkit") or "")[:14]
            records.setdefault(key, []).append({k: rec.get(k) for k in KEEP})
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
    with gzip.open(out_dir / "massbank_subset.jsonl.gz", "wt", compresslevel=9) as handle:
        for rec in keep:
            handle.write(json.dumps(rec, separators=(",", ":")) + "\n")
    shutil.copy(lists, out_dir / "candidate_lists.tar.gz")
    return len(keep), len(true & set(records)), len(chosen)


if __name__ == "__main__":  # pragma: no cover
    print(build(sys.argv[1], sys.argv[2]))

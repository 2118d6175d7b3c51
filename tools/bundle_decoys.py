"""Build the bundled decoy table ``iokr/datasets/data/metabolites/decoys_moses.tsv.gz`` and its fingerprint cache
(run once; a maintainer script, not part of the package).

``python tools/bundle_decoys.py MOSES_TABLE SHARED_DIR OUT_FILE``: ``MOSES_TABLE`` is a decoy table
(:func:`~._decoys.read_decoy_table`) of the MOSES training set (``pip download molsets==0.3.1 --no-deps``, member
``moses/dataset/data/train.csv.gz``; a ``formula`` column spares computing 1.6 M formulas with RDKit, about half an
hour); the output keeps, for every
molecular formula of a structure in the shared MassBank files (``massbank_ms2_*_permissive.jsonl.gz``, field
``formula_rdkit``), at most ``per_formula`` of its MOSES isomers (a seeded draw; :mod:`._decoys` draws its
nearest-mass decoys from the isomers of the other formulas).
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

import numpy as np

from iokr.apps.metabolites import CandidateStore, Fingerprinter
from iokr.apps.metabolites.candidates._decoys import MAX_ISOMERS, _hill, fingerprint_cache_of, read_decoy_table
from iokr.apps.metabolites.chemistry._fingerprint_cache import export_fingerprint_cache
from iokr.apps.metabolites.defaults import DEFAULT_FINGERPRINT

FILES = ("massbank_ms2_posMH_permissive.jsonl.gz", "massbank_ms2_negMH_permissive.jsonl.gz",
         "massbank_ms2_other_permissive.jsonl.gz")


def build(moses_table, shared_dir, out_file, per_formula=MAX_ISOMERS, seed=0):
    """Write the subset; returns ``(n_rows, n_formulas_with_isomers, n_formulas)``."""
    formulas = set()
    for name in FILES:
        with gzip.open(Path(shared_dir) / name, "rt") as handle:
            for line in handle:
                f = _hill(json.loads(line).get("formula_rdkit") or "")
                if f:
                    formulas.add(f)
    table = read_decoy_table(moses_table)
    hill = {f: _hill(f) for f in set(table.formulas.tolist())}
    decoy_formulas = np.array([hill[f] or "" for f in table.formulas.tolist()], dtype=object)
    rng = np.random.default_rng(seed)
    rows_of = {}
    for i, f in enumerate(decoy_formulas.tolist()):
        rows_of.setdefault(f, []).append(i)
    keep = set()
    for f in sorted(formulas & set(rows_of)):
        rows = np.asarray(rows_of[f])
        keep.update((np.sort(rng.choice(rows, per_formula, replace=False)) if rows.size > per_formula
                     else rows).tolist())
    rows = sorted(keep)
    with gzip.open(out_file, "wt", encoding="utf-8", compresslevel=9) as out:
        out.write("smiles\tformula\n")
        for i in rows:
            out.write(f"{table.structures[i]}\t{decoy_formulas[i]}\n")
    # the default fingerprints beside the table (minutes of RDKit work that training would repeat otherwise)
    store = CandidateStore("", Fingerprinter(**DEFAULT_FINGERPRINT))
    export_fingerprint_cache(store, [table.structures[i] for i in rows], fingerprint_cache_of(out_file))
    return len(rows), len(formulas & set(rows_of)), len(formulas)


if __name__ == "__main__":
    print(build(sys.argv[1], sys.argv[2], sys.argv[3]))

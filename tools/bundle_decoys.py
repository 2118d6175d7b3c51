"""Build the bundled decoy table ``iokr/datasets/data/metabolites/decoys_moses.tsv.gz`` and its fingerprint cache
(run once; a maintainer script, not part of the package).

``python tools/bundle_decoys.py --store MOSES_STORE SHARED_DIR OUT_FILE [--per-formula 300]`` (the shipped table,
issue #30 third design): ``MOSES_STORE`` is a structure store (``iokr metabolites index``) of all of MOSES
(``pip download molsets==0.3.1 --no-deps``, members ``moses/dataset/data/{train,test,test_scaffolds}.csv.gz``:
1,936,962 SMILES, MIT); for every molecular formula of a structure in the shared MassBank files
(``massbank_ms2_*_permissive.jsonl.gz``, field ``formula_rdkit``, Hill form), its MOSES isomers, at most
``per_formula`` of them (a draw seeded per formula: ``default_rng([seed, crc32(formula)])``, so a formula's draw does
not depend on the others). SMILES, first InChIKey blocks, formulas and fingerprints are read from the store (its
fingerprint must be the app's default): no RDKit work. ``per_formula`` 0 keeps every isomer.

``python tools/bundle_decoys.py MOSES_TABLE SHARED_DIR OUT_FILE`` (the first design's table, kept to reproduce it):
``MOSES_TABLE`` is a decoy table (:func:`~._decoys.read_decoy_table`) of the MOSES training set with a ``formula``
column; at most 100 isomers per formula (one seeded draw over the sorted formulas), fingerprinted with RDKit.
"""

from __future__ import annotations

import argparse
import gzip
import json
import zlib
from pathlib import Path

import numpy as np

from iokr.apps.metabolites import CandidateStore, Fingerprinter
from iokr.apps.metabolites.candidates._decoys import MAX_ISOMERS, _hill, fingerprint_cache_of, read_decoy_table
from iokr.apps.metabolites.candidates._sharded_database import ShardedStructureDatabase
from iokr.apps.metabolites.chemistry._fingerprint_cache import export_fingerprint_cache, write_fingerprint_cache
from iokr.apps.metabolites.defaults import DEFAULT_FINGERPRINT

FILES = ("massbank_ms2_posMH_permissive.jsonl.gz", "massbank_ms2_negMH_permissive.jsonl.gz",
         "massbank_ms2_other_permissive.jsonl.gz")


def massbank_formulas(shared_dir):
    """Hill formulas of the structures in the shared MassBank files."""
    formulas = set()
    for name in FILES:
        with gzip.open(Path(shared_dir) / name, "rt") as handle:
            for line in handle:
                f = _hill(json.loads(line).get("formula_rdkit") or "")
                if f:
                    formulas.add(f)
    return formulas


def _write_table(out_file, smiles, formulas):
    with gzip.open(out_file, "wt", encoding="utf-8", compresslevel=9) as out:
        out.write("smiles\tformula\n")
        for s, f in zip(smiles, formulas, strict=True):
            out.write(f"{s}\t{f}\n")


def build_from_store(store_path, shared_dir, out_file, per_formula=300, seed=0):
    """Write the table and its cache from a MOSES store; returns ``(n_rows, n_formulas_with_isomers, n_formulas)``."""
    db = ShardedStructureDatabase(store_path)
    if db.fingerprint != DEFAULT_FINGERPRINT:
        raise SystemExit(f"{store_path}: fingerprint {db.fingerprint}, the app's default is {DEFAULT_FINGERPRINT}")
    formulas = massbank_formulas(shared_dir)
    chosen, n_with = [], 0
    for f in sorted(formulas):
        ids = db.by_formula(f)
        if ids.size == 0:
            continue
        n_with += 1
        if per_formula and ids.size > per_formula:
            ids = np.sort(np.random.default_rng([seed, zlib.crc32(f.encode())]).choice(ids, per_formula,
                                                                                        replace=False))
        chosen.append(ids)
    ids = np.concatenate(chosen)
    records = db.records(ids)
    smiles = [r["smiles"] for r in records]
    rows_formulas = [r["formula"] for r in records]
    _write_table(out_file, smiles, rows_formulas)
    write_fingerprint_cache(fingerprint_cache_of(out_file), smiles, [r["inchikey"][:14] for r in records],
                            rows_formulas, db.fingerprints(ids, compact=True).counts, db.fingerprinter)
    return len(ids), n_with, len(formulas)


def build(moses_table, shared_dir, out_file, per_formula=MAX_ISOMERS, seed=0):
    """The first design's table from a MOSES table; returns ``(n_rows, n_formulas_with_isomers, n_formulas)``."""
    formulas = massbank_formulas(shared_dir)
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
    _write_table(out_file, [table.structures[i] for i in rows], [decoy_formulas[i] for i in rows])
    # the default fingerprints beside the table (minutes of RDKit work that training would repeat otherwise)
    store = CandidateStore("", Fingerprinter(**DEFAULT_FINGERPRINT))
    export_fingerprint_cache(store, [table.structures[i] for i in rows], fingerprint_cache_of(out_file))
    return len(rows), len(formulas & set(rows_of)), len(formulas)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source", help="MOSES table (without --store) or MOSES store folder (with --store)")
    parser.add_argument("shared_dir")
    parser.add_argument("out_file")
    parser.add_argument("--store", action="store_true", help="SOURCE is a structure store (the shipped table)")
    parser.add_argument("--per-formula", type=int, default=None,
                        help="isomers kept per formula (default 300 with --store, 100 without; 0: all)")
    args = parser.parse_args()
    if args.store:
        print(build_from_store(args.source, args.shared_dir, args.out_file,
                               300 if args.per_formula is None else args.per_formula))
    else:
        print(build(args.source, args.shared_dir, args.out_file,
                    MAX_ISOMERS if args.per_formula is None else args.per_formula))

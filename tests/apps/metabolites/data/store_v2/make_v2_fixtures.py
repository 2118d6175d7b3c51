"""Writes the format-2 fixtures of this folder; run from the repository root with iokr at commit 1b15daf (the last
commit writing format 2). Kept for provenance: today's iokr writes format 3."""

import csv
import gzip
import shutil
import sys

sys.path.insert(0, "tests/apps/metabolites")
from metab_helpers import bundled_lists_and_training  # noqa: E402

from iokr.apps.metabolites import CandidateStore, Fingerprinter  # noqa: E402
from iokr.apps.metabolites.candidates._database import StructureDatabase  # noqa: E402

OUT = "tests/apps/metabolites/data/store_v2/"


def main():
    lists, _, _ = bundled_lists_and_training(2, 30)
    with open(OUT + "structures.csv", "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["Identifier", "CompoundName", "InChI"])
        rows = [row for rows in lists for row in rows[:40]]
        writer.writerows([f"CID{n}", f"compound {n}", row["id1"]] for n, row in enumerate(rows))
    db, stats = StructureDatabase.build(OUT + "structures.csv", "/tmp/structures_v2.sqlite", n_jobs=1)
    db.close()
    print(stats)
    with open("/tmp/structures_v2.sqlite", "rb") as source, \
            gzip.GzipFile(OUT + "structures_v2.sqlite.gz", "wb", mtime=0) as target:
        shutil.copyfileobj(source, target)
    store = CandidateStore("/tmp/store_v2.sqlite", Fingerprinter("morgan_counts+maccs", n_bits=64))
    store.keys_for(["CCO", "c1ccccc1O", "CC(=O)O", "not a smiles"])
    store.close()
    shutil.copy("/tmp/store_v2.sqlite", OUT + "candidate_store_v2.sqlite")


if __name__ == "__main__":
    main()

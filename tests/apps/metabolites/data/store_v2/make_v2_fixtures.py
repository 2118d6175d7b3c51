import csv, gzip, shutil, sys
sys.path.insert(0, "tests/apps/metabolites")
from metab_helpers import bundled_lists_and_training
from iokr.apps.metabolites import CandidateStore, Fingerprinter
from iokr.apps.metabolites._database import StructureDatabase
out = "tests/apps/metabolites/data/store_v2/"
lists, (a, b), train = bundled_lists_and_training(2, 30)
with open(out + "structures.csv", "w", encoding="utf-8", newline="") as h:
    w = csv.writer(h)
    w.writerow(["Identifier", "CompoundName", "InChI"])
    n = 0
    for rows in lists:
        for row in rows[:40]:
            w.writerow([f"CID{n}", f"compound {n}", row["id1"]]); n += 1
db, stats = StructureDatabase.build(out + "structures.csv", "/tmp/structures_v2.sqlite", n_jobs=1)
db.close(); print(stats)
with open("/tmp/structures_v2.sqlite", "rb") as s, gzip.GzipFile(out + "structures_v2.sqlite.gz", "wb", mtime=0) as d:
    shutil.copyfileobj(s, d)
st = CandidateStore("/tmp/store_v2.sqlite", Fingerprinter("morgan_counts+maccs", n_bits=64))
st.keys_for(["CCO", "c1ccccc1O", "CC(=O)O", "not a smiles"]); st.close()
shutil.copy("/tmp/store_v2.sqlite", out + "candidate_store_v2.sqlite")

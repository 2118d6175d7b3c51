"""Random single-bit flips in a version-3 structure database: a flip in the table's pages (the rows) is reported as
damage or changes nothing a reader sees, never a silently different candidate, fingerprint or column. Flips in the
formula and mass index pages are outside this guarantee (an index entry moved out of its key's range hides its row;
measured in ``benchmarks/results/store_damage.md``)."""

import random
import sqlite3
from pathlib import Path

import pytest

from benchmarks.bench_store_damage import reader_view
from iokr.apps.metabolites import Fingerprinter
from iokr.apps.metabolites.candidates._database import StructureDatabase
from iokr.exceptions import IOKRDataError

pytest.importorskip("rdkit")
TABLE = Path(__file__).parents[1] / "apps" / "metabolites" / "data" / "store_v2" / "structures.csv"


def test_flips_in_the_rows_are_detected_or_harmless(tmp_path):
    path = tmp_path / "db.sqlite"
    StructureDatabase.build(TABLE, path, Fingerprinter("morgan_counts+maccs", n_bits=256), n_jobs=1)[0].close()
    with sqlite3.connect(path) as con:
        roots = dict(con.execute("SELECT name, rootpage FROM sqlite_master"))
        page_size = con.execute("PRAGMA page_size").fetchone()[0]
    # The indexes are created after the rows are written: the table's pages come before the first index's root.
    first, last = roots["structures"], min(roots["by_formula"], roots["by_mass"]) - 1
    assert last >= first
    intact = reader_view(path)
    data = path.read_bytes()
    rng = random.Random(0)
    outcomes = {"detected": 0, "harmless": 0}
    for position in rng.sample(range((first - 1) * page_size, last * page_size), 300):
        damaged = bytearray(data)
        damaged[position] ^= 1 << rng.randrange(8)
        path.write_bytes(bytes(damaged))
        try:
            seen = reader_view(path)
        except IOKRDataError:
            outcomes["detected"] += 1
            continue
        assert seen == intact, f"a flip at byte {position} changed what readers see, silently"
        outcomes["harmless"] += 1
    assert outcomes["detected"] > 50  # the flips reach the rows' values, not only free space

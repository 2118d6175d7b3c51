"""Random single-bit flips in a structure database, format 2 against format 3: how many are reported as damage,
change nothing a reader sees, or silently change what it sees (a candidate, a fingerprint, a column, a lookup).

Data: the format-2 fixture ``tests/apps/metabolites/data/store_v2/structures_v2.sqlite.gz`` (written by iokr
1b15daf: 17 structures of two bundled PubChem lists, default fingerprint) and the format-3 database this iokr
builds from the same table. Each trial flips one random bit of one random byte of the file (seeded; 1,000 trials
per format, ``--quick``: 200), opens the file and reads everything a reader can see: every record and fingerprint,
every formula lookup and a 0.01 Da mass lookup around each structure. Flips are counted by the file region they
hit: the table's pages (the rows), the formula and mass indexes' pages, and the rest (header, meta).
"""

from __future__ import annotations

import gzip
import random
import shutil
import sqlite3
import tempfile
from pathlib import Path

import numpy as np

from iokr.apps.metabolites.candidates._database import StructureDatabase
from iokr.exceptions import IOKRDataError

FIXTURES = Path(__file__).parents[1] / "tests" / "apps" / "metabolites" / "data" / "store_v2"


def reader_view(path):
    """What readers see: every record and fingerprint, every formula lookup, a mass lookup around each row."""
    db = StructureDatabase(path)
    try:
        ids = np.arange(1, db.n_structures + 1)
        records = db.records(ids)
        masses = [float(r["monoisotopic_mass"]) for r in records]
        return (records, db.fingerprints(ids).tobytes(),
                {f: db.by_formula(f).tolist() for f in sorted({r["formula"] for r in records})},
                [db.by_mass(m - 0.01, m + 0.01).tolist() for m in masses])
    finally:
        db.close()


def _regions(path):
    """``page -> region`` of a database whose indexes were written after its rows."""
    with sqlite3.connect(path) as con:
        roots = dict(con.execute("SELECT name, rootpage FROM sqlite_master"))
        n_pages = con.execute("PRAGMA page_count").fetchone()[0]
    first_index = min(roots["by_formula"], roots["by_mass"])
    return {p: ("table" if roots["structures"] <= p < first_index else "indexes" if p >= first_index else "other")
            for p in range(1, n_pages + 1)}


def _trials(path, n, seed):
    intact, data = reader_view(path), path.read_bytes()
    page_size = len(data) // len(_regions(path))
    regions = _regions(path)
    counts = {}
    rng = random.Random(seed)
    scratch = path.with_name("flipped.sqlite")
    for position in rng.sample(range(len(data)), n):
        damaged = bytearray(data)
        damaged[position] ^= 1 << rng.randrange(8)
        scratch.write_bytes(bytes(damaged))
        try:
            outcome = "harmless" if reader_view(scratch) == intact else "silent"
        except IOKRDataError:
            outcome = "detected"
        except Exception as exc:  # noqa: BLE001 - an untyped error is an outcome to count, not to stop on
            outcome = f"untyped {type(exc).__name__}"
        region = regions[position // page_size + 1]
        counts.setdefault(region, {}).setdefault(outcome, 0)
        counts[region][outcome] += 1
    return counts


def run(quick=False, data_dir=None):
    n = 200 if quick else 1000
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench_store_damage") as work:
        work = Path(work)
        v2 = work / "v2" / "db.sqlite"
        v3 = work / "v3" / "db.sqlite"
        v2.parent.mkdir()
        with gzip.open(FIXTURES / "structures_v2.sqlite.gz") as source, open(v2, "wb") as target:
            shutil.copyfileobj(source, target)
        StructureDatabase.build(FIXTURES / "structures.csv", v3, n_jobs=1)[0].close()
        for version, path in (("2", v2), ("3", v3)):
            for region, outcomes in sorted(_trials(path, n, 0).items()):
                total = sum(outcomes.values())
                rows.append({"format": version, "region": region, "flips": total,
                             "detected": outcomes.get("detected", 0), "harmless": outcomes.get("harmless", 0),
                             "silent": outcomes.get("silent", 0),
                             "untyped_errors": sum(v for k, v in outcomes.items() if k.startswith("untyped")),
                             "file_bytes": path.stat().st_size})
    return rows


def summary(rows):
    def silent(version, region=None):
        chosen = [r for r in rows if r["format"] == version and (region is None or r["region"] == region)]
        return sum(r["silent"] for r in chosen), sum(r["flips"] for r in chosen)

    lines = []
    for version in ("2", "3"):
        s, t = silent(version)
        st, tt = silent(version, "table")
        lines.append(f"Format {version}: {s} of {t} flips silently changed what readers see ({st} of {tt} in the "
                     "table's pages).")
    return " ".join(lines)

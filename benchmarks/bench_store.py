"""Structure database format 3 against format 2 on the bundled PubChem structures: bytes per structure, fingerprint
decode time, checksum cost, by-mass lookup latency, and exactness (issues 31 and 32).

Data (real): the 65,375 distinct InChIs of the 60 bundled PubChem candidate lists, as a CSV with the columns
Identifier, InChI (``--quick``: the first 2,000). ``iokr metabolites index`` builds the version-3 database (2
worker processes, default fingerprint ``morgan_counts+maccs``: 2,215 columns); the version-2 database holds the
same rows in version 2's layout (its schema, dense uint8 fingerprints, ``key14`` column, user columns as a JSON
object with the identifier and name), written from the version-3 rows by :func:`_as_version_2`, the reference
writer kept here; both files are VACUUMed.

Rows:
- size: file bytes per structure, and the fingerprint's own bytes per structure (mean stored blob);
- decode: 1,000 rows' fingerprint blobs to float32 (format 2: ``np.frombuffer`` of dense rows; format 3:
  :func:`~iokr.apps.metabolites.candidates._store_format.decode_compact`), best of 5, per 1,000 structures; and
  ``StructureDatabase.fingerprints`` of 1,000 rows (SQLite reads included; format 3 verifies every row);
- checksum: :func:`~iokr.apps.metabolites.candidates._store_format.check_rows` on 1,000 rows alone, and as a share of
  ``fingerprints`` of 1,000 rows;
- lookup: ``by_mass`` with a 10 ppm window around 500 stored masses (median), and ``by_mass`` followed by the
  window's fingerprints;
- exactness: every row's decoded fingerprints equal in both formats (bit for bit), and 1,000 rows equal to
  fingerprints computed afresh from the stored SMILES (counts clipped at 255 as both formats store them).
Timings on a shared 2-core machine under load from other jobs (wall time, best or median as said).
"""

from __future__ import annotations

import csv
import io
import json
import sqlite3
import statistics
import tarfile
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks._harness import best_time
from iokr.apps.metabolites import Fingerprinter
from iokr.apps.metabolites.candidates import _store_format as store_format
from iokr.apps.metabolites.candidates._database import StructureDatabase, decode_fingerprints
from iokr.apps.metabolites.candidates._store_format import decode_compact, stored_values
from iokr.datasets import BUNDLED_METABOLITES

_V2_CREATE = (
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    ("CREATE TABLE structures (id INTEGER PRIMARY KEY, key14 TEXT NOT NULL, inchikey TEXT NOT NULL, "
     "smiles TEXT NOT NULL, formula TEXT NOT NULL, mass REAL NOT NULL, fp BLOB NOT NULL, columns TEXT NOT NULL)"),
)


def _inchis(limit):
    seen = {}
    with tarfile.open(BUNDLED_METABOLITES["candidates"]) as tar:
        for member in sorted(tar.getmembers(), key=lambda m: m.name):
            if member.isfile() and member.name.endswith(".csv"):
                for row in csv.DictReader(io.TextIOWrapper(tar.extractfile(member), encoding="utf-8")):
                    inchi = row.get("id1", "").strip()
                    if inchi.startswith("InChI="):
                        seen.setdefault(inchi, None)
    return list(seen)[:limit]


def _as_version_2(v3_path, v2_path):
    """The version-3 database's rows in version 2's layout (the reference writer of the former format)."""
    source = StructureDatabase(v3_path)
    n, binary = source.fingerprinter.n_features, source.fingerprinter.binary
    target = sqlite3.connect(v2_path)
    for statement in _V2_CREATE:
        target.execute(statement)
    ids = np.arange(1, source.n_structures + 1)
    for start in range(0, ids.size, 5000):
        block = ids[start:start + 5000]
        rows = source._rows(block)  # noqa: SLF001 - the benchmark reads whole rows to rewrite them
        dense = decode_compact([r["fp"] for r in rows], n, binary, "v3", block, dtype=np.uint8)
        batch = []
        for row, fp in zip(rows, dense, strict=True):
            user = source._user_values(row["columns"])  # noqa: SLF001 - with __identifier and __name, as v2
            blob = np.packbits(fp > 0).tobytes() if binary else fp.tobytes()
            batch.append((row["id"], row["inchikey"][:14], row["inchikey"], row["smiles"], row["formula"],
                          row["mass"], blob, json.dumps(user, ensure_ascii=False)))
        target.executemany("INSERT INTO structures VALUES (?, ?, ?, ?, ?, ?, ?, ?)", batch)
    meta = dict(source.db.execute("SELECT key, value FROM meta").fetchall())
    meta["version"] = "2"
    del meta["identifier_column"], meta["name_column"]
    target.executemany("INSERT INTO meta VALUES (?, ?)", meta.items())
    target.execute("CREATE INDEX by_formula ON structures (formula)")
    target.execute("CREATE INDEX by_mass ON structures (mass)")
    target.commit()
    target.execute("VACUUM")
    target.close()
    source.close()


def _median_ms(fn, args):
    times = []
    for a in args:
        start = time.perf_counter()
        fn(*a)
        times.append(time.perf_counter() - start)
    return 1e3 * statistics.median(times)


def run(quick=False, data_dir=None):
    n_rows = 2000 if quick else None
    inchis = _inchis(n_rows)
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench_store") as work:
        work = Path(work)
        table = work / "structures.csv"
        with open(table, "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(["Identifier", "InChI"])
            writer.writerows([f"PC{i + 1:06d}", inchi] for i, inchi in enumerate(inchis))
        v3_path, v2_path = work / "v3.sqlite", work / "v2.sqlite"
        start = time.perf_counter()
        db, stats = StructureDatabase.build(table, v3_path, n_jobs=2)
        index_s = time.perf_counter() - start
        db.close()
        with sqlite3.connect(v3_path) as con:
            con.execute("VACUUM")
        _as_version_2(v3_path, v2_path)
        v2, v3 = StructureDatabase(v2_path), StructureDatabase(v3_path)
        n = v3.n_structures
        rng = np.random.default_rng(0)
        ids = np.sort(rng.choice(np.arange(1, n + 1), size=min(1000, n), replace=False))
        blobs = {d.version: [r["fp"] for r in d._rows(ids)] for d in (v2, v3)}  # noqa: SLF001
        nf, binary = v3.fingerprinter.n_features, v3.fingerprinter.binary
        rows.append({"case": f"index {len(inchis)} rows (2 processes), format 3", "structures": n,
                     "seconds": index_s, "rows_per_s": len(inchis) / index_s})
        for d, path in ((v2, v2_path), (v3, v3_path)):
            rows.append({"case": f"size, format {d.version}", "structures": n,
                         "bytes_per_structure": path.stat().st_size / n,
                         "fingerprint_bytes_per_structure": float(np.mean([len(b) for b in blobs[d.version]]))})
        t2, F2 = best_time(lambda: decode_fingerprints(blobs[2], nf, binary, "v2"), repeat=5)
        t3, F3 = best_time(lambda: decode_compact(blobs[3], nf, binary, "v3", ids), repeat=5)
        rows.append({"case": "decode 1,000 fingerprint blobs", "format_2_ms": 1e3 * t2, "format_3_ms": 1e3 * t3,
                     "per_1000_structures_ms": 1e3 * t3 * 1000 / ids.size, "identical": bool(np.array_equal(F2, F3))})
        f2, _ = best_time(lambda: v2.fingerprints(ids), repeat=5)
        f3, _ = best_time(lambda: v3.fingerprints(ids), repeat=5)
        raw = v3.db.execute(f"SELECT id, inchikey, smiles, formula, mass, fp, columns, crc FROM structures WHERE id IN "
                            f"({','.join(map(str, ids.tolist()))})").fetchall()
        tc, _ = best_time(lambda: store_format.check_rows(raw, "v3"), repeat=5)
        rows.append({"case": "fingerprints of 1,000 rows (SQLite read included)", "format_2_ms": 1e3 * f2,
                     "format_3_ms": 1e3 * f3, "checksum_ms": 1e3 * tc, "checksum_share": tc / f3})
        masses = [r["mass"] for r in v3._rows(rng.choice(np.arange(1, n + 1), size=min(500, n)))]  # noqa: SLF001
        windows = [(m * (1 - 1e-5), m * (1 + 1e-5)) for m in masses]
        sizes = [v3.by_mass(*w).size for w in windows]
        for d in (v2, v3):
            rows.append({"case": f"by_mass 10 ppm, format {d.version}", "structures": n,
                         "median_candidates": float(np.median(sizes)), "lookup_ms": _median_ms(d.by_mass, windows),
                         "lookup_and_fingerprints_ms": _median_ms(lambda lo, hi, d=d: d.fingerprints(d.by_mass(lo, hi)),
                                                                  windows)})
        all_ids = np.arange(1, n + 1)
        same = all(np.array_equal(v2.fingerprints(all_ids[s:s + 5000]), v3.fingerprints(all_ids[s:s + 5000]))
                   for s in range(0, n, 5000))
        fresh, _ = Fingerprinter(**v3.fingerprint).transform([r["smiles"] for r in v3._rows(ids)])  # noqa: SLF001
        rows.append({"case": "exactness", "all_rows_identical_v2_v3": bool(same),
                     "rows_equal_to_fresh": int(np.sum(np.all(stored_values(fresh, binary) == F3, axis=1))),
                     "rows_checked_fresh": int(ids.size), "index_stats_unparsable": stats["n_unparsable"]})
        v2.close()
        v3.close()
    return rows


def summary(rows):
    size = {r["case"]: r for r in rows if r["case"].startswith("size")}
    before, after = size["size, format 2"], size["size, format 3"]
    return (f"Format 3: {after['bytes_per_structure']:.0f} bytes per structure against "
            f"{before['bytes_per_structure']:.0f} ({before['bytes_per_structure'] / after['bytes_per_structure']:.1f}x"
            f" smaller; fingerprints {after['fingerprint_bytes_per_structure']:.0f} against "
            f"{before['fingerprint_bytes_per_structure']:.0f} bytes).")

"""The sharded structure store at scale on real structures: the MOSES set (ZINC, 1,936,962 SMILES in the
``molsets`` 0.3.1 wheel on PyPI, MIT licence): index throughput against the same-run RDKit floor, Dask LocalCluster
against the local build, bytes per structure, lookup latency and identify time against a large and a 70k store
(issue #32).

Data: the MOSES CSVs (train, test, test_scaffolds) read from the ``molsets`` wheel (``pip download molsets==0.3.1
--no-deps``: installing the package itself pulls torch and pomegranate==0.12.0, which has no wheel for Python
3.11 (a source build, not attempted here); its data needs neither), written as one CSV ``Identifier,SMILES`` in MOSES order (``IOKR_MOSES_CSV`` names an
existing one). Environment:

- ``IOKR_SCALE_STORE``: a store folder already built from the first rows of that CSV (``iokr metabolites index
  moses.csv --output FOLDER --workers 2``: its time and peak memory are in ``store_scale_notes.md``); without it
  the store is built here from ``IOKR_SCALE_ROWS`` rows (default: all);
- the 70k store is the large store's first 70,000 input rows (shard rows copied by SQL, no parsing).

Rows:
- floor vs index (``N_FLOOR`` rows, 2 processes, the same chunks of 5,000 rows): the RDKit floor parses the SMILES
  (``MolFromSmiles``) and computes the default fingerprint (``morgan_counts+maccs``) alone; "floor + InChIKey" adds
  the InChIKey (the store's key); index is :func:`~iokr.apps.metabolites.build_store` (parent structure: salts,
  charges, isotopes; InChIKey; compact fingerprint; part files; shards);
- Dask: the same ``N_DASK`` rows on a LocalCluster of 2 processes, every file compared byte for byte with the local
  build;
- size: bytes per structure of the store (all shard files, over structures);
- lookup: ``by_mass`` in a 10 ppm window around 500 stored masses and ``by_formula`` of 500 stored formulas
  (median and 95th percentile, ms), large store against 70k;
- identify: the ready model ranking 1,000 bundled MassBank [M+H]+ spectra whose neutral mass is in MOSES's range
  (250-450 Da) against each store, per query (in-process ``identify``: (best of 3 of 1,000 queries - best of 3 of
  1 query) / 999, interleaved), and the peak RSS of ``iokr metabolites identify`` of the 1,000 in its own process.
Timings on a shared 2-core machine under load from other jobs (wall time).
"""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import numpy as np

from iokr.apps.metabolites import Fingerprinter, ShardedStructureDatabase, build_store
from iokr.apps.metabolites.candidates._database import _CREATE, _meta_checksum
from iokr.apps.metabolites.candidates._sharded_database import MANIFEST, manifest_text
from iokr.datasets import BUNDLED_METABOLITES
from iokr.io._workers import worker_pool

MOSES_PARTS = ("train", "test", "test_scaffolds")
CHUNK = 5000
SMALL_ROWS = 70_000
PUBCHEM = 119_000_000  # PubChem Compound, 2025


def moses_csv(work):
    """The MOSES SMILES as ``Identifier,SMILES`` (``IOKR_MOSES_CSV`` or extracted from the molsets wheel)."""
    if os.environ.get("IOKR_MOSES_CSV"):
        return Path(os.environ["IOKR_MOSES_CSV"])
    cache = Path(os.environ.get("IOKR_CACHE_DIR", Path.home() / ".cache" / "iokr")) / "molsets"
    wheels = sorted(cache.glob("molsets-*.whl"))
    if not wheels:
        subprocess.run([sys.executable, "-m", "pip", "download", "molsets==0.3.1", "--no-deps", "-d", str(cache)],
                       check=True, capture_output=True)
        wheels = sorted(cache.glob("molsets-*.whl"))
    out = Path(work) / "moses.csv"
    n = 0
    with zipfile.ZipFile(wheels[0]) as wheel, open(out, "w", encoding="utf-8") as handle:
        handle.write("Identifier,SMILES\n")
        for part in MOSES_PARTS:
            with wheel.open(f"moses/dataset/data/{part}.csv.gz") as raw, gzip.open(raw, "rt") as lines:
                next(lines)
                for line in lines:
                    if line.strip():
                        n += 1
                        handle.write(f"MOSES{n},{line.strip()}\n")
    return out


def head(csv, n_rows, path):
    with open(csv, encoding="utf-8") as src, open(path, "w", encoding="utf-8") as dst:
        for i, line in enumerate(src):
            if i > n_rows:
                break
            dst.write(line)
    return path


def _floor_chunk(smiles, with_key):
    from rdkit import Chem, RDLogger  # noqa: PLC0415 - in the worker

    RDLogger.DisableLog("rdApp.*")  # as the index does: InChI's stereo warnings on stderr are no part of the floor
    fingerprinter = Fingerprinter()
    mols = [m for m in map(Chem.MolFromSmiles, smiles) if m is not None]
    if with_key:
        [Chem.MolToInchiKey(m) for m in mols]
    return fingerprinter.transform(mols)[0].shape[0]


def floor_rate(csv, n_rows, with_key):
    """Rows per second of SMILES parsing + fingerprints (+ InChIKey) alone, 2 processes, chunks of CHUNK rows."""
    with open(csv, encoding="utf-8") as handle:
        next(handle)
        smiles = [line.rstrip("\n").split(",", 1)[1] for _, line in zip(range(n_rows), handle, strict=False)]
    start = time.perf_counter()
    with worker_pool(2) as pool:
        sum(pool.map(_floor_chunk, [smiles[i:i + CHUNK] for i in range(0, len(smiles), CHUNK)],
                     [with_key] * ((len(smiles) + CHUNK - 1) // CHUNK)))
    return len(smiles) / (time.perf_counter() - start)


def files_of(folder):
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(Path(folder).rglob("*")) if p.is_file()}


def prefix_store(big, small, max_row):
    """A store of the big store's structures from its first ``max_row`` input rows (ids are input positions)."""
    manifest = json.loads((Path(big) / MANIFEST).read_text())
    shards = []
    for shard in manifest["shards"]:
        target = Path(small) / shard["file"]
        target.parent.mkdir(parents=True, exist_ok=True)
        with sqlite3.connect(target) as con:
            con.execute("ATTACH ? AS big", (str(Path(big) / shard["file"]),))
            for statement in _CREATE:
                con.execute(statement)
            con.execute("INSERT INTO structures SELECT * FROM big.structures WHERE id <= ? ORDER BY id", (max_row,))
            n = con.execute("SELECT count(*) FROM structures").fetchone()[0]
            meta = dict(con.execute("SELECT key, value FROM big.meta"))
            meta["n_structures"] = str(n)
            meta["checksum"] = str(_meta_checksum(meta))
            con.executemany("INSERT INTO meta VALUES (?, ?)", meta.items())
            con.execute("CREATE INDEX by_formula ON structures (formula)")
            con.execute("CREATE INDEX by_mass ON structures (mass)")
            con.commit()
            con.execute("DETACH big")
        if n:
            shards.append({**shard, "n_structures": n, "bytes": target.stat().st_size})
        else:
            target.unlink()
    manifest = {**manifest, "shards": shards, "n_structures": sum(s["n_structures"] for s in shards),
                "n_rows": max_row}
    (Path(small) / MANIFEST).write_text(manifest_text(manifest))
    return ShardedStructureDatabase(small)


def lookups(store, rng):
    ids = np.concatenate([store.shard(b).by_mass(0, 1e6)[:2000] * (1 << 16) + b for b in store.shards])
    sample = rng.choice(ids, size=min(500, ids.size), replace=False)
    records = store.records(sample)
    out = {}
    for name, calls in (("by_mass", [(store.by_mass, (float(r["monoisotopic_mass"]) * (1 - 1e-5),
                                                      float(r["monoisotopic_mass"]) * (1 + 1e-5))) for r in records]),
                        ("by_formula", [(store.by_formula, (r["formula"],)) for r in records])):
        times, sizes = [], []
        for fn, args in calls:
            start = time.perf_counter()
            sizes.append(fn(*args).size)
            times.append(1e3 * (time.perf_counter() - start))
        out[name] = {"median_ms": statistics.median(times), "p95_ms": float(np.percentile(times, 95)),
                     "median_candidates": float(np.median(sizes))}
    return out


def queries(path, n):
    """The first ``n`` bundled MassBank [M+H]+ records of neutral mass 250-450 Da, as JSON lines."""
    kept = []
    with gzip.open(BUNDLED_METABOLITES["spectra"], "rt", encoding="utf-8") as handle:
        for line in handle:
            rec = json.loads(line)
            if rec.get("precursor_type") == "[M+H]+" and 250 <= float(rec.get("exact_mass") or 0) <= 450:
                kept.append(line)
                if len(kept) == n:
                    break
    Path(path).write_text("".join(kept))
    return path


def identify_rss(spectra, store, out):
    """Peak RSS (MiB) of ``iokr metabolites identify`` of ``spectra`` against ``store`` in its own process."""
    shutil.rmtree(out, ignore_errors=True)
    cmd = ["/usr/bin/time", "-v", sys.executable, "-m", "iokr", "--quiet", "metabolites", "identify", "--spectra",
           str(spectra), "--candidates", str(store), "--output", str(out), "--top-k", "10"]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-3000:])
    return int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr).group(1)) / 1024


def identify_ms_per_query(many, one, store, repeat=3):
    """Milliseconds per query of :func:`iokr.apps.metabolites.identify` in this process (the ready model, top 10):
    (best of ``repeat`` runs of ``many`` queries - best of ``repeat`` runs of ``one``) / (queries - 1), the runs
    interleaved so both see the same load; start-up (imports, the model file) is paid once before."""
    from iokr.apps.metabolites import IdentifySettings, identify  # noqa: PLC0415 - loads the app

    settings = IdentifySettings(top_k=10)
    identify(one, store, settings=settings)
    times = {many: [], one: []}
    for _ in range(repeat):
        for spectra in (many, one):
            start = time.perf_counter()
            results = identify(spectra, store, settings=settings)
            times[spectra].append(time.perf_counter() - start)
    n = sum(1 for line in Path(many).read_text().splitlines() if line.strip())
    return 1e3 * (min(times[many]) - min(times[one])) / (n - 1), len(results.identifications)


def run(quick=False, data_dir=None):
    n_floor, n_dask = (2000, 1000) if quick else (20_000, 10_000)
    rows = []
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory(prefix="bench_store_scale") as work:
        work = Path(work)
        csv = moses_csv(work)
        sample = head(csv, n_floor, work / "floor.csv")
        floor = floor_rate(sample, n_floor, with_key=False)
        floor_key = floor_rate(sample, n_floor, with_key=True)
        _, stats = build_store(sample, work / "floor_store", n_jobs=2)
        index = stats["n_rows"] / stats["seconds"]
        rows.append({"case": f"index {n_floor} MOSES rows, 2 processes", "floor_rows_per_s": floor,
                     "floor_with_inchikey_rows_per_s": floor_key, "index_rows_per_s": index,
                     "index_over_floor": index / floor, "index_over_floor_with_inchikey": index / floor_key,
                     "merge_share": stats["seconds_merge"] / stats["seconds"]})
        dask_rows = head(csv, n_dask, work / "dask.csv")
        local_store, local = build_store(dask_rows, work / "local", n_jobs=2)
        local_store.close()
        dask_store, dask = build_store(dask_rows, work / "dask", n_jobs=2, scheduler="local")
        dask_store.close()
        rows.append({"case": f"Dask LocalCluster (2 processes) vs local, {n_dask} rows",
                     "local_s": local["seconds"], "dask_s": dask["seconds"],
                     "bit_for_bit": files_of(work / "local") == files_of(work / "dask")})
        big_path = os.environ.get("IOKR_SCALE_STORE")
        if big_path is None or quick:
            n_rows = 5000 if quick else int(os.environ.get("IOKR_SCALE_ROWS", 2_000_000))
            big_path = work / "big"
            build_store(head(csv, n_rows, work / "big.csv"), big_path, n_jobs=2)[0].close()
        big = ShardedStructureDatabase(big_path)
        small = prefix_store(big_path, work / "small", SMALL_ROWS if not quick else 2000)
        spectra = queries(work / "queries.jsonl", 1000)
        one = queries(work / "one.jsonl", 1)
        per_query = {}
        for label, store, path in (("large", big, big_path), ("70k", small, work / "small")):
            size = sum(s["bytes"] for s in store.shards.values())
            found = lookups(store, rng)
            rss = identify_rss(spectra, path, work / "out")
            per_query[label], _ = identify_ms_per_query(spectra, one, path)
            rows.append({"case": f"{label} store", "structures": store.n_structures, "shards": len(store.shards),
                         "bytes_per_structure": size / store.n_structures,
                         **{f"{k}_{m}": v for k, d in found.items() for m, v in d.items()},
                         "identify_ms_per_query": per_query[label], "identify_peak_rss_mib": rss})
        rows.append({"case": "identify per query, large / 70k", "ratio": per_query["large"] / per_query["70k"]})
        big.close()
        small.close()
    return rows


def summary(rows):
    first = rows[0]
    large = next(r for r in rows if r["case"] == "large store")
    per_worker = first["index_rows_per_s"] / 2
    lines = [f"Index: {first['index_rows_per_s']:.0f} rows/s on 2 processes, {first['index_over_floor']:.0%} of the "
             f"RDKit floor (parse + fingerprint, {first['floor_rows_per_s']:.0f} rows/s) and "
             f"{first['index_over_floor_with_inchikey']:.0%} of the floor with the InChIKey.",
             f"Store: {large['bytes_per_structure']:.0f} bytes per structure at {large['structures']} structures; "
             f"by_mass {large['by_mass_median_ms']:.2f} ms median.", "",
             f"PubChem projection ({PUBCHEM / 1e6:.0f}M structures, from these figures: {per_worker:.0f} rows/s per "
             "worker on this shared machine, merge and network not included):"]
    for workers in (8, 32, 128):
        hours = PUBCHEM / (per_worker * workers) / 3600
        lines.append(f"- {workers} Dask workers: {hours:.1f} h of parsing; disk "
                     f"{PUBCHEM * large['bytes_per_structure'] / 1e9:.0f} GB for the store (twice that while the "
                     "part files exist).")
    return "\n".join(lines)

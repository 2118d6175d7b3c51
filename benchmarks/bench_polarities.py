"""Both ion modes (issue #28): training on several precursor types, and identify on mixed-polarity queries.

``python -m benchmarks.run --only polarities --data ../shared/data`` (``--quick``: the bundled subsets and 200
queries instead). Every row runs the ``iokr`` command in a fresh process and reports its wall time and peak RSS
(``VmHWM``, read by the child at exit).

Training rows (same run, one after the other; targets: all three files <= 2x the ``[M+H]+``-only wall time,
<= 2 GB):

- ``train [M+H]+``: ``iokr metabolites train --spectra massbank_ms2_posMH_permissive.jsonl.gz`` (the app's
  defaults: CV grid, 3 folds);
- ``train all three``: ``--spectra`` posMH, negMH and other (one sub-model per type with
  ``--min-structures`` structures; see ``submodels`` in the row).

Identify rows (a model trained on the bundled [M+H]+ and [M-H]- subsets with one alpha; the shared 70k PubChem
candidate lists indexed once as a structure database; queries: spectra of the lists' true structures, half
[M+H]+ half [M-H]-, no adduct, CHARGE=1+ / 1-; lookup by mass, 10 ppm; targets: >= 100 spectra/s after
start-up, 5 spectra including start-up <= 3 s):

- ``identify 5``: start-up (imports, model file checks, both sub-models restored from their stored state, store
  open) and 5 queries;
- ``identify N``: N queries; ``spectra_per_s_after_startup`` = (N - 5) / (wall N - wall 5).

``IOKR_BENCH_POLARITIES=identify`` runs the identify rows only and keeps the training rows of the previous results
file (``benchmarks/results/polarities.json``), marked with the date they were measured (the training rows take
about 25 minutes on the shared files).
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from benchmarks._harness import measure_command
from iokr.apps.metabolites import Feedback, TrainingConfig, train
from iokr.datasets import BUNDLED_METABOLITES as bundled

N_QUERIES = 1_000
SHARED_FILES = ("massbank_ms2_posMH_permissive.jsonl.gz", "massbank_ms2_negMH_permissive.jsonl.gz",
                "massbank_ms2_other_permissive.jsonl.gz")

_CHILD = r"""
import sys
from iokr.cli.main import main
code = main(sys.argv[1:])
from benchmarks._memory import peak_rss_mib
print(f"PEAK_RSS_MIB {peak_rss_mib():.1f}", file=sys.stderr)
sys.exit(code)
"""

ROOT = Path(__file__).resolve().parents[1]


def _peak(stderr):
    line = [s for s in stderr.splitlines() if s.startswith("PEAK_RSS_MIB")]
    return float(line[-1].split()[1]) if line else float("nan")


def _iokr(args):
    """Wall time, CPU time (user + system) and peak RSS of one ``iokr`` command in a fresh process."""
    timing = measure_command([sys.executable, "-c", _CHILD, "--quiet", *map(str, args)], cwd=ROOT)
    return timing.wall, timing.cpu, _peak(timing.result.stderr), timing.result


def _training_rows(work, files, label):
    rows = []
    single = work / "single.npz"
    wall, cpu, peak, _ = _iokr(["metabolites", "train", "--spectra", files[0], "--output", single])
    rows.append({"run": f"train [M+H]+ ({label})", "files": 1, "wall_s": wall, "cpu_s": cpu, "peak_rss_mib": peak})
    mixed = work / "mixed.npz"
    wall, cpu, peak, done = _iokr(["metabolites", "train", "--spectra", *files, "--output", mixed])
    submodels = done.stdout.split("sub-models ", 1)[1].split(")", 1)[0] if "sub-models " in done.stdout else ""
    rows.append({"run": f"train all ({label})", "files": len(files), "wall_s": wall, "cpu_s": cpu,
                 "peak_rss_mib": peak, "submodels": submodels, "time_ratio": wall / rows[0]["wall_s"],
                 "cpu_ratio": cpu / rows[0]["cpu_s"]})
    return rows


def _queries(work, n_queries):
    """An MGF of ``n_queries`` spectra of the bundled lists' true structures, alternating [M+H]+ / [M-H]-."""
    with tarfile.open(bundled["candidates"]) as tar:
        true = {m.name.rsplit("_id=", 1)[1][:14] for m in tar.getmembers() if m.name.endswith(".csv")}
    by_mode = []
    for path, charge in ((bundled["spectra"], "1+"), (bundled["negative_spectra"], "1-")):
        with gzip.open(path, "rt") as handle:
            records = [json.loads(line) for line in handle]
        by_mode.append([(r, charge) for r in records if r["inchikey_rdkit"][:14] in true and r.get("precursor_mz")
                        and sum(mz < r["precursor_mz"] - 1 for mz, _ in r["peaks"]) >= 2])
    mgf = work / f"queries{n_queries}.mgf"
    with open(mgf, "w") as handle:
        for i in range(n_queries):
            pool = by_mode[i % 2]
            r, charge = pool[(i // 2) % len(pool)]
            peaks = "\n".join(f"{mz} {inten}" for mz, inten in r["peaks"])
            handle.write(f"BEGIN IONS\nFEATURE_ID={i}\nPEPMASS={r['precursor_mz']}\nCHARGE={charge}\n{peaks}\n"
                         "END IONS\n")
    return mgf


def _store(work, cache_dir, model):
    """The bundled PubChem lists (70k structures) as an indexed structure database (kept in ``cache_dir``)."""
    db = Path(cache_dir) / "pubchem_lists_70k.sqlite"
    if db.exists():
        return db
    table = work / "structures.csv"
    with tarfile.open(bundled["candidates"]) as tar, open(table, "w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["Identifier", "InChI"])
        n = 0
        for member in tar.getmembers():
            if member.name.endswith(".csv"):
                for row in csv.DictReader(io.StringIO(tar.extractfile(member).read().decode())):
                    writer.writerow([f"C{n}", row["id1"]])
                    n += 1
    db.parent.mkdir(parents=True, exist_ok=True)
    wall, _, _, done = _iokr(["metabolites", "index", table, "--output", db, "--model", model])
    print(f"indexed in {wall:.0f} s: {done.stdout.strip()}", flush=True)
    return db


def _identify_rows(work, n_queries, cache_dir):
    model = work / "both.npz"
    grid = {"alpha": (0.03,), "input_gamma": (None,), "output_kernel": ("tanimoto",), "output_gamma": (1.0,),
            "sigma_mz": (0.001,)}
    train([bundled["spectra"], bundled["negative_spectra"]], model, TrainingConfig(grid=grid),
              feedback=Feedback(log=lambda message: None))
    db = _store(work, cache_dir, model)
    rows = []
    for n in (5, n_queries):
        out = work / f"out{n}"
        load = os.getloadavg()[0]  # a shared machine: the wall time means little without it
        wall, cpu, peak, done = _iokr(["metabolites", "identify", "--model", model, "--spectra", _queries(work, n),
                                       "--candidates", db, "--output", out])
        params = json.loads((out / "parameters.json").read_text())
        rows.append({"run": f"identify {n}", "queries": n, "wall_s": wall, "cpu_s": cpu, "load_avg_1min": load,
                     "peak_rss_mib": peak,
                     "statuses": json.dumps(params["statuses"], sort_keys=True),
                     "per_submodel": json.dumps(params["queries_per_submodel"], sort_keys=True)})
    rows[-1]["spectra_per_s_after_startup"] = (n_queries - 5) / (rows[-1]["wall_s"] - rows[0]["wall_s"])
    # CPU time: the same figure with the time other processes took from this one left out (a shared machine)
    rows[-1]["spectra_per_cpu_s_after_startup"] = (n_queries - 5) / (rows[-1]["cpu_s"] - rows[0]["cpu_s"])
    print(json.dumps(rows), flush=True)  # the identify figures before the (long) training rows
    return rows


def _earlier_training_rows():
    """The training rows of the previous full results file, each marked with when it was measured."""
    previous = ROOT / "benchmarks" / "results" / "polarities.json"
    if not previous.exists():
        return []
    data = json.loads(previous.read_text())
    when = data.get("machine", {}).get("date") or f"file of {time.strftime('%Y-%m-%d', time.gmtime(previous.stat().st_mtime))}"
    return [{**r, "run": r["run"] if "earlier run" in r["run"] else f"{r['run']} (earlier run, {when})"}
            for r in data.get("rows", []) if r.get("run", "").startswith("train")]


def run(quick=False, data_dir=None):
    cache_dir = os.environ.get("IOKR_BENCH_CACHE") or Path(tempfile.gettempdir()) / "iokr-bench-polarities"
    with tempfile.TemporaryDirectory(prefix="iokr-bench-polarities-") as tmp:
        work = Path(tmp)
        rows = _identify_rows(work, 200 if quick else N_QUERIES, cache_dir)
        if os.environ.get("IOKR_BENCH_POLARITIES") == "identify":
            return rows + _earlier_training_rows()
        if quick or data_dir is None:
            rows += _training_rows(work, [bundled["spectra"], bundled["negative_spectra"]], "bundled subsets")
        else:
            rows += _training_rows(work, [Path(data_dir) / "metabolites" / f for f in SHARED_FILES],
                                   "shared MassBank files")
    return rows


def summary(rows):
    train = [r for r in rows if r["run"].startswith("train all")]
    ident = [r for r in rows if r["run"].startswith("identify")]
    parts = []
    if train:
        r = train[0]
        parts.append(f"training on all files: {r['time_ratio']:.2f}x the [M+H]+-only wall time ({r['cpu_ratio']:.2f}x "
                     f"its CPU time; target <= 2x), peak RSS {r['peak_rss_mib']:.0f} MiB (target <= 2048)")
    if len(ident) == 2:
        parts.append(f"identify: 5 spectra incl. start-up {ident[0]['wall_s']:.2f} s wall, {ident[0]['cpu_s']:.2f} s "
                     f"CPU (target <= 3 s); {ident[1]['spectra_per_s_after_startup']:.0f} spectra/s after start-up "
                     f"({ident[1]['spectra_per_cpu_s_after_startup']:.0f} per CPU second; target >= 100); load "
                     f"average {ident[0].get('load_avg_1min', float('nan')):.1f} / "
                     f"{ident[1].get('load_avg_1min', float('nan')):.1f} at their start")
    return "; ".join(parts)


if __name__ == "__main__":  # pragma: no cover
    subprocess.run([sys.executable, "-m", "benchmarks.run", "--only", "polarities", *sys.argv[1:]], check=True,
                   cwd=ROOT)

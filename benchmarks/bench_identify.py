"""``iokr metabolites index`` / ``identify`` on a lab's own files: building the structure database, and identifying
MGF spectra against it through the command line (start-up included), against the issue's targets (identify 5
spectra <= 3 s with start-up; >= 50 spectra/s after start-up).

Data (all real): the structures are the 60 bundled PubChem candidate lists' InChIs (65,375 distinct strings) plus
the InChIs of the shared MassBank file (``--data``, default ``/work/shared/data`` when present; 4,930 more); fewer
than 100,000 distinct structures exist, so the 100,000-row CSV (PubChemLite-style columns Identifier,
CompoundName, InChI; no SMILES) repeats the first rows after the distinct ones (merged by InChIKey on indexing,
each repeat still parsed). The queries are MassBank spectra of the lists' true structures (the bundled subset),
written as an MZmine-style MGF (FEATURE_ID, PEPMASS, CHARGE=1+, MSLEVEL=2, with or without FORMULA). ``--quick``:
2,000 rows, 100 spectra.

Rows:
- measured code: where ``iokr`` was imported from, in this process and in the subprocesses (they run from the work
  folder ``/tmp/bench_identify``, so ``PYTHONPATH=<snapshot>`` measures a snapshot, e.g. a ``git archive``).
- index: ``iokr metabolites index`` subprocess on the CSV; rows/s and distinct structures/s, file size.
- identify 5 spectra: ``iokr metabolites identify`` subprocess (the ready model cached in ``$IOKR_CACHE_DIR``, no
  ``--model``), wall time with start-up, median of 3; by formula (FORMULA given) and by mass (10 ppm); and by
  formula with BLAS limited to one thread (``OPENBLAS_NUM_THREADS=1``...), as the machine is oversubscribed.
- identify 1,000 spectra: one subprocess; spectra/s after start-up = (1000 - 5) / (t_1000 - t_5) from wall times
  (``rate_per_s``) and from CPU times (``cpu_rate_per_s``); and the same job in-process (``identify``, imports
  and model already loaded once) as the time inside (``inside_*``).
- naive baseline (no store): per query, parse + fingerprint the query's formula candidates (the CSV rows of its
  formula, known beforehand and not timed) with RDKit, then score; in-process (no start-up), 5 queries timed and
  the 1,000-query time extrapolated from the first 20. The pre-change ``identify`` code itself is not run
  side by side (it cannot be imported next to the new one in one process).
- floors: ``python -c pass``, ``python -c "import numpy"``, ``iokr metabolites identify --help``.
- profile of the 5-spectrum formula run: ``-X importtime`` (the sum of all imports' own times, then the packages
  with the largest own import time and the module that first imported each) and cProfile (top cumulative
  entries; module bodies and the import machinery left out, lazy imports count in the functions running them).
Timings on a shared 2-core machine under load from other jobs: ``ours_s`` is wall time (an upper bound),
``ours_cpu_s`` the CPU time (user + sys) of the process (children included for subprocesses; BLAS threads
spinning on a busy machine count too).
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import os
import pstats
import re
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import iokr
from benchmarks._harness import measure, measure_command

# private: no public names yet for the formula parser, the default model and the in-process identify job
from iokr.apps.metabolites import (
    Feedback,
    FormulaError,
    IdentifySettings,
    canonical_formula,
    default_model_path,
    ensure_default_model,
    identify,
    load_identifier,
    read_spectra,
)
from iokr.datasets import BUNDLED_METABOLITES

WORK = Path("/tmp/bench_identify")
TARGET_5_S = 3.0
TARGET_RATE = 50.0


def _python():
    return sys.executable


def _iokr_script():
    """The ``iokr`` entry-point script next to this Python (else an equivalent one written to the work folder)."""
    script = Path(sys.executable).parent / "iokr"
    if not script.exists():
        script = WORK / "iokr_main.py"
        script.write_text("import sys\nfrom iokr.cli.main import main\nsys.exit(main())\n")
    return str(script)


def _timed(cmd, env):
    """``(wall_s, cpu_s, completed)`` of one subprocess run in the work folder."""
    timing = measure_command(cmd, env=env, cwd=WORK)
    return timing.wall, timing.cpu, timing.result


def _median_run(cmd, env, repeats):
    """``(median wall_s, cpu_s and completed of the median run, all wall times)``."""
    timing = measure_command(cmd, repeats, env=env, cwd=WORK)
    return timing.wall, timing.cpu, timing.result, timing.walls


# -- data ---------------------------------------------------------------------------------------------------------
def _structures(data_dir):
    """Distinct real structures ``[(inchi, name, formula)]``: the candidate lists' InChIs, then MassBank's."""
    seen, out = set(), []

    def add(inchi, name, formula):
        if inchi and inchi.startswith("InChI=") and inchi not in seen:
            seen.add(inchi)
            try:
                formula = canonical_formula(formula) if formula else ""
            except FormulaError:
                formula = ""
            out.append((inchi, name, formula))

    with tarfile.open(BUNDLED_METABOLITES["candidates"]) as tar:
        for member in sorted(tar.getmembers(), key=lambda m: m.name):
            if not member.isfile() or not member.name.endswith(".csv"):
                continue
            formula = re.search(r"scoring_list=([A-Za-z0-9]+)_", member.name).group(1)
            for row in csv.DictReader(io.TextIOWrapper(tar.extractfile(member), encoding="utf-8")):
                add(row.get("id1", "").strip(), "", formula)
    n_lists = len(out)
    shared = Path(data_dir) / "metabolites" / "massbank_ms2_posMH_permissive.jsonl.gz" if data_dir else None
    if shared is not None and shared.exists():
        with gzip.open(shared, "rt", encoding="utf-8") as handle:
            for line in handle:
                d = json.loads(line)
                add(d.get("inchi", ""), d.get("name", ""), d.get("formula_rdkit", ""))
    return out, n_lists


def _write_csv(path, structures, n_rows):
    """PubChemLite-style CSV of ``n_rows`` rows: the distinct structures, then repeats of the first ones."""
    with open(path, "w", newline="", encoding="utf-8") as handle:
        w = csv.writer(handle)
        w.writerow(["Identifier", "CompoundName", "InChI"])
        for i in range(n_rows):
            inchi, name, _ = structures[i % len(structures)]
            w.writerow([f"IOKR{i + 1:06d}", name, inchi])


def _queries(formulas, n):
    """``n`` bundled MassBank spectra whose formula is in ``formulas``, the candidate lists' true structures'
    spectra first (cycled when fewer than ``n``)."""
    with tarfile.open(BUNDLED_METABOLITES["candidates"]) as tar:
        true_keys = {m.name.split("_id=")[1][:14] for m in tar.getmembers() if "_id=" in m.name}
    first, other = [], []
    with gzip.open(BUNDLED_METABOLITES["spectra"], "rt", encoding="utf-8") as handle:
        for line in handle:
            d = json.loads(line)
            try:
                formula = canonical_formula(d["formula_rdkit"])
            except (FormulaError, KeyError):
                continue
            if formula in formulas and d.get("peaks") and d.get("precursor_mz"):
                d["formula_canonical"] = formula
                (first if d["inchikey_rdkit"][:14] in true_keys else other).append(d)
    pool = first + other
    return [pool[i % len(pool)] for i in range(n)]


def _write_mgf(path, records, with_formula):
    lines = []
    for i, d in enumerate(records, 1):
        lines += ["BEGIN IONS", f"FEATURE_ID={i}", f"PEPMASS={d['precursor_mz']}", "CHARGE=1+", "MSLEVEL=2"]
        if with_formula:
            lines.append(f"FORMULA={d['formula_rdkit']}")
        lines += [f"{mz} {intensity}" for mz, intensity in d["peaks"]]
        lines += ["END IONS", ""]
    Path(path).write_text("\n".join(lines))


def _candidate_counts(out_dir):
    with open(Path(out_dir) / "structure_identifications.tsv", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    n = np.array([int(r["n_candidates"] or 0) for r in rows])
    statuses = {}
    for r in rows:
        statuses[r["status"]] = statuses.get(r["status"], 0) + 1
    return float(n.mean()) if n.size else 0.0, statuses


# -- profiles -----------------------------------------------------------------------------------------------------
def _importtime(cmd, env, top=8):
    """``(total_s, packages)`` of ``-X importtime``: the sum of every import's own time, and the packages with the
    largest own import time (summed over their modules), each with the module that first imported it."""
    _, _, done = _timed([_python(), "-X", "importtime", *cmd], env)
    parsed = []
    for line in done.stderr.splitlines():
        m = re.match(r"import time:\s+(\d+)\s+\|\s+(\d+)\s+\|(\s*)(\S+)", line)
        if m:
            parsed.append((int(m.group(1)), int(m.group(2)), len(m.group(3)), m.group(4)))
    own, first_by = {}, {}
    for i, (self_us, _, indent, name) in enumerate(parsed):
        root = name.split(".")[0]
        own[root] = own.get(root, 0) + self_us
        if root not in first_by:  # children are listed before their parent, with a deeper indent
            j, depth = i, indent
            while True:
                j = next((k for k in range(j + 1, len(parsed)) if parsed[k][2] < depth), None)
                if j is None or parsed[j][3].split(".")[0] != root:
                    break
                depth = parsed[j][2]
            first_by[root] = parsed[j][3] if j is not None else "the program"
    by_own = sorted(((v, k) for k, v in own.items()), reverse=True)[:top]
    return sum(p[0] for p in parsed) / 1e6, [(us, name, first_by[name]) for us, name in by_own]


def _cprofile(cmd, env, prof_path, top=12):
    """Top cumulative entries of cProfile on ``cmd`` (module bodies and the import machinery left out, so the
    entries are the functions of the run; lazy imports inside them count in their time)."""
    _timed([_python(), "-m", "cProfile", "-o", str(prof_path), *cmd], env)
    stats = pstats.Stats(str(prof_path))
    entries = []
    for (filename, line, func), (_cc, nc, tt, ct, _callers) in stats.stats.items():
        if "importlib" in filename or func == "<module>" or "__import__" in func or "builtins.exec" in func or \
                "cProfile" in filename or "profile.py" in filename or "runpy" in filename:
            continue
        short = re.sub(r"^.*(site-packages|/work/main)/", "", filename)
        entries.append((ct, tt, nc, f"{short}:{line}({func})"))
    entries.sort(reverse=True)
    total = max(v[3] for v in stats.stats.values())
    return total, entries[:top]


# -- naive baseline -----------------------------------------------------------------------------------------------
def _naive(model_path, mgf, by_formula, n_timed):
    """Per-query brute force: parse + fingerprint the query's candidates, then score; returns (seconds, n)."""
    model, fingerprinter, cleaning, _ = load_identifier(model_path)
    spectra, _ = read_spectra(mgf, require_precursor=False, keep_empty=True)
    cleaned = cleaning.single(spectra)
    cleaned = cleaning.merged(cleaned, groups=list(range(len(cleaned))))[0]
    n = min(n_timed, len(spectra))
    sizes = []
    t0 = time.perf_counter()
    for i in range(n):
        candidates = by_formula[canonical_formula(spectra.metadata[i]["formula"])]
        F, _ = fingerprinter.transform(candidates)
        scores = model.score_sets(cleaned[np.array([i])], [F])[0]
        np.argsort(-scores, kind="stable")[:10]
        sizes.append(len(candidates))
    return time.perf_counter() - t0, n, float(np.mean(sizes))


def _in_process(model_path, mgf, db_path):
    timing = measure(lambda: identify(mgf, db_path, model_path, IdentifySettings(), feedback=Feedback(log=lambda *a: None)))
    return timing.wall, timing.cpu, len(timing.result.identifications)


# -- run ----------------------------------------------------------------------------------------------------------
def _measured_code(env):
    """Where the measured ``iokr`` comes from (a snapshot folder carrying a COMMIT file, or a git checkout), in this
    process and in the subprocesses (run from the work folder, so the caller's current folder does not shadow
    ``PYTHONPATH``); a mismatch is reported."""

    def describe(root):
        root = Path(root).resolve().parents[0]
        if (root / "COMMIT").exists():
            return f"{root} (git archive of commit {(root / 'COMMIT').read_text().strip()[:12]})"
        try:
            head = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], check=True,
                                  capture_output=True, text=True).stdout.strip()
            dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--", "iokr"], check=True,
                                   capture_output=True, text=True).stdout.strip()
            return f"{root} (commit {head}{', with uncommitted changes under iokr/' if dirty else ''})"
        except (OSError, subprocess.CalledProcessError):
            return str(root)

    here = Path(iokr.__file__).resolve().parent
    _, _, done = _timed([_python(), "-c", "import iokr; print(iokr.__file__)"], env)
    there = Path(done.stdout.strip()).resolve().parent
    if here == there:
        return f"iokr from {describe(here)}"
    return f"MISMATCH: in-process iokr from {describe(here)}, subprocesses from {describe(there)}"


@dataclass(frozen=True)
class _Setup:
    """What every measured command shares: the work folder, the environment, the model, the ``iokr`` command and
    the structure database."""

    work: Path
    env: dict
    model_path: Path
    cli: list
    db_path: Path

    def identify_cmd(self, mgf, out):
        return [*self.cli, "metabolites", "identify", "--spectra", str(mgf), "--candidates", str(self.db_path),
                "--output", str(out), "--overwrite"]


def _index_row(setup, structures, n_from_lists, n_rows):
    """``iokr metabolites index`` on an ``n_rows``-row CSV of ``structures`` into ``setup.db_path``."""
    csv_path, db_path = setup.work / f"structures_{n_rows}.csv", setup.db_path
    _write_csv(csv_path, structures, n_rows)
    wall, cpu, done = _timed([*setup.cli, "metabolites", "index", str(csv_path), "--output", str(db_path),
                              "--overwrite", "--model", str(setup.model_path)], setup.env)
    m = re.search(r"(\d+) structures indexed from (\d+) rows \((\d+) unparsable, (\d+) duplicates", done.stdout)
    n_struct, n_unparsable, n_dup = int(m.group(1)), int(m.group(3)), int(m.group(4))
    size_mb = db_path.stat().st_size / 2**20
    return {"task": f"index {n_rows:,}-row CSV (InChI only) -> SQLite", "n": n_rows, "ours_s": wall,
            "ours_cpu_s": cpu, "rate_per_s": n_rows / wall, "target": "(none stated; file size reported)",
            "note": f"{n_struct:,} structures kept ({min(n_rows, len(structures)):,} distinct InChI strings "
                    f"in the CSV: {n_from_lists:,} from the lists, {len(structures) - n_from_lists:,} from "
                    f"MassBank; {n_dup:,} merged by InChIKey block 1, {n_unparsable} unparsable); "
                    f"{n_struct / wall:.0f} distinct structures/s; file {size_mb:.1f} MiB "
                    f"({db_path.stat().st_size / max(n_struct, 1):.0f} B/structure); CSV "
                    f"{csv_path.stat().st_size / 2**20:.1f} MiB"}


def _query_files(work, indexed, n_big):
    """MGF files of 5 and ``n_big`` queries of formulas in the database, with and without FORMULA; and the indexed
    InChIs by formula (the naive baseline's candidates)."""
    formulas = {f for _, _, f in indexed if f}
    by_formula = {}
    for inchi, _, f in indexed:
        by_formula.setdefault(f, []).append(inchi)
    records = _queries(formulas, n_big)
    mgfs = {}
    for label, with_formula in (("formula", True), ("mass", False)):
        for n in (5, n_big):
            mgfs[label, n] = work / f"queries_{n}_{label}.mgf"
            _write_mgf(mgfs[label, n], records[:n], with_formula)
    return mgfs, by_formula


def _floor_rows(setup):
    """Start-up floors, measured first (same load conditions as the runs)."""
    floors, rows = {}, []
    for label, cmd in (("python -c pass", [_python(), "-c", "pass"]),
                       ("python -c 'import numpy'", [_python(), "-c", "import numpy"]),
                       ("iokr metabolites identify --help", [*setup.cli, "metabolites", "identify", "--help"])):
        med, cpu, _, walls = _median_run(cmd, setup.env, 5)
        floors[label] = med
        rows.append({"task": f"floor: {label}", "n": 0, "ours_s": med, "ours_cpu_s": cpu,
                     "note": f"median of 5 ({', '.join(f'{w:.3f}' for w in walls)})"})
    return floors, rows


def _five_spectra_rows(setup, mgfs, floors):
    """Identify 5 spectra (CLI, start-up included), median of 3: by formula, by mass, by formula on one thread."""
    t5, c5, rows = {}, {}, []
    for label in ("formula", "mass"):
        _timed(setup.identify_cmd(mgfs[label, 5], setup.work / "out_warm"), setup.env)  # page cache warm-up
        out = setup.work / f"out_5_{label}"
        med, cpu, _, walls = _median_run(setup.identify_cmd(mgfs[label, 5], out), setup.env, 3)
        t5[label], c5[label] = med, cpu
        mean_c, statuses = _candidate_counts(out)
        rows.append({"task": f"identify 5 spectra by {label} (CLI, start-up included)", "n": 5, "ours_s": med,
                     "ours_cpu_s": cpu, "target": f"<= {TARGET_5_S:g} s", "meets_target": med <= TARGET_5_S,
                     "cpu_meets_target": cpu <= TARGET_5_S,
                     "over_python_numpy_floor": med / floors["python -c 'import numpy'"],
                     "note": f"median of 3 ({', '.join(f'{w:.2f}' for w in walls)}); mean {mean_c:.0f} candidates "
                             f"per query; statuses {statuses}"})
    one_thread = {**setup.env, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    out = setup.work / "out_5_formula_1thread"
    med, cpu, _, walls = _median_run(setup.identify_cmd(mgfs["formula", 5], out), one_thread, 3)
    rows.append({"task": "identify 5 spectra by formula, BLAS limited to 1 thread (CLI)", "n": 5, "ours_s": med,
                 "ours_cpu_s": cpu, "target": f"<= {TARGET_5_S:g} s", "meets_target": med <= TARGET_5_S,
                 "cpu_meets_target": cpu <= TARGET_5_S,
                 "note": f"OPENBLAS/OMP/MKL_NUM_THREADS=1; median of 3 ({', '.join(f'{w:.2f}' for w in walls)})"})
    return t5, c5, rows


def _big_row(setup, mgfs, label, n_big, t5, c5):
    """Identify ``n_big`` spectra in one CLI run; the rate after start-up, and the same job in-process."""
    out = setup.work / f"out_{n_big}_{label}"
    wall, cpu, _ = _timed(setup.identify_cmd(mgfs[label, n_big], out), setup.env)
    mean_c, statuses = _candidate_counts(out)
    rate = (n_big - 5) / max(wall - t5[label], 1e-9)
    cpu_rate = (n_big - 5) / max(cpu - c5[label], 1e-9)
    inside, inside_cpu, n_ids = _in_process(setup.model_path, mgfs[label, n_big], setup.db_path)
    return {"task": f"identify {n_big:,} spectra by {label} (CLI)", "n": n_big, "ours_s": wall,
            "ours_cpu_s": cpu, "rate_per_s": rate, "cpu_rate_per_s": cpu_rate,
            "target": f">= {TARGET_RATE:g} spectra/s after start-up",
            "meets_target": min(rate, cpu_rate) >= TARGET_RATE, "inside_s": inside, "inside_cpu_s": inside_cpu,
            "inside_rate_per_s": n_ids / inside,
            "note": f"rate = ({n_big} - 5) / (t_{n_big} - t_5) (wall; cpu_rate from CPU times); inside = "
                    f"identify in-process after imports; mean {mean_c:.0f} candidates per query; statuses {statuses}"}


def _profile_rows(setup, mgfs):
    """``-X importtime`` and cProfile of the 5-spectrum formula run."""
    cmd5 = setup.identify_cmd(mgfs["formula", 5], setup.work / "out_prof")
    total_import, packages = _importtime(cmd5[1:], setup.env)
    rows = [{"task": "profile: -X importtime, all imports (5 spectra, formula)", "ours_s": total_import,
             "note": "sum of the own times of every import"}]
    for us, name, by in packages:
        rows.append({"task": f"profile: import {name} (own time of its modules)", "ours_s": us / 1e6,
                     "note": f"first imported by {by}"})
    total, entries = _cprofile(cmd5[1:], setup.env, setup.work / "identify5.prof")
    for ct, tt, nc, where in entries:
        rows.append({"task": f"profile: cProfile {where}", "ours_s": ct,
                     "note": f"cumulative (whole run {total:.2f} s under cProfile); own {tt:.3f} s; {nc} calls"})
    return rows


def run(quick=False, data_dir=None):
    if data_dir is None and Path("/work/shared/data/metabolites").exists():
        data_dir = "/work/shared/data"
    work = WORK / ("quick" if quick else "full")
    work.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("IOKR_CACHE_DIR", str(WORK / "cache"))
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    model_path = ensure_default_model(log=lambda *a: None)
    assert Path(model_path) == default_model_path()
    n_rows, n_big = (2000, 100) if quick else (100_000, 1000)
    setup = _Setup(work, env, model_path, [_python(), _iokr_script()], work / f"structures_{n_rows}.sqlite")
    rows = [{"task": "measured code", "note": _measured_code(env)}]
    structures, n_from_lists = _structures(data_dir)
    rows.append(_index_row(setup, structures, n_from_lists, n_rows))
    mgfs, by_formula = _query_files(work, structures[:n_rows], n_big)
    floors, floor_rows = _floor_rows(setup)
    rows += floor_rows
    t5, c5, five_rows = _five_spectra_rows(setup, mgfs, floors)
    rows += five_rows
    naive_5 = _naive(model_path, mgfs["formula", 5], by_formula, 5)
    rows.append({"task": "naive: 5 spectra by formula, per-query parse + fingerprint (in-process, no start-up)",
                 "n": 5, "ours_s": naive_5[0], "ratio_naive_over_ours": naive_5[0] / t5["formula"],
                 "note": f"mean {naive_5[2]:.0f} candidates per query; ratio against our CLI time WITH its start-up"})
    for label in ("formula", "mass"):
        row = _big_row(setup, mgfs, label, n_big, t5, c5)
        if label == "formula":
            naive = _naive(model_path, mgfs[label, n_big], by_formula, 5 if quick else 20)
            naive_total = naive[0] * n_big / naive[1]
            row.update({"naive_s_extrapolated": naive_total, "ratio_naive_over_ours": naive_total / row["inside_s"]})
            row["note"] += (f"; naive extrapolated from {naive[1]} queries ({naive[0]:.1f} s, mean {naive[2]:.0f} "
                            "candidates), ratio against inside_s")
        rows.append(row)
    return rows + _profile_rows(setup, mgfs)

"""The sharded structure store (a folder of shards by mass range): lookups, fingerprints and records equal to a
single-file database of the same table (brute-force reference); damaged, missing, truncated and half-built stores
refused in one line; a build killed with ``kill -9`` (while parsing, while merging) resumes to the same bytes as an
uninterrupted build; appends merge duplicates across tables; two builds into one folder never run at once; a Dask
LocalCluster build equals the local one bit for bit."""

import csv
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from metab_helpers import bundled_lists_and_training, train_small_model
from process_helpers import ENV, ROOT, group, wait_for

from iokr.apps.metabolites import Fingerprinter, ShardedStructureDatabase, StructureDatabase, build_store
from iokr.apps.metabolites.candidates import _shard_build
from iokr.cli.main import main
from iokr.decoding import PackedBinaryFeatures
from iokr.exceptions import IOKRDataError

pytest.importorskip("rdkit")
FP = Fingerprinter("morgan_counts+maccs", n_bits=64)
TAILS = ("O", "N", "Cl", "C(=O)O", "c1ccccc1")


def _rows(n_max=30, start=0, extra=False):
    """Rows ``[identifier, name, SMILES, ...]``: chains with five tails (masses 30-500 Da), alcohols and amines also
    written the other way round (a duplicate structure, another identifier), an unparsable and an empty row, a
    permanently charged, an isotope-labelled structure and a salt."""
    rows = []
    for n in range(1 + start, n_max + 1):
        for t, tail in enumerate(TAILS):
            rows.append([f"A{n}-{t}", f"chain {n} {tail}", "C" * n + tail])
            if tail in ("O", "N"):
                rows.append([f"B{n}-{t}", f"reversed {n} {tail}", tail + "C" * n])
    rows += [["X1", "bad", "not a smiles"], ["X2", "empty", ""], ["C1", "charged", "C[N+](C)(C)CCO"],
             ["L1", "labelled", "[2H]C([2H])([2H])CCCCCO"], ["S1", "salt", "CCCCCCCCO.Cl"]]
    return [r + [f"x{i}"] for i, r in enumerate(rows)] if extra else rows


def _write(path, rows, extra=False):
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["Identifier", "CompoundName", "SMILES", *(["Extra"] if extra else [])])
        writer.writerows(rows)
    return path


@pytest.fixture
def table(tmp_path):
    return _write(tmp_path / "structures.csv", _rows())


def _files(folder):
    """Every file of a store folder, by relative path, with its bytes."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _same_answers(single, store, windows=((0, 1000), (40, 60), (59.9, 60.1), (100.07, 100.08), (700, 800))):
    for low, high in windows:
        expected, got = single.by_mass(low, high), store.by_mass(low, high)
        assert len(got) == len(expected)
        assert single.records(expected) == store.records(got)
        np.testing.assert_array_equal(single.fingerprints(expected), store.fingerprints(got))
        compact = store.fingerprints(got, compact=True)
        if store.fingerprinter.binary:
            reference = PackedBinaryFeatures.from_dense(single.fingerprints(expected).astype(np.uint8))
            np.testing.assert_array_equal(compact.packed, reference.packed)
        else:
            assert compact.counts.dtype == np.uint8
            np.testing.assert_array_equal(compact.counts, single.fingerprints(expected))
        assert single.formulas(expected) == store.formulas(got)
    every = single.by_mass(0, 1e9)
    for formula in sorted(set(single.formulas(every))) + ["C99", "not a formula"]:
        expected, got = single.by_formula(formula), store.by_formula(formula)
        assert single.records(expected) == store.records(got)


@pytest.mark.parametrize(("shard_width", "chunk_rows", "n_jobs", "kind"),
                         [(20.0, 7, 1, "morgan_counts+maccs"), (1000.0, 500, 1, "morgan_counts+maccs"),
                          (5.0, 13, 2, "morgan_counts+maccs"), (20.0, 7, 1, "maccs")])
def test_store_answers_as_the_single_file_database(table, tmp_path, shard_width, chunk_rows, n_jobs, kind):
    fingerprinter = Fingerprinter(kind, n_bits=64)
    single, single_stats = StructureDatabase.build(table, ":memory:", fingerprinter, n_jobs=1)
    store, stats = build_store(table, tmp_path / "store", fingerprinter, n_jobs=n_jobs, chunk_rows=chunk_rows,
                               shard_width=shard_width)
    assert store.n_structures == single.n_structures == stats["n_structures"]
    for key in ("n_rows", "n_missing", "n_unparsable", "n_duplicates"):
        assert stats[key] == single_stats[key], key
    # brute force: every structure's mass read back from the single file falls in its shard's range
    for b, info in store.shards.items():
        ids = store.shard(b).by_mass(0, 1e9)
        masses = [float(r["monoisotopic_mass"]) for r in store.shard(b).records(ids)]
        assert all(info["low"] - 1e-4 <= m < info["high"] + 1e-4 for m in masses) and len(ids) == info["n_structures"]
    _same_answers(single, store)


def _refused(folder, pattern):
    """The one-line error opening ``folder`` gives."""
    with pytest.raises(IOKRDataError, match=pattern) as caught:
        ShardedStructureDatabase(folder)
    assert "\n" not in str(caught.value)


def test_damaged_missing_truncated_and_half_built_stores_are_refused(table, tmp_path):
    folder = tmp_path / "store"
    build_store(table, folder, FP, n_jobs=1, shard_width=20.0)[0].close()
    shards = sorted((folder / "generation-1").glob("shard-*.sqlite"))
    manifest = (folder / "iokr-store.json").read_text()

    (folder / "iokr-store.json").write_text(manifest.replace('"n_rows": ', '"n_rows": 1'))
    _refused(folder, r"is damaged: iokr-store.json does not match its checksum")
    (folder / "iokr-store.json").write_text(manifest)

    data = shards[0].read_bytes()
    shards[0].write_bytes(data[:len(data) // 2])
    _refused(folder, rf"shard generation-1/{shards[0].name} holds {len(data) // 2} bytes, not the {len(data)} .*"
                     "truncated")
    shards[0].unlink()
    _refused(folder, rf"is missing its shard generation-1/{shards[0].name} \(masses")
    (folder / "iokr-store.json").unlink()
    _refused(folder, "is damaged: its manifest iokr-store.json is missing")
    shutil.rmtree(folder / "generation-1")
    _refused(folder, "is not a structure store folder")
    (folder / "build").mkdir()
    _refused(folder, "is half-built .* run the same 'iokr metabolites index' command again")


def test_an_existing_store_needs_append_and_the_same_fingerprint(table, tmp_path):
    folder = tmp_path / "store"
    build_store(table, folder, FP, n_jobs=1)[0].close()
    before = _files(folder)
    with pytest.raises(IOKRDataError, match="exists .* add a table with --append"):
        build_store(table, folder, FP, n_jobs=1)
    with pytest.raises(IOKRDataError, match="holds fingerprints .* index this table into another store"):
        build_store(table, folder, Fingerprinter("maccs"), n_jobs=1, append=True)
    assert _files(folder) == before


def test_append_merges_duplicates_across_tables_and_shards(tmp_path):
    """Table A, then table B (its own structures, reversed duplicates of A's and a new column): the store answers as
    one database of A's rows followed by B's (the first row of a structure kept)."""
    rows_a, rows_b = _rows(12), _rows(20, start=8, extra=True)
    a, b = _write(tmp_path / "a.csv", rows_a), _write(tmp_path / "b.csv", rows_b, extra=True)
    both = _write(tmp_path / "both.csv", [r + [""] for r in rows_a] + rows_b, extra=True)
    folder = tmp_path / "store"
    first, _ = build_store(a, folder, FP, n_jobs=1, shard_width=20.0, chunk_rows=9)
    first.close()
    store, stats = build_store(b, folder, FP, n_jobs=2, append=True, chunk_rows=9)
    single, single_stats = StructureDatabase.build(both, ":memory:", FP, n_jobs=1)
    assert stats["n_duplicates"] > 0 and store.user_columns == ["Identifier", "CompoundName", "SMILES", "Extra"]
    assert store.n_structures == single.n_structures == stats["n_store_structures"]
    assert stats["n_structures"] == store.n_structures - first.n_structures > 0
    assert [t["source"] for t in store.manifest["tables"]] == ["a.csv", "b.csv"]
    assert sum(t["n_duplicates"] for t in store.manifest["tables"]) == single_stats["n_duplicates"]
    _same_answers(single, store)
    assert sorted(p.name for p in folder.iterdir()) == ["generation-2", "iokr-store.json"]


_BUILD_SCRIPT = textwrap.dedent("""
    import sys, time
    from iokr.apps.metabolites import Fingerprinter, build_store
    pause_parse, pause_merge = float(sys.argv[3]), float(sys.argv[4])
    build_store(sys.argv[1], sys.argv[2], Fingerprinter("morgan_counts+maccs", n_bits=64), n_jobs=1,
                shard_width=20.0, chunk_rows=6, progress=lambda n: time.sleep(pause_parse),
                on_shard=lambda info: time.sleep(pause_merge))
""")


def _start_build(sessions, table, folder, pause_parse, pause_merge):
    proc = subprocess.Popen([sys.executable, "-c", _BUILD_SCRIPT, str(table), str(folder), str(pause_parse),
                             str(pause_merge)], cwd=ROOT, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    sessions.append(proc)
    return proc


def _kill_when(proc, condition, what):
    wait_for(lambda: condition() or proc.poll() is not None, 120, what)
    assert proc.poll() is None, proc.stderr.read().decode()
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    wait_for(lambda: not group(proc.pid), 5, "every process of the killed build to end")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("phase", ["parse", "merge"])
def test_a_build_killed_with_kill_9_resumes_to_the_uninterrupted_store(table, tmp_path, sessions, phase):
    reference = tmp_path / "reference"
    build_store(table, reference, FP, n_jobs=1, shard_width=20.0, chunk_rows=6)[0].close()
    folder = tmp_path / "store"
    if phase == "parse":
        proc = _start_build(sessions, table, folder, 0.2, 0)
        _kill_when(proc, lambda: len(list((folder / "build").glob("part-*.sqlite"))) >= 4, "four parts")
    else:
        proc = _start_build(sessions, table, folder, 0, 2.0)
        _kill_when(proc, lambda: len(list((folder / "generation-1").glob("shard-*.sqlite"))) >= 1, "one shard")
    with pytest.raises(IOKRDataError, match="is half-built"):
        ShardedStructureDatabase(folder)
    store, stats = build_store(table, folder, FP, n_jobs=1, shard_width=20.0, chunk_rows=6)
    store.close()
    assert stats["n_chunks_resumed"] >= 4 if phase == "parse" else stats["n_chunks_resumed"] == stats["n_chunks"]
    assert _files(folder) == _files(reference)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_two_builds_into_one_folder_never_run_at_once(table, tmp_path, sessions):
    reference = tmp_path / "reference"
    build_store(table, reference, FP, n_jobs=1, shard_width=20.0, chunk_rows=6)[0].close()
    folder = tmp_path / "store"
    first = _start_build(sessions, table, folder, 0.1, 0)
    wait_for(lambda: (folder / "build" / "plan.json").exists() or first.poll() is not None, 120, "the first build")
    with pytest.raises(IOKRDataError, match=r"is being built by another iokr run \(pid \d+\)"):
        build_store(table, folder, FP, n_jobs=1, shard_width=20.0, chunk_rows=6)
    assert first.wait(timeout=300) == 0, first.stderr.read().decode()
    assert _files(folder) == _files(reference)


def test_an_unfinished_build_of_another_table_is_not_mixed_in(table, tmp_path):
    folder = tmp_path / "store"
    other = _write(tmp_path / "other.csv", _rows(5))
    (folder / "build").mkdir(parents=True)
    (folder / "build" / "plan.json").write_text('{"generation": 1, "source": "other.csv"}')
    with pytest.raises(IOKRDataError, match="holds an unfinished build of 'other.csv'.* delete .*build to drop it"):
        build_store(table, folder, FP, n_jobs=1)
    assert other.exists()


def test_dask_local_cluster_build_equals_the_local_build_bit_for_bit(table, tmp_path):
    pytest.importorskip("distributed", reason="the optional extra 'distributed' (Dask) is not installed")
    local = tmp_path / "local"
    build_store(table, local, FP, n_jobs=2, shard_width=20.0, chunk_rows=6)[0].close()
    dask = tmp_path / "dask"
    store, stats = build_store(table, dask, FP, n_jobs=2, scheduler="local", shard_width=20.0, chunk_rows=6)
    store.close()
    assert stats["n_chunks"] > 2
    assert _files(dask) == _files(local)


def test_identify_scores_a_store_folder_as_the_single_file_database(tmp_path, capsys):
    """``identify --candidates FOLDER`` and ``--candidates FILE.sqlite`` of the same bundled table: the same tables
    (scores, ranks, candidates), whatever the shard width; a half-built folder is refused in one line."""
    rows, queries, train = bundled_lists_and_training(3, 25, skip=2)
    model = train_small_model(tmp_path, train)
    mgf = tmp_path / "q.mgf"
    mgf.write_text("".join(
        f"BEGIN IONS\nFEATURE_ID={i}\nPEPMASS={q['precursor_mz']}\nCHARGE=1+\nADDUCT=[M+H]+\n"
        + "\n".join(f"{mz} {x}" for mz, x in q["peaks"]) + "\nEND IONS\n" for i, q in enumerate(queries)))
    table = tmp_path / "bundled.csv"
    _write(table, [[r["id1"].split("/")[1] + f"-{i}", f"row {i}", r["id1"]]
                   for i, r in enumerate(r for lst in rows for r in lst)])
    outputs = {}
    for name in ("single.sqlite", "folder"):
        assert main(["metabolites", "index", str(table), "--output", str(tmp_path / name), "--model",
                     str(model)]) == 0
        out = tmp_path / f"out-{name}"
        assert main(["metabolites", "identify", "--model", str(model), "--spectra", str(mgf), "--candidates",
                     str(tmp_path / name), "--output", str(out), "--top-k", "20"]) == 0
        outputs[name] = [(out / f).read_text() for f in ("structure_identifications.tsv",
                                                         "structure_candidates.tsv")]
    assert "shards" in capsys.readouterr().out
    assert outputs["folder"] == outputs["single.sqlite"]
    assert len(outputs["folder"][1].splitlines()) > 20  # candidates were ranked

    (tmp_path / "folder" / "iokr-store.json").unlink()
    (tmp_path / "folder" / "build").mkdir()
    (tmp_path / "folder" / "build" / "plan.json").write_text("{}")
    assert main(["metabolites", "identify", "--model", str(model), "--spectra", str(mgf), "--candidates",
                 str(tmp_path / "folder"), "--output", str(tmp_path / "out-half")]) != 0
    errors = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
    assert len(errors) == 1 and "is half-built" in errors[0], errors


def test_a_full_disk_is_named_and_the_build_resumes_after(table, tmp_path, monkeypatch):
    reference = tmp_path / "reference"
    build_store(table, reference, FP, n_jobs=1, shard_width=20.0, chunk_rows=6)[0].close()
    written = []
    real = _shard_build._write_part

    def fill_after_three(*args):
        if len(written) == 3:
            raise sqlite3.OperationalError("database or disk is full")
        written.append(real(*args))

    monkeypatch.setattr(_shard_build, "_write_part", fill_after_three)
    folder = tmp_path / "store"
    with pytest.raises(IOKRDataError, match=r"^No space left on device while writing structure store .*store; free"):
        build_store(table, folder, FP, n_jobs=1, shard_width=20.0, chunk_rows=6)
    monkeypatch.undo()
    store, stats = build_store(table, folder, FP, n_jobs=1, shard_width=20.0, chunk_rows=6)
    store.close()
    assert stats["n_chunks_resumed"] == 3
    assert _files(folder) == _files(reference)


def test_index_command_builds_appends_and_refuses_in_one_line(tmp_path, capsys):
    a, b = _write(tmp_path / "a.csv", _rows(6)), _write(tmp_path / "b.csv", _rows(9, start=4))
    store = tmp_path / "store"
    assert main(["metabolites", "index", str(a), "--output", str(store), "--workers", "1"]) == 0
    first = capsys.readouterr()
    assert "structures in" in first.out and "shard 1/" in first.err
    before = _files(store)
    for args, message in (([str(b), "--output", str(store)], "exists .* add a table with --append"),
                          ([str(b), "--output", str(store), "--overwrite"],
                           "exists .*--overwrite never deletes a store.*delete the folder yourself"),
                          ([str(b), "--output", str(tmp_path / "one.sqlite"), "--append"],
                           "--append writes a store folder; --output .*one.sqlite names a single file")):
        assert main(["metabolites", "index", *args]) != 0
        errors = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
        assert len(errors) == 1 and re.search(message, errors[0]), errors
    assert _files(store) == before  # refused before anything was written
    assert main(["metabolites", "index", str(b), "--output", str(store), "--append", "--workers", "1"]) == 0
    opened = ShardedStructureDatabase(store)
    assert [t["source"] for t in opened.manifest["tables"]] == ["a.csv", "b.csv"]
    assert opened.n_structures == StructureDatabase.build(_write(tmp_path / "ab.csv", _rows(6) + _rows(9, start=4)),
                                                          ":memory:", FP)[0].n_structures


@pytest.mark.parametrize("scheduler", ["bad", "tcp://host", "tcp://host:0", "tcp://host:99999", "http://x:1", ""])
def test_a_malformed_scheduler_is_refused_before_anything_is_written(tmp_path, scheduler):
    # "bad" used to fail in Dask ("missing port number in address 'bad'", no option named) after the build plan
    # was written, so the next table into the folder was refused as "an unfinished build"
    a = _write(tmp_path / "a.csv", _rows(6))
    with pytest.raises(IOKRDataError, match=r"--scheduler .*expected a Dask scheduler address such as tcp://"):
        build_store(a, tmp_path / "store", FP, scheduler=scheduler)
    assert not (tmp_path / "store").exists()


@pytest.mark.parametrize("scheduler", ["local", "tcp://127.0.0.1:8786", "10.0.0.5:8786", "tls://[::1]:8786"])
def test_well_formed_scheduler_addresses_pass_the_check(scheduler):
    from iokr.apps.metabolites.candidates._parse_executors import check_scheduler  # noqa: PLC0415

    check_scheduler(scheduler)


def test_a_build_that_parsed_nothing_leaves_no_unfinished_build(tmp_path, monkeypatch):
    # a scheduler that does not answer fails after the plan is written: the folder must not then refuse another
    # table as "an unfinished build" of one that never ran
    a, b = _write(tmp_path / "a.csv", _rows(6)), _write(tmp_path / "b.csv", _rows(9, start=4))

    def unreachable(*args, **kwargs):
        raise IOKRDataError("--scheduler tcp://127.0.0.1:1: no Dask scheduler answers there (timed out).")
        yield  # a generator, as run_in_order is

    monkeypatch.setattr(_shard_build, "run_in_order", unreachable)
    with pytest.raises(IOKRDataError, match="no Dask scheduler answers"):
        build_store(a, tmp_path / "store", FP, scheduler="tcp://127.0.0.1:1")
    assert not (tmp_path / "store").exists()  # the folder this run made is gone again
    existing = tmp_path / "existing"
    existing.mkdir()
    (existing / "notes.txt").write_text("the user's")
    with pytest.raises(IOKRDataError):
        build_store(a, existing, FP, scheduler="tcp://127.0.0.1:1")
    assert sorted(p.name for p in existing.iterdir()) == ["notes.txt"]  # a folder the user had is kept
    monkeypatch.undo()
    assert build_store(b, tmp_path / "store", FP, n_jobs=1)[0].n_structures > 0


def test_an_appended_table_without_the_stores_identifier_column_says_so(tmp_path):
    a = _write(tmp_path / "a.csv", _rows(6))
    store = tmp_path / "store"
    build_store(a, store, FP, n_jobs=1)
    with open(a, encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    plain = tmp_path / "plain.csv"
    with open(plain, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["smiles"])
        writer.writerows([[r.get("SMILES") or r.get("smiles") or r.get("InChI")] for r in rows])
    with pytest.raises(IOKRDataError, match=r"identifier column is none \(the table has no such column\), the store "
                                            r".*'s is '"):
        build_store(plain, store, FP, append=True, n_jobs=1)


@pytest.mark.parametrize("n_jobs", [0, -1, 1.5, True, "2"])
def test_a_worker_count_below_one_is_refused_not_run_as_one(tmp_path, n_jobs):
    # joblib users write -1 for "all CPUs": it used to run silently as one process
    a = _write(tmp_path / "a.csv", _rows(6))
    with pytest.raises(ValueError, match=r"'n_jobs' parameter of build_store must be None .* or an int >= 1"):
        build_store(a, tmp_path / "store", FP, n_jobs=n_jobs)
    with pytest.raises(ValueError, match=r"'n_jobs' parameter of StructureDatabase.build must be None"):
        StructureDatabase.build(a, tmp_path / "one.sqlite", FP, n_jobs=n_jobs)
    assert not (tmp_path / "store").exists() and not (tmp_path / "one.sqlite").exists()

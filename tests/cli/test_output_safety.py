"""Outputs never destroy inputs; outputs are complete or absent; temporaries of killed runs are swept."""

import hashlib
import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest

from iokr.cli import _output, demo, retrieval
from iokr.cli._output import CommandError, check_outputs, output_folder, write_atomic
from iokr.cli.main import main
from iokr.datasets import BUNDLED_METABOLITES, BUNDLED_PARALLEL_TEXT
from iokr.io import _atomic
from iokr.io._atomic import TEMPORARY_PATTERN, atomic_folder, is_stale, sweep_temporaries, temporary_path


def _digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _temporaries(folder):
    return [p.name for p in folder.iterdir() if TEMPORARY_PATTERN.match(p.name)]


def _write_arff(path, X, Y):
    lines = ["@relation toy"] + [f"@attribute f{j} numeric" for j in range(X.shape[1])]
    lines += [f"@attribute l{j} {{0,1}}" for j in range(Y.shape[1])] + ["@data"]
    lines += [",".join(f"{v:g}" for v in np.concatenate([x, y])) for x, y in zip(X, Y, strict=True)]
    path.write_text("\n".join(lines) + "\n")


@pytest.fixture
def arff(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3))
    Y = (X > 0).astype(int)
    data = tmp_path / "data"
    data.mkdir()
    _write_arff(data / "train.arff", X[:20], Y[:20])
    _write_arff(data / "test.arff", X[20:], Y[20:])
    return data / "train.arff", data / "test.arff"


def _multilabel(train, test, output, *extra):
    return main(["multilabel", "evaluate", "--train", str(train), "--test", str(test), "--labels", "3", "--cv", "2",
                 "--alphas", "1", "--output", str(output), *extra])


@pytest.mark.parametrize("overwrite", [[], ["--overwrite"]])
def test_output_that_is_an_input_is_refused_and_the_input_kept(arff, capsys, overwrite):
    train, test = arff
    before = _digest(train)
    assert _multilabel(train, test, train, *overwrite) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert f"--output {train} is the same file as --train {train}" in err
    assert _digest(train) == before and _temporaries(train.parent) == []


def test_output_through_a_link_to_an_input_is_refused(arff, tmp_path):
    train, _ = arff
    hard, soft = tmp_path / "hard.arff", tmp_path / "soft.arff"
    os.link(train, hard)
    soft.symlink_to(train)
    for link in (hard, soft):
        with pytest.raises(CommandError, match="is the same file as --train"):
            check_outputs({"--output": link}, {"--train": train}, overwrite=True)


def test_output_folder_holding_an_input_is_refused(arff, capsys):
    train, test = arff
    before = _digest(train)
    assert _multilabel(train, test, train.parent, "--overwrite") == 2
    assert f"--output {train.parent} contains --train {train}" in capsys.readouterr().err
    assert _digest(train) == before and sorted(p.name for p in train.parent.iterdir()) == ["test.arff", "train.arff"]


def test_current_folder_is_never_replaced(tmp_path, monkeypatch):
    (tmp_path / "notes.txt").write_text("mine")
    monkeypatch.chdir(tmp_path)
    for target in (".", str(tmp_path), ".."):
        with pytest.raises(CommandError, match="current folder"):
            check_outputs({"--output": target}, overwrite=True)


def test_existing_output_needs_overwrite(arff, tmp_path, capsys):
    train, test = arff
    out = tmp_path / "out"
    out.mkdir()
    assert _multilabel(train, test, out) == 0  # an empty folder holds nothing to lose
    first = json.loads((out / "summary.json").read_text())
    (out / "stale.txt").write_text("from an older run")
    capsys.readouterr()
    assert _multilabel(train, test, out) == 2
    assert capsys.readouterr().err.strip().endswith(f"--output {out} already exists: pass --overwrite to replace it.")
    assert (out / "stale.txt").exists()
    assert _multilabel(train, test, out, "--overwrite") == 0
    assert sorted(p.name for p in out.iterdir()) == ["summary.json"]  # replaced as a whole
    assert json.loads((out / "summary.json").read_text())["f1"] == first["f1"]
    assert _temporaries(tmp_path) == []


def test_existing_output_file_needs_overwrite_and_a_folder_output_cannot_be_a_file(tmp_path):
    target = tmp_path / "ranked.tsv"
    target.write_text("old")
    with pytest.raises(CommandError, match=r"--output .*ranked.tsv already exists: pass --overwrite"):
        check_outputs({"--output": target})
    check_outputs({"--output": target}, overwrite=True)
    with pytest.raises(CommandError, match="is a file: expected a folder"), output_folder(target, overwrite=True):
        pass
    assert target.read_text() == "old"


@pytest.mark.parametrize("existing", [False, True])
def test_run_failing_mid_write_leaves_the_previous_state_and_no_temporary(tmp_path, monkeypatch, capsys, existing):
    out = tmp_path / "out"
    if existing:
        out.mkdir()
        (out / "summary.json").write_text("previous")

    def half_written(results, out_dir, *args):
        (out_dir / "report.html").write_text("<html>half")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(retrieval, "write_report", half_written)
    code = main(["retrieval", "evaluate", "--splits", "1", "--direction", "en-es", "--output", str(out), "--report",
                 "--overwrite"])
    assert code == 2 and "No space left on device" in capsys.readouterr().err
    if existing:
        assert sorted(p.name for p in out.iterdir()) == ["summary.json"]
        assert (out / "summary.json").read_text() == "previous"
    else:
        assert not out.exists()
    assert _temporaries(tmp_path) == []


def test_interrupt_inside_output_folder_removes_it(tmp_path):
    with pytest.raises(KeyboardInterrupt), output_folder(tmp_path / "out") as tmp:
        (tmp / "part").write_text("x")
        raise KeyboardInterrupt
    assert list(tmp_path.iterdir()) == []


def test_temporary_names_follow_one_pattern_for_files_and_folders(tmp_path, monkeypatch):
    seen = []
    real_replace = _atomic.os.replace

    def replace(src, dst):
        seen.append(os.path.basename(src))
        return real_replace(src, dst)

    monkeypatch.setattr(_atomic.os, "replace", replace)
    write_atomic(tmp_path / "a.json", "{}")
    with atomic_folder(tmp_path / "folder") as tmp:
        seen.append(tmp.name)
    for name in seen:
        match = TEMPORARY_PATTERN.match(name)
        assert match and int(match["pid"]) == os.getpid()
    assert [TEMPORARY_PATTERN.match(n)["target"] for n in seen] == ["a.json", "folder"]


def _dead_pid():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_stale_temporaries_are_swept_by_the_next_run(arff, tmp_path):
    train, test = arff
    dead = _dead_pid()
    stale_dir = tmp_path / f".out.tmp-{dead}-0123abcd"
    stale_dir.mkdir()
    (stale_dir / "summary.json").write_text("{}")
    stale_file = tmp_path / f".other.json.tmp-{dead}-89abcdef"
    stale_file.write_text("half")
    ours = temporary_path(tmp_path / "mine")  # a run still going (this process)
    ours.mkdir()
    unrelated = tmp_path / ".notes.tmp-x"
    unrelated.write_text("not ours")
    assert _multilabel(train, test, tmp_path / "out") == 0
    assert not stale_dir.exists() and not stale_file.exists()
    assert ours.exists() and unrelated.exists()


def test_staleness_by_process_id(tmp_path):
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        time.sleep(0.2)
        paths = {pid: tmp_path / f".out.tmp-{pid}-0123abcd" for pid in (os.getpid(), live.pid, _dead_pid())}
        for path in paths.values():
            path.mkdir()
        assert [is_stale(path) for path in paths.values()] == [False, False, True]
    finally:
        live.kill()
        live.wait()
    (tmp_path / ".x.tmp-12-notahexx").mkdir()  # not our naming: never touched
    assert not is_stale(tmp_path / ".x.tmp-12-notahexx")


def test_reused_process_id_makes_a_temporary_stale(tmp_path):
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        time.sleep(0.2)
        path = tmp_path / f".out.tmp-{live.pid}-0123abcd"
        path.mkdir()
        assert not is_stale(path)  # written after its process started: maybe a run still going
        if _atomic._process_start_time(live.pid) is None:
            pytest.skip("no process start times on this system")
        old = time.time() - 7200
        os.utime(path, (old, old))  # last written before this process existed: its writer is gone
        assert is_stale(path)
        assert sweep_temporaries(tmp_path) == [path] and not path.exists()
    finally:
        live.kill()
        live.wait()


def test_check_outputs_skips_missing_options_and_accepts_lists(tmp_path):
    check_outputs({"--output": tmp_path / "new", "--report": None}, {"--store": None})
    check_outputs([tmp_path / "new"], [tmp_path / "absent-input"])
    assert _output.is_quiet() is False


def test_demo_and_retrieval_refuse_before_any_work(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(demo, "write_json", None)  # the run must stop before writing anything
    out = tmp_path / "out"
    out.mkdir()
    (out / "summary.json").write_text("{}")
    assert main(["demo", "--output", str(out)]) == 2
    assert "already exists: pass --overwrite" in capsys.readouterr().err
    bundled = BUNDLED_METABOLITES["spectra"].parent
    assert main(["demo", "--output", str(bundled), "--overwrite"]) == 2
    assert f"contains bundled spectra {BUNDLED_METABOLITES['spectra']}" in capsys.readouterr().err
    assert main(["retrieval", "evaluate", "--output", str(BUNDLED_PARALLEL_TEXT), "--overwrite"]) == 2
    assert "is the same file as bundled --data" in capsys.readouterr().err
    assert BUNDLED_PARALLEL_TEXT.stat().st_size > 0 and (out / "summary.json").read_text() == "{}"


def test_output_folder_through_a_symbolic_link_replaces_the_target_and_keeps_the_link(tmp_path):
    real = tmp_path / "scratch" / "results"
    real.mkdir(parents=True)
    (real / "old.txt").write_text("old")
    link = tmp_path / "results"
    link.symlink_to(real)
    with output_folder(link, overwrite=True) as tmp:
        (tmp / "new.txt").write_text("new")
    assert link.is_symlink() and sorted(p.name for p in link.iterdir()) == ["new.txt"]
    assert _temporaries(real.parent) == [] and _temporaries(tmp_path) == []


def test_output_folder_inside_an_input_folder_is_refused(tmp_path):
    # Before: 'identify --candidates lists/ --output lists/out' failed midway with "Candidate list
    # structure_candidates.tsv in lists has no structure column ... got []": the folder of per-query lists was
    # read while the run's own output was being written inside it.
    lists = tmp_path / "lists"
    lists.mkdir()
    (lists / "q1.csv").write_text("identifier,smiles\nA,CCO\n")
    for output in (lists / "out", lists / "a" / "b"):
        with pytest.raises(CommandError, match=f"--output {output} is inside --candidates {lists}: choose"):
            check_outputs({"--output": output}, {"--candidates": lists}, expect="folder")
        assert not output.exists()
    check_outputs({"--output": tmp_path / "out"}, {"--candidates": lists}, expect="folder")  # beside it: fine

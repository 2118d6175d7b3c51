"""One run owns an output: a second writer is refused at once; a killed run leaves no process behind, and the next
run owning the same path sweeps what it left; non-regular files are never replaced.

The process tests start real ``iokr`` commands in their own session (process group) and always kill that group at
the end, failing or not.
"""

import os
import sqlite3
import stat
import subprocess
import sys
import time

import pytest
from process_helpers import (
    ENV,
    ROOT,
    children,
    kill_mid_run,
    start,
    wait_for,
    write_structure_table,
)

from iokr.cli import _output
from iokr.cli._output import CommandError, check_outputs, release_outputs
from iokr.cli.main import main
from iokr.io._atomic import TEMPORARY_PATTERN, sweep_temporaries, temporary_path
from iokr.io._ownership import OutputInUseError, claim, is_claimed, lock_path, release


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_second_writer_refused_kill_9_leaves_no_process_and_next_run_completes(tmp_path, sessions):
    big = write_structure_table(tmp_path / "big.csv", 6000)  # 3 chunks: parsed by 2 worker processes
    out = tmp_path / "out" / "structures.sqlite"
    first = start(sessions, "metabolites", "index", big, "--output", out)
    wait_for(lambda: len(children(first.pid)) >= 2 or first.poll() is not None, 120, "the worker processes")
    assert first.poll() is None, first.stderr.read().decode()
    assert is_claimed(out)

    started = time.monotonic()
    second = subprocess.run([sys.executable, "-m", "iokr", "metabolites", "index", str(big), "--output", str(out),
                             "--overwrite"], cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=60)
    elapsed = time.monotonic() - started
    assert second.returncode == 2 and second.stderr.count("\n") == 1, second.stderr
    assert f"is in use by another iokr run (pid {first.pid})" in second.stderr
    assert elapsed < 1.0, elapsed

    kill_mid_run(first)
    assert not is_claimed(out)  # released by the kernel: never stale
    assert not out.exists()

    small = write_structure_table(tmp_path / "small.csv", 30)
    assert main(["metabolites", "index", str(small), "--output", str(out)]) == 0
    assert sorted(p.name for p in out.parent.iterdir()) == ["structures.sqlite"]  # temporaries, journal, lock gone
    with sqlite3.connect(f"file:{out}?mode=ro", uri=True) as db:
        assert db.execute("SELECT COUNT(*) FROM structures").fetchone()[0] == 30


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="unshare(1) is Linux")
def test_claim_held_in_another_pid_namespace_refuses_a_writer(tmp_path, sessions):
    out = tmp_path / "result"
    holder = ("import sys, time; from iokr.io._ownership import claim; claim(sys.argv[1]); print('ready', flush=True); "
              "time.sleep(60)")
    proc = subprocess.Popen(["unshare", "--pid", "--fork", "--mount-proc", sys.executable, "-c", holder, str(out)],
                            cwd=ROOT, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    sessions.append(proc)
    line = proc.stdout.readline().decode()
    if line.strip() != "ready":
        pytest.skip(f"no PID namespace here: {proc.stderr.read().decode()[:200]}")
    with pytest.raises(OutputInUseError, match=r"in use by another iokr run \(pid 1\)"):
        claim(out)
    # its temporaries are not swept, though pid 1 of its namespace means nothing here
    tmp = temporary_path(out).with_name(f".result.tmp-{2**22 + 7}-0123abcd")
    tmp.mkdir()
    assert sweep_temporaries(tmp_path) == [] and tmp.exists()


def test_claim_of_a_killed_run_is_free_and_its_temporaries_are_swept(tmp_path):
    out = tmp_path / "model.npz"
    lock_path(out).write_text("4242\n")  # left by a run killed while holding it: the kernel released the lock
    left = [tmp_path / ".model.npz.tmp-1-0123abcd", tmp_path / f".model.npz.tmp-{os.getpid()}-89abcdef-journal"]
    for path in left:
        path.write_text("half")
    left.append(tmp_path / ".model.npz.tmp-1-fedcba98")
    left[-1].mkdir()
    check_outputs({"--output": out}, expect="file")
    try:
        assert is_claimed(out)
        # pid 1 is alive and this run's own id is in use: only the claim tells they belong to nobody
        assert sorted(p.name for p in tmp_path.iterdir()) == [".model.npz.iokr-lock",
                                                              f".model.npz.tmp-{os.getpid()}-89abcdef-journal"]
    finally:
        release_outputs()
    assert list(tmp_path.iterdir()) == [tmp_path / f".model.npz.tmp-{os.getpid()}-89abcdef-journal"]


def test_claims_are_reentrant_and_released(tmp_path):
    out = tmp_path / "folder"
    link = tmp_path / "link"
    link.symlink_to(out, target_is_directory=True)
    assert claim(out) == claim(link)
    assert is_claimed(link)
    release(out)
    assert not is_claimed(out) and list(tmp_path.iterdir()) == [link]


def test_a_failed_run_leaves_no_parent_folder_and_a_written_one_stays(tmp_path, capsys):
    out = tmp_path / "new" / "deeper" / "db.sqlite"
    assert main(["metabolites", "index", str(tmp_path / "missing.csv"), "--output", str(out)]) == 2
    assert "missing.csv" in capsys.readouterr().err and list(tmp_path.iterdir()) == []
    claim(out)
    out.write_text("written")
    release(out)
    assert out.read_text() == "written" and sorted(p.name for p in out.parent.iterdir()) == ["db.sqlite"]


def test_temporary_pattern_covers_sqlite_side_files():
    for suffix in ("", "-journal", "-wal", "-shm"):
        assert TEMPORARY_PATTERN.match(f".db.sqlite.tmp-12-0123abcd{suffix}")["target"] == "db.sqlite"


# ---------------------------------------------------------------------------------------- non-regular outputs


def _special_files(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    nodes = {"FIFO": fifo}
    try:  # a copy of /dev/null (root only)
        os.mknod(tmp_path / "null", stat.S_IFCHR | 0o666, os.makedev(1, 3))
        nodes["character device"] = tmp_path / "null"
        (tmp_path / "null-link").symlink_to(tmp_path / "null")
        nodes["character device"] = tmp_path / "null-link"
    except PermissionError:
        pass
    return nodes


@pytest.mark.parametrize("overwrite", [[], ["--overwrite"]])
@pytest.mark.parametrize("command", ["index", "train"])
def test_devices_and_fifos_are_never_replaced(tmp_path, capsys, overwrite, command):
    table = write_structure_table(tmp_path / "t.csv", 5)
    for kind, node in _special_files(tmp_path).items():
        before = os.stat(node)
        args = (["index", str(table)] if command == "index" else ["train", "--spectra", str(table)])
        assert main(["metabolites", *args, "--output", str(node), *overwrite]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"--output {node} is a {kind}" in err, err
        after = os.stat(node)
        assert stat.S_IFMT(after.st_mode) == stat.S_IFMT(before.st_mode) and after.st_ino == before.st_ino
        assert not list(tmp_path.glob(".*tmp-*"))


def test_train_into_a_folder_fails_before_training(tmp_path, capsys):
    folder = tmp_path / "models"
    folder.mkdir()
    started = time.monotonic()
    assert main(["metabolites", "train", "--spectra", str(tmp_path / "missing.jsonl"), "--output", str(folder),
                 "--overwrite"]) == 2
    assert f"--output {folder} is a folder: expected a file" in capsys.readouterr().err
    assert time.monotonic() - started < 5 and folder.is_dir()


def test_folder_outputs_refuse_a_file(tmp_path):
    target = tmp_path / "out"
    target.write_text("x")
    with pytest.raises(CommandError, match="is a file: expected a folder"):
        check_outputs({"--output": target}, overwrite=True, expect="folder")
    assert not is_claimed(target)


def test_output_written_while_waiting_for_the_claim_is_not_replaced(tmp_path, monkeypatch):
    """The other run finished (and released) between the existence check and the claim: its result stays."""
    out = tmp_path / "model.npz"
    real_claim = _output.claim

    def claim_after_the_other_run_finished(path):
        out.write_text("the other run's model")
        return real_claim(path)

    monkeypatch.setattr(_output, "claim", claim_after_the_other_run_finished)
    with pytest.raises(CommandError, match="already exists: pass --overwrite"):
        check_outputs({"--output": out}, expect="file")
    assert out.read_text() == "the other run's model" and not is_claimed(out)

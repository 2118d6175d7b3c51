"""The ready model's cache fails fast (an unwritable folder is named before any training) and heals (a damaged
cached model is trained again with a note; a killed training's temporaries are swept)."""

import os
import subprocess
import sys
import time

import numpy as np
import pytest
from process_helpers import ENV, ROOT

from iokr.apps.metabolites.workflows import _default_model
from iokr.apps.metabolites.workflows._default_model import default_model_path, ensure_default_model
from iokr.cli.main import main
from iokr.io import load_model_file, save_model_file

pytest.importorskip("rdkit")


@pytest.fixture
def trainings(monkeypatch):
    """Replace the minute-long training by a tiny valid model file; record each call."""
    calls = []

    def fake_train(spectra, path, feedback=None):
        calls.append(path)
        save_model_file(path, {"w": np.arange(3.0)}, {"note": "fake"}, kind="metabolites")

    monkeypatch.setattr(_default_model, "train_job", fake_train)
    return calls


def _unwritable_folders(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    folders = [blocker / "cache"]
    if not os.access("/sys", os.W_OK) or os.geteuid() == 0:  # sysfs: root cannot create files there either
        try:
            os.close(os.open("/sys/iokr-probe", os.O_WRONLY | os.O_CREAT | os.O_EXCL))
            os.unlink("/sys/iokr-probe")
        except OSError:
            folders.append("/sys")
    return folders


def test_unwritable_cache_fails_before_training(tmp_path, monkeypatch, capsys, trainings):
    spectra, candidates = tmp_path / "q.mgf", tmp_path / "c.csv"
    spectra.write_text("BEGIN IONS\nPEPMASS=100\nEND IONS\n")
    candidates.write_text("SMILES\nCCO\n")
    for folder in _unwritable_folders(tmp_path):
        monkeypatch.setenv("IOKR_CACHE_DIR", str(folder))
        started = time.monotonic()
        assert main(["metabolites", "identify", "--spectra", str(spectra), "--candidates", str(candidates),
                     "--output", str(tmp_path / "out")]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"cache folder {folder} (IOKR_CACHE_DIR)" in err, err
        assert "set IOKR_CACHE_DIR to a writable folder" in err
        assert trainings == [] and time.monotonic() - started < 5
        assert not (tmp_path / "out").exists()


def test_damaged_cached_model_is_trained_again_with_a_note(tmp_path, monkeypatch, trainings):
    monkeypatch.setenv("IOKR_CACHE_DIR", str(tmp_path / "cache"))
    path = default_model_path()
    path.parent.mkdir()
    path.write_bytes(b"PK\x03\x04 not a model")
    killed = path.with_name(f".{path.name}.tmp-1-0123abcd")  # a training killed before it saved
    killed.write_bytes(b"half")
    notes = []
    assert ensure_default_model(log=notes.append) == path
    assert trainings == [path] and any("cached ready model is damaged" in n for n in notes)
    assert load_model_file(path, kind="metabolites")[1]["note"] == "fake"
    assert not killed.exists() and not list(path.parent.glob("*.iokr-lock"))

    killed.write_bytes(b"half")  # a training killed while the model was already there (a concurrent old version)
    assert ensure_default_model(log=notes.append) == path and len(trainings) == 1  # verified once, then reused
    assert not killed.exists()

    data = bytearray(path.read_bytes())  # damaged again after it was verified
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    assert ensure_default_model(log=notes.append) == path and len(trainings) == 2


def test_a_run_waits_for_the_training_another_run_holds(tmp_path, monkeypatch, trainings):
    """Concurrent first runs: the second waits on the model's claim and uses the model the first saved."""
    monkeypatch.setenv("IOKR_CACHE_DIR", str(tmp_path / "cache"))
    path = default_model_path()
    holder = ("import sys, time; import numpy as np; from pathlib import Path; from iokr.io import save_model_file; "
              "from iokr.io._ownership import claim; path = Path(sys.argv[1]); claim(path); print('ready', flush=True); "
              "time.sleep(1.5); save_model_file(path, {'w': np.zeros(2)}, {'note': 'other run'}, kind='metabolites')")
    proc = subprocess.Popen([sys.executable, "-c", holder, str(path)], cwd=ROOT, env=ENV, stdout=subprocess.PIPE,
                            start_new_session=True)
    try:
        assert proc.stdout.readline().decode().strip() == "ready"
        started = time.monotonic()
        assert ensure_default_model(log=lambda message: None) == path
        assert time.monotonic() - started > 0.5 and trainings == []
        assert load_model_file(path, kind="metabolites")[1]["note"] == "other run"
    finally:
        proc.kill()
        proc.wait(timeout=10)


def test_ready_model_damaged_in_place_is_trained_again_by_identify(tmp_path, monkeypatch, ready_model_cache, capsys):
    """Bit rot inside the cached model, its size, modification time and inode unchanged (so its verified stamp still
    matches): identify finds it damaged when reading it in full, trains it again with a note, and succeeds."""
    import shutil  # noqa: PLC0415

    cache = tmp_path / "cache"
    shutil.copytree(ready_model_cache, cache)
    monkeypatch.setenv("IOKR_CACHE_DIR", str(cache))
    path = default_model_path()
    good = path.read_bytes()
    assert ensure_default_model(log=lambda message: None) == path  # verified: the stamp is written
    info = path.stat()
    damaged = bytearray(good)
    damaged[len(damaged) // 2] ^= 0xFF
    with open(path, "r+b") as handle:  # in place: same inode and size
        handle.write(bytes(damaged))
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))
    retrained = []

    def train_again(spectra, out, feedback=None):  # the real training gives this same file (tested elsewhere)
        retrained.append(out)
        out.write_bytes(good)

    monkeypatch.setattr(_default_model, "train_job", train_again)
    examples = ROOT / "examples" / "data"
    assert main(["metabolites", "identify", "--spectra", str(examples / "mzmine_features.mgf"), "--candidates",
                 str(examples / "structures.csv"), "--output", str(tmp_path / "out")]) == 0
    assert retrained == [path] and path.read_bytes() == good
    assert "the cached ready model is damaged" in capsys.readouterr().err
    assert (tmp_path / "out" / "structure_identifications.tsv").exists()


@pytest.mark.parametrize("name,value", [("DEFAULT_CALIBRATION_DECOYS", None),
                                        ("DEFAULT_CALIBRATION_FEATURES", ("gap_to_5th",)),
                                        ("DEFAULT_CALIBRATION_FAMILY", "list_softmax")])
def test_a_new_calibration_default_trains_a_new_ready_model(monkeypatch, name, value):
    # Before: the cache name hashed the fingerprint, parameters and grid only, so a ready model cached before the
    # decoy calibration became the default (issue #30) kept its training-structure calibration on every later
    # identify: the new confidence never reached a user who had run identify once.
    before = default_model_path()
    monkeypatch.setattr(_default_model, name, value, raising=False)
    assert default_model_path() != before


def test_a_new_bundled_decoy_table_trains_a_new_ready_model(tmp_path, monkeypatch):
    before = default_model_path()
    table = tmp_path / "decoys.tsv.gz"
    table.write_bytes(_default_model.BUNDLED_DECOYS.read_bytes() + b"\0")
    monkeypatch.setattr(_default_model, "BUNDLED_DECOYS", table, raising=False)
    assert default_model_path() != before

"""Global options of the ``iokr`` command."""

import pytest

import iokr
from iokr.cli.main import main


def test_working_memory_option_sets_the_budget_for_the_command(tmp_path, monkeypatch):
    """The budget holds while the command runs and the caller's is back afterwards (main() called in-process)."""
    from iokr.cli import retrieval  # noqa: PLC0415 - the command module whose handler is replaced

    before, seen = iokr.get_config()["working_memory"], []
    monkeypatch.setattr(retrieval, "run_evaluate", lambda args: seen.append(iokr.get_config()["working_memory"]))
    assert main(["--working-memory", "64", "retrieval", "evaluate", "--data", str(tmp_path / "absent"),
                 "--output", str(tmp_path / "out")]) == 0
    assert seen == [64]
    assert iokr.get_config()["working_memory"] == before


def test_working_memory_option_rejects_non_positive_values(capsys):
    before = iokr.get_config()["working_memory"]
    assert main(["--working-memory", "0", "demo"]) == 2
    assert "--working-memory must be a number of MiB > 0, got 0.0" in capsys.readouterr().err
    assert iokr.get_config()["working_memory"] == before


def test_demo_refuses_fewer_than_two_folds(tmp_path, capsys):
    for folds in ("0", "-3", "1"):
        assert main(["demo", "--output", str(tmp_path / "out"), "--folds", folds]) == 2
        assert f"--folds must be >= 2, got {folds}." in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_identify_refuses_a_store_at_the_output_path_before_any_work(tmp_path, capsys):
    (tmp_path / "q.mgf").write_text("BEGIN IONS\nPEPMASS=200\n100 1\nEND IONS\n")
    (tmp_path / "c.csv").write_text("Identifier,SMILES\nA,CCO\n")
    out = tmp_path / "o"
    assert main(["metabolites", "identify", "--model", str(tmp_path / "q.mgf"), "--spectra", str(tmp_path / "q.mgf"),
                 "--candidates", str(tmp_path / "c.csv"), "--store", str(out), "--output", str(out)]) == 2
    assert "is the --output folder" in capsys.readouterr().err and not out.exists()


def test_identify_names_a_model_folder_and_a_symlink_loop_for_what_they_are(tmp_path, capsys):
    (tmp_path / "q.mgf").write_text("BEGIN IONS\nPEPMASS=200\n100 1\nEND IONS\n")
    (tmp_path / "folder").mkdir()
    (tmp_path / "loopA").symlink_to(tmp_path / "loopB")
    (tmp_path / "loopB").symlink_to(tmp_path / "loopA")
    base = ["metabolites", "identify", "--spectra", str(tmp_path / "q.mgf"), "--output", str(tmp_path / "o")]
    assert main([*base, "--model", str(tmp_path / "folder"), "--candidates", str(tmp_path / "q.mgf")]) == 2
    assert "--model " + str(tmp_path / "folder") + " is not a regular file (a folder)." in capsys.readouterr().err
    assert main([*base, "--model", str(tmp_path / "q.mgf"), "--candidates", str(tmp_path / "loopA")]) == 2
    assert "cannot be read (Too many levels of symbolic links)" in capsys.readouterr().err


def test_an_output_on_a_read_only_file_system_names_the_option(tmp_path, capsys):
    import subprocess  # noqa: PLC0415

    mount = tmp_path / "ro"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", str(mount)],
                      capture_output=True, check=False).returncode != 0:
        pytest.skip("mounting a read-only tmpfs needs root (and a mount namespace that allows it)")
    try:
        (tmp_path / "c.csv").write_text("Identifier,SMILES\nA,CCO\n")
        assert main(["metabolites", "index", str(tmp_path / "c.csv"), "--output", str(mount / "db.sqlite")]) == 2
        assert f"--output {mount / 'db.sqlite'} cannot be written (Read-only file system)." in capsys.readouterr().err
    finally:
        subprocess.run(["umount", str(mount)], check=False)


def test_command_line_words_for_a_full_disk_a_small_budget_and_non_finite_alphas(tmp_path, capsys):
    import errno  # noqa: PLC0415

    from iokr.cli.main import _one_line  # noqa: PLC0415 - the one formatter of every error line

    assert _one_line(OSError(errno.ENOSPC, "No space left on device")) == \
        "No space left on device while writing the results; free some space or write elsewhere (--output)"
    tiny = MemoryError("One chunk of 1 row(s) needs 53656 bytes, more than the working-memory budget of 47185 "
                       "bytes; raise it with iokr.set_config(working_memory=...) or the working_memory argument.")
    assert _one_line(tiny).endswith("raise it with --working-memory MIB.")
    (tmp_path / "s.mgf").write_text("BEGIN IONS\nPEPMASS=200\n100 1\nEND IONS\n")
    assert main(["metabolites", "train", "--spectra", str(tmp_path / "s.mgf"), "--output", str(tmp_path / "m.npz"),
                 "--alphas", "nan"]) == 2
    assert "--alphas and --output-gammas must be positive finite numbers" in capsys.readouterr().err

"""Global options of the ``iokr`` command."""

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

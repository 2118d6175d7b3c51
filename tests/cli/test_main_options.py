"""Global options of the ``iokr`` command."""

import iokr
from iokr.cli.main import main


def test_working_memory_option_sets_the_budget_for_the_command(tmp_path, capsys):
    before = iokr.get_config()["working_memory"]
    try:
        # The command itself fails (no data there) after the option has been applied.
        code = main(["--working-memory", "64", "retrieval", "evaluate", "--data", str(tmp_path / "absent"),
                     "--output", str(tmp_path / "out")])
        assert code != 0
        assert iokr.get_config()["working_memory"] == 64
    finally:
        iokr.set_config(working_memory=before)


def test_working_memory_option_rejects_non_positive_values(capsys):
    before = iokr.get_config()["working_memory"]
    assert main(["--working-memory", "0", "demo"]) == 2
    assert "--working-memory must be a number of MiB > 0, got 0.0" in capsys.readouterr().err
    assert iokr.get_config()["working_memory"] == before

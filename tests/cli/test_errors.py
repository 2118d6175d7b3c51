"""One error path: every exception reaching ``iokr``'s main is one line on stderr and a documented exit code."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from iokr.cli import retrieval
from iokr.cli.main import EXIT_CODES, CommandError, Terminated, main
from iokr.exceptions import IOKRDataError
from iokr.io._atomic import TEMPORARY_PATTERN

ROOT = Path(__file__).resolve().parents[2]


def _run_raising(monkeypatch, tmp_path, exc, *options):
    def broken(*args, **kwargs):
        raise exc

    monkeypatch.setattr(retrieval, "run_retrieval", broken)
    return main([*options, "retrieval", "evaluate", "--output", str(tmp_path / "out")])


@pytest.mark.parametrize("exc, expected", [
    (ValueError("'alpha' must be > 0,\n  got -1\n\tinstead."), "error: 'alpha' must be > 0, got -1 instead."),
    (IOKRDataError("spectra.mgf line 3:\nno peaks"), "error: spectra.mgf line 3: no peaks"),
    (FileNotFoundError(2, "No such file or directory", "x.jsonl"), "error: [Errno 2] No such file or directory"),
    (CommandError("--top-k must be >= 1, got 0."), "error: --top-k must be >= 1, got 0."),
    (TypeError("'alpha' must be a float,\ngot 'a'"), "error: 'alpha' must be a float, got 'a'"),
    (MemoryError(), "error: out of memory (MemoryError)"),
    (MemoryError("Unable to allocate 8 GiB\nfor an array"), "error: Unable to allocate 8 GiB for an array"),
    (RecursionError("maximum recursion depth exceeded"), "error: input nested too deeply (maximum recursion depth"),
])
def test_library_errors_are_one_line_exit_2(monkeypatch, tmp_path, capsys, exc, expected):
    assert _run_raising(monkeypatch, tmp_path, exc) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("iokr retrieval evaluate: " + expected), err
    assert "Traceback" not in err
    assert not list(tmp_path.iterdir())  # no output folder, no temporary


@pytest.mark.parametrize("exc", [KeyError("spectra"), AssertionError(), RuntimeError("solver state\ncorrupt"),
                                 ZeroDivisionError("division by zero")])
def test_unexpected_errors_are_one_line_internal_errors_exit_1(monkeypatch, tmp_path, capsys, exc):
    assert _run_raising(monkeypatch, tmp_path, exc) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"iokr retrieval evaluate: internal error: {type(exc).__name__}")
    assert err.rstrip().endswith("(rerun with --debug for the traceback)")
    assert "\n" not in str(exc) or " ".join(str(exc).split()) in err


@pytest.mark.parametrize("where", ["before", "after"])
@pytest.mark.parametrize("exc, code", [(KeyError("spectra"), 1), (ValueError("bad\nvalue"), 2)])
def test_debug_prints_the_traceback_then_the_line(monkeypatch, tmp_path, capsys, exc, code, where):
    def broken(*args, **kwargs):
        raise exc

    monkeypatch.setattr(retrieval, "run_retrieval", broken)
    argv = ["retrieval", "evaluate", "--output", str(tmp_path / "out")]
    argv = ["--debug", *argv] if where == "before" else [*argv, "--debug"]
    assert main(argv) == code
    err = capsys.readouterr().err
    assert err.startswith("Traceback (most recent call last):") and "in broken" in err
    assert err.splitlines()[-1].startswith("iokr retrieval evaluate: ")
    assert "rerun with --debug" not in err


def test_interrupt_and_terminate_codes(monkeypatch, tmp_path, capsys):
    assert _run_raising(monkeypatch, tmp_path, KeyboardInterrupt()) == 130
    assert capsys.readouterr().err == "iokr retrieval evaluate: interrupted\n"
    assert _run_raising(monkeypatch, tmp_path, Terminated()) == 143
    assert capsys.readouterr().err == "iokr retrieval evaluate: terminated\n"
    assert not list(tmp_path.iterdir())


def test_sigterm_handler_is_restored_after_the_command(monkeypatch, tmp_path):
    before = signal.getsignal(signal.SIGTERM)
    seen = []
    monkeypatch.setattr(retrieval, "run_evaluate", lambda args: seen.append(signal.getsignal(signal.SIGTERM)))
    assert main(["retrieval", "evaluate", "--output", str(tmp_path / "out")]) == 0
    assert seen[0] is not before and signal.getsignal(signal.SIGTERM) is before


def test_exit_codes_are_documented_in_help(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    for code, meaning in EXIT_CODES.items():
        assert f"{code:>3}  {meaning}" in out
    for option in ("--debug", "--quiet", "--overwrite", "--working-memory"):
        assert option in out


def test_global_options_after_the_subcommand_do_not_reset_those_before(monkeypatch, tmp_path):
    seen = {}

    def record(args):
        seen.update(quiet=args.quiet, debug=args.debug, overwrite=args.overwrite)
        return 0

    monkeypatch.setattr(retrieval, "run_evaluate", record)
    assert main(["--quiet", "retrieval", "evaluate", "--output", "x", "--debug"]) == 0
    assert seen == {"quiet": True, "debug": True, "overwrite": False}
    assert main(["retrieval", "evaluate", "--output", "x", "--overwrite"]) == 0
    assert seen == {"quiet": False, "debug": False, "overwrite": True}


def test_sigterm_removes_the_temporary_folder_and_exits_143(tmp_path):
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "iokr", "retrieval", "evaluate", "--splits", "200", "--output",
                             str(out)], cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        deadline = time.monotonic() + 60
        while not [p for p in tmp_path.iterdir() if TEMPORARY_PATTERN.match(p.name)]:
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143, err
    assert err.splitlines()[-1] == "iokr retrieval evaluate: terminated"
    assert list(tmp_path.iterdir()) == []  # neither the output folder nor its temporary

"""Progress of the command's stages: a tqdm bar on a terminal, a start and an end line otherwise, nothing quiet."""

import io
import re

import pytest

from iokr.cli import _output
from iokr.cli._output import Progress, progress, set_quiet
from iokr.cli.main import main


class FakeTerminal(io.StringIO):
    def isatty(self):
        return True


@pytest.fixture(autouse=True)
def _not_quiet():
    previous = set_quiet(False)
    yield
    set_quiet(previous)


def test_lines_without_terminal_one_at_start_one_at_end():
    stream = io.StringIO()
    tick = Progress(3, "cross-validation fits", stream=stream)
    assert stream.getvalue() == "cross-validation fits: started (3)\n"
    tick()
    tick(2)
    assert stream.getvalue().count("\n") == 1  # no line per step
    tick()
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2 and re.fullmatch(r"cross-validation fits: done in \d+\.\d s", lines[1])
    tick()  # more calls after the end print nothing
    assert len(stream.getvalue().splitlines()) == 2 and tick.done == 4


def test_unknown_total_as_context_manager_counts_steps():
    stream = io.StringIO()
    with Progress(None, "reading spectra", stream=stream) as tick:
        for _ in range(5):
            tick()
    lines = stream.getvalue().splitlines()
    assert lines[0] == "reading spectra: started"
    assert re.fullmatch(r"reading spectra: done \(5\) in \d+\.\d s", lines[1])
    assert len(lines) == 2


def test_failed_stage_prints_no_done_line():
    stream = io.StringIO()
    with pytest.raises(RuntimeError), Progress(4, "scoring", stream=stream) as tick:
        tick()
        raise RuntimeError("boom")
    assert stream.getvalue() == "scoring: started (4)\n"


def test_empty_stage_ends_at_once():
    stream = io.StringIO()
    Progress(0, "nothing", stream=stream)
    assert stream.getvalue().splitlines()[1].startswith("nothing: done in")


@pytest.mark.parametrize("total", [4, None])
def test_terminal_gets_a_bar_with_counts_and_eta(total):
    stream = FakeTerminal()
    tick = Progress(total, "grid points", stream=stream)
    for _ in range(4):
        tick()
    if total is None:
        tick.close()
    text = stream.getvalue()
    assert "\r" in text and "grid points" in text
    assert ("4/4" if total else "4it") in text
    final = text.rsplit("\r", 1)[-1]
    assert final.endswith("\n") and "grid points" in final
    if total:
        assert "100%" in final and re.search(r"\[\d\d:\d\d<\d\d:\d\d", final)  # elapsed<remaining (ETA)
    assert "started" not in text


@pytest.mark.parametrize("stream", [io.StringIO(), FakeTerminal()])
def test_quiet_prints_nothing(stream):
    set_quiet(True)
    tick = Progress(2, "fits", stream=stream)
    tick()
    tick()
    with Progress(None, "other", stream=stream) as other:
        other()
    _output.log("a status line")
    assert stream.getvalue() == "" and tick.done == 2


def test_factory_keeps_the_jobs_calling_convention(capsys):
    tick = progress(2, "stage")
    tick()
    tick(done=2)
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "stage: started (2)" and err[1].startswith("stage: done in")


@pytest.mark.parametrize("argv_quiet", [["--quiet"], []])
def test_quiet_option_reaches_the_subcommands(tmp_path, capsys, argv_quiet):
    assert main([*argv_quiet, "retrieval", "evaluate", "--splits", "2", "--direction", "en-es",
                 "--output", str(tmp_path / "out")]) == 0
    err = capsys.readouterr().err
    if argv_quiet:
        assert err == ""
    else:
        assert err.splitlines()[0] == "en-es splits: started (2)" and "en-es splits: done in" in err
    assert not _output.is_quiet()  # restored after the command


def test_log_lines_go_above_a_live_bar(monkeypatch):
    terminal = FakeTerminal()
    monkeypatch.setattr("sys.stderr", terminal)
    tick = Progress(2, "fits")
    tick()
    _output.log("read 12 spectra")
    tick()
    text = terminal.getvalue()
    assert "read 12 spectra\n" in text and text.index("read 12 spectra") < text.index("2/2")


def test_log_line_without_terminal(capsys):
    _output.log("read 12 spectra")
    assert capsys.readouterr().err == "read 12 spectra\n"

"""Command-line robustness against untrusted names and arguments (issue #16)."""

import os

import pytest

from iokr.apps.retrieval import evaluate_retrieval
from iokr.cli import _report
from iokr.cli.main import main

#: A tar member name with the byte 0xff, as :mod:`tarfile` decodes it (``surrogateescape``).
UNDECODABLE = b"list_\xff\xfe.txt".decode("utf-8", "surrogateescape")


def _summary(name):
    return {
        "protocol": "p", "n_lists": 2, "n_lists_with_spectra": 1, "n_query_spectra": 1, "n_train_structures": 3,
        "per_structure": {"top1": 100.0, "top5": 100.0, "top10": 100.0, "top20": 100.0},
        "lists": [{"list": name, "n_candidates": 5, "n_query_spectra": 1, "rank": 1.0, "spectrum_ranks": [1.0],
                   "published_rank": 2.0},
                  {"list": "L\ud800", "n_candidates": 3, "n_query_spectra": 0}],  # a lone surrogate, not a byte
        "timings_s": {f"{name}_s": 1.0},
    }


def test_report_with_undecodable_list_names_is_written_whole(tmp_path):
    pytest.importorskip("matplotlib")
    _, page = _report.write_report(_summary(UNDECODABLE), tmp_path, title=f"title {UNDECODABLE}")
    text = page.read_text(encoding="utf-8")  # valid UTF-8: was a UnicodeEncodeError, report.html missing
    assert "list_\\xff\\xfe.txt" in text and "L\\ud800" in text
    assert sorted(os.listdir(tmp_path)) == ["ranks.png", "report.html", "report.png", "timings.png"]


def test_markdown_report_with_undecodable_names_is_utf8():
    summary = {**_summary(UNDECODABLE), "chosen": {"kernels": [UNDECODABLE]}}
    text = _report.markdown_report(summary, title=UNDECODABLE)
    assert text.encode("utf-8").startswith(b"# list_\\xff\\xfe.txt")


def test_failed_report_writes_no_file(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")

    def broken_page(*args, **kwargs):
        raise RuntimeError("rendering failed")

    monkeypatch.setattr(_report, "_table", broken_page)
    with pytest.raises(RuntimeError, match="rendering failed"):
        _report.write_evaluation_report(tmp_path, title="t", rank_sets={"a": ([1], 1)}, summary_table=(["a"], []))
    assert os.listdir(tmp_path) == []  # the figures are no longer written before the page is rendered


@pytest.mark.parametrize("value, message", [
    ("0", "argument --splits: expected a positive integer (number of random splits), got 0"),
    ("-1", "argument --splits: expected a positive integer (number of random splits), got -1"),
    ("two", "argument --splits: expected a positive integer, got 'two'"),
])
def test_retrieval_splits_must_be_positive(tmp_path, capsys, value, message):
    with pytest.raises(SystemExit) as exit_info:  # was an IndexError traceback after the data was loaded
        main(["retrieval", "evaluate", "--splits", value, "--output", str(tmp_path / "out")])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines()[-1] == f"iokr retrieval evaluate: error: {message}"
    assert "Traceback" not in err and not (tmp_path / "out").exists()


def test_evaluate_retrieval_checks_n_splits():
    with pytest.raises(ValueError, match="'n_splits' must be a positive int, got 0"):
        evaluate_retrieval(["a b"], ["c d"], n_splits=0)

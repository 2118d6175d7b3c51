"""The benchmark harness: tables and result files in the committed format, statistics over repeats."""

import json

import numpy as np
import pytest

from benchmarks import _harness


def test_format_table_columns_in_order_of_first_appearance():
    rows = [{"case": "a", "ours_s": 0.123456, "ok": True}, {"case": "b", "ratio": 2.0, "n": 3}]
    assert _harness.format_table(rows) == (
        "| case | ours_s | ok | ratio | n |\n|---|---|---|---|---|\n"
        "| a | 0.1235 | True |  |  |\n| b |  |  | 2 | 3 |\n")
    assert _harness.format_table([]) == "(no rows)\n"


def test_write_results_keeps_the_committed_format(tmp_path):
    rows = [{"case": "x", "ours_s": np.float64(0.5)}]
    table = _harness.write_results(tmp_path, "demo", rows, "Title line.\n\nMore.", quick=True)
    record = json.loads((tmp_path / "demo.json").read_text())
    assert list(record) == ["benchmark", "quick", "machine", "rows"]
    assert record["benchmark"] == "demo" and record["quick"] is True and record["rows"] == [{"case": "x", "ours_s": 0.5}]
    assert {"python", "numpy", "cpus", "blas", "date"} <= set(record["machine"])
    assert (tmp_path / "demo.md").read_text() == f"# demo\n\nTitle line.\n\nMore.\n\n{table}"


@pytest.mark.parametrize("stat, expected", [("median", 2.0), ("min", 1.0)])
def test_measure_reduces_the_repeats(monkeypatch, stat, expected):
    ticks = iter([0.0, 3.0, 10.0, 11.0, 20.0, 22.0])  # wall times 3, 1, 2
    monkeypatch.setattr(_harness.time, "perf_counter", lambda: next(ticks))
    calls = []
    timing = _harness.measure(lambda: calls.append(1) or len(calls), repeat=3, stat=stat)
    assert timing.walls == (3.0, 1.0, 2.0) and timing.wall == expected and timing.result == 3


def test_measure_names_a_wrong_statistic():
    with pytest.raises(ValueError, match="stat must be one of \\['median', 'min'\\]; got 'mean'"):
        _harness.measure(lambda: None, stat="mean")


def test_rel_diff_against_brute_force(rng):
    a, b = rng.normal(size=(4, 3)), rng.normal(size=(4, 3))
    expected = max(abs(x - y) for x, y in zip(a.ravel(), b.ravel(), strict=True)) / max(abs(y) for y in b.ravel())
    assert _harness.rel_diff(a, b) == pytest.approx(expected, rel=1e-15)

"""docs/metabolites.md's walk-through, run as written: index a structure table, identify an MZmine-style MGF with
the ready model (trained on first use into a temporary cache), and check the identifications table."""

import csv
import re
import shlex
import shutil
from pathlib import Path

import pytest

from iokr.cli.main import main

pytest.importorskip("rdkit")
ROOT = Path(__file__).resolve().parents[1]


def _commands():
    text = (ROOT / "docs" / "metabolites.md").read_text(encoding="utf-8")
    block = text.split("<!-- walkthrough -->", 1)[1].split("```console", 1)[1].split("```", 1)[0]
    return [shlex.split(line[2:]) for line in block.splitlines() if line.startswith("$ iokr ")]


def test_walkthrough_runs_as_written(tmp_path, monkeypatch, capsys, ready_model_cache):
    shutil.copytree(ROOT / "examples" / "data", tmp_path / "examples" / "data")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("IOKR_CACHE_DIR", str(ready_model_cache))  # trained on first use, once per test session
    commands = _commands()
    assert [c[:2] for c in commands] == [["iokr", "metabolites"]] * 2
    for argv in commands:
        assert main(argv[1:]) == 0
    assert re.search(r"6 queries: 4 ok, 1 no precursor m/z, 1 unsupported adduct", capsys.readouterr().out)
    assert list(ready_model_cache.glob("metabolites-model-*.npz"))  # the ready model is cached
    with open(tmp_path / "work" / "identified" / "structure_identifications.tsv", newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    assert [r["query_id"] for r in rows] == [str(i) for i in range(1, 7)]
    truth = {}
    for block in (tmp_path / "examples" / "data" / "mzmine_features.mgf").read_text().split("END IONS"):
        fid = re.search(r"FEATURE_ID=(\d+)", block)
        if fid and "FORMULA=" in block:
            truth[fid.group(1)] = True
    ranked = [r for r in rows if r["status"] == "ok"]
    assert len(ranked) == 4 and all(r["identifier"].startswith("EX") and r["CompoundName"] for r in ranked)
    assert all(r["lookup"].startswith("formula ") for r in ranked if r["query_id"] in truth)
    assert rows[3]["lookup"].startswith("mass ") and "assumed [M+H]+" in rows[3]["detail"]
    # --report: the page beside the tables, one section per query
    page = (tmp_path / "work" / "identified" / "report.html").read_text(encoding="utf-8")
    assert page.count('<section class="query"') == len(rows) == 6

"""``python -m experiments core`` on the bundled parallel-text subset: the CLI-default rows and a kept baseline."""

import json
import shutil

import pytest

from experiments.__main__ import main
from iokr.datasets import BUNDLED_PARALLEL_TEXT


def _baseline_record(mrr):
    record = {"top1": 90.0, "top5": 100.0, "top10": 100.0, "mrr": mrr, "chosen": [64, 8], "cv_mrr": 1.0}
    return {"top1": (90.0, 0.0), "top5": (100.0, 0.0), "top10": (100.0, 0.0), "mrr": (mrr, 0.0),
            "per_split": [record]}


@pytest.fixture
def data(tmp_path):
    folder = tmp_path / "data" / "parallel_text"
    folder.mkdir(parents=True)
    shutil.copy(BUNDLED_PARALLEL_TEXT, folder / "bible_kjv_en__rv1909_es.chapters.jsonl.gz")
    return tmp_path / "data"


def test_cli_default_rows_and_a_kept_baseline(data, tmp_path, capsys):
    out = tmp_path / "reports"
    out.mkdir()
    baseline = {"seconds_per_split": [5.0], "grid": [[64, [8]]], "cv_folds": 3, "a-b": _baseline_record(0.5),
                "b-a": _baseline_record(0.6)}
    (out / "core.json").write_text(json.dumps({"retrieval": {"cca_baseline": baseline}}))
    main(["core", "--data", str(data), "--output", str(out), "--set", "skip=retrieval_cv,bibtex",
          "--set", "update=True", "--set", "baselines=False", "--set", "splits=1"])
    report = json.loads((out / "core.json").read_text())
    assert report["retrieval"]["cca_baseline"]["kept_from_previous_run"] is True
    default = report["retrieval_default"]
    record = default["results"]["en-es"]["per_split"][0]
    assert record["features"]["lsa"] in (None, 16, 32, 64, 128) and record["alpha"] in default["alphas"]
    # recorded, not raised: 198 training chapters, so the large LSA dimensions are left out
    assert any("LSA dimensions [256, 384, 512] need more than" in w for w in default["warnings"])
    text = (out / "core.md").read_text()
    assert "| en-es | IOKR (CLI defaults: features and alpha by 5-fold CV) |" in text
    # one split: no standard error, so no difference counts as a win or a loss
    assert "- **en-es**, CLI defaults: IOKR ties with LSA + CCA (MRR " in text and " vs 0.500, " in text
    assert "- **es-en**, CLI defaults: IOKR ties with LSA + CCA (MRR " in text and " vs 0.600, " in text
    assert "IOKR (CLI defaults): `iokr retrieval evaluate` with no option" in text
    capsys.readouterr()


def test_baseline_of_other_splits_is_not_kept(data, tmp_path):
    out = tmp_path / "reports"
    out.mkdir()
    baseline = {"seconds_per_split": [5.0, 5.0], "a-b": _baseline_record(0.5), "b-a": _baseline_record(0.6)}
    (out / "core.json").write_text(json.dumps({"retrieval": {"cca_baseline": baseline}}))
    main(["core", "--data", str(data), "--output", str(out), "--set", "skip=retrieval_cv,retrieval_default,bibtex",
          "--set", "update=True", "--set", "baselines=False", "--set", "splits=1"])
    assert "cca_baseline" not in json.loads((out / "core.json").read_text())["retrieval"]

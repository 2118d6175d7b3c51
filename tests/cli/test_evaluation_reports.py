"""HTML/PNG evaluation reports: figures present, files written atomically, CLI evaluate commands produce them."""

import base64
import json
import re

import numpy as np
import pytest

import iokr.io._atomic as atomic
from iokr.apps.multilabel import evaluate_multilabel
from iokr.cli import _report
from iokr.cli.main import main

pytest.importorskip("matplotlib")

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _embedded_pngs(page):
    return [base64.b64decode(m) for m in re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)]


def _check_report(out_dir, n_figures=3):
    page = (out_dir / "report.html").read_text(encoding="utf-8")
    embedded = _embedded_pngs(page)
    assert len(embedded) == n_figures
    written = [out_dir / name for name in _report.FIGURES.values() if (out_dir / name).exists()]
    assert len(written) == n_figures
    for png in embedded:
        assert png.startswith(PNG_MAGIC)
    # The page embeds exactly the PNG files written beside it.
    assert sorted(embedded) == sorted(p.read_bytes() for p in written)
    assert not [p.name for p in out_dir.iterdir() if ".tmp" in p.name]
    return page


@pytest.mark.parametrize("n", [None, 7])
def test_topk_curve_matches_naive_count(n):
    ranks = [1, 3.5, None, np.nan, 12, 2, 50, 51]
    ks, acc = _report.topk_curve(ranks, n)
    denominator = len(ranks) if n is None else n
    finite = [r for r in ranks if r is not None and not np.isnan(r)]
    for k, a in zip(ks, acc, strict=True):
        assert a == pytest.approx(100.0 * sum(r <= k for r in finite) / denominator, abs=1e-12)
    assert _report.topk_curve([], 0)[1].tolist() == [0.0] * _report.MAX_K


def test_evaluation_report_has_figures_tables_and_timings(tmp_path):
    paths = _report.write_evaluation_report(
        tmp_path / "out", title="T <&>", rank_sets={"a": ([1, 2, 5, None], 4), "b": ([3.0, 1.0], 2)},
        timings={"fit_s": 1.5, "rank_s": 0.25, "total_s": 2.0}, summary_table=(["x", "y"], [[1, "<b>"]]),
        notes=["protocol"], detail_table=(["query", "rank"], [["q0", 1]]))
    assert set(paths) == {"html", "topk", "ranks", "timings"}
    page = _check_report(tmp_path / "out")
    assert "T &lt;&amp;&gt;" in page and "&lt;b&gt;" in page  # escaped
    assert "fit_s" in page and "1.50" in page and "q0" in page


def test_report_without_timings_has_two_figures(tmp_path):
    paths = _report.write_evaluation_report(tmp_path, title="t", rank_sets={"a": ([1, 2], 2)})
    assert "timings" not in paths
    _check_report(tmp_path, n_figures=2)


def test_every_report_file_goes_through_a_rename(tmp_path, monkeypatch):
    renamed = []
    real_replace = atomic.os.replace

    def replace(src, dst):
        renamed.append(str(dst))
        return real_replace(src, dst)

    monkeypatch.setattr(atomic.os, "replace", replace)
    paths = _report.write_evaluation_report(tmp_path, title="t", rank_sets={"a": ([1], 1)}, timings={"x_s": 1.0})
    assert sorted(renamed) == sorted(str(p) for p in paths.values())


def test_interrupted_report_keeps_previous_page_and_leaves_no_temporary(tmp_path, monkeypatch):
    (tmp_path / "report.html").write_text("old")

    def broken(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(_report, "_table", broken)
    with pytest.raises(KeyboardInterrupt):
        _report.write_evaluation_report(tmp_path, title="t", rank_sets={"a": ([1], 1)}, summary_table=(["a"], []))
    assert (tmp_path / "report.html").read_text() == "old"
    assert not [p.name for p in tmp_path.iterdir() if ".tmp" in p.name]


def test_metabolite_report_from_summary(tmp_path):
    summary = {
        "protocol": "p", "n_lists": 3, "n_lists_with_spectra": 2, "n_query_spectra": 3, "n_train_structures": 10,
        "per_structure": {"top1": 50.0, "top5": 100.0, "top10": 100.0, "top20": 100.0},
        "per_spectrum": {"top1": 33.3, "top5": 100.0, "top10": 100.0, "top20": 100.0},
        "published": {"top1": 33.3, "top5": 66.7, "top10": 66.7, "top20": 100.0},
        "lists": [
            {"list": "L1", "n_candidates": 5, "n_query_spectra": 2, "rank": 1.0, "spectrum_ranks": [1.0, 2.0],
             "published_rank": 1.0},
            {"list": "L2", "n_candidates": 9, "n_query_spectra": 1, "rank": 3.0, "spectrum_ranks": [4.0],
             "published_rank": 2.0},
            {"list": "L3", "n_candidates": 4, "n_query_spectra": 0, "published_rank": 12.0},
        ],
        "timings_s": {"training_set_s": 1.0, "cross_validation_s": 2.0, "final_fit_s": 0.5, "scoring_s": 0.2,
                      "total_s": 4.0},
    }
    png, page = _report.write_report(summary, tmp_path)
    assert png == tmp_path / "report.png" and page == tmp_path / "report.html"
    text = _check_report(tmp_path)
    assert "L3" in text and "cross_validation_s" in text
    curves = _report.curves(summary)
    assert curves["IOKR, per structure (merged spectra)"][1][0] == pytest.approx(50.0)
    assert curves["IOKR, per spectrum"][1][1] == pytest.approx(200 / 3)


def test_retrieval_evaluate_writes_report(tmp_path, capsys):
    out = tmp_path / "retrieval"
    assert main(["retrieval", "evaluate", "--splits", "1", "--direction", "en-es", "--output", str(out),
                 "--report"]) == 0
    page = _check_report(out)
    assert "en-es" in page and "rank_s" in page

    summary = json.loads((out / "summary.json").read_text())
    ranks = summary["results"]["en-es"]["ranks"]
    assert len(ranks) == 1 and len(ranks[0]) == summary["n_documents"] - round(0.5 * summary["n_documents"])


def _write_arff(path, X, Y):
    lines = ["@relation toy"] + [f"@attribute f{j} numeric" for j in range(X.shape[1])]
    lines += [f"@attribute l{j} {{0,1}}" for j in range(Y.shape[1])] + ["@data"]
    lines += [",".join(f"{v:g}" for v in np.concatenate([x, y])) for x, y in zip(X, Y, strict=True)]
    path.write_text("\n".join(lines) + "\n")


def test_multilabel_evaluate_writes_report_with_true_set_ranks(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 4))
    Y = (X[:, :3] > 0).astype(int)
    _write_arff(tmp_path / "train.arff", X[:40], Y[:40])
    _write_arff(tmp_path / "test.arff", X[40:], Y[40:])
    out = tmp_path / "ml"
    assert main(["multilabel", "evaluate", "--train", str(tmp_path / "train.arff"), "--test",
                 str(tmp_path / "test.arff"), "--labels", "3", "--cv", "2", "--alphas", "0.1", "1",
                 "--output", str(out), "--report"]) == 0
    _check_report(out)

    summary = json.loads((out / "summary.json").read_text())
    ranks = summary["ranks"]
    # model selection includes the refit on all training data
    assert len(ranks) == 20 and set(summary["timings_s"]) == {"cross_validation_s", "test_ranking_s"}
    # Rank 1 exactly when the predicted set is the true one (exact match), for sets present among the candidates.
    result = evaluate_multilabel(X[:40], Y[:40], X[40:], Y[40:], alphas=(0.1, 1.0), cv=2)
    exact = [f == 100.0 for f in result["example_f1"]]
    assert [r == 1.0 for r in result["ranks"]] == exact


def test_a_report_without_any_ranked_query_says_so_without_a_warning(tmp_path):
    # Before: evaluate --report on lists none of which holds its true structure printed matplotlib's "UserWarning:
    # No artists with labels found to put in legend" on stderr, and the rank histogram was an empty frame.
    import warnings  # noqa: PLC0415

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _report.write_evaluation_report(tmp_path / "out", title="T", rank_sets={"a": ([None, np.nan], 2)})
    _check_report(tmp_path / "out", n_figures=2)

"""``evaluate --report``: reliability diagrams and ECE per structure and per spectrum, per polarity (issue #30)."""

import numpy as np
import pytest

from iokr.apps.metabolites.model._confidence import Calibration, calibration_report
from iokr.cli import _report
from iokr.cli._reliability import reliability_markdown, reliability_sets


def _part(seed, mode, calibrated=True):
    rng = np.random.default_rng(seed)
    cal = Calibration(-1.0, 1.0, 0.0, 1.0, 5.0, 200)
    scores = [rng.normal(size=int(rng.integers(2, 30))) for _ in range(40)]
    truth = [int(rng.integers(0, len(s))) for s in scores]
    part = {"precursor_type": "[M+H]+" if mode == "positive" else "[M-H]-", "n_lists": 40,
            "per_structure": {"top1": 10.0, "top5": 20.0, "top10": 30.0, "top20": 40.0},
            "per_spectrum": {"top1": 10.0, "top5": 20.0, "top10": 30.0, "top20": 40.0},
            "lists": [{"list": f"L{i}", "n_candidates": 3, "n_query_spectra": 1, "rank": 1.0,
                       "spectrum_ranks": [1.0]} for i in range(3)],
            "calibration_data": {"lists": "decoy lists", "n_folds": 3, "n_examples": 321, "n_right_top_hits": 99,
                                 "decoys": {"source": "decoys.tsv.gz", "n_decoys": 1234, "max_isomers": 100,
                                            "list_size": 100, "max_mass_difference_da": 10.0,
                                            "n_library_compounds_removed": 5,
                                            "n_structures_with_decoy_isomers": 77, "n_structures": 500}}}
    if calibrated:
        part["confidence"] = {"per_structure": calibration_report(cal, scores[:20], truth[:20]),
                              "per_spectrum": calibration_report(cal, scores, truth, groups=np.arange(40) // 4)}
    else:
        part["calibration_problem"] = "calibration needs at least 100 hold-out lists; got 12"
    return part


def _summary(negative_calibrated=True):
    positive, negative = _part(0, "positive"), _part(1, "negative", negative_calibrated)
    return {**positive, "per_polarity": {"positive": positive, "negative": negative}}


def test_reliability_sets_name_every_polarity_and_kind():
    summary = _summary()
    sets = reliability_sets(summary)
    assert list(sets) == ["positive, per structure", "positive, per spectrum", "negative, per structure",
                          "negative, per spectrum"]
    assert sets["negative, per spectrum"] is summary["per_polarity"]["negative"]["confidence"]["per_spectrum"]
    assert list(reliability_sets(_summary(negative_calibrated=False))) == ["positive, per structure",
                                                                         "positive, per spectrum"]


def test_markdown_shows_ece_bins_and_how_the_calibration_data_were_formed():
    summary = _summary(negative_calibrated=False)
    text = _report.markdown_report(summary)
    ece = summary["per_polarity"]["positive"]["confidence"]["per_spectrum"]["ece"]
    assert f"| per spectrum | {ece:.3f} | 40 |" in text
    assert "### positive ([M+H]+)" in text and "### negative ([M-H]-)" in text
    assert "not calibrated: calibration needs at least 100 hold-out lists; got 12" in text
    assert "1234 decoys" in text and "321 ranked lists, 99 right top hits" in text
    assert text.count("| per structure | 0.") >= 2  # the ECE row and at least one bin row
    section = reliability_markdown(summary)
    bins = summary["per_polarity"]["positive"]["confidence"]["per_structure"]["bins"]
    assert sum(f"| per structure | {b['low']:.1f}-{b['high']:.1f} | {b['n']} |" in section for b in bins) == len(bins)


def test_html_report_embeds_one_reliability_panel_per_polarity(tmp_path):
    summary = _summary()
    _, page = _report.write_report(summary, tmp_path)
    html = page.read_text()
    assert (tmp_path / "reliability.png").stat().st_size > 1000
    for label in ("positive, per structure", "negative, per spectrum"):
        assert label in html
    import matplotlib.image  # noqa: PLC0415 - the figure has two panels side by side

    height, width = matplotlib.image.imread(tmp_path / "reliability.png").shape[:2]
    assert width > 1.8 * height


def test_every_ece_is_shown_beside_the_ece_of_a_perfectly_calibrated_confidence(tmp_path):
    summary = _summary()
    part = summary["per_polarity"]["negative"]["confidence"]
    text = _report.markdown_report(summary)
    for r in (part["per_structure"], part["per_spectrum"]):
        floor = r["perfect_ece"]
        band = f"{floor['median']:.3f} (95 % {floor['low']:.3f}-{floor['high']:.3f})"
        assert f"{r['ece']:.3f} (n={r['n']}; perfectly calibrated at n={r['n']}: {band}" in text  # the headline
        assert f"| {r['ece']:.3f} | {r['n']} | {r['mean_confidence']:.3f} | {r['accuracy']:.3f} | {band}" in text
    shared = part["per_spectrum"]["perfect_ece_shared"]
    assert f"one outcome per structure: {shared['median']:.3f}" in text
    assert shared["median"] > part["per_spectrum"]["perfect_ece"]["median"]  # correlated outcomes: a wider floor
    _, page = _report.write_report(summary, tmp_path)
    assert f"perfectly calibrated at n={part['per_structure']['n']}: " in page.read_text()


def _with_negative_reports(n):
    """The summary with its negative polarity's confidence computed on ``n`` lists whose true structure is listed
    (and one list without it)."""
    cal = Calibration(-1.0, 1.0, 0.0, 1.0, 5.0, 200)
    scores, truth = [np.array([0.5, 0.1, -0.2])] * n + [np.array([0.3, 0.2])], [0] * n + [None]
    summary = _summary()
    summary["per_polarity"]["negative"]["confidence"] = {
        "per_structure": calibration_report(cal, scores, truth),
        "per_spectrum": calibration_report(cal, scores, truth, groups=np.arange(n + 1))}
    return summary


def test_no_evaluated_query_with_its_true_structure_gives_no_ece_and_says_why(tmp_path):
    # Before: a polarity whose lists all lacked their true structure wrote "ece": NaN into summary.json (not JSON
    # that jq or a browser reads) and an empty ECE table in summary.md with no reason.
    import json  # noqa: PLC0415

    from iokr.io._atomic import write_json  # noqa: PLC0415

    summary = _with_negative_reports(0)
    for report in summary["per_polarity"]["negative"]["confidence"].values():
        assert report["n"] == 0 and report["ece"] is None and report["perfect_ece"] == {}
    write_json(tmp_path / "summary.json", summary)
    json.loads((tmp_path / "summary.json").read_text(), parse_constant=lambda name: pytest.fail(name))
    text = _report.markdown_report(summary)
    negative = text[text.index("### negative"):]
    assert "- no ECE: none of the evaluated queries has its true structure in its candidate list" in negative
    assert "| per structure |" not in negative
    _report.write_report(summary, tmp_path)


def test_one_query_has_an_ece_and_a_perfect_ece_band_of_its_two_outcomes():
    summary = _with_negative_reports(1)
    report = summary["per_polarity"]["negative"]["confidence"]["per_structure"]
    p = report["mean_confidence"]
    assert report["n"] == 1 and report["accuracy"] == 1.0 and report["ece"] == pytest.approx(1 - p)
    # one query, perfectly calibrated: right with probability p (ECE 1 - p), else wrong (ECE p)
    floor = report["perfect_ece"]
    assert (floor["low"], floor["high"]) == pytest.approx((min(p, 1 - p), max(p, 1 - p)))
    assert floor["median"] == pytest.approx(p if 1 - p > 0.5 else 1 - p)
    assert f"| per structure | {1 - p:.3f} | 1 | {p:.3f} | 1.000 |" in _report.markdown_report(summary)


def test_the_html_report_says_in_words_what_the_perfectly_calibrated_figures_mean(tmp_path):
    # Before: report.html showed "0.293 (n=20; perfectly calibrated at n=20: 0.157 (95 % 0.075-0.293))" with no
    # word on what that second figure is or how to read the ECE against it (only summary.md explained it)
    import re  # noqa: PLC0415

    _, page = _report.write_report(_summary(), tmp_path)
    confidence = page.read_text()
    confidence = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", confidence[confidence.index("<h2>Confidence</h2>"):]))
    for words in ("how often the top hit is right", "by chance alone", "cannot be told apart from chance",
                  "one outcome per structure", "simulations"):
        assert words in confidence
    # summary.md explains them in the same words
    assert "cannot be told apart from chance" in _report.markdown_report(_summary())

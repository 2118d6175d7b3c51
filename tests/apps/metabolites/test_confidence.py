"""Confidence of the top hit: margins, the logistic calibration, and the expected calibration error by hand."""

import numpy as np
import pytest

from iokr.apps.metabolites.model._confidence import (
    Calibration,
    calibration_report,
    expected_calibration_error,
    fit_calibration,
    top_margins,
)


def test_top_margins_and_correctness():
    scores = [np.array([0.1, 0.9, 0.5]), np.array([0.3]), np.array([]), np.array([0.7, 0.7, 0.1])]
    margins, sizes, correct = top_margins(scores, [1, 0, None, 0])
    np.testing.assert_allclose(margins[[0, 3]], [0.4, 0.0])
    assert margins[1] == np.inf and np.isnan(margins[2])
    assert sizes.tolist() == [3, 1, 0, 3] and correct.tolist() == [True, True, False, False]  # a tie is not right


def test_calibration_recovers_a_logistic_truth():
    rng = np.random.default_rng(0)
    margins = rng.exponential(0.1, size=20000)
    sizes = rng.integers(2, 2000, size=20000)
    z = -1.0 + 2.0 * margins / np.median(margins) - 0.1 * np.log(sizes)
    correct = rng.random(20000) < 1 / (1 + np.exp(-z))
    cal = fit_calibration(margins, sizes, correct)
    assert cal.margin_weight == pytest.approx(2.0, rel=0.1) and cal.size_weight == pytest.approx(-0.1, abs=0.05)
    p = cal.probability(margins, sizes)
    assert expected_calibration_error(p, correct)[0] < 0.02
    assert np.all(np.diff(cal.probability(np.linspace(0, 1, 50), np.full(50, 100))) >= 0)  # monotone in margin
    assert Calibration.from_dict(cal.to_dict()) == cal
    assert cal.probability([np.inf], [1])[0] == cal.probability([cal.max_margin], [1])[0]


def test_calibration_needs_both_outcomes():
    with pytest.raises(ValueError, match="right and wrong top hits; got 150 right of 150"):
        fit_calibration(np.ones(150), np.full(150, 10), np.ones(150, dtype=bool))
    with pytest.raises(ValueError, match="right and wrong top hits; got 0 right of 150"):
        fit_calibration(np.ones(150), np.full(150, 10), np.zeros(150, dtype=bool))


def test_too_few_lists_is_the_reason_even_when_they_are_all_wrong():
    with pytest.raises(ValueError, match="at least 100 hold-out lists; got 1$"):
        fit_calibration(np.ones(1), np.full(1, 10), np.zeros(1, dtype=bool))


def test_expected_calibration_error_by_hand():
    p = np.array([0.05, 0.15, 0.15, 0.95, 0.95, 0.95, 0.95])
    y = np.array([0, 1, 0, 1, 1, 1, 0], dtype=bool)
    ece, bins = expected_calibration_error(p, y)
    by_hand = (1 / 7) * 0.05 + (2 / 7) * abs(0.5 - 0.15) + (4 / 7) * abs(0.75 - 0.95)
    assert ece == pytest.approx(by_hand)
    assert [(b["n"], b["low"]) for b in bins] == [(1, 0.0), (2, 0.1), (4, 0.9)]


def test_calibration_report_leaves_out_lists_without_truth():
    cal = Calibration(0.0, 1.0, 0.0, 1.0, 5.0, 10)
    report = calibration_report(cal, [np.array([1.0, 0.0]), np.array([0.0, 2.0])], [0, None])
    assert report["n"] == 1 and report["accuracy"] == 1.0
    assert report["mean_confidence"] == pytest.approx(1 / (1 + np.exp(-1.0)))


def test_calibration_needs_enough_examples():
    rng = np.random.default_rng(0)
    margins, correct = rng.exponential(0.1, 99), rng.random(99) < 0.5
    with pytest.raises(ValueError, match="at least 100 hold-out lists; got 99"):
        fit_calibration(margins, np.full(99, 10), correct)


def test_a_separating_calibration_is_degenerate():
    """Every right top hit has a larger margin than every wrong one: the fit separates its examples (huge
    coefficients, probabilities of 0 and 1) and is refused."""
    margins = np.concatenate([np.linspace(0.0, 0.1, 100), np.linspace(0.2, 0.3, 100)])
    correct = np.arange(200) >= 100
    with pytest.raises(ValueError, match="degenerate calibration fit"):
        fit_calibration(margins, np.full(200, 10), correct)

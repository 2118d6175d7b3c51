"""Confidence of the top hit: margins, the logistic calibration, and the expected calibration error by hand."""

import numpy as np
import pytest

from iokr.apps.metabolites.model._confidence import (
    Calibration,
    calibration_report,
    expected_calibration_error,
    fit_calibration,
    fit_calibration_on_lists,
    top_hit_features,
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


def _naive_features(scores, scale):
    """Gap to the 5th and candidates within ``scale`` of the best, by sorting and counting in Python loops."""
    gaps, within = [], []
    for s in scores:
        ranked = sorted((float(x) for x in s), reverse=True)
        if not ranked:
            gaps.append(np.nan)
            within.append(0)
            continue
        gaps.append(np.inf if len(ranked) == 1 else ranked[0] - ranked[min(4, len(ranked) - 1)])
        within.append(sum(1 for x in ranked[1:] if x >= ranked[0] - scale))
    return np.array(gaps), np.array(within)


@pytest.mark.parametrize("seed", range(4))
def test_top_hit_features_against_a_naive_loop(seed):
    rng = np.random.default_rng(seed)
    scores = [np.round(rng.normal(size=rng.integers(0, 40)), 1) for _ in range(200)]  # rounded: many ties
    scores += [np.array([2.0]), np.array([1.0, 1.0]), np.array([3.0, 2.9, 2.8, 2.7, 2.6, 0.0])]
    scale = 0.25
    margins, sizes, correct, gaps, n_within = top_hit_features(scores, scale, [0 if s.size else None for s in scores])
    want_gaps, want_within = _naive_features(scores, scale)
    np.testing.assert_array_equal(gaps, want_gaps)  # NaN and inf in the same places
    np.testing.assert_array_equal(n_within, want_within)
    reference = top_margins(scores, [0 if s.size else None for s in scores])
    for a, b in zip((margins, sizes, correct), reference, strict=True):
        np.testing.assert_array_equal(a, b)
    assert gaps[-1] == pytest.approx(0.4) and n_within[-1] == 2 and n_within[-2] == 1


def test_calibration_with_features_recovers_a_logistic_truth_and_round_trips():
    rng = np.random.default_rng(1)
    n = 20000
    margins, sizes = rng.exponential(0.1, n), rng.integers(2, 3000, n)
    gaps = margins + rng.exponential(0.2, n)
    n_within = rng.integers(0, 50, n)
    scale = np.median(margins)
    z = -0.5 + 1.5 * margins / scale - 0.1 * np.log(sizes) + 0.3 * gaps / scale - 0.6 * np.log1p(n_within)
    correct = rng.random(n) < 1 / (1 + np.exp(-z))
    cal = fit_calibration(margins, sizes, correct, gaps=gaps, n_within=n_within)
    assert cal.features == ("margin", "size", "gap_to_5th", "n_within_margin") and not cal.size_weight_clipped
    assert cal.gap_weight == pytest.approx(0.3, abs=0.08) and cal.within_weight == pytest.approx(-0.6, abs=0.1)
    assert cal.margin_weight == pytest.approx(1.5, abs=0.2)
    p = cal.probability(margins, sizes, gaps, n_within)
    assert expected_calibration_error(p, correct)[0] < 0.02
    assert Calibration.from_dict(cal.to_dict()) == cal
    with pytest.raises(ValueError, match="this calibration uses gaps; none were given"):
        cal.probability(margins, sizes)


def test_a_model_file_calibration_without_the_optional_features_still_loads():
    old = {"intercept": -1.0, "margin_weight": 0.5, "size_weight": -0.1, "scale": 0.1, "max_margin": 2.0,
           "n_examples": 500}
    cal = Calibration.from_dict(old)
    assert cal.features == ("margin", "size") and cal.gap_weight == 0.0 and not cal.size_weight_clipped
    assert cal.probability([0.1], [10])[0] == pytest.approx(1 / (1 + np.exp(-(-1.0 + 0.5 - 0.1 * np.log(10)))))


def test_a_positive_size_weight_is_clipped_to_zero_and_the_rest_refitted():
    """Larger lists made *easier* (a calibration-list artefact): the constrained fit puts the size weight at 0,
    which is the refit without the size column."""
    rng = np.random.default_rng(2)
    margins, sizes = rng.exponential(0.1, 5000), rng.integers(2, 3000, 5000)
    z = -3.0 + 1.0 * margins / np.median(margins) + 0.4 * np.log(sizes)
    correct = rng.random(5000) < 1 / (1 + np.exp(-z))
    cal = fit_calibration(margins, sizes, correct)
    assert cal.size_weight == 0.0 and cal.size_weight_clipped and cal.to_dict()["size_weight_clipped"] is True
    from sklearn.linear_model import LogisticRegression  # noqa: PLC0415

    plain = LogisticRegression(C=100.0, max_iter=1000).fit((margins / cal.scale)[:, None], correct)
    assert cal.margin_weight == pytest.approx(plain.coef_[0, 0], rel=1e-6)
    assert cal.intercept == pytest.approx(plain.intercept_[0], rel=1e-6)


def test_fit_on_lists_uses_the_features_it_is_given_and_refuses_what_it_cannot_fit():
    rng = np.random.default_rng(3)
    scores, truth = [], []
    for _ in range(400):
        s = rng.normal(size=rng.integers(2, 300))
        t = int(rng.integers(s.size))
        s[t] += rng.exponential(1.5)
        scores.append(s)
        truth.append(t)
    cal = fit_calibration_on_lists(scores, truth, ("n_within_margin",))
    assert cal.features == ("margin", "size", "n_within_margin") and cal.n_examples == 400
    margins = top_margins(scores)[0]
    assert cal.scale == pytest.approx(np.median(margins))
    m, n, _, gaps, within = top_hit_features(scores, cal.scale)
    np.testing.assert_allclose(cal.confidence(scores), cal.probability(m, n, None, within))
    assert np.isnan(cal.confidence([np.zeros(0)])[0])  # no candidate, no confidence
    with pytest.raises(ValueError, match=r"calibration features must be among .*; got \['prior_top'\]"):
        fit_calibration_on_lists(scores, truth, ("prior_top",))
    with pytest.raises(ValueError, match="at least 100 hold-out lists; got 99"):
        fit_calibration_on_lists(scores[:99], truth[:99], ("gap_to_5th", "n_within_margin"))
    # an extreme weight: right exactly when the count is 0, blurred by two flips (not separable)
    step = [np.array([1.0, 0.95]) if i % 2 else np.array([1.0, 0.2, 0.1]) for i in range(400)]
    right = [0 if i % 2 == 0 else 1 for i in range(400)]
    right[0], right[1] = 1, 0
    with pytest.raises(ValueError, match="degenerate calibration fit"):
        fit_calibration_on_lists(step, right, ("gap_to_5th", "n_within_margin"))

"""The ECE a perfectly calibrated confidence shows by chance (issue #30): simulation against exact distributions."""

import itertools
import math

import numpy as np
import pytest

from iokr.apps.metabolites.model._confidence import Calibration, calibration_report, expected_calibration_error
from iokr.apps.metabolites.model._noise_floor import noise_floor_summary, perfect_calibration_ece


def _exact_ece_distribution(p):
    """Every outcome vector of independent Bernoulli(p_i), its probability and its ECE (the naive reference)."""
    values, weights = [], []
    for y in itertools.product([0, 1], repeat=len(p)):
        y = np.array(y, dtype=bool)
        weights.append(float(np.prod(np.where(y, p, 1 - p))))
        values.append(expected_calibration_error(p, y)[0])
    return np.array(values), np.array(weights)


def _exact_quantile(values, weights, q):
    order = np.argsort(values)
    cdf = np.cumsum(weights[order])
    return values[order][np.searchsorted(cdf, q - 1e-12)]


@pytest.mark.parametrize("p", [np.array([0.25, 0.25, 0.25, 0.25, 0.25, 0.75, 0.75, 0.75, 0.75]),
                               np.array([0.05, 0.12, 0.18, 0.33, 0.38, 0.52, 0.61, 0.77, 0.93, 0.97])])
def test_simulated_ece_matches_the_exact_distribution(p):
    simulated = perfect_calibration_ece(p, n_simulations=40000, seed=3)
    values, weights = _exact_ece_distribution(p)
    mean = float(np.dot(values, weights))
    sd = math.sqrt(float(np.dot((values - mean) ** 2, weights)))
    assert simulated.mean() == pytest.approx(mean, abs=4 * sd / math.sqrt(simulated.size))
    for q in (0.5, 0.95):
        # a discrete distribution: the simulated quantile is one of the exact values, the one at that probability
        assert np.quantile(simulated, q, method="inverted_cdf") == pytest.approx(_exact_quantile(values, weights, q))
    # the probability of a small ECE (the brief's "P(ECE <= 0.05)") agrees with the exact one
    assert np.mean(simulated <= 0.05) == pytest.approx(weights[values <= 0.05 + 1e-12].sum(), abs=0.01)


def test_one_query_has_the_two_point_closed_form():
    """One query of confidence p: ECE is 1 - p with probability p, p otherwise (mean 2 p (1 - p))."""
    simulated = perfect_calibration_ece([0.3], n_simulations=50000, seed=0)
    assert set(np.round(simulated, 12)) == {0.3, 0.7}
    assert np.mean(np.isclose(simulated, 0.7)) == pytest.approx(0.3, abs=0.01)
    assert simulated.mean() == pytest.approx(2 * 0.3 * 0.7, abs=0.01)


def test_a_shared_outcome_per_group_moves_together():
    """One group of equal confidences: all right or all wrong together, so the ECE is the one-query two-point law;
    independent queries average out and give a smaller ECE."""
    p = np.full(40, 0.4)
    shared = perfect_calibration_ece(p, n_simulations=20000, seed=1, groups=np.zeros(40))
    assert set(np.round(shared, 12)) == {0.4, 0.6}
    assert np.mean(np.isclose(shared, 0.6)) == pytest.approx(0.4, abs=0.015)
    independent = perfect_calibration_ece(p, n_simulations=20000, seed=1)
    assert np.median(independent) < 0.1 < np.median(shared)
    # singleton groups are independent queries: the same law as without groups
    singletons = perfect_calibration_ece(p, n_simulations=20000, seed=2, groups=np.arange(40))
    assert np.median(singletons) == pytest.approx(np.median(independent), abs=0.02)


def test_seeded_and_deterministic():
    p = np.random.default_rng(0).random(60)
    a = perfect_calibration_ece(p, seed=7)
    assert np.array_equal(a, perfect_calibration_ece(p, seed=7))
    assert not np.array_equal(a, perfect_calibration_ece(p, seed=8))
    assert a.shape == (2000,)
    assert perfect_calibration_ece([], seed=0).size == 0 and noise_floor_summary([]) == {}


def test_the_floor_shrinks_with_more_queries():
    rng = np.random.default_rng(0)
    small = noise_floor_summary(perfect_calibration_ece(rng.uniform(0.1, 0.6, 60), seed=0))
    large = noise_floor_summary(perfect_calibration_ece(rng.uniform(0.1, 0.6, 2000), seed=0))
    assert small["low"] <= small["median"] <= small["q95"] <= small["high"]
    assert large["median"] < small["median"] / 3  # about 1 / sqrt(n)


@pytest.mark.parametrize("bad", [[0.2, 1.5], [np.nan, 0.1], [[0.1, 0.2]]])
def test_bad_probabilities_are_refused(bad):
    with pytest.raises(ValueError, match="probabilities must be a 1-D array of values in"):
        perfect_calibration_ece(bad)


def test_groups_must_match():
    with pytest.raises(ValueError, match="groups must have one label per probability"):
        perfect_calibration_ece([0.1, 0.2], groups=[0])


def test_calibration_report_carries_the_floor_and_uses_no_outcome():
    cal = Calibration(0.0, 1.0, 0.0, 1.0, 5.0, 10)
    scores = [np.array([1.0, 0.0]), np.array([0.0, 2.0]), np.array([0.5, 0.1])]
    right = calibration_report(cal, scores, [0, 1, 0], groups=[0, 0, 1])
    wrong = calibration_report(cal, scores, [1, 0, 1], groups=[0, 0, 1])
    assert right["perfect_ece"] == wrong["perfect_ece"] and right["ece"] != wrong["ece"]
    assert right["perfect_ece_shared"] == wrong["perfect_ece_shared"]
    assert right["perfect_ece"]["n_simulations"] == 2000
    assert "perfect_ece_shared" not in calibration_report(cal, scores, [0, 1, 0])

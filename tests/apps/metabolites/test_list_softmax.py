"""The list softmax confidence (issue #30): against the naive formula, recovery of its parameters, refusals."""

import numpy as np
import pytest

from iokr.apps.metabolites.model._confidence import Calibration, fit_calibration_on_lists
from iokr.apps.metabolites.model._list_softmax import fit_list_softmax, list_softmax_log_odds


def _naive_probability(s, scale, temperature, elsewhere):
    """P(top right) = exp(s_1 / T) / (exp(b) + sum_i exp(s_i / T)), scores in units of scale, computed directly."""
    e = np.exp(np.asarray(s, dtype=np.float64) / scale / temperature)
    return e.max() / (np.exp(elsewhere) + e.sum())


@pytest.mark.parametrize(("scale", "temperature", "elsewhere"), [(1.0, 1.0, 0.0), (0.1, 2.5, 1.3), (0.05, 0.4, -2.0)])
def test_log_odds_match_the_naive_formula(scale, temperature, elsewhere):
    rng = np.random.default_rng(0)
    scores = [rng.normal(0.0, 0.3, size=n) for n in (1, 2, 5, 40)] + [np.array([0.2, 0.2, 0.1]), np.zeros(0)]
    log_odds = list_softmax_log_odds(scores, scale, temperature, elsewhere)
    for s, lo in zip(scores[:-1], log_odds[:-1], strict=True):
        p = _naive_probability(s, scale, temperature, elsewhere)
        assert lo == pytest.approx(np.log(p / (1 - p)), rel=1e-9, abs=1e-9)
    assert np.isnan(log_odds[-1])


def test_large_scores_do_not_overflow():
    log_odds = list_softmax_log_odds([np.array([900.0, 0.0]), np.array([5000.0])], 1.0, 1.0, 0.0)
    assert np.all(np.isfinite(log_odds)) and log_odds[0] == pytest.approx(900.0)


def _simulated_lists(n, temperature, elsewhere, seed):
    """Lists whose top hit is right with exactly the list-softmax probability."""
    rng = np.random.default_rng(seed)
    scores = [rng.normal(0.0, 1.0, size=int(rng.integers(1, 300))) for _ in range(n)]
    p = np.array([_naive_probability(s, 1.0, temperature, elsewhere) for s in scores])
    return scores, rng.random(n) < p


def test_fit_recovers_temperature_and_elsewhere():
    scores, correct = _simulated_lists(6000, 0.5, 1.0, seed=1)
    temperature, elsewhere = fit_list_softmax(scores, correct, 1.0)
    assert temperature == pytest.approx(0.5, rel=0.1) and elsewhere == pytest.approx(1.0, abs=0.3)


def test_softmax_calibration_through_the_app_fit_and_its_file_record():
    scores, correct = _simulated_lists(3000, 0.5, 1.0, seed=2)
    truth = [int(np.argmax(s)) if c else int(np.argmin(s)) if s.size > 1 else None
             for s, c in zip(scores, correct, strict=True)]
    keep = [i for i, t in enumerate(truth) if t is not None]  # a one-candidate list cannot be wrong
    scores, truth = [scores[i] for i in keep], [truth[i] for i in keep]
    cal = fit_calibration_on_lists(scores, truth, family="list_softmax")
    assert cal.features == ("margin", "size", "list_softmax") and cal.intercept == 0.0 and cal.margin_weight == 0.0
    naive = [_naive_probability(s, cal.scale, cal.temperature, cal.elsewhere) for s in scores[:50]]
    np.testing.assert_allclose(cal.confidence(scores[:50]), naive, rtol=1e-9)
    assert Calibration.from_dict(cal.to_dict()) == cal
    combined = fit_calibration_on_lists(scores, truth, features=("gap_to_5th", "n_within_margin", "list_softmax"))
    assert combined.softmax_weight > 0 and combined.temperature == pytest.approx(cal.temperature)
    assert np.all(np.isfinite(combined.confidence(scores)))
    old = {k: v for k, v in cal.to_dict().items() if k not in ("softmax_weight", "temperature", "elsewhere")}
    assert Calibration.from_dict(old).softmax_weight == 0.0  # model files written before it: no softmax


def test_probability_needs_the_log_odds_it_uses():
    cal = Calibration(0.0, 0.0, 0.0, 1.0, 1.0, 100, softmax_weight=1.0)
    with pytest.raises(ValueError, match="uses softmax_log_odds; none were given"):
        cal.probability([0.1], [3])


def test_bad_family_and_separable_lists_are_refused():
    with pytest.raises(ValueError, match="calibration family must be one of"):
        fit_calibration_on_lists([np.array([1.0, 0.0])] * 200, [0] * 200, family="isotonic")
    with pytest.raises(ValueError, match="the list softmax without other features"):
        fit_calibration_on_lists([np.array([1.0, 0.0])] * 200, [0] * 200, features=("gap_to_5th",),
                                 family="list_softmax")
    # right top hits always far ahead, wrong ones always close: separable, the fit runs to its bound
    scores = [np.array([10.0, 0.0])] * 100 + [np.array([0.01, 0.0])] * 100
    with pytest.raises(ValueError, match="degenerate"):
        fit_calibration_on_lists(scores, [0] * 100 + [1] * 100, family="list_softmax")
    with pytest.raises(ValueError, match="at least 100 hold-out lists; got 3"):
        fit_calibration_on_lists([np.array([1.0, 0.0])] * 3, [0, 1, 0], family="list_softmax")


def test_the_calibration_record_names_the_family_and_its_features():
    from iokr.apps.metabolites.selection._calibration_examples import calibration_data_record  # noqa: PLC0415

    logistic = calibration_data_record(None, 3, ("gap_to_5th", "list_softmax"))
    assert logistic["family"] == "logistic" and logistic["features"][2:] == ["gap_to_5th", "list_softmax"]
    softmax = calibration_data_record(None, 3, (), "list_softmax")
    assert softmax["family"] == "list_softmax" and len(softmax["features"]) == 1
    assert "exp(s1/T) / (exp(b) + sum exp(si/T))" in softmax["features"][0]

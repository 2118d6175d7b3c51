"""``experiments/ion_modes``: the precursor types it merges, the decision rules fixed before the study, and the
committed report re-rendered from the committed JSON."""

import json
from pathlib import Path

import pytest

from experiments.ion_modes import OUTPUTS, render
from experiments.ion_modes.report import decisions
from experiments.ion_modes.rows import canonical_types

REPORTS = Path(__file__).resolve().parents[2] / "reports"


def test_spellings_of_one_ion_share_a_canonical_type():
    texts = ["[M+CH3COO]-", "[M+CH3COOH-H]-", "[M+HCOO]-", "[M+FA-H]-", "[M+HCO2]-", "[M+H]+", "[M-2H]-",
             "nonsense", "", None]
    names = canonical_types(texts)
    assert names["[M+CH3COO]-"] == names["[M+CH3COOH-H]-"]  # one ion, one name
    assert names["[M+HCOO]-"] == names["[M+FA-H]-"] == names["[M+HCO2]-"] == "[M+HCOO]-"
    assert len({names["[M+H]+"], names["[M+HCOO]-"], names["[M+CH3COO]-"]}) == 3
    # unreadable (a charge the groups contradict, no formula) and empty texts are left out
    assert not {"[M-2H]-", "nonsense", "", None} & set(names)


def _cv(neg_gain, pos_gain, own=None, assume=40.0):
    """A CV summary: separate scores 50 on both main types; one joint model off by the gains; one rare type."""
    def entry(score):
        return {"top1": 0.0, "top5": 0.0, "top10": 0.0, "top20": 0.0, "score": score, "n": 10}

    models = {"separate": {"0.1": {"[M+H]+": entry(50.0), "[M-H]-": entry(50.0), "[M+Na]+": entry(assume)}},
              "joint-alignf": {"0.3": {"[M+H]+": entry(50.0 + pos_gain), "[M-H]-": entry(50.0 + neg_gain),
                                       "[M+Na]+": entry(assume)}}}
    chosen = {"separate": {"[M+H]+": "0.1", "[M-H]-": "0.1"}, "joint-alignf": {"[M+H]+": "0.3", "[M-H]-": "0.3"}}
    cv = {"models": models, "chosen_alphas": chosen}
    if own is not None:
        cv["own_curves"] = {"[M+Na]+": {str(n): {"0.1": entry(score)} for n, score in own.items()}}
    return cv


@pytest.mark.parametrize(("neg_gain", "pos_gain", "winner"), [
    (1.0, -0.5, "joint-alignf"),  # both halves of Q1's rule met at their bounds
    (0.9, 0.0, "separate"),  # [M-H]- gain below 1.0 point
    (2.0, -0.6, "separate"),  # [M+H]+ loss beyond 0.5 point
])
def test_q1_joint_model_wins_only_by_the_rule_fixed_beforehand(neg_gain, pos_gain, winner):
    q1 = decisions(_cv(neg_gain, pos_gain))["q1"]
    assert q1["winner"] == winner and q1["best_joint"] == "joint-alignf"
    assert q1["neg_gain"] == pytest.approx(neg_gain) and q1["pos_gain"] == pytest.approx(pos_gain)


def test_q2_own_sub_model_from_one_point_above_assume_and_n_from_the_learning_curve():
    decided = decisions(_cv(0.0, 0.0, own={10: 35.0, 25: 40.0, 50: 41.0, 60: 41.0}, assume=40.0))
    assert decided["q2"]["[M+Na]+"] == {"assume": 40.0, "own": 41.0, "choice": "own"}  # the full size (60) decides
    assert decided["min_structures"] == 25  # the first grid size where own reaches assume
    decided = decisions(_cv(0.0, 0.0, own={10: 35.0, 30: 40.5}, assume=40.0))
    assert decided["q2"]["[M+Na]+"]["choice"] == "assume" and decided["min_structures"] is None


def test_the_committed_report_is_rendered_from_the_committed_json():
    results = json.loads((REPORTS / OUTPUTS.json).read_text())
    committed = (REPORTS / OUTPUTS.markdown).read_text().partition("\n" + OUTPUTS.keep)[0]
    assert render(results) == committed

"""Language model normalization and Viterbi against brute-force enumeration."""

import itertools
import math

import numpy as np
import pytest

from iokr.strings import NgramLanguageModel, viterbi_decode

TRAIN = ["abc", "abca", "bca", "cab", "", "aab"]


@pytest.mark.parametrize("order", [1, 2, 3])
def test_language_model_normalized(order):
    lm = NgramLanguageModel(order=order).fit(TRAIN)
    outcomes = list(lm.alphabet_) + [lm.stop]
    for context in [(), ("a",), ("^", "a"), ("c", "b"), ("z",)]:
        total = sum(lm.prob(c, context) for c in outcomes)
        # the base level keeps one uniform share for unseen symbols
        assert total == pytest.approx(1.0 - (1.0 / lm.n_outcomes_) * _unknown_mass(lm, context), abs=1e-12)
    assert math.isfinite(lm.log_prob("zz"))  # unknown symbols have a finite, defined probability


def _unknown_mass(lm, context):
    """Probability of the reserved unknown slot: the base share propagated through the interpolation."""
    return lm.prob("<never-seen>", context) * lm.n_outcomes_


def test_language_model_prefers_training_strings():
    lm = NgramLanguageModel(order=3).fit(TRAIN)
    assert lm.log_prob("abc") > lm.log_prob("cba")
    with pytest.raises(ValueError, match="'discount'"):
        NgramLanguageModel(discount=1.5).fit(TRAIN)


@pytest.mark.parametrize("order", [1, 2, 3])
@pytest.mark.parametrize("length", [0, 1, 3, 4])
def test_viterbi_matches_brute_force(order, length, rng):
    alphabet = ["a", "b", "c"]
    lm = NgramLanguageModel(order=order).fit(TRAIN)
    table = lm.transition_table(alphabet)
    emissions = rng.normal(size=(length, 3))
    w = 0.7
    path, score = viterbi_decode(emissions, table, order, w)
    best, best_score = None, -np.inf
    for seq in itertools.product(range(3), repeat=length):
        s = emissions[np.arange(length), list(seq)].sum() + w * lm.log_prob([alphabet[i] for i in seq])
        if s > best_score:
            best, best_score = seq, s
    assert tuple(path) == best
    assert score == pytest.approx(best_score, rel=1e-12, abs=1e-12)


def test_viterbi_bad_table():
    with pytest.raises(ValueError, match="log_transitions"):
        viterbi_decode(np.zeros((2, 3)), np.zeros((5, 4)), 2)

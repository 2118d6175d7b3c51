"""Evaluation measures against loops over candidates, pairs and labels (and scikit-learn's roc_auc_score)."""

import numpy as np
import pytest
from reference import concordance_pairs, example_f1_loop, hamming_loop, rank_of_true
from sklearn.metrics import roc_auc_score

from iokr.metrics import (
    auc,
    concordance_index,
    example_f1,
    hamming_loss,
    mean_reciprocal_rank,
    top_k_accuracy,
    true_candidate_rank,
)


@pytest.mark.parametrize("ties", ["optimistic", "pessimistic", "average"])
@pytest.mark.parametrize("seed", range(5))
def test_true_candidate_rank_tie_policies(ties, seed):
    rng = np.random.default_rng(seed)
    scores = rng.integers(0, 5, size=20).astype(float)  # many ties
    for true_index in range(20):
        assert true_candidate_rank(scores, true_index, ties) == rank_of_true(scores, true_index, ties)


def test_true_candidate_rank_examples_and_errors():
    scores = [0.1, 0.9, 0.5, 0.9, 0.9]
    assert true_candidate_rank(scores, 1, "optimistic") == 1.0
    assert true_candidate_rank(scores, 1, "pessimistic") == 3.0
    assert true_candidate_rank(scores, 1) == 2.0
    assert true_candidate_rank(scores, 0, "pessimistic") == 5.0
    with pytest.raises(ValueError, match="'ties' must be one of"):
        true_candidate_rank(scores, 0, "random")
    with pytest.raises(ValueError, match="'true_index' 5 is outside the 5 candidates"):
        true_candidate_rank(scores, 5)


def test_top_k_accuracy_counts_missing_as_miss():
    ranks = np.array([1.0, 2.5, np.nan, 7.0, 3.0])
    expected = {k: 100.0 * sum(1 for r in ranks if not np.isnan(r) and r <= k) / 5 for k in (1, 2, 3, 10)}
    assert top_k_accuracy(ranks, [1, 2, 3, 10]) == expected
    assert top_k_accuracy(ranks, 3) == 60.0
    assert top_k_accuracy(ranks, 10_000) == 80.0  # the NaN query is never a hit
    assert top_k_accuracy(ranks, 3, n_total=10) == 30.0  # queries without any list count in the denominator
    with pytest.raises(ValueError, match="at least one query"):
        top_k_accuracy([], 1)


def test_mean_reciprocal_rank_vs_loop(rng):
    ranks = rng.integers(1, 20, size=30).astype(float)
    ranks[[3, 7]] = np.nan
    expected = sum(0.0 if np.isnan(r) else 1.0 / r for r in ranks) / len(ranks)
    assert mean_reciprocal_rank(ranks) == pytest.approx(expected, rel=1e-14)
    assert mean_reciprocal_rank([1.0, np.nan]) == 0.5
    with pytest.raises(ValueError, match="at least one query"):
        mean_reciprocal_rank([])


@pytest.mark.parametrize("seed", range(3))
def test_example_f1_and_hamming_vs_loops(seed):
    rng = np.random.default_rng(seed)
    Y_true = (rng.random((25, 8)) < 0.3).astype(int)
    Y_pred = (rng.random((25, 8)) < 0.3).astype(int)
    Y_true[0] = Y_pred[0] = 0  # both empty: F1 = 1
    Y_true[1] = 0  # empty truth, non-empty prediction: F1 = 0
    Y_pred[1, 0] = 1
    assert example_f1(Y_true, Y_pred) == pytest.approx(example_f1_loop(Y_true, Y_pred), rel=1e-14)
    assert hamming_loss(Y_true, Y_pred) == pytest.approx(hamming_loop(Y_true, Y_pred), rel=1e-14)
    assert example_f1(Y_true, Y_true) == 1.0 and hamming_loss(Y_true, Y_true) == 0.0
    # Non-zero values count as labels (scores or counts); bool input works as well.
    assert example_f1(Y_true * 3.5, Y_pred.astype(bool)) == example_f1(Y_true, Y_pred)
    with pytest.raises(ValueError, match="'Y_true' and 'Y_pred' must be 2-D of equal shape"):
        example_f1(Y_true, Y_pred[:, :7])
    with pytest.raises(ValueError, match="'Y_true' and 'Y_pred'"):
        hamming_loss(Y_true[0], Y_pred[0])


@pytest.mark.parametrize("seed", range(4))
def test_concordance_index_vs_pairs(seed):
    rng = np.random.default_rng(seed)
    y_true = rng.integers(0, 6, size=40).astype(float)  # ties in y_true are not pairs
    y_score = rng.integers(0, 8, size=40).astype(float)  # ties in scores count 1/2
    assert concordance_index(y_true, y_score) == pytest.approx(concordance_pairs(y_true, y_score), rel=1e-14)
    assert concordance_index(y_true, y_true) == 1.0
    assert concordance_index(y_true, -y_true) == 0.0
    assert concordance_index(y_true, np.zeros(40)) == 0.5


def test_concordance_index_real_valued(rng):
    y_true, y_score = rng.normal(size=60), rng.normal(size=60)
    assert concordance_index(y_true, y_score) == pytest.approx(concordance_pairs(y_true, y_score), rel=1e-14)


def test_concordance_index_errors():
    with pytest.raises(ValueError, match="at least two different values in 'y_true'"):
        concordance_index([1.0, 1.0, 1.0], [0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match="same length, got 3 and 2"):
        concordance_index([1.0, 2.0, 3.0], [0.1, 0.2])


@pytest.mark.parametrize("seed", range(4))
def test_auc_vs_sklearn_and_pairs(seed):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, size=50)
    scores = np.round(rng.normal(size=50), 1)  # rounded: ties between positives and negatives
    expected = roc_auc_score(y, scores)
    assert auc(y, scores) == pytest.approx(expected, rel=1e-13)
    assert auc(y, scores) == pytest.approx(concordance_pairs(y, scores), rel=1e-13)
    assert auc(np.where(y == 1, "pos", "neg"), scores) == pytest.approx(expected, rel=1e-13)  # labels sorted
    with pytest.raises(ValueError, match="binary 'y_true' with both classes"):
        auc(np.ones(5), np.arange(5.0))


@pytest.mark.parametrize("scores, true_index, where", [
    ([np.nan, np.nan, np.nan], 0, "3 of the 3 candidates \\(including"),  # was a silent rank (0.5)
    ([0.3, np.nan, 0.1], 0, "1 of the 3 candidates \\(not including"),
    ([np.nan, 0.2], 0, "1 of the 2 candidates \\(including"),
])
@pytest.mark.parametrize("ties", ["optimistic", "pessimistic", "average"])
def test_true_candidate_rank_refuses_nan_scores(scores, true_index, where, ties):
    with pytest.raises(ValueError, match=f"'scores' contains NaN for {where}.*cannot be ranked"):
        true_candidate_rank(scores, true_index, ties=ties)


def test_true_candidate_rank_orders_infinite_scores():
    assert true_candidate_rank([-np.inf, 1.0, np.inf], 0) == 3.0
    assert true_candidate_rank([-np.inf, 1.0, np.inf], 2) == 1.0

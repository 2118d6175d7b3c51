"""``fold_candidate_sets``: one function for fold labels and for (train, test) splits (issue #29)."""

import numpy as np
import pytest
from sklearn.model_selection import KFold

from iokr.model_selection import fold_candidate_sets


def test_labels_and_splits_give_each_example_its_held_out_fold():
    Y = np.arange(20.0)[:, None]
    splits = list(KFold(4, shuffle=True, random_state=0).split(Y))
    labels = np.empty(20, dtype=int)
    for f, (_, test) in enumerate(splits):
        labels[test] = f
    by_labels, by_splits = fold_candidate_sets(Y, labels), fold_candidate_sets(Y, splits)
    for i in range(20):  # brute force: the members of i's fold
        members = [j for j in range(20) if labels[j] == labels[i]]
        np.testing.assert_array_equal(by_labels.indices[i], members)
        assert sorted(by_splits.indices[i].tolist()) == members and i in by_splits.indices[i]


@pytest.mark.parametrize(("folds", "message"), [
    (np.zeros(3, dtype=int), "3 fold labels for 4 outputs"),
    ([(None, [0, 1]), (None, [1, 2, 3])], "example 1 is in more than one test side"),
    ([(None, [0, 1])], "2 examples are in no test side"),
])
def test_folds_that_do_not_partition_the_examples_are_refused(folds, message):
    with pytest.raises(ValueError, match=message):
        fold_candidate_sets(np.eye(4), folds)

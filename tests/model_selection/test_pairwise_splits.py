"""Splits of the pairwise prediction settings: disjoint sides, nothing shared with the held-out unit, every pair
predicted once, and the split count against the generator."""

import numpy as np
import pytest

from iokr.linalg._pairwise_splits import count_pairwise_splits
from iokr.model_selection import pairwise_splits


def _pairs(rng, one_domain, complete):
    n1, n2 = (5, 5) if one_domain else (5, 4)
    if complete:
        return tuple(a.ravel() for a in np.indices((n1, n2)))
    rows, cols = rng.integers(0, n1, size=16), rng.integers(0, n2, size=16)
    rows[1], cols[1] = rows[0], cols[0]  # a repeated pair
    return rows, cols


@pytest.mark.parametrize("setting", ["A", "B", "C", "D"])
@pytest.mark.parametrize("one_domain", [False, True])
@pytest.mark.parametrize("complete", [False, True])
@pytest.mark.parametrize("n_folds", [None, 2, 3])
def test_splits_hold_out_the_setting_and_are_counted(rng, setting, one_domain, complete, n_folds):
    rows, cols = _pairs(rng, one_domain, complete)
    splits = list(pairwise_splits(setting, rows, cols, one_domain, n_folds, random_state=1))
    assert len(splits) == count_pairwise_splits(setting, rows, cols, one_domain, n_folds, random_state=1)
    seen = np.zeros(rows.size, int)
    for train, test in splits:
        assert test.any() and not (train & test).any()
        seen[test] += 1
        if setting == "A":  # the same (unordered, in one domain) pair never on both sides
            key = (np.minimum(rows, cols), np.maximum(rows, cols)) if one_domain else (rows, cols)
            test_keys = set(zip(key[0][test], key[1][test], strict=True))
            assert not any(k in test_keys for k in zip(key[0][train], key[1][train], strict=True))
            continue
        held = set()
        if setting in "BD":
            held |= set(rows[test])
        if setting in "CD":
            held |= set(cols[test])
        train_nodes = set(rows[train]) | set(cols[train]) if one_domain else None
        if one_domain:
            assert not (held & train_nodes)
        else:
            if setting in "BD":
                assert not np.isin(rows[train], rows[test]).any()
            if setting in "CD":
                assert not np.isin(cols[train], cols[test]).any()
    # Every pair is predicted at most once; only one-domain B / C skip pairs (both nodes held out together).
    assert seen.max() == 1
    if not (one_domain and setting in "BC"):
        assert (seen == 1).all()

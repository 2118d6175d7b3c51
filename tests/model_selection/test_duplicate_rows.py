"""Exact duplicate rows leak through leave-one-out: IOKRCV warns when its splits separate them, and groups with one
label per distinct input remove the leak (the chosen alpha is no longer the grid's smallest) and the warning."""

import warnings

import numpy as np
import pytest
from sklearn.model_selection import KFold

from iokr import IOKRCV
from iokr.kernels import Gaussian
from iokr.model_selection._duplicates import separated_duplicates

ALPHAS = np.logspace(-4, 1, 11)


def _data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 4))
    Y = np.sin(X @ rng.normal(size=(4, 6))) + 0.5 * rng.normal(size=(40, 6))
    return np.vstack([X, X]), np.vstack([Y, Y])


def _search():
    return IOKRCV(alphas=ALPHAS, input_kernel=Gaussian(gamma=0.3), output_kernel="linear")


def test_duplicates_without_groups_warn_and_pick_the_smallest_alpha():
    X, Y = _data()
    with pytest.warns(UserWarning, match=r"IOKRCV: 'X' and 'Y' hold 40 exact copies of other examples, and 80 of 80 "
                                         r"hold-out splits separate copies"):
        search = _search().fit(X, Y)
    assert search.best_params_["alpha"] == ALPHAS[0]  # the leak the warning is about


def test_groups_of_identical_rows_remove_the_leak_and_the_warning():
    X, Y = _data()
    groups = np.unique(X, axis=0, return_inverse=True)[1]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        search = _search().fit(X, Y, groups=groups)
    assert search.best_params_["alpha"] > ALPHAS[2]


def test_splits_keeping_copies_together_do_not_warn():
    X, Y = _data()
    together = [np.r_[fold, fold + 40] for _, fold in KFold(4).split(X[:40])]  # explicit splits, copies together
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _search().set_params(cv=[(np.setdiff1d(np.arange(80), t), t) for t in together]).fit(X, Y)
    with pytest.warns(UserWarning, match="4 of 4 hold-out splits separate copies"):
        _search().set_params(cv=4).fit(X, Y)  # KFold without shuffling: each fold holds one copy of its rows


@pytest.mark.parametrize("holdouts, expected", [
    ([np.array([0]), np.array([1]), np.array([2])], (1, 2)),
    ([np.array([0, 1]), np.array([2])], (1, 0)),
    ([np.array([2])], (1, 0)),
])
def test_separated_duplicates_against_explicit_pairs(holdouts, expected):
    X = [[1.0, 2.0], [1.0, 2.0], [3.0, 4.0]]
    assert separated_duplicates(X, holdouts) == expected
    K = Gaussian(gamma=0.3)(np.asarray(X))  # the rows of a precomputed Gram identify the same duplicates
    assert separated_duplicates(K, holdouts) == expected


def test_copies_of_an_input_with_another_output_are_no_leak():
    X = [[1.0, 2.0], [1.0, 2.0], [3.0, 4.0]]
    holdouts = [np.array([0]), np.array([1]), np.array([2])]
    assert separated_duplicates(X, holdouts, Y=[[1, 0], [0, 1], [1, 1]]) == (0, 0)
    assert separated_duplicates(X, holdouts, Y=[[1, 0], [1, 0], [1, 1]]) == (1, 2)

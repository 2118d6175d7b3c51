"""Exact duplicate rows leak through leave-one-out: IOKRCV warns when it finds them without groups, and groups with
one label per distinct input remove the leak (the chosen alpha is no longer the grid's smallest)."""

import warnings

import numpy as np
import pytest

from iokr import IOKRCV
from iokr.kernels import Gaussian
from iokr.model_selection._duplicates import duplicate_rows

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
    with pytest.warns(UserWarning, match=r"IOKRCV: 'X' holds 40 exact copies of other rows and no 'groups'"):
        search = _search().fit(X, Y)
    assert search.best_params_["alpha"] == ALPHAS[0]  # the leak the warning is about


def test_groups_of_identical_rows_remove_the_leak_and_the_warning():
    X, Y = _data()
    groups = np.unique(X, axis=0, return_inverse=True)[1]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        search = _search().fit(X, Y, groups=groups)
    assert search.best_params_["alpha"] > ALPHAS[2]


def test_precomputed_gram_rows_identify_duplicates():
    X, _ = _data()
    K = Gaussian(gamma=0.3)(X)
    assert duplicate_rows(K) == 40 and duplicate_rows(K[:40, :40]) == 0 and duplicate_rows([[1, 2], [1, 2]]) == 1

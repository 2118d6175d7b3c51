"""PreferenceRankRLS's closed-form hold-out of preferences against explicit refits without the held-out pairs."""

import numpy as np
import pytest

from iokr.estimators import PreferenceRankRLS
from iokr.kernels import Gaussian


@pytest.mark.parametrize("kernel", ["linear", "linear-wide", "gaussian"])
@pytest.mark.parametrize("n_pairs", [7, 30])  # fewer and more preferences than examples (both fit routes)
def test_preference_holdout_vs_refits(rng, kernel, n_pairs):
    n = 12
    X = rng.normal(size=(n, 25 if kernel == "linear-wide" else 3))
    first = rng.integers(0, n, size=n_pairs)
    second = (first + rng.integers(1, n, size=n_pairs)) % n
    first[1], second[1] = first[0], second[0]  # a repeated preference: holding one copy out keeps the other
    margins = rng.uniform(0.5, 2.0, size=n_pairs)
    kern = Gaussian(gamma=0.3) if kernel == "gaussian" else "linear"
    model = PreferenceRankRLS(alpha=0.4, kernel=kern).fit(X, (first, second), margins)
    every = np.arange(n_pairs)
    holdouts = [np.array([0]), np.array([2, 5, 6]), np.array([1, 3])]
    for alpha in (0.4, 3.0):
        loo = model.holdout_predictions(alpha=alpha)
        sets = model.holdout_predictions(holdouts, alpha=alpha)
        for rows, got in [(np.array([k]), loo[[k]]) for k in range(n_pairs)] + list(zip(holdouts, sets, strict=True)):
            keep = np.setdiff1d(every, rows)
            ref = PreferenceRankRLS(alpha=alpha, kernel=kern).fit(X, (first[keep], second[keep]), margins[keep])
            expected = ref.predict(X[first[rows]]) - ref.predict(X[second[rows]])
            np.testing.assert_allclose(got, expected, rtol=1e-7, atol=1e-9)


def test_preference_holdout_bad_input(rng):
    X = rng.normal(size=(6, 2))
    model = PreferenceRankRLS().fit(X, (np.array([0, 1, 2]), np.array([3, 4, 5])))
    with pytest.raises(ValueError, match="training side empty"):
        model.holdout_predictions([np.arange(3)])
    with pytest.raises(ValueError, match="outside"):
        model.holdout_predictions([np.array([3])])
    with pytest.raises(ValueError, match="'alpha'"):
        model.holdout_predictions(alpha=0.0)

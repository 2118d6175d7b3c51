"""The helpers of ``benchmarks/realdata_mpiokr_metabolites.py`` against brute-force references."""

import numpy as np
import pytest

from benchmarks.realdata_mpiokr_metabolites import AlphaGridMPIOKR, SplitGram, standin_sets
from iokr.decoding import CandidateSets
from iokr.estimators.mpiokr import MPIOKR
from iokr.kernels import Precomputed, Tanimoto, WeightedSum


def _grams(rng, n, m, n_kernels=3):
    feats = [rng.normal(size=(n + m, 5)) for _ in range(n_kernels)]
    return [f @ f.T for f in feats]


def test_split_gram_matches_precomputed(rng):
    n, m = 9, 4
    (G,) = _grams(rng, n, m, 1)
    split, full = SplitGram(G[:n, :n], G[n:, :n], np.diag(G)[n:]), Precomputed(G)
    a = np.array([[3], [n + 1], [0], [n + 3]])
    b = np.arange(n)[:, None]
    np.testing.assert_array_equal(split(a, b), full(a, b))
    np.testing.assert_array_equal(split(b, a), full(b, a))
    np.testing.assert_array_equal(split.diag(a), full.diag(a))
    with pytest.raises(ValueError, match="query-by-query"):
        split(a, a)


@pytest.mark.parametrize("approximation, gamma", [("joint", 0.5), ("separate", [0.5, 2.0, 0.5])])
def test_alpha_grid_mpiokr_equals_refits(rng, approximation, gamma):
    """Reusing D_K B across alphas gives exactly MPIOKR's scores (kernelized outputs, one or several groups)."""
    n, m = 30, 6
    kernel = WeightedSum([SplitGram(G[:n, :n], G[n:, :n], np.diag(G)[n:]) for G in _grams(rng, n, m)],
                         [0.5, 0.3, 0.2])
    Y = (rng.random((n, 25)) < 0.3).astype(float)
    sets = CandidateSets(Y, [rng.choice(n, 7, replace=False) for _ in range(n)])
    X, X_test = np.arange(n)[:, None], (n + np.arange(m))[:, None]
    C = (rng.random((10, 25)) < 0.3).astype(float)
    stats = None
    for alpha in (0.1, 1.0, 3.0):
        params = {"alpha": alpha, "input_kernel": kernel, "output_kernel": Tanimoto(), "approximation": approximation,
                      "gamma": gamma}
        expected = MPIOKR(**params).fit(X, Y, sets).decision_function(X_test, C)
        model = AlphaGridMPIOKR(**params).fit(X, Y, sets, candidate_stats=stats)
        stats = model.candidate_stats_
        np.testing.assert_allclose(model.decision_function(X_test, C), expected, rtol=1e-12, atol=1e-12)


def test_standin_sets_brute_force(rng):
    n, size = 40, 6
    masses = np.round(rng.random(n) * 5, 1)  # ties in mass
    formulas = np.array([f"F{i % 7}" for i in range(n)])
    allowed = rng.random(n) < 0.8
    queries = np.arange(n)
    for q, got in zip(queries, standin_sets(masses, formulas, queries, allowed, size), strict=True):
        others = [i for i in range(n) if allowed[i] and i != q]
        nearest = sorted(others, key=lambda i: (abs(masses[i] - masses[q]), i))[:size]
        same = [i for i in others if formulas[i] == formulas[q]]
        np.testing.assert_array_equal(got, np.unique(nearest + same))

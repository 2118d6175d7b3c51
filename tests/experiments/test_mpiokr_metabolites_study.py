"""The helpers of ``experiments/mpiokr_metabolites`` against brute-force references."""

import numpy as np
import pytest

from experiments.mpiokr_metabolites.models import SplitGram, alpha_cv_search, standin_sets
from iokr.decoding import CandidateSets
from iokr.estimators.mpiokr import MPIOKR
from iokr.kernels import Precomputed, Tanimoto, WeightedSum
from iokr.metrics import true_candidate_rank


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


@pytest.mark.parametrize("kind, gamma", [("joint", 0.5), ("separate", [0.5, 2.0, 0.5])])
def test_alpha_cv_search_equals_refits(rng, kind, gamma):
    """The benchmark's MPIOKRCV hold-out ranks equal MPIOKR refits per fold (kernelized outputs, 1 or 2 groups)."""
    n = 30
    kernel = WeightedSum([SplitGram(G[:n, :n]) for G in _grams(rng, n, 0)], [0.5, 0.3, 0.2])
    Y = (rng.random((n, 25)) < 0.3).astype(float)
    train_sets = [rng.choice(n, 7, replace=False) for _ in range(n)]
    eval_sets = CandidateSets(Y, [np.concatenate([[j], rng.choice(n, 6, replace=False)]) for j in range(n)])
    folds = np.arange(n) % 3
    splits = [(np.flatnonzero(folds != f), np.flatnonzero(folds == f)) for f in range(3)]
    X = np.arange(n)[:, None]
    alphas = [0.1, 1.0, 3.0]
    ranks, rows = alpha_cv_search(kind, gamma, 1.0, alphas, kernel, Tanimoto(), X, Y, splits, train_sets,
                                  eval_sets, 0)
    for j, alpha in enumerate(alphas):
        for tr, te in splits:
            model = MPIOKR(alpha=alpha, input_kernel=kernel, output_kernel=Tanimoto(), approximation=kind,
                           gamma=gamma).fit(X[tr], Y[tr], CandidateSets(Y, [train_sets[i] for i in tr]))
            for i, r in zip(te, model.rank(X[te], CandidateSets(Y, [eval_sets.indices[i] for i in te])),
                            strict=True):
                s = np.full(r.n_candidates, -np.inf)
                s[r.order] = r.scores
                assert ranks[j][i] == true_candidate_rank(s, 0)
        assert rows[j]["alpha"] == alpha and len(rows[j]["fold_scores"]) == 3


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

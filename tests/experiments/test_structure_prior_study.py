"""``experiments/structure_prior.py``: its fold ranks (IOKR scores + w x prior added offline, one kernel
pass for all neighbour counts) against refitting each fold's model with the prior switched on and ranking by brute
force."""

import numpy as np

from experiments import structure_prior as bench
from iokr.apps.metabolites import MetaboliteIdentifier, Spectra
from iokr.apps.metabolites.selection._pipeline import TrainingSet, fold_ids
from iokr.metrics import true_candidate_rank


def _train(n=24, p=20, seed=0):
    rng = np.random.default_rng(seed)
    Y = rng.integers(0, 3, size=(n, p)).astype(np.float64)
    Y[:, 0] = 1.0
    peaks = []
    for i in range(n):
        mz = 60.0 + 7.0 * np.flatnonzero(Y[i]) + rng.normal(scale=0.002, size=np.count_nonzero(Y[i]))
        peaks.append(np.column_stack([mz, rng.uniform(0.2, 1.0, size=mz.size)]))
    spectra = Spectra.from_peak_lists(peaks, np.full(n, 400.0), [{"accession": f"A{i}"} for i in range(n)])
    return TrainingSet(spectra, [f"K{i}" for i in range(n)], Y, n, 0, 0, formulas=["C6H6"] * n)


def test_fold_ranks_equal_refitted_models_with_the_prior(monkeypatch):
    monkeypatch.setattr(bench, "NEIGHBORS", (1, 3))
    monkeypatch.setattr(bench, "WEIGHTS", (0.0, 0.4, 2.0))
    train = _train()
    rng = np.random.default_rng(1)
    decoys = {"a": {i: rng.integers(0, 3, size=(6, 20)).astype(np.uint8) for i in range(0, 24, 2)}}
    folds = fold_ids(24, 3, 0)
    ranks = bench._fold_ranks(train, decoys, folds, log=lambda message: None)["a"]
    assert ranks.shape == (2, 3, 12)
    # brute force: each query's fold model refitted with the prior on, its list scored and ranked directly
    queries = [i for f in range(3) for i in sorted(decoys["a"]) if folds[i] == f]  # the benchmark's order
    for a, k in enumerate((1, 3)):
        for b, w in enumerate((0.0, 0.4, 2.0)):
            expected = []
            for i in queries:
                tr = np.flatnonzero(folds != folds[i])
                model = MetaboliteIdentifier(**bench.PARAMS, prior_weight=w, prior_neighbors=k)
                model.fit(train.spectra[tr], train.Y[tr])
                C = np.vstack([train.Y[i][None], decoys["a"][i]]).astype(np.float32)
                expected.append(true_candidate_rank(model.score_sets(train.spectra[[i]], [C])[0], 0))
            np.testing.assert_array_equal(ranks[a, b], expected)
    rows, best = bench._table({"a": ranks})
    assert len(rows) == 6 and best["score"] == max(r["score"] for r in rows)

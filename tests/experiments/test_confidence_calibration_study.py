"""``experiments/confidence_calibration.py``: the features of each ranked list against a brute-force recomputation
from refitted fold models, and the feature-set comparison's choice rule."""

import numpy as np

from experiments import confidence_calibration as study
from iokr.apps.metabolites import MetaboliteIdentifier, Spectra
from iokr.apps.metabolites._decoys import DecoyLists
from iokr.apps.metabolites._pipeline import TrainingSet, fold_ids

PARAMS = {"kernels": ("ppk", "binned"), "output_kernel": "tanimoto", "alpha": 0.1, "prior_weight": 0.3}


def _train(n=30, p=20, seed=0):
    rng = np.random.default_rng(seed)
    Y = rng.integers(0, 3, size=(n, p)).astype(np.float64)
    Y[:, 0] = 1.0
    peaks = []
    for i in range(n):
        mz = 60.0 + 7.0 * np.flatnonzero(Y[i]) + rng.normal(scale=0.002, size=np.count_nonzero(Y[i]))
        peaks.append(np.column_stack([mz, rng.uniform(0.2, 1.0, size=mz.size)]))
    spectra = Spectra.from_peak_lists(peaks, np.full(n, 400.0), [{"accession": f"A{i}"} for i in range(n)])
    formulas = [f"C{i % 4 + 1}" for i in range(n)]
    pool = rng.integers(0, 3, size=(10, p)).astype(np.float64)
    indices = [rng.choice(10, size=3, replace=False) for _ in range(n)]
    return (TrainingSet(spectra, [f"K{i}" for i in range(n)], Y, n, 0, 0, formulas=formulas),
            DecoyLists(pool, indices, np.full(n, 3), {}))


def test_features_equal_a_brute_force_recomputation(monkeypatch):
    monkeypatch.setattr(study, "PARAMS", PARAMS)
    train, decoys = _train()
    folds = fold_ids(30, 3, 0)
    rows = study._examples(train, decoys, folds, log=lambda message: None)
    assert len(rows) == 30
    order = [i for f in range(3) for i in np.flatnonzero(folds == f)]
    for (fold, correct, margin, size, prior_top, gap5, scores), i in zip(rows, order, strict=True):
        tr = np.flatnonzero(folds != folds[i])
        model = MetaboliteIdentifier(**PARAMS).fit(train.spectra[tr], train.Y[tr])
        own = [j for j in range(30) if train.formulas[j] == train.formulas[i]]
        C = np.vstack([train.Y[own], decoys.pool[decoys.indices[i]]])
        s = model.score_sets(train.spectra[[i]], [C])[0]
        np.testing.assert_allclose(scores, s, rtol=1e-6, atol=1e-9)
        ranked = np.sort(s)[::-1]
        assert fold == folds[i] and size == C.shape[0]
        assert abs(margin - (ranked[0] - ranked[1])) < 1e-9
        assert abs(gap5 - (ranked[0] - ranked[4])) < 1e-9
        assert abs(prior_top - model.structure_prior(C[[int(np.argmax(s))]])[0]) < 1e-9
        assert correct == (int(np.argmax(s)) == own.index(i) and np.count_nonzero(s == s.max()) == 1)


def test_the_comparison_keeps_the_app_features_without_a_clear_gain():
    rng = np.random.default_rng(0)
    rows = []
    for k in range(600):
        margin = rng.exponential(1.0)
        correct = rng.random() < 1 / (1 + np.exp(-(2 * margin - 1)))
        scores = np.concatenate([[margin], rng.normal(-1, 0.3, size=20)])
        rows.append((k % 3, bool(correct), margin, 21, rng.random(), margin + 1, scores))
    table, chosen = study._compare(rows)
    assert set(table) == set(study.FEATURE_SETS) and chosen == "margin+size (app)"

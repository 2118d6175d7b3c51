"""``experiments/confidence_calibration.py``: the features of each ranked list against a brute-force recomputation
from refitted fold models, and the feature-set comparison's choice rule."""

import dataclasses

import numpy as np
from test_structure_prior_study import _train as structure_prior_training

from experiments import confidence_calibration as study
from iokr.apps.metabolites import MetaboliteIdentifier
from iokr.apps.metabolites.candidates._decoys import DecoyLists
from iokr.apps.metabolites.selection._pipeline import fold_ids

PARAMS = {"kernels": ("ppk", "binned"), "output_kernel": "tanimoto", "alpha": 0.1, "prior_weight": 0.3}


def _train(n=30, p=20, seed=0):
    """The structure-prior study's training set with four formulas, and three random decoys per structure."""
    train = dataclasses.replace(structure_prior_training(n, p, seed), formulas=[f"C{i % 4 + 1}" for i in range(n)])
    rng = np.random.default_rng(seed)
    pool = rng.integers(0, 3, size=(10, p)).astype(np.float64)
    indices = [rng.choice(10, size=3, replace=False) for _ in range(n)]
    return train, DecoyLists(pool, indices, np.full(n, 3), {})


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

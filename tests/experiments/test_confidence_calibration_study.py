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


def test_decoy_list_scores_equal_a_brute_force_recomputation(monkeypatch):
    monkeypatch.setattr(study, "PARAMS", PARAMS)
    train, decoys = _train()
    folds = fold_ids(30, 3, 0)
    out = study._examples(train, decoys, folds, log=lambda message: None)
    assert len(out) == 3 and sum(len(f["decoy"][0]) for f in out) == 30  # every structure has an isomer here
    for f, fold in enumerate(out):
        members = np.flatnonzero(folds == f)
        tr = np.flatnonzero(folds != f)
        model = MetaboliteIdentifier(**PARAMS).fit(train.spectra[tr], train.Y[tr])
        assert len(fold["plain"][0]) >= members.size  # the fold list of each held-out structure, at least
        for scores, truth, i in zip(*fold["decoy"], members, strict=True):
            own = [j for j in range(30) if train.formulas[j] == train.formulas[i]]
            C = np.vstack([train.Y[own], decoys.pool[decoys.indices[i]]])
            np.testing.assert_allclose(scores, model.score_sets(train.spectra[[i]], [C])[0], rtol=1e-6, atol=1e-9)
            assert truth == own.index(i)


def _synthetic_lists(rng, n, easy_shift):
    """Lists whose true candidate leads by an exponential margin, plus ``easy_shift`` on it (a harder or easier
    kind of list)."""
    scores, truth = [], []
    for _ in range(n):
        s = rng.normal(0, 0.3, size=int(rng.integers(2, 60)))
        s[0] += rng.exponential(0.5) + easy_shift
        scores.append(s)
        truth.append(0)
    return scores, truth


def test_the_comparison_keeps_margin_and_size_without_a_clear_gain_and_the_default_follows_the_rule():
    rng = np.random.default_rng(0)
    folds = [{"decoy": _synthetic_lists(rng, 300, 0.0), "plain": _synthetic_lists(rng, 300, 0.0)} for _ in range(3)]
    table, chosen, default = study._compare(folds)
    assert set(table) == {*study.FEATURE_SETS, study.WITHOUT_DECOYS}
    assert chosen == study.BASE or table[study.BASE]["log_loss"] - table[chosen]["log_loss"] >= study.MIN_GAIN
    gain = table[study.WITHOUT_DECOYS]["log_loss"] - table[chosen]["log_loss"]
    assert default == ("decoys" if gain >= study.MIN_GAIN else "none")
    same = [{"decoy": f["decoy"], "plain": f["decoy"]} for f in folds]  # the same lists: margin + size ties
    table_same = study._compare(same)[0]
    assert table_same[study.WITHOUT_DECOYS]["log_loss"] == table_same[study.BASE]["log_loss"]
    # plain lists much easier than the decoy lists: their calibration is over-confident on decoy lists
    easy = [{"decoy": f["decoy"], "plain": _synthetic_lists(rng, 300, 0.7)} for f in folds]
    table, chosen, default = study._compare(easy)
    assert table[study.WITHOUT_DECOYS]["log_loss"] - table[chosen]["log_loss"] >= study.MIN_GAIN
    assert default == "decoys"
    separable = [{"decoy": f["decoy"], "plain": _synthetic_lists(rng, 300, 5.0)} for f in folds]
    table, chosen, default = study._compare(separable)
    assert "right and wrong top hits" in table[study.WITHOUT_DECOYS]["refused"] and default == "decoys"


def test_the_comparison_adopts_nothing_when_every_decoy_fit_is_refused():
    rng = np.random.default_rng(1)
    folds = [{"decoy": _synthetic_lists(rng, 30, 0.0), "plain": _synthetic_lists(rng, 30, 0.0)} for _ in range(3)]
    table, chosen, default = study._compare(folds)  # 60 fitting lists per fold: below the 100 a fit needs
    assert all("at least 100 hold-out lists" in table[k]["refused"] for k in table)
    assert chosen.startswith("none") and default == "none"

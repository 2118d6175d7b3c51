"""``experiments/confidence_calibration.py`` (issue #30, third design): the ranked lists of every decoy table against
a brute-force recomputation from refitted fold models, and the design comparison's choice rule."""

import dataclasses

import numpy as np
import pytest
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
    _, other = _train(seed=1)  # a second table: other decoys for the same structures
    folds = fold_ids(30, 3, 0)
    out = study._examples(train, {"bundled": decoys}, other, folds, log=lambda message: None)
    assert len(out) == 3 and sum(len(f["bundled"][0]) for f in out) == sum(len(f["target"][0]) for f in out) == 30
    for f, fold in enumerate(out):
        members = np.flatnonzero(folds == f)
        tr = np.flatnonzero(folds != f)
        model = MetaboliteIdentifier(**PARAMS).fit(train.spectra[tr], train.Y[tr])
        assert len(fold["plain"][0]) >= members.size  # the fold list of each held-out structure, at least
        for name, table in (("bundled", decoys), ("target", other)):
            for scores, truth, i in zip(*fold[name], members, strict=True):
                own = [j for j in range(30) if train.formulas[j] == train.formulas[i]]
                C = np.vstack([train.Y[own], table.pool[table.indices[i]]])
                np.testing.assert_allclose(scores, model.score_sets(train.spectra[[i]], [C])[0], rtol=1e-6,
                                           atol=1e-9)
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


def _folds(rng, n, shifts):
    """Three folds of synthetic lists per source (``{"bundled": shift, ...}``; "target" and "plain" included)."""
    return [{name: _synthetic_lists(rng, n, shift) for name, shift in shifts.items()} for _ in range(3)]


def test_the_comparison_follows_the_committed_rule():
    rng = np.random.default_rng(0)
    polarities = {mode: _folds(rng, 300, {"bundled": 0.0, "big": 0.0, "target": 0.0, "plain": 0.0})
                  for mode in ("positive", "negative")}
    rows, chosen, fallback = study._compare(polarities, ["bundled", "big"])
    base = f"{study.BASE[0]} | {study.BASE[1]}"
    assert {r["table"] for r in rows.values() if r.get("eligible")} == {"bundled", "big"}
    assert sum(r.get("eligible", False) for r in rows.values()) == 6  # two tables x three families
    assert not rows[f"{study.WITHOUT_DECOYS} | logistic margin+size"]["eligible"]
    assert chosen == base or rows[base]["log_loss"] - rows[chosen]["log_loss"] >= study.MIN_GAIN
    eligible = [k for k, r in rows.items() if r.get("eligible")]
    best = min(eligible, key=lambda k: rows[k]["log_loss"])
    assert chosen == (best if rows[base]["log_loss"] - rows[best]["log_loss"] >= study.MIN_GAIN else base)
    assert fallback.startswith("bundled | ")
    # pooled log-loss: the mean over both polarities' held-out lists, each list once
    r = rows[base]
    assert r["n"] == r["positive"]["n"] + r["negative"]["n"] == 1800
    pooled = (r["positive"]["log_loss"] * r["positive"]["n"] + r["negative"]["log_loss"] * r["negative"]["n"]) / r["n"]
    assert r["log_loss"] == pytest.approx(pooled)


def test_a_fitting_table_unlike_the_target_loses():
    """Fitting lists much easier than the target's: their calibration is over-confident there, the bundled one
    (like the target) wins."""
    rng = np.random.default_rng(2)
    polarities = {"positive": _folds(rng, 300, {"bundled": 0.0, "big": 0.7, "target": 0.0, "plain": 0.0})}
    rows, chosen, _ = study._compare(polarities, ["bundled", "big"])
    for family in study.FAMILIES:
        assert rows[f"big | {family}"]["log_loss"] > rows[f"bundled | {family}"]["log_loss"]
    assert chosen.startswith("bundled | ")


def test_the_comparison_adopts_nothing_when_every_decoy_fit_is_refused():
    rng = np.random.default_rng(1)
    polarities = {"positive": _folds(rng, 30, {"bundled": 0.0, "target": 0.0, "plain": 0.0})}
    rows, chosen, _ = study._compare(polarities, ["bundled"])  # 60 fitting lists per fold: below the 100 needed
    assert all("at least 100 hold-out lists" in r["refused"] for r in rows.values())
    assert chosen.startswith("none")

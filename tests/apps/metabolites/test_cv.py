"""Closed-form cross-validation of the metabolite model against refitting and against single-alpha searches."""

import argparse

import numpy as np
import pytest

import iokr.model_selection._iokrcv as iokrcv
from iokr.apps.metabolites import MetaboliteIdentifier, Spectra
from iokr.apps.metabolites.kernels._factories import make_output_kernel
from iokr.apps.metabolites.selection._pipeline import (
    TrainingSet,
    _grid_points,
    cross_validate,
    cross_validate_refit,
    fold_ids,
)
from iokr.cli.metabolites import _grid
from iokr.estimators import IOKR
from iokr.metrics import true_candidate_rank
from iokr.model_selection import fold_candidate_sets

BASE = {"kernels": ("ppk", "binned"), "weights": "alignf", "sigma_mz": 0.05, "sigma_intensity": 0.25,
        "bin_width": 0.1, "output_kernel": "gaussian_tanimoto", "output_gamma": 1.0}


def _train(n=45, p=24, seed=0):
    """Spectra whose peaks are driven by binary fingerprints (learnable), one row per structure, plus noise peaks."""
    rng = np.random.default_rng(seed)
    Y = (rng.random((n, p)) < 0.3).astype(np.float64)
    Y[:, 0] = 1.0  # no empty fingerprint
    peak_lists = []
    for i in range(n):
        mz = 60.0 + 7.0 * np.flatnonzero(Y[i]) + rng.normal(scale=0.002, size=int(Y[i].sum()))
        mz = np.concatenate([mz, rng.uniform(50.0, 300.0, size=3)])
        peak_lists.append(np.column_stack([mz, rng.uniform(0.2, 1.0, size=mz.size)]))
    spectra = Spectra.from_peak_lists(peak_lists, np.full(n, 400.0), [{"accession": f"A{i}"} for i in range(n)])
    return TrainingSet(spectra, [f"K{i}" for i in range(n)], Y, n, 0, 0)


def test_grid_points_drop_unused_output_gamma():
    points, names = _grid_points({"alpha": (0.1,), "output_kernel": ("tanimoto", "gaussian_tanimoto"),
                                  "output_gamma": (0.5, 2.0)}, BASE)
    assert names == ["alpha", "output_gamma", "output_kernel"]
    kernels = [(p["output_kernel"], p["output_gamma"]) for p in points]
    assert sorted(kernels, key=str) == sorted([("tanimoto", None), ("gaussian_tanimoto", 0.5),
                                               ("gaussian_tanimoto", 2.0)], key=str)


def test_fold_candidate_sets_are_the_held_out_folds():
    folds = fold_ids(10, 3, 0)
    sets = fold_candidate_sets(np.eye(10), folds)
    for i in range(10):
        np.testing.assert_array_equal(sets.indices[i], np.flatnonzero(folds == folds[i]))


@pytest.mark.parametrize("output_kernel", ["gaussian_tanimoto", "tanimoto"])
def test_closed_form_table_matches_single_alpha_searches(output_kernel):
    train = _train()
    base = {**BASE, "output_kernel": output_kernel}
    grams = MetaboliteIdentifier(**base).base_grams(train.spectra)
    alphas = (0.01, 0.1, 1.0)
    _, table = cross_validate(train, base, {"alpha": alphas, "output_gamma": (1.0,)}, n_folds=3,
                              base_grams=grams)
    assert [row["alpha"] for row in table] == list(alphas)
    for row in table:
        _, single = cross_validate(train, base, {"alpha": (row["alpha"],), "output_gamma": (1.0,)}, n_folds=3,
                                   base_grams=grams)
        for key in ("top1", "top5", "top10", "top20", "score"):
            assert single[0][key] == pytest.approx(row[key], abs=1e-12)


def _brute_force_ranks(train, base, alpha, n_folds=3, seed=0):
    """Refit IOKR on each training side, with the kernel weights fitted on that training side only.

    Normalization of the refitted IOKR is switched off on both sides (centering kept): the closed form is then
    exact (IOKRCV's intercept form equals re-centering on every training side).
    """
    model = MetaboliteIdentifier(**base)
    grams, diags = model.base_grams(train.spectra)

    folds = fold_ids(len(train.spectra), n_folds, seed)
    ranks = np.empty(len(train.spectra))
    for f in range(n_folds):
        tr, te = np.flatnonzero(folds != f), np.flatnonzero(folds == f)
        sub = MetaboliteIdentifier(**base).fit(train.spectra[tr], train.Y[tr],
                                               base_grams=([G[np.ix_(tr, tr)] for G in grams], [d[tr] for d in diags]))
        K, weights = model.combined_training_gram(grams, diags, train.Y, weights_from=tr)
        np.testing.assert_allclose(weights, sub.weights_)  # the weights a model fitted on the fold would learn
        iokr = IOKR(alpha=alpha, input_kernel="precomputed", output_kernel=make_output_kernel(
            base["output_kernel"], base["output_gamma"]), normalize_input=False, normalize_output=False)
        iokr.fit(K[np.ix_(tr, tr)], train.Y[tr])
        S = iokr.decision_function(K[np.ix_(te, tr)], train.Y[te])
        ranks[te] = [true_candidate_rank(S[j], j) for j in range(te.size)]
    return ranks


def test_closed_form_matches_refitting_without_normalization(monkeypatch):
    """With normalization off, every hold-out rank equals that of a model refitted on the fold's training side."""
    train = _train(seed=1)
    base = {**BASE, "output_kernel": "tanimoto"}
    original = iokrcv.IOKRCV.__init__

    def no_normalization(self, *args, **kwargs):
        original(self, *args, **kwargs)
        self.normalize_input = self.normalize_output = False

    monkeypatch.setattr(iokrcv.IOKRCV, "__init__", no_normalization)
    for alpha in (0.03, 0.3):
        _, table = cross_validate(train, base, {"alpha": (alpha,), "output_gamma": (1.0,)}, n_folds=3)
        ranks = _brute_force_ranks(train, base, alpha)
        folds = fold_ids(len(ranks), 3, 0)
        for k in (1, 5, 10, 20):
            expected = np.mean([100.0 * np.mean(ranks[folds == f] <= k) for f in range(3)])
            assert table[0][f"top{k}"] == pytest.approx(expected, abs=1e-9)


def test_closed_form_close_to_refit_cross_validation():
    """The default (normalized) closed form and per-fold refitting (with per-fold ALIGNF) agree closely."""
    train = _train(n=60, seed=2)
    grid = {"alpha": (0.1, 1.0), "output_gamma": (1.0,)}
    _, closed = cross_validate(train, BASE, grid, n_folds=3)
    _, refit = cross_validate_refit(train, BASE, grid, n_folds=3)
    for a, b in zip(closed, refit, strict=True):
        assert a["alpha"] == b["alpha"]
        assert abs(a["score"] - b["score"]) <= 10.0


def test_width_grid_equals_runs_at_each_width():
    train = _train(n=36, seed=3)
    grid = {"alpha": (0.1, 1.0), "output_kernel": ("tanimoto",), "sigma_mz": (0.02, 0.05)}
    best, table = cross_validate(train, BASE, grid, n_folds=3)
    assert len(table) == 4
    for sigma in (0.02, 0.05):
        _, single = cross_validate(train, {**BASE, "sigma_mz": sigma}, {"alpha": (0.1, 1.0),
                                                                        "output_kernel": ("tanimoto",)}, n_folds=3)
        rows = [r for r in table if r["sigma_mz"] == sigma]
        for a, b in zip(rows, single, strict=True):
            assert (a["alpha"], a["score"], a["top5"]) == pytest.approx((b["alpha"], b["score"], b["top5"]))
    assert best["sigma_mz"] == max(table, key=lambda r: r["score"])["sigma_mz"]
    with pytest.raises(ValueError, match="sigma_mz"):
        cross_validate_refit(train, BASE, grid, n_folds=3)


def test_cli_grid_overrides_only_given_options():
    default = {"alpha": (0.1, 1.0), "input_gamma": (None,), "output_kernel": ("tanimoto",), "output_gamma": (1.0,)}
    args = argparse.Namespace(alphas=None, output_kernels=None, output_gammas=None)
    assert _grid(args, default) == default
    args = argparse.Namespace(alphas=[0.5], output_kernels=["gaussian_tanimoto"], output_gammas=[0.25, 1.0])
    assert _grid(args, default) == {"alpha": (0.5,), "input_gamma": (None,), "output_kernel": ("gaussian_tanimoto",),
                                    "output_gamma": (0.25, 1.0)}


def test_kernel_weights_are_fitted_inside_each_fold():
    """The CV's ALIGNF weights are those of models fitted on each fold's training side (no held-out leak)."""
    train = _train(seed=1)
    base = {**BASE, "output_kernel": "tanimoto"}
    _, table = cross_validate(train, base, {"alpha": (0.1,), "output_gamma": (1.0,)}, n_folds=3)
    folds = fold_ids(len(train.spectra), 3, 0)
    per_fold = [MetaboliteIdentifier(**base).fit(train.spectra[folds != f], train.Y[folds != f]).weights_
                for f in range(3)]
    assert table[0]["weights"] == pytest.approx(np.mean(per_fold, axis=0), abs=1e-4)
    model = MetaboliteIdentifier(**base)
    all_rows = model.combined_training_gram(*model.base_grams(train.spectra), train.Y)[1]
    assert not np.allclose(all_rows, np.mean(per_fold, axis=0), atol=1e-3)  # the data tells the two apart

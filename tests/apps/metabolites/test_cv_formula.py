"""Isomer-like CV lists (same molecular formula, filled up by nearest mass) against brute-force references."""

import argparse
from pathlib import Path

import numpy as np
import pytest

import iokr.apps.metabolites as app
import iokr.model_selection._iokrcv as iokrcv
from iokr.apps.metabolites import CandidateStore, Fingerprinter, MetaboliteIdentifier, Spectra, defaults
from iokr.apps.metabolites.candidates._candidates import export_fingerprint_cache
from iokr.apps.metabolites.chemistry._formulas import FormulaError
from iokr.apps.metabolites.chemistry._structures import formula_mass
from iokr.apps.metabolites.kernels._factories import make_output_kernel
from iokr.apps.metabolites.selection._pipeline import (
    TrainingSet,
    cross_validate,
    fold_ids,
    formula_candidate_sets,
    usable_surrogate,
)
from iokr.apps.metabolites.workflows import _fit
from iokr.apps.metabolites.workflows._fit import attach_first_cache
from iokr.cli.metabolites import _fingerprint_kind, _model_options
from iokr.estimators import IOKR
from iokr.metrics import true_candidate_rank

BASE = {"kernels": ("ppk", "binned"), "weights": "alignf", "sigma_mz": 0.05, "sigma_intensity": 0.25,
        "bin_width": 0.1, "output_kernel": "tanimoto", "output_gamma": 1.0}


def _formulas(n, seed):
    """Formulas with groups of sizes 1..5 and distinct masses across groups (some singletons, one unknown)."""
    rng = np.random.default_rng(seed)
    names = [f"C{6 + g}H{10 + 2 * g}O{1 + g % 3}" for g in range(n)]
    formulas = [names[int(i)] for i in rng.integers(0, max(2, n // 3), size=n)]
    formulas[0] = None
    return formulas


def _train(n=45, p=24, seed=0):
    rng = np.random.default_rng(seed)
    Y = (rng.random((n, p)) < 0.3).astype(np.float64)
    Y[:, 0] = 1.0
    peak_lists = []
    for i in range(n):
        mz = 60.0 + 7.0 * np.flatnonzero(Y[i]) + rng.normal(scale=0.002, size=int(Y[i].sum()))
        mz = np.concatenate([mz, rng.uniform(50.0, 300.0, size=3)])
        peak_lists.append(np.column_stack([mz, rng.uniform(0.2, 1.0, size=mz.size)]))
    spectra = Spectra.from_peak_lists(peak_lists, np.full(n, 400.0), [{"accession": f"A{i}"} for i in range(n)])
    return TrainingSet(spectra, [f"K{i}" for i in range(n)], Y, n, 0, 0, formulas=_formulas(n, seed))


def _reference_lists(formulas, min_size):
    """Brute force: loop over all structures, sort the others by (mass distance, index)."""
    masses = [formula_mass(f) if f else np.nan for f in formulas]
    lists, scored = [], []
    for i, f in enumerate(formulas):
        same = [j for j, g in enumerate(formulas) if f is not None and g == f]
        if len(same) < 2:
            lists.append([i])
            scored.append(False)
            continue
        others = sorted((abs(masses[j] - masses[i]), j) for j in range(len(formulas))
                        if j not in same and not np.isnan(masses[j]))
        lists.append(same + [j for _, j in others[:max(0, min_size - len(same))]])
        scored.append(True)
    return lists, np.array(scored)


@pytest.mark.parametrize("min_size", [1, 5, 20])
@pytest.mark.parametrize("seed", [0, 1])
def test_formula_lists_match_brute_force(min_size, seed):
    formulas = _formulas(40, seed)
    sets, scored = formula_candidate_sets(np.eye(40), formulas, min_size=min_size)
    lists, expected_scored = _reference_lists(formulas, min_size)
    np.testing.assert_array_equal(scored, expected_scored)
    assert scored.any() and not scored.all()
    for i in range(40):
        np.testing.assert_array_equal(sets.indices[i], lists[i])
        assert i in sets.indices[i]
        if scored[i]:
            assert len(sets.indices[i]) >= min(min_size, 39)


def test_formula_mass():
    assert formula_mass("C9H8O4") == pytest.approx(180.042259, abs=1e-6)
    assert formula_mass("C5H5N5+") == pytest.approx(135.054495, abs=1e-6)
    for bad in (None, "not a formula"):
        with pytest.raises(FormulaError):
            formula_mass(bad)


def _brute_force_formula_ranks(train, alpha, n_folds=3, seed=0):
    """Refit IOKR on each training side (normalization off, as the exact closed form) and rank each held-out
    structure among its formula list by explicit decision_function scores."""
    model = MetaboliteIdentifier(**BASE)
    grams, diags = model.base_grams(train.spectra)
    K, _ = model.combined_training_gram(grams, diags, train.Y)
    sets, scored = formula_candidate_sets(train.Y, train.formulas)
    folds = fold_ids(len(train.spectra), n_folds, seed)
    ranks = np.full(len(train.spectra), np.nan)
    for f in range(n_folds):
        tr, te = np.flatnonzero(folds != f), np.flatnonzero(folds == f)
        iokr = IOKR(alpha=alpha, input_kernel="precomputed", output_kernel=make_output_kernel("tanimoto"),
                    normalize_input=False, normalize_output=False).fit(K[np.ix_(tr, tr)], train.Y[tr])
        for j in te:
            cands = np.asarray(sets.indices[j])
            s = iokr.decision_function(K[np.ix_([j], tr)], train.Y[cands])[0]
            ranks[j] = true_candidate_rank(s, int(np.flatnonzero(cands == j)[0]))
    return ranks, scored, folds


def test_formula_surrogate_matches_refitting_without_normalization(monkeypatch):
    original = iokrcv.IOKRCV.__init__

    def no_normalization(self, *args, **kwargs):
        original(self, *args, **kwargs)
        self.normalize_input = self.normalize_output = False

    monkeypatch.setattr(iokrcv.IOKRCV, "__init__", no_normalization)
    train = _train(seed=1)
    for alpha in (0.03, 0.3):
        _, table = cross_validate(train, BASE, {"alpha": (alpha,)}, n_folds=3, surrogate="formula")
        ranks, scored, folds = _brute_force_formula_ranks(train, alpha)
        per_fold = {k: [100.0 * np.mean(ranks[(folds == f) & scored] <= k) for f in range(3)] for k in (1, 5, 10)}
        for k in (1, 5, 10):
            assert table[0][f"top{k}"] == pytest.approx(np.mean(per_fold[k]), abs=1e-9)
        expected = np.mean([np.mean([per_fold[k][f] for k in (1, 5, 10)]) for f in range(3)])
        assert table[0]["score"] == pytest.approx(expected, abs=1e-9)


def test_both_is_the_mean_of_fold_and_formula_scores():
    train = _train(n=40, seed=2)
    grid = {"alpha": (0.1, 1.0), "output_kernel": ("tanimoto",)}
    _, fold = cross_validate(train, BASE, grid, n_folds=3, surrogate="fold")
    _, formula = cross_validate(train, BASE, grid, n_folds=3, surrogate="formula")
    best, both = cross_validate(train, BASE, grid, n_folds=3, surrogate="both")
    for a, b, c in zip(fold, formula, both, strict=True):
        assert c["fold_score"] == pytest.approx(a["score"], abs=1e-12)
        assert c["formula_score"] == pytest.approx(b["score"], abs=1e-12)
        assert c["score"] == pytest.approx((a["score"] + b["score"]) / 2, abs=1e-12)
        for k in (1, 5, 10, 20):
            assert c[f"top{k}"] == pytest.approx(a[f"top{k}"], abs=1e-12)
            assert c[f"formula_top{k}"] == pytest.approx(b[f"top{k}"], abs=1e-12)
    assert best["alpha"] == max(both, key=lambda r: r["score"])["alpha"]


def test_formula_surrogate_needs_formulas_and_a_valid_name():
    train = _train(n=30, seed=3)
    no_formulas = TrainingSet(train.spectra, train.keys, train.Y, 30, 0, 0)
    with pytest.raises(ValueError, match="formula"):
        cross_validate(no_formulas, BASE, {"alpha": (0.1,)}, surrogate="formula")
    with pytest.raises(ValueError, match="surrogate"):
        cross_validate(train, BASE, {"alpha": (0.1,)}, surrogate="isomers")
    singletons = TrainingSet(train.spectra, train.keys, train.Y, 30, 0, 0,
                             formulas=[f"C{i + 1}H4" for i in range(30)])
    with pytest.raises(ValueError, match="shared"):
        cross_validate(singletons, BASE, {"alpha": (0.1,)}, surrogate="both")


def test_cli_model_options_default_to_the_app_and_override():
    args = argparse.Namespace(fingerprint=None, fingerprint_radius=None, cv_lists=None, alphas=None,
                              output_kernels=None, output_gammas=None, folds=3, seed=0, store=None,
                              prior_weight=None, prior_neighbors=None, calibration_decoys=None)
    opts = _model_options(args, app)
    assert Path(opts.decoys).name == "decoys_moses.tsv.gz"  # decoy calibration lists by default (issue #30)
    assert opts.fingerprint == defaults.DEFAULT_FINGERPRINT and opts.surrogate == defaults.DEFAULT_SURROGATE
    assert opts.grid == dict(defaults.DEFAULT_GRID)
    assert opts.prior_weight is None and opts.prior_neighbors is None  # the app's DEFAULT_PARAMS
    args = argparse.Namespace(fingerprint="atompair_counts+maccs", fingerprint_radius=3, cv_lists="fold",
                              alphas=[0.5], output_kernels=None, output_gammas=None, folds=4, seed=1, store=None,
                              prior_weight=0.0, prior_neighbors=5, calibration_decoys="none")
    opts = _model_options(args, app)
    assert opts.prior_weight == 0.0 and opts.prior_neighbors == 5
    assert opts.decoys is None
    assert opts.fingerprint == {**defaults.DEFAULT_FINGERPRINT, "kind": "atompair_counts+maccs", "radius": 3}
    assert opts.surrogate == "fold" and opts.grid["alpha"] == (0.5,) and opts.n_folds == 4 and opts.seed == 1
    assert opts.fingerprinter().params() == opts.fingerprint
    assert _fit._fingerprinter("maccs").params() == {**defaults.DEFAULT_FINGERPRINT, "kind": "maccs"}
    with pytest.raises(argparse.ArgumentTypeError, match="ecfp4"):
        _fingerprint_kind("ecfp4+maccs")


def test_fit_with_cv_falls_back_to_fold_lists_on_small_sets():
    train = _train(n=30, seed=4)
    assert usable_surrogate(train, "both") == "both" and usable_surrogate(train, "formula") == "formula"
    singletons = TrainingSet(train.spectra, train.keys, train.Y, 30, 0, 0,
                             formulas=[f"C{i + 1}H4" for i in range(30)])
    assert usable_surrogate(singletons, "both") == "fold"
    assert usable_surrogate(TrainingSet(train.spectra, train.keys, train.Y, 30, 0, 0), "formula") == "fold"


def test_attach_first_cache_picks_the_matching_parameters(tmp_path):
    structures = ["CCO", "c1ccccc1O", "CC(=O)O"]
    paths = {}
    for radius in (1, 2):
        store = CandidateStore(":memory:", Fingerprinter("morgan_counts+maccs", n_bits=64, radius=radius))
        paths[radius] = tmp_path / f"r{radius}.npz"
        export_fingerprint_cache(store, structures, paths[radius])
    fresh = CandidateStore(":memory:", Fingerprinter("morgan_counts+maccs", n_bits=64, radius=1))
    assert attach_first_cache(fresh, [tmp_path / "missing.npz", paths[2], paths[1]]) == paths[1]
    np.testing.assert_array_equal(fresh.fingerprints(structures),
                                  Fingerprinter("morgan_counts+maccs", n_bits=64, radius=1).transform(structures)[0])
    assert fresh.n_computed == 0  # served by the cache, not recomputed
    other = CandidateStore(":memory:", Fingerprinter("maccs"))
    assert attach_first_cache(other, paths[2]) is None and attach_first_cache(other, None) is None

"""Helpers of ``benchmarks/_pairwise_baselines.py`` against brute-force references on tiny synthetic pair data."""

import numpy as np
import pytest

from benchmarks import _pairwise_baselines as pb
from iokr.metrics import concordance_index


def _task(rng, n_drugs=7, n_targets=6, keep=1.0, setting="A"):
    Xd, Xt = rng.normal(size=(n_drugs, 3)), rng.normal(size=(n_targets, 2))
    Kd, Kt = Xd @ Xd.T + 0.1 * np.eye(n_drugs), Xt @ Xt.T + 0.1 * np.eye(n_targets)
    Y = np.tanh(Xd[:, :2] @ Xt.T) + 0.1 * rng.normal(size=(n_drugs, n_targets))
    Y[rng.random(Y.shape) > keep] = np.nan
    rows, cols = np.nonzero(~np.isnan(Y))
    order = rng.permutation(rows.size)
    train, test = np.sort(order[: (3 * rows.size) // 4]), np.sort(order[(3 * rows.size) // 4:])
    folds = pb.setting_folds(rows, cols, train, setting, n_folds=2)
    return pb.PairTask((("k", Kd, Kt),), Xd, Xt, rows, cols, Y[rows, cols], train, test, folds, setting)


def test_pair_gram_is_the_kronecker_product_restricted_to_pairs(rng):
    Kd, Kt = rng.normal(size=(4, 4)), rng.normal(size=(3, 3))
    ra, ca, rb, cb = rng.integers(0, 4, 5), rng.integers(0, 3, 5), rng.integers(0, 4, 6), rng.integers(0, 3, 6)
    full = np.kron(Kd, Kt)  # entry ((i, j), (k, l)) at row i * n_t + j, column k * n_t + l
    expected = full[np.ix_(ra * 3 + ca, rb * 3 + cb)]
    np.testing.assert_allclose(pb.pair_gram(Kd, Kt, ra, ca, rb, cb), expected, rtol=1e-14, atol=1e-14)


@pytest.mark.parametrize(("keep", "atol"), [(1.0, 1e-9), (0.7, 1e-4)])
def test_kronrls_equals_kernel_ridge_on_the_explicit_pair_gram(rng, keep, atol):
    # complete training grid: KronRLS's closed form; incomplete: its conjugate gradient (tol 1e-6)
    task = _task(rng, keep=keep)
    fit = np.arange(task.y.size) if keep == 1.0 else task.train
    pred = task.test
    kron = pb.kron_predict(task, ("k", 0.5), fit, pred)
    krr = pb.krr_predict(task, ("k", 0.5), fit, pred, max_pairs=None)
    np.testing.assert_allclose(kron, krr, atol=atol * np.abs(krr).max())


def test_krr_subsample_cap_changes_the_fit(rng):
    task = _task(rng)
    full = pb.krr_predict(task, ("k", 0.5), task.train, task.test, max_pairs=None)
    capped = pb.krr_predict(task, ("k", 0.5), task.train, task.test, max_pairs=5)
    assert not np.allclose(full, capped)


@pytest.mark.parametrize("setting", ["B", "C", "D"])
def test_setting_folds_hold_out_the_setting_unit(rng, setting):
    rows, cols = np.repeat(np.arange(9), 8), np.tile(np.arange(8), 9)
    train = np.arange(rows.size)[::2]
    folds = pb.setting_folds(rows, cols, train, setting, n_folds=3, seed=1)
    assert len(folds) == 3
    for fit, valid in folds:
        assert valid.size and fit.size and np.isin(fit, train).all() and np.isin(valid, train).all()
        shared_drugs = np.intersect1d(rows[fit], rows[valid]).size
        shared_targets = np.intersect1d(cols[fit], cols[valid]).size
        assert shared_drugs == 0 if setting in "BD" else shared_drugs > 0
        assert shared_targets == 0 if setting in "CD" else shared_targets > 0
    covered = np.sort(np.concatenate([v for _, v in folds]))
    if setting in "BC":  # every training pair validated exactly once
        np.testing.assert_array_equal(covered, train)


def test_setting_folds_rejects_unknown_setting():
    with pytest.raises(ValueError, match="'setting' must be one of"):
        pb.setting_folds(np.arange(4), np.arange(4), np.arange(4), "E")


def test_nystrom_features_reproduce_the_kernel_at_full_rank(rng):
    X = rng.normal(size=(6, 8))
    K = X @ X.T
    F = pb.nystrom_features(K, 6)
    np.testing.assert_allclose(F @ F.T, K, atol=1e-10 * np.abs(K).max())
    assert pb.nystrom_features(K, 2).shape == (6, 2)


def test_run_method_selects_from_the_grid_and_scores_the_test_pairs(rng):
    task = _task(rng, n_drugs=10, n_targets=8)
    grid = (("k", 1e-3), ("k", 1e3))
    predicted, record = pb.run_method(task, "kronrls", grid=grid)
    assert record["chosen"] in ([g[0], g[1]] for g in grid) and len(record["cv_cindex"]) == 2
    assert record["cindex"] == pytest.approx(concordance_index(task.y[task.test], predicted))
    assert record["mse"] == pytest.approx(np.mean((task.y[task.test] - predicted) ** 2))
    trees, rec = pb.run_method(task, "random_forest", grid=({"max_features": "sqrt", "min_samples_leaf": 1},),
                               max_pairs=20)
    assert trees.shape == task.test.shape and rec["n_train_pairs"] == 20


@pytest.mark.parametrize("unit", ["A", "B", "C", "D"])
def test_bootstrap_se_is_zero_for_equal_predictions_and_positive_otherwise(rng, unit):
    y = rng.normal(size=60)
    rows, cols = np.repeat(np.arange(10), 6), np.tile(np.arange(6), 10)
    p = y + rng.normal(size=60)
    assert pb.bootstrap_cindex_se(y, p, p, rows, cols, unit, n_boot=20) == 0.0
    assert pb.bootstrap_cindex_se(y, p, rng.normal(size=60), rows, cols, unit, n_boot=20) > 0.0


def test_verdict_wins_and_ties(rng):
    task = _task(rng, n_drugs=12, n_targets=10)
    y = task.y[task.test]
    results = {"kronrls": {"cindex": concordance_index(y, y), "mse": 0.0, "seconds": 2.0},
               "random_forest": {"cindex": concordance_index(y, -y), "mse": 1.0, "seconds": 1.0}}
    line = pb.pairwise_verdict(task, results, {"kronrls": y, "random_forest": -y})
    assert line.startswith("KronRLS wins over RandomForest") and "2x its time" in line
    results["random_forest"] = dict(results["kronrls"])
    assert "ties with" in pb.pairwise_verdict(task, results, {"kronrls": y, "random_forest": y})


def test_run_task_caps_only_the_tree_methods(rng):
    task = _task(rng, n_drugs=10, n_targets=8)
    record = pb.run_task(task, methods=("kronrls", "random_forest"), alphas=(1.0,), log=lambda m: None,
                         tree_max_pairs=12)
    assert record["results"]["random_forest"]["n_train_pairs"] == 12
    assert record["results"]["kronrls"]["n_train_pairs"] == task.train.size
    assert record["verdict"].startswith("KronRLS ")

"""Helpers of ``experiments/baselines/pairwise.py`` against brute-force references on tiny synthetic pair data."""

import numpy as np
import pytest

from experiments.baselines import pairwise as pb
from experiments.pairwise import interactions
from experiments.pairwise import splits as ps
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


# -- splits of KIBA B-D and Metz (experiments/pairwise/splits.py) ---------------------------------------------------
@pytest.mark.parametrize("setting", ["B", "C", "D"])
def test_holdout_nodes_partition_the_held_out_side(setting):
    tr_d, tr_t, te_d, te_t = ps.holdout_nodes(30, 12, setting, test_fraction=1 / 3, seed=3)
    for train, test, n, held in ((tr_d, te_d, 30, setting in "BD"), (tr_t, te_t, 12, setting in "CD")):
        if held:
            assert np.intersect1d(train, test).size == 0 and train.size + test.size == n
            assert test.size == round(n / 3)
        else:
            np.testing.assert_array_equal(train, np.arange(n))
            np.testing.assert_array_equal(test, np.arange(n))
    again = ps.holdout_nodes(30, 12, setting, test_fraction=1 / 3, seed=3)
    assert all(np.array_equal(a, b) for a, b in zip(again, (tr_d, tr_t, te_d, te_t), strict=True))


@pytest.mark.parametrize(("setting", "fraction", "match"), [("A", 0.3, "'setting'"), ("B", 1.0, "'test_fraction'")])
def test_holdout_nodes_rejects_bad_arguments(setting, fraction, match):
    with pytest.raises(ValueError, match=match):
        ps.holdout_nodes(10, 10, setting, test_fraction=fraction)


def test_random_pair_parts_partition_the_pairs():
    parts = ps.random_pair_parts(23, n_parts=6, seed=0)
    assert len(parts) == 6 and {p.size for p in parts} == {3, 4}
    np.testing.assert_array_equal(np.sort(np.concatenate(parts)), np.arange(23))


@pytest.mark.parametrize("setting", ["B", "C", "D"])
def test_node_task_keeps_held_out_nodes_out_of_training(rng, setting):
    n_d, n_t = 12, 9
    Y = rng.normal(size=(n_d, n_t))
    Y[rng.random(Y.shape) < 0.2] = np.nan
    rows, cols = np.nonzero(~np.isnan(Y))
    split = ps.holdout_nodes(n_d, n_t, setting, seed=2)
    task = ps.node_task((("k", np.eye(n_d), np.eye(n_t)),), (np.eye(n_d), np.eye(n_t)), rows, cols, Y[rows, cols],
                        split, setting)
    tr_d, tr_t, te_d, te_t = split
    assert np.isin(rows[task.train], tr_d).all() and np.isin(cols[task.train], tr_t).all()
    assert np.isin(rows[task.test], te_d).all() and np.isin(cols[task.test], te_t).all()
    if setting in "BD":
        assert np.intersect1d(rows[task.train], rows[task.test]).size == 0
    if setting in "CD":
        assert np.intersect1d(cols[task.train], cols[task.test]).size == 0
    expected = (np.isin(rows, te_d) & np.isin(cols, te_t)).sum()
    assert task.test.size == expected and task.unit == setting and len(task.folds) == 3


def _write_metz(folder, rng, n_d=40, n_t=9):
    Xt = rng.normal(size=(n_t, 3))
    S = 100 * np.exp(-((Xt[:, None] - Xt[None]) ** 2).sum(-1))
    Y = 6 + np.tanh(rng.normal(size=(n_d, 1)) + Xt[:, 0])
    Y[rng.random(Y.shape) < 0.3] = np.nan
    np.savetxt(folder / ps.METZ_Y, Y)
    np.savetxt(folder / ps.METZ_TARGET_SIM, S)
    return Y, S


def test_metz_tasks_identity_drug_kernel_and_target_split(tmp_path, rng):
    Y0, S = _write_metz(tmp_path, rng)
    Y, Kt = ps.load_metz(tmp_path)
    np.testing.assert_array_equal(np.isnan(Y), np.isnan(Y0))
    # S is PSD (a Gaussian kernel): scaling by 1/100 is the only change; a non-PSD part would be clipped
    np.testing.assert_allclose(Kt, S / 100, atol=1e-12)
    indefinite = np.diag([1.0, -1.0] + [1.0] * (S.shape[0] - 2))
    np.savetxt(tmp_path / ps.METZ_TARGET_SIM, 100 * indefinite)
    assert ps.load_metz(tmp_path)[1][1, 1] == 0.0
    tasks = ps.metz_tasks(Y, Kt, embed_dim=4)
    a, c = tasks["A"], tasks["C"]
    np.testing.assert_array_equal(a.kernels[0][1], np.eye(Y.shape[0]))
    assert np.intersect1d(a.train, a.test).size == 0 and a.train.size + a.test.size == a.y.size
    (fit, valid), = a.folds
    assert np.intersect1d(fit, valid).size == 0 and np.union1d(fit, valid).size == a.train.size
    assert np.intersect1d(c.cols[c.train], c.cols[c.test]).size == 0
    np.testing.assert_array_equal(c.drug_features, np.eye(Y.shape[0], dtype=np.float32))
    with pytest.raises(ValueError, match="no drug information"):
        ps.metz_tasks(Y, Kt, settings=("B",))


def test_runner_metz_section_keeps_previous_settings(tmp_path, rng, monkeypatch):
    (tmp_path / "pairwise" / "metz").mkdir(parents=True)
    _write_metz(tmp_path / "pairwise" / "metz", rng)
    monkeypatch.setattr(pb, "RF_TREES", 5)
    monkeypatch.setattr(pb, "HGB_ITER", 5)
    monkeypatch.setattr(pb, "EMBED_DIM", 4)
    previous = {"datasets": {"Metz": {"C": {"n_train": 1, "kept": True}}, "Davis": {"A": {"n_train": 2}}}}
    section = interactions.pairwise_baselines(tmp_path, ["metz"], log=lambda m: None, previous=previous, settings=("A",))
    assert list(section["datasets"]["Metz"]) == ["A", "C"] and section["datasets"]["Metz"]["C"]["kept"]
    assert section["datasets"]["Davis"] == {"A": {"n_train": 2}} and "new drugs" in section["not_run"]
    entry = section["datasets"]["Metz"]["A"]
    assert set(entry["results"]) == set(pb.METHODS) and entry["verdict"].startswith("KronRLS ")
    assert previous["datasets"]["Metz"] == {"C": {"n_train": 1, "kept": True}}  # the caller's dict is not mutated


def test_runner_not_run_line_names_absent_runnable_settings():
    full = {name: dict.fromkeys("ABCD", {}) for name in ("Davis", "KIBA")} | {"Metz": {"A": {}, "C": {}}}
    assert "absent" not in interactions._baseline_not_run(full) and "Metz settings B and D" in interactions._baseline_not_run(full)
    del full["Metz"]["C"]
    assert interactions._baseline_not_run(full).endswith("absent from this report (see the reading below): Metz C.")

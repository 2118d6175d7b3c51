"""Helpers of ``experiments/multilabel.py``: the nominal ARFF reader, the baselines and the verdict."""

import gzip

import numpy as np
import pytest
from sklearn.linear_model import RidgeClassifier

from experiments.baselines.multilabel import RidgeMultiLabel, read_nominal_arff, run_baseline
from experiments.multilabel.report import _grid, paired_difference, verdict

ARFF = """@relation toy
@attribute id {a1,a2,a3}
@attribute size numeric
@attribute time {lunch,dinner}
@attribute l1 {0,1}
@attribute l2 {0,1}
@data
a1,2.5,dinner,1,0
a2,?,lunch,0,1
a3,1.5,dinner,1,1
"""


def test_read_nominal_arff_one_hot_and_drop(tmp_path):
    path = tmp_path / "toy.arff.gz"
    with gzip.open(path, "wt") as handle:
        handle.write(ARFF)
    X, Y = read_nominal_arff(path, 2, drop=("id",))
    np.testing.assert_array_equal(X, [[2.5, 0, 1], [2.0, 1, 0], [1.5, 0, 1]])  # missing -> column mean
    np.testing.assert_array_equal(Y, [[1, 0], [0, 1], [1, 1]])


def test_ridge_multilabel_is_ridge_classifier_per_label(rng):
    X = rng.normal(size=(40, 5))
    Y = (rng.normal(size=(40, 3)) > 0).astype(int)
    ours = RidgeMultiLabel(alpha=2.0).fit(X, Y).predict(X)
    for j in range(3):
        np.testing.assert_array_equal(ours[:, j], RidgeClassifier(alpha=2.0).fit(X, Y[:, j]).predict(X))


@pytest.mark.parametrize("name", ["br_ridge", "br_logreg", "cc_logreg"])
def test_baselines_run_on_dense_and_sparse_features(rng, name):
    X = rng.normal(size=(30, 4))
    Y = (X[:, :3] > 0).astype(np.int8)
    Y[:, 2] = 0  # a label constant on every training side
    sparse = np.where(rng.random((30, 20)) < 0.05, 1.0, 0.0)
    for features in (X, sparse):
        predicted, record = run_baseline(name, features[:20], Y[:20], features[20:], cv=3, grid=(0.1, 1.0))
        assert predicted.shape == (10, 3) and record["chosen"] in (0.1, 1.0)
        assert record["standardized"] == (features is X)


def test_verdict_ties_within_two_standard_errors():
    entry = {"results": {"iokr": {"f1": 50.0, "per_example_f1": [50.0, 50.0, 100.0, 0.0], "total_s": 2.0},
                         "br_ridge": {"f1": 37.5, "per_example_f1": [0.0, 50.0, 100.0, 0.0], "total_s": 1.0}}}
    diff, se = paired_difference([50.0, 50.0, 100.0, 0.0], [0.0, 50.0, 100.0, 0.0])
    assert diff == 12.5 and se == pytest.approx(12.5)
    assert "ties with BR ridge" in verdict(entry)


def test_grid_section_marks_the_best_kernel_and_the_scales_outside_the_default_grid():
    scales = [4.0 ** -6, 4.0 ** -5, 1.0, 4.0 ** 3]
    alphas = [1e-2, 1e-1, 1.0]
    f1 = np.array([[50.0, 50.0, 40.0], [51.0, 51.0, 40.0], [50.0, 52.0, 51.98], [49.0, 10.0, 10.0],
                   [30.0, 30.0, 30.0]])  # rows: linear, then the scales
    grid = {"gamma_scales": scales, "alphas": alphas, "curves": {"toy": {"standard/False": f1.tolist()}}}
    report = {"datasets": {"toy": {"results": {"iokr": {"best": {"scaling": "standard", "normalize_output": False}}}}}}
    lines = _grid(grid, report, ["toy", "absent"])
    assert "| linear | (4^-6) | 4^-5 | 4^0 | (4^3) |" in lines[4]
    rows = [line for line in lines if line.startswith("| toy")]
    assert rows == ["| toy | standard/False | 50.0 | 51.0 | **52.0** | 49.0 | 30.0 | 0.1..1 |"]

"""What users would pick instead of IOKR for multi-label data, with hyperparameters by CV on the training split.

- ``br_ridge``: binary relevance by one multi-output ridge regression on +-1 targets (``sign`` of the prediction);
  alpha by k-fold CV of example-F1 (the ``RidgeClassifier`` model, all labels at once).
- ``br_logreg``: binary relevance, one ``LogisticRegression`` (liblinear, L2) per label; ``C`` by k-fold CV of
  example-F1.
- ``cc_logreg``: ``ClassifierChain`` of ``LogisticRegression`` (labels in their file order); ``C`` by its own
  k-fold CV of example-F1.

Preprocessing, fixed a priori by the data type as a user would: dense features are standardized
(``StandardScaler``); sparse bag-of-words features (density < 0.1: bibtex, corel5k, delicious, enron, medical,
tmc2007, genbase) stay raw and sparse (centering them makes liblinear 50-100 times slower: 5-9 s instead of 0.06 s per
label on bibtex, measured).

The folds are those of the IOKR selection (``KFold``, shuffled, same seed). Labels constant on a training side get
a constant predictor (scikit-learn's logistic regression refuses one class).

Also: a reader for the two Mulan files with non-numeric nominal attributes (genbase, foodtruck), which
:func:`iokr.datasets.load_arff` refuses: nominal attributes are one-hot encoded, named identifier attributes dropped.
"""

from __future__ import annotations

import gzip
import re
import time

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.model_selection import KFold
from sklearn.multioutput import ClassifierChain
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from iokr.metrics import example_f1

RIDGE_ALPHAS = tuple(np.logspace(-4, 4, 17).tolist())
LOGREG_CS = (1e-3, 1e-2, 0.1, 1.0, 10.0, 100.0)
#: Feature density under which the features are treated as sparse (kept raw, CSR).
SPARSE_DENSITY = 0.1


class RidgeMultiLabel(ClassifierMixin, BaseEstimator):
    """Binary relevance by multi-output ridge regression on +-1 targets (the model of ``RidgeClassifier``)."""

    def __init__(self, alpha=1.0):
        self.alpha = alpha

    def fit(self, X, Y):
        # dense: one d x d Cholesky for all labels (the sparse solvers iterate per label)
        X = X.toarray() if sp.issparse(X) else X
        self.ridge_ = Ridge(alpha=self.alpha).fit(X, 2.0 * np.asarray(Y, dtype=np.float64) - 1.0)
        return self

    def predict(self, X):
        X = X.toarray() if sp.issparse(X) else X
        return (self.ridge_.predict(X) > 0).astype(np.int8)


class _Constant(ClassifierMixin, BaseEstimator):
    def fit(self, X, y):
        self.classes_ = np.unique(y)
        self.value_ = self.classes_[0]
        return self

    def predict(self, X):
        return np.full(X.shape[0], self.value_)

    def predict_proba(self, X):
        return np.ones((X.shape[0], 1))


class SafeLogReg(ClassifierMixin, BaseEstimator):
    """``LogisticRegression`` that falls back to a constant prediction when a training side has one class."""

    def __init__(self, C=1.0):
        self.C = C

    def fit(self, X, y):
        y = np.asarray(y)
        if np.unique(y).size < 2:
            self.model_ = _Constant().fit(X, y)
        else:
            self.model_ = LogisticRegression(C=self.C, solver="liblinear", max_iter=200).fit(X, y)
        self.classes_ = self.model_.classes_
        return self

    def predict(self, X):
        return self.model_.predict(X)


class BinaryRelevance(ClassifierMixin, BaseEstimator):
    def __init__(self, estimator):
        self.estimator = estimator

    def fit(self, X, Y):
        self.estimators_ = [clone(self.estimator).fit(X, Y[:, j]) for j in range(Y.shape[1])]
        return self

    def predict(self, X):
        return np.column_stack([e.predict(X) for e in self.estimators_]).astype(np.int8)


def make_baseline(name, value, standardize=True):
    """Pipeline (standardization, if asked, + model) of baseline ``name`` at hyperparameter ``value``."""
    if name == "br_ridge":
        model = RidgeMultiLabel(alpha=value)
    elif name == "br_logreg":
        model = BinaryRelevance(SafeLogReg(C=value))
    elif name == "cc_logreg":
        model = ClassifierChain(SafeLogReg(C=value), order=None)
    else:
        raise ValueError(f"unknown baseline {name!r}")
    return make_pipeline(StandardScaler(), model) if standardize else model


GRIDS = {"br_ridge": RIDGE_ALPHAS, "br_logreg": LOGREG_CS, "cc_logreg": LOGREG_CS}


def run_baseline(name, X_train, Y_train, X_test, *, cv=5, seed=0, grid=None):
    """CV-select the hyperparameter on training data, refit, predict the test split.

    Returns
    -------
    predicted : ndarray of int8, shape (m, n_labels)
    record : dict
        ``grid``, ``cv_f1`` (% per grid value), ``chosen``, ``fit_s`` (selection + refit), ``predict_s``.
    """
    grid = GRIDS[name] if grid is None else grid
    standardize = np.count_nonzero(X_train) / X_train.size >= SPARSE_DENSITY
    if not standardize:
        X_train, X_test = sp.csr_matrix(X_train), sp.csr_matrix(X_test)
    folds = list(KFold(cv, shuffle=True, random_state=seed).split(X_train))
    t0 = time.perf_counter()
    cv_f1 = []
    for value in grid:
        scores = []
        for train, valid in folds:
            model = make_baseline(name, value, standardize).fit(X_train[train], Y_train[train])
            scores.append(example_f1(Y_train[valid], model.predict(X_train[valid])))
        cv_f1.append(100 * float(np.mean(scores)))
    chosen = grid[int(np.argmax(cv_f1))]
    model = make_baseline(name, chosen, standardize).fit(X_train, Y_train)
    fit_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    predicted = model.predict(X_test)
    predicted = (predicted.toarray() if sp.issparse(predicted) else np.asarray(predicted)).astype(np.int8)
    return predicted, {"standardized": bool(standardize), "grid": list(grid), "cv_f1": cv_f1, "chosen": chosen,
                       "fit_s": fit_s,
                       "predict_s": time.perf_counter() - t0,
                       "at_grid_edge": bool(len(grid) > 1 and chosen in (grid[0], grid[-1]))}


# -- reader for nominal attributes (benchmark only) --------------------------------------------------------------
_ATTRIBUTE = re.compile(r"@attribute\s+('[^']*'|\"[^\"]*\"|\S+)\s+(.*)$", re.IGNORECASE)


def read_nominal_arff(path, n_labels, drop=()):
    """Dense ARFF with nominal attributes: one-hot encode non-label nominal attributes, drop those named in ``drop``.

    Returns ``X`` (float64, n x features) and ``Y`` (int8, n x n_labels; the last ``n_labels`` attributes, 0/1).
    """
    attributes, rows, in_data = [], [], False
    with gzip.open(path, "rt", encoding="utf-8", errors="replace") as handle:
        for line in handle:
            line = line.strip()
            if not line or line.startswith("%"):
                continue
            if not in_data:
                match = _ATTRIBUTE.match(line)
                if match:
                    name, kind = match.group(1).strip("'\""), match.group(2).strip()
                    values = [v.strip().strip("'\"") for v in kind[1:-1].split(",")] if kind.startswith("{") else None
                    attributes.append((name, values))
                elif line.lower().startswith("@data"):
                    in_data = True
                continue
            rows.append([v.strip().strip("'\"") for v in line.split(",")])
    features, labels = attributes[:-n_labels], attributes[-n_labels:]
    columns = []
    for j, (name, values) in enumerate(features):
        raw = [r[j] for r in rows]
        if name in drop:
            continue
        if values is None or all(_is_number(v) for v in values):
            columns.append(np.array([float(v) if v != "?" else np.nan for v in raw])[:, None])
        else:
            columns.append(np.array([[v == value for value in values] for v in raw], dtype=np.float64))
    X = np.hstack(columns)
    X = np.where(np.isnan(X), np.nanmean(X, axis=0), X)
    offset = len(features)
    Y = np.array([[float(r[offset + k]) for k in range(len(labels))] for r in rows]).astype(np.int8)
    return X, Y


def _is_number(value):
    try:
        float(value)
    except ValueError:
        return False
    return True

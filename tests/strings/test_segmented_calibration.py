"""SegmentedStringKDE options (calibration, preprocess, augment) against brute-force references.

References: leave-one-out outputs by explicit retraining, the softmax written out, Viterbi replaced by enumerating
every string, augmentation replaced by fitting on explicitly stacked copies.
"""

import itertools
import math

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression

from iokr.kernels import Gaussian, Polynomial
from iokr.linalg import cholesky_shifted
from iokr.strings import (
    ImageBlur,
    ImageShifts,
    LogisticCalibration,
    NgramLanguageModel,
    SegmentedStringKDE,
    letter_accuracy,
    load_ocr_letters,
)

CENTERS = {"a": [1.0, 0.0, 0.0], "b": [0.0, 1.0, 0.0], "c": [0.0, 0.0, 1.0]}
WORDS = ["ab", "abc", "ca", "bca", "cab", "aab", "bc", "acb"]


def _toy(rng, noise=0.6, words=WORDS):
    X = [np.array([CENTERS[c] for c in w]) + noise * rng.normal(size=(len(w), 3)) for w in words]
    return X, list(words)


def _naive_log_softmax(z):
    out = np.empty_like(z)
    for i, row in enumerate(z):
        m = max(row)
        log_norm = m + math.log(sum(math.exp(v - m) for v in row))
        out[i] = [v - log_norm for v in row]
    return out


@pytest.mark.parametrize("n_classes", [2, 3, 5])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_logistic_calibration_is_the_softmax_of_sklearn(n_classes, dtype, rng):
    codes = np.arange(60) % n_classes
    scores = (np.eye(n_classes)[codes] + 0.7 * rng.normal(size=(60, n_classes))).astype(dtype)
    cal = LogisticCalibration(C=3.0).fit(scores, codes)
    queries = rng.normal(size=(9, n_classes))
    ours = cal.log_proba(queries)
    ref = _naive_log_softmax(queries @ cal.coef_.T + cal.intercept_)
    np.testing.assert_allclose(ours, ref, rtol=0, atol=1e-12)
    np.testing.assert_allclose(np.exp(ours).sum(axis=1), 1.0, rtol=0, atol=1e-12)
    sk = LogisticRegression(C=3.0, max_iter=1000).fit(scores.astype(np.float64), codes)  # we fit in float64
    np.testing.assert_allclose(ours, sk.predict_log_proba(queries), rtol=0, atol=1e-10)


def test_logistic_calibration_absent_and_single_symbols(rng):
    scores = rng.normal(size=(30, 4))
    codes = np.array([0, 2] * 15)
    logp = LogisticCalibration().fit(scores, codes).log_proba(scores[:3])
    assert np.all(np.isneginf(logp[:, [1, 3]]))
    np.testing.assert_allclose(np.exp(logp).sum(axis=1), 1.0, atol=1e-12)
    single = LogisticCalibration().fit(scores, np.full(30, 3)).log_proba(scores[:2])
    np.testing.assert_array_equal(single[:, 3], 0.0)
    with pytest.raises(ValueError, match="'codes'"):
        LogisticCalibration().fit(scores, np.full(30, 4))
    with pytest.raises(ValueError, match="'C'"):
        LogisticCalibration(C=0).fit(scores, codes)
    with pytest.raises(ValueError, match="'scores'"):
        LogisticCalibration().fit(scores, codes).log_proba(scores[:, :3])


@pytest.mark.parametrize("alpha", [0.05, 1.0])
def test_calibration_is_fitted_on_leave_one_out_outputs(alpha, rng):
    X, y = _toy(rng)
    kern = Gaussian(gamma=0.5)
    model = SegmentedStringKDE(kern, alpha=alpha, lm_order=2, calibration="logistic", calibration_C=5.0).fit(X, y)
    flat = np.vstack(X)
    codes = np.array(["abc".index(c) for w in y for c in w])
    T = np.eye(3)[codes]
    loo = np.empty_like(T)
    for i in range(flat.shape[0]):  # explicit retraining without letter i
        keep = np.arange(flat.shape[0]) != i
        coef = cholesky_shifted(kern(flat[keep]), alpha).solve(T[keep])
        loo[i] = kern(flat[i : i + 1], flat[keep]) @ coef
    ref = LogisticCalibration(C=5.0).fit(loo, codes)
    np.testing.assert_allclose(model.calibrator_.coef_, ref.coef_, rtol=0, atol=1e-6)
    np.testing.assert_allclose(model.calibrator_.intercept_, ref.intercept_, rtol=0, atol=1e-6)
    np.testing.assert_allclose(model.log_prior_, np.log(np.bincount(codes) / codes.size), rtol=0, atol=1e-15)


@pytest.mark.parametrize("order", [1, 2, 3])
@pytest.mark.parametrize("prior_weight, lm_weight, discount", [(1.0, 1.0, 0.75), (0.0, 0.6, 0.1), (0.5, 2.0, 0.9)])
def test_calibrated_decoding_equals_enumeration(order, prior_weight, lm_weight, discount, rng):
    X, y = _toy(rng, noise=0.9)
    model = SegmentedStringKDE(Gaussian(gamma=0.5), alpha=0.3, lm_order=order, lm_weight=lm_weight,
                               calibration="logistic", prior_weight=prior_weight, lm_discount=discount).fit(X, y)
    queries = [rng.normal(size=(L, 3)) * 0.8 + 0.3 for L in (1, 2, 4)]
    lm = NgramLanguageModel(order, discount=discount).fit(y)
    cal = model.calibrator_
    counts = np.bincount([("abc".index(c)) for w in y for c in w], minlength=3)
    for q, pred in zip(queries, model.predict(queries), strict=True):
        g = model.segment_scores([q])[0]
        emit = _naive_log_softmax(g @ cal.coef_.T + cal.intercept_) - prior_weight * np.log(counts / counts.sum())
        best = max(("".join(s) for s in itertools.product("abc", repeat=len(q))),
                   key=lambda s: sum(emit[i, "abc".index(c)] for i, c in enumerate(s)) + lm_weight * lm.log_prob(s))
        assert pred == best


def test_preprocess_equals_fitting_on_transformed_features(rng):
    X, y = _toy(rng)
    transform = np.array([[1.0, 0.5, 0.0], [0.0, 1.0, 0.5], [0.2, 0.0, 1.0], [1.0, 1.0, 1.0]]).T  # 3 -> 4 features
    kern = Polynomial(degree=2, gamma=0.5)
    a = SegmentedStringKDE(kern, alpha=0.2, lm_order=2, preprocess=lambda Z: Z @ transform).fit(X, y)
    b = SegmentedStringKDE(kern, alpha=0.2, lm_order=2).fit([x @ transform for x in X], y)
    queries = [rng.normal(size=(3, 3)), rng.normal(size=(1, 3))]
    for ga, gb in zip(a.segment_scores(queries), b.segment_scores([q @ transform for q in queries]), strict=True):
        np.testing.assert_allclose(ga, gb, rtol=0, atol=1e-12)
    assert a.n_features_in_ == 3  # inputs are checked before the transform


def test_augment_equals_fitting_on_stacked_copies(rng):
    words = ["ab", "ba", "abb"]
    X = [(rng.random((len(w), 12)) > 0.5).astype(float) for w in words]
    shifts = ImageShifts((4, 3), ((1, 0), (0, -1)))
    kern = Gaussian(gamma=0.2)
    a = SegmentedStringKDE(kern, alpha=0.1, lm_order=None, augment=shifts).fit(X, words)
    # Reference: each word's copies as extra words (the regression only sees the stacked letters).
    copies = [shifts(x).reshape(3, len(w), 12) for x, w in zip(X, words, strict=True)]
    Xb = [c[k] for k in range(3) for c in copies]
    yb = [w for _ in range(3) for w in words]
    b = SegmentedStringKDE(kern, alpha=0.1, lm_order=None).fit(Xb, yb)
    queries = [rng.random((2, 12))]
    np.testing.assert_allclose(a.segment_scores(queries)[0], b.segment_scores(queries)[0], rtol=0, atol=1e-12)
    assert a.regressor_.coef_.shape[0] == 3 * sum(map(len, words))


@pytest.mark.parametrize("params, error, match", [
    ({"calibration": "platt"}, ValueError, "'calibration'"),
    ({"calibration": "logistic", "basis": "random", "n_basis": 3}, ValueError, "basis='full'"),
    ({"calibration": "logistic", "augment": ImageShifts((1, 3), ((0, 1),))}, ValueError, "augment=None"),
    ({"calibration": "logistic", "calibration_C": -1.0}, ValueError, "'calibration_C'"),
    ({"prior_weight": -0.5}, ValueError, "'prior_weight'"),
    ({"lm_discount": 1.0}, ValueError, "'lm_discount'"),
    ({"preprocess": "blur"}, TypeError, "'preprocess'"),
    ({"preprocess": lambda Z: Z[:1]}, ValueError, "one row per segment"),
    ({"augment": lambda Z: Z[:-1]}, ValueError, "whole blocks"),
])
def test_bad_options(params, error, match, rng):
    X, y = _toy(rng)
    with pytest.raises(error, match=match):
        SegmentedStringKDE(Gaussian(gamma=0.5), **params).fit(X, y)


def test_new_parameters_are_plain_parameters():
    model = SegmentedStringKDE(preprocess=ImageBlur((16, 8), 1.2), calibration="logistic", prior_weight=0.5)
    params = clone(model).get_params()
    assert params["calibration"] == "logistic" and params["prior_weight"] == 0.5
    assert repr(params["preprocess"]) == "ImageBlur(shape=(16, 8), sigma=1.2)"


@pytest.fixture(scope="module")
def ocr_subset():
    data = load_ocr_letters()
    rng = np.random.default_rng(0)
    train = rng.choice(np.flatnonzero(data["folds"] == 0), 150, replace=False)
    test = rng.choice(np.flatnonzero(data["folds"] == 1), 150, replace=False)
    return ([data["images"][i] for i in train], [data["words"][i] for i in train],
            [data["images"][i] for i in test], [data["words"][i] for i in test])


def test_blur_and_calibration_beat_the_paper_setup_on_ocr_subset(ocr_subset):
    Xtr, ytr, Xte, yte = ocr_subset
    # the setting CV chose for the cubic kernel on the full fold 0 before this change (reports/strings.md)
    paper = SegmentedStringKDE(Polynomial(degree=3, gamma=1 / 32), alpha=0.7, lm_order=2, lm_weight=0.1)
    ours = SegmentedStringKDE(Gaussian(gamma=0.16), alpha=0.01, lm_order=2, preprocess=ImageBlur((16, 8), 1.2),
                              calibration="logistic")
    acc_paper = letter_accuracy(yte, paper.fit(Xtr, ytr).predict(Xte))
    raw_scores = ours.fit(Xtr, ytr).segment_scores(Xte)
    acc_ours = letter_accuracy(yte, ours.decode(raw_scores))
    acc_argmax = letter_accuracy(yte, ["".join(ours.alphabet_[i] for i in s.argmax(axis=1)) for s in raw_scores])
    assert acc_ours > acc_paper + 0.05  # measured: 0.861 vs 0.734 (150 training words)
    assert acc_ours > acc_argmax + 0.05  # measured: 0.861 vs 0.773

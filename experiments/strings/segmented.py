"""OCR words with perfect segmentation: per-letter kernel ridge, a letter n-gram model, Viterbi decoding."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from iokr.kernels import Gaussian, Polynomial
from iokr.linalg import EigenPath
from iokr.strings import (
    ImageBlur,
    LogisticCalibration,
    NgramLanguageModel,
    SegmentedStringKDE,
    letter_accuracy,
    string_error_rate,
    viterbi_decode,
)


def fold0_split(data, quick_sizes=None):
    """Training words (fold 0) and test words (folds 1-9) as ``(images, words)`` lists each; with ``quick_sizes``
    ``(n_train, n_test)``, the first words of each side only."""
    images, words, folds = data["images"], data["words"], data["folds"]
    train, test = np.flatnonzero(folds == 0), np.flatnonzero(folds != 0)
    if quick_sizes:
        train, test = train[:quick_sizes[0]], test[:quick_sizes[1]]
    return ([images[i] for i in train], [words[i] for i in train]), ([images[i] for i in test], [words[i] for i in test])


def seeded_folds(n, k, seed=0):
    """``k`` seeded folds of ``range(n)``, each sorted."""
    idx = np.random.default_rng(seed).permutation(n)
    return [np.sort(idx[i::k]) for i in range(k)]


# ---------------------------------------------------------------------------------------------------------------
def _segment_kernels():
    """Candidate segment models for the CV: name -> (kernel, preprocess); the paper's cubic kernel first."""
    return {
        "polynomial degree 3 (gamma 1/32) on pixels": (Polynomial(degree=3, gamma=1 / 32, coef0=1.0), None),
        "Gaussian (gamma 0.16) on blurred pixels (sigma 1.2)": (Gaussian(gamma=0.16), ImageBlur((16, 8), 1.2)),
        "Gaussian (gamma 0.32) on blurred pixels (sigma 1.2)": (Gaussian(gamma=0.32), ImageBlur((16, 8), 1.2)),
    }


SEG_ALPHAS = (1e-2, 1e-1)  # relative to the mean of diag(K)
SEG_RAW_WEIGHTS = (0.0, 0.03, 0.1, 0.3, 1.0)  # LM weights for raw regression outputs
SEG_CAL_WEIGHTS = (0.5, 0.75, 1.0, 1.5)  # LM weights for calibrated log-likelihoods (1 = Bayes)
SEG_PRIOR_WEIGHTS = (0.0, 1.0)
SEG_CALIBRATION_C = 10.0
SEG_DISCOUNTS = (0.1, 0.75)  # absolute discount of the letter LM's smoothing


def _decode_words(emissions, table, order, w):
    out = []
    for E in emissions:
        path = E.argmax(axis=1) if w == 0 else viterbi_decode(E, table, order, w)[0]
        out.append("".join(chr(97 + i) for i in path))
    return out


@dataclass(frozen=True)
class _SegmentSplit:
    """One CV split inside fold 0: the fitting letters (images, one-hot targets, codes, letter prior), the held-out
    words (images, words, word boundaries in the stacked letters) and the letter LMs of the fitting words."""

    fit_images: list
    val_images: list
    val_words: list
    lengths: np.ndarray
    codes: np.ndarray
    targets: np.ndarray
    log_prior: np.ndarray
    tables: dict


def _segment_split(Xtr, ytr, split, orders):
    fit_idx = np.setdiff1d(np.arange(len(ytr)), split)
    fit_words = [ytr[i] for i in fit_idx]
    Xv = [Xtr[i] for i in split]
    codes = np.array([ord(c) - 97 for w in fit_words for c in w])
    T = np.zeros((codes.size, 26))
    T[np.arange(codes.size), codes] = 1.0
    log_prior = np.log(np.maximum(np.bincount(codes, minlength=26), 1) / codes.size)
    tables = {(order, d): NgramLanguageModel(order, discount=d, start=26, stop=27).fit(
        [tuple(ord(c) - 97 for c in w) for w in fit_words]).transition_table(list(range(26)))
        for order in orders for d in SEG_DISCOUNTS}
    return _SegmentSplit([Xtr[i] for i in fit_idx], Xv, [ytr[i] for i in split],
                         np.cumsum([x.shape[0] for x in Xv])[:-1], codes, T, log_prior, tables)


def _segment_model_scores(name, kern, pre, sp, scores):
    """CV letter accuracies of one segment model on one split, for every alpha, calibration, LM and weight."""
    Xf, Xval = np.vstack(sp.fit_images), np.vstack(sp.val_images)
    if pre is not None:
        Xf, Xval = pre(Xf), pre(Xval)
    K = kern(Xf)
    scale = float(np.mean(np.diag(K)))
    path = EigenPath(K)
    proj = path.project(sp.targets)
    Kv = kern(Xval, Xf)
    for a in SEG_ALPHAS:
        coef = path.solve_projected(proj, a * scale)
        G = Kv @ coef
        h = path.hat_diagonal(a * scale)[:, None]
        loo = (K @ coef - h * sp.targets) / (1.0 - h)
        raw = np.split(G, sp.lengths)
        calibrator = LogisticCalibration(SEG_CALIBRATION_C).fit(loo, sp.codes)
        logp = np.split(calibrator.log_proba(G), sp.lengths)
        for (order, d), table in sp.tables.items():
            for w in SEG_RAW_WEIGHTS:
                if w == 0 and d != SEG_DISCOUNTS[0]:
                    continue  # argmax: the LM plays no part
                acc = letter_accuracy(sp.val_words, _decode_words(raw, table, order, w))
                scores.setdefault((order, name, a, None, w, 0.0, d), []).append(acc)
            for b in SEG_PRIOR_WEIGHTS:
                em = [E - b * sp.log_prior for E in logp]
                for w in SEG_CAL_WEIGHTS:
                    acc = letter_accuracy(sp.val_words, _decode_words(em, table, order, w))
                    scores.setdefault((order, name, a, "logistic", w, b, d), []).append(acc)


def _segmented_result(order, scores, models, Xtr, ytr, X_test, y_test):
    """The best CV setting of one LM order refitted on fold 0 and evaluated once on the test words."""
    mine = {k: float(np.mean(v)) for k, v in scores.items() if k[0] == order}
    best = max(mine, key=mine.get)
    _, name, a, calibration, w, b, d = best
    # CV ablation: the best setting for each (segment model, calibration), and the paper's setup
    ablation = {}
    for k, v in mine.items():
        label = f"{k[1]}, {'logistic calibration' if k[3] else 'raw outputs'}"
        if label not in ablation or v > ablation[label]["cv_letter_accuracy"]:
            ablation[label] = {"cv_letter_accuracy": v, "alpha_relative": k[2], "lm_weight": k[4],
                               "prior_weight": k[5], "lm_discount": k[6]}
    kern, pre = models[name]
    t = time.time()
    Kdiag = kern.diag(pre(np.vstack(Xtr)) if pre is not None else np.vstack(Xtr))
    scale = float(np.mean(Kdiag))
    model = SegmentedStringKDE(kern, alpha=a * scale, lm_order=order, lm_weight=w, lm_discount=d, preprocess=pre,
                               calibration=calibration, calibration_C=SEG_CALIBRATION_C, prior_weight=b)
    model.fit(Xtr, ytr)
    fit_time = time.time() - t
    t = time.time()
    S = model.segment_scores(X_test)
    pred = model.decode(S)
    predict_time = time.time() - t
    argmax = ["".join(model.alphabet_[i] for i in s.argmax(axis=1)) for s in S]
    return {
        "letter_accuracy": letter_accuracy(y_test, pred),
        "letter_accuracy_without_lm": letter_accuracy(y_test, argmax),
        "word_accuracy": 1 - string_error_rate(y_test, pred),
        "cv_letter_accuracy": mine[best],
        "chosen": {"segment_model": name, "alpha_relative": a, "alpha": a * scale, "calibration": calibration,
                   "calibration_C": SEG_CALIBRATION_C if calibration else None, "lm_weight": w,
                   "prior_weight": b if calibration else None, "lm_discount": d},
        "cv_ablation": ablation,
        "fit_seconds": fit_time, "predict_seconds": predict_time,
        "n_train_letters": int(sum(len(s) for s in ytr)), "n_test_words": len(X_test),
        "n_test_letters": int(sum(len(s) for s in y_test)),
    }


def segmented(data, orders=(2, 3), quick=False, log=print):
    """Perfect segmentation: CV inside fold 0 over segment model x alpha x calibration x LM weight, test on 1-9.

    CV protocol: the words of fold 0 are split into 3 folds (``seeded_folds(n, 3)``, numpy seed 0; all letters of a word
    stay together). For each split and segment model one eigendecomposition of the fitting part serves every
    alpha (``EigenPath``); it also gives the closed-form leave-one-out outputs of the fitting letters, on which the
    logistic calibration is fitted (as ``SegmentedStringKDE(calibration="logistic")`` does). The letter LM of each
    order and discount is trained on the fitting words only. The held-out words are decoded for every LM weight (and
    prior weight with calibration); the setting with the best mean letter accuracy over the 3 splits is refitted on all
    of fold 0 with ``SegmentedStringKDE`` and evaluated once on folds 1-9.
    """
    (Xtr, ytr), (X_test, y_test) = fold0_split(data, (200, 600) if quick else None)
    models = _segment_kernels()
    scores = {}
    t0 = time.time()
    for split in seeded_folds(len(Xtr), 3):
        sp = _segment_split(Xtr, ytr, split, orders)
        for name, (kern, pre) in models.items():
            _segment_model_scores(name, kern, pre, sp, scores)
            log(f"segmented CV: {name} done ({time.time() - t0:.0f}s)")
    log(f"segmented CV done in {time.time() - t0:.0f}s")
    results = {}
    for order in orders:
        results[f"n={order}"] = _segmented_result(order, scores, models, Xtr, ytr, X_test, y_test)
        log(f"segmented n={order}: {results[f'n={order}']}")
    return results


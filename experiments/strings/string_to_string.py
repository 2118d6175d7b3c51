"""OCR words without segmentation (string KDE on image n-grams) and CMUdict grapheme-to-phoneme."""

from __future__ import annotations

import time
from pathlib import Path
from types import MappingProxyType

import numpy as np

from experiments.strings.segmented import fold0_split, seeded_folds
from iokr.kernels import Gaussian
from iokr.strings import (
    NgramKernel,
    SequencePolynomialKernel,
    SequenceProductKernel,
    StringKDE,
    letter_accuracy,
    load_cmudict,
    string_error_rate,
    symbol_error_rate,
)


def _cv_string_kde(K, y, grid, n_splits=3, metric=letter_accuracy):
    """Mean CV metric per parameter dict, on a precomputed training Gram matrix."""
    out = []
    for params in grid:
        vals = []
        for split in seeded_folds(len(y), n_splits):
            fit_idx = np.setdiff1d(np.arange(len(y)), split)
            model = StringKDE("precomputed", **params).fit(K[np.ix_(fit_idx, fit_idx)], [y[i] for i in fit_idx])
            vals.append(metric([y[i] for i in split], model.predict(K[np.ix_(split, fit_idx)])))
        out.append((float(np.mean(vals)), params))
    return out


def _s2s_row(name, kern, K, Kte, ytr, yte, grid, log, extra=None):
    t = time.time()
    scale = float(np.mean(np.diag(K)))
    grid = [dict(p, alpha=p.pop("alpha_relative") * scale) for p in grid]
    cv = _cv_string_kde(K, ytr, grid)
    best_score, best = max(cv, key=lambda c: c[0])
    cv_seconds = time.time() - t
    log(f"s2s {name}: CV {best_score:.4f} with {best} ({cv_seconds:.0f}s)")
    t = time.time()
    model = StringKDE("precomputed", **best).fit(K, ytr)
    fit_time = time.time() - t
    t = time.time()
    pred = model.predict(Kte)
    row = {
        "letter_accuracy": letter_accuracy(yte, pred),
        "word_accuracy": 1 - string_error_rate(yte, pred),
        "length_correct": float(np.mean([len(p) == len(t_) for p, t_ in zip(pred, yte, strict=True)])),
        "cv_letter_accuracy": best_score,
        "cv_grid_size": len(grid), "cv_seconds": cv_seconds,
        "chosen": {k: (float(v) if isinstance(v, float) else v) for k, v in best.items()},
        "alpha_relative": best["alpha"] / scale,
        "input_kernel": repr(kern),
        "fit_seconds": fit_time, "predict_seconds": time.time() - t,
        "n_test_words": len(yte), "examples": [[t_, p] for t_, p in list(zip(yte, pred, strict=True))[:: max(len(yte) // 8, 1)]],
    }
    row.update(extra or {})
    log(f"s2s {name}: {row['letter_accuracy']:.4f}")
    return row


def string_to_string(data, quick=False, log=print):
    """Section (b): string-to-string OCR without segmentation.

    Input kernels compared: eq. 15 (polynomial of the summed image-bigram inner products, the paper's choice) and
    the product kernel on padded image n-grams (:class:`SequenceProductKernel`, Gaussian per image, pads matched only
    with pads), under which the output n-gram counts are a well-specified regression target. Decoding: Euler-walk
    pre-images plus beam-search candidates under the exact KDE objective + a 5-gram letter model of the training
    words, ranked together. Two length policies: ``length="predicted"`` keeps only strings of the predicted length
    (rounded sum of the predicted unigram counts: a model output, the number of images is never read), and
    ``length="free"`` (no length constraint at all). Every hyperparameter (image-kernel width, image n-gram order,
    output order n, ridge alpha, LM weight) by 3-fold CV over words inside fold 0; folds 1-9 are only predicted once.
    """
    (Xtr, ytr), (Xte, yte) = fold0_split(data, (200, 300) if quick else None)
    results = {}
    K, Kte, gamma, order, best = _product_kernel_predicted_length(Xtr, ytr, Xte, yte, log, results)
    _product_kernel_free_length(Xtr, ytr, Xte, yte, (K, Kte), (gamma, order, best["n"]), log, results)
    del K, Kte

    # The paper's eq. 15 with the same decoder, for comparison.
    kern = SequencePolynomialKernel(n=2, degree=3, gamma=1 / 16)
    K = kern(Xtr)
    name = "polynomial (eq. 15), image bigrams, degree 3; predicted length"
    results[name] = _s2s_row(name, kern, K, kern(Xte, Xtr), ytr, yte,
                             [dict(n=n, alpha_relative=a, lm_weight=1.0, length="predicted", **S2S_DECODE)
                              for n in (2, 3) for a in (1e-3, 1e-2)], log)
    return results


S2S_DECODE = MappingProxyType({"lm_order": 5, "max_alternatives": 8, "beam_width": 32})


def _product_kernel_predicted_length(Xtr, ytr, Xte, yte, log, results):
    """Product kernel on image n-grams: CV over the image-kernel width, the image n-gram order, output order and LM;
    the chosen setting's row into ``results``. Returns the chosen Grams, width, order and parameters."""
    t = time.time()
    grams = {}
    for gamma in (1 / 256, 1 / 512):
        for order in (3, 5):
            kern = SequenceProductKernel(Gaussian(gamma=gamma), n=(order,))
            grams[gamma, order] = (kern, kern(Xtr))
    log(f"s2s product-kernel Gram matrices: {time.time() - t:.0f}s")
    cv_all = []
    for (gamma, order), (_, K) in grams.items():
        scale = float(np.mean(np.diag(K)))
        grid = [dict(n=n, alpha=1e-3 * scale, lm_weight=w, length="predicted", **S2S_DECODE)
                for n in (2, 3) for w in (0.3, 1.0, 3.0)]
        for score, params in _cv_string_kde(K, ytr, grid):
            cv_all.append((score, gamma, order, params))
            log(f"  CV gamma=1/{1 / gamma:.0f} image order={order} n={params['n']} "
                f"lm_weight={params['lm_weight']}: {score:.4f}")
    _, gamma, order, best = max(cv_all, key=lambda c: c[0])
    kern, K = grams[gamma, order]
    Kte = kern(Xte, Xtr)
    cv_table = [{"gamma": g, "image_order": o, "n": p["n"], "lm_weight": p["lm_weight"], "cv_letter_accuracy": s}
                for s, g, o, p in cv_all]
    name = f"product kernel, Gaussian per image (gamma 1/{1 / gamma:.0f}), image {order}-grams; predicted length"
    results[name] = _s2s_row(name, kern, K, Kte, ytr, yte,
                             [dict(n=best["n"], alpha_relative=1e-3, lm_weight=best["lm_weight"], length="predicted",
                                   **S2S_DECODE)], log,
                             {"cv_over_kernels": cv_table, "gamma": gamma, "image_order": order})
    return K, Kte, gamma, order, best


def _product_kernel_free_length(Xtr, ytr, Xte, yte, grams, chosen, log, results):
    """No length constraint: the same image kernel, raw or cosine-normalized (normalizing removes the kernel's
    direct dependence on the number of images), chosen by CV together with the LM weight; its row into ``results``."""
    (K, Kte), (gamma, order, n) = grams, chosen
    free = []
    for normalize in (False, True):
        kern_f = SequenceProductKernel(Gaussian(gamma=gamma), n=(order,), normalize=normalize)
        K_f = kern_f(Xtr) if normalize else K
        scale = float(np.mean(np.diag(K_f)))
        grid = [dict(n=n, alpha=1e-3 * scale, lm_weight=w, length="free", **S2S_DECODE) for w in (0.3, 1.0, 3.0)]
        for score, params in _cv_string_kde(K_f, ytr, grid):
            free.append((score, normalize, params["lm_weight"]))
            log(f"  CV free length normalize={normalize} lm_weight={params['lm_weight']}: {score:.4f}")
    _, normalize, w = max(free, key=lambda c: c[0])
    kern_f = SequenceProductKernel(Gaussian(gamma=gamma), n=(order,), normalize=normalize)
    K_f, Kte_f = (kern_f(Xtr), kern_f(Xte, Xtr)) if normalize else (K, Kte)
    name = (f"product kernel{', cosine-normalized' if normalize else ''}, Gaussian per image (gamma "
            f"1/{1 / gamma:.0f}), image {order}-grams; free length")
    results[name] = _s2s_row(name, kern_f, K_f, Kte_f, ytr, yte,
                             [dict(n=n, alpha_relative=1e-3, lm_weight=w, length="free", **S2S_DECODE)], log,
                             {"gamma": gamma, "image_order": order, "normalize": normalize,
                              "cv_free_length": [{"normalize": nz, "lm_weight": lw, "cv_letter_accuracy": sc}
                                                 for sc, nz, lw in free]})


# ---------------------------------------------------------------------------------------------------------------
def g2p(data_dir, quick=False, log=print):
    words, phonemes = load_cmudict(Path(data_dir) / "g2p_cmudict")
    order = np.random.default_rng(0).permutation(len(words))
    n_train, n_test = (600, 200) if quick else (3000, 1000)
    tr, te = order[:n_train], order[n_train : n_train + n_test]
    Xtr = [words[i] for i in tr]
    ytr = [phonemes[i] for i in tr]
    Xte = [words[i] for i in te]
    yte = [phonemes[i] for i in te]
    kern = NgramKernel(n=3)
    t = time.time()
    K = kern(Xtr)
    scale = float(np.mean(np.diag(K)))
    grid = [dict(n=n, alpha=a * scale, lm_order=3, lm_weight=w, graph_search=gs, max_alternatives=8)
            for n in (2, 3) for a in (1e-2, 1e-1) for w, gs in ((0.0, False), (0.5, True))]
    cv = _cv_string_kde(K, ytr, grid, metric=lambda a, b: -symbol_error_rate(a, b))
    best_score, best = max(cv, key=lambda c: c[0])
    log(f"g2p CV PER {-best_score:.4f} with {best} ({time.time() - t:.0f}s)")
    t = time.time()
    model = StringKDE("precomputed", **best).fit(K, ytr)
    fit_time = time.time() - t
    t = time.time()
    pred = model.predict(kern(Xte, Xtr))
    res = {
        "phoneme_error_rate": symbol_error_rate(yte, pred),
        "word_error_rate": string_error_rate(yte, pred),
        "cv_phoneme_error_rate": -best_score,
        "chosen": best, "alpha_relative": best["alpha"] / scale,
        "split": f"CMUdict 1.1.3 first pronunciations of a-z words ({len(words)}), stress removed; permutation "
                 f"numpy default_rng(0); train = first {n_train}, test = next {n_test}",
        "fit_seconds": fit_time, "predict_seconds": time.time() - t,
        "examples": [[w, " ".join(t_), " ".join(p)] for w, t_, p in list(zip(Xte, yte, pred, strict=True))[:: max(n_test // 8, 1)]],
    }
    log(f"g2p: PER {res['phoneme_error_rate']:.4f} WER {res['word_error_rate']:.4f}")
    return res



"""String kernel dependency estimation: n-gram regression, Euler-circuit pre-images, basis selection.

User guide: docs/strings.md. Bundled OCR handwritten words (Taskar et al.), a few seconds:

    python examples/string_kde.py
"""

import numpy as np

from iokr.kernels import Polynomial
from iokr.strings import (
    SegmentedStringKDE,
    SequencePolynomialKernel,
    StringKDE,
    has_preimage,
    letter_accuracy,
    load_ocr_letters,
    ngram_counts,
    ngram_preimage,
    ngram_preimages,
)

# 1. Pre-images: the padded n-gram counts of a string define a De Bruijn multigraph whose Euler paths spell it.
counts = ngram_counts("banana", 2)
print("bigram counts of 'banana':", dict(sorted(("".join(k), v) for k, v in counts.items())))
print("pre-image:", ngram_preimage(counts, 2), "| all pre-images:", ngram_preimages(counts, 2))
broken = {"^a": 1, "ab": 1, "b$": 1, "ba": 1}  # in-degree != out-degree at 'a' and 'b': no string has these counts
print("has_preimage:", has_preimage(broken, 2), "| generalized algorithm:", repr(ngram_preimage(broken, 2)))

# 2. OCR words: a word is a sequence of 16x8 letter images. Train on 150 words of fold 0, test on 60 of fold 1.
data = load_ocr_letters()  # bundled folds 0 and 1
rng = np.random.default_rng(0)
tr = rng.choice(np.flatnonzero(data["folds"] == 0), 150, replace=False)
te = rng.choice(np.flatnonzero(data["folds"] == 1), 60, replace=False)
X_train, y_train = [data["images"][i] for i in tr], [data["words"][i] for i in tr]
X_test, y_test = [data["images"][i] for i in te], [data["words"][i] for i in te]

# (a) Perfect segmentation: one regression per letter image onto the 26 letters, Viterbi with a trigram model.
seg = SegmentedStringKDE(Polynomial(degree=3, gamma=1 / 64), alpha=1.0, lm_order=3, lm_weight=0.1)
seg.fit(X_train, y_train)
scores = seg.segment_scores(X_test)
print(f"segmented, no language model: letter accuracy {letter_accuracy(y_test, seg.decode(scores, 0.0)):.3f}")
print(f"segmented, trigram model:     letter accuracy {letter_accuracy(y_test, seg.decode(scores)):.3f}")

# (b) String to string, no segmentation: input kernel on image n-grams, output = letter bigram counts,
#     learned rounding thresholds, degree repair, Euler pre-images ranked by the KDE objective.
kernel = SequencePolynomialKernel(n=2, degree=3, gamma=1 / 16)
for basis, n_basis in (("full", None), ("greedy", 60), ("cholesky", 60)):
    model = StringKDE(kernel, n=2, alpha=10.0, max_alternatives=4, basis=basis, n_basis=n_basis)
    predicted = model.fit(X_train, y_train).predict(X_test)
    print(f"string KDE, basis={basis:8s} ({n_basis or len(tr)} regressors): letter accuracy "
          f"{letter_accuracy(y_test, predicted):.3f}; e.g. {y_test[0]!r} -> {predicted[0]!r}")

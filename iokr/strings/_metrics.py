"""Edit distance and the string accuracies reported for transductions.

Letter accuracy (used for OCR, as in Cortes et al. 2005 where "extra or missing characters are counted as
errors") is ``1 - sum_i ED(y_i, yhat_i) / sum_i |y_i|`` with ``ED`` the Levenshtein distance (unit cost
insertions, deletions, substitutions): one minus the character error rate. It equals the fraction of correct
letters when predictions have the right length. The phoneme error rate is the same quantity on phoneme strings;
the word error rate is the fraction of strings not predicted exactly.
"""

from __future__ import annotations

import numpy as np

from ._ngrams import as_symbols


def edit_distance(a, b):
    """Levenshtein distance between two strings or symbol sequences (unit costs)."""
    a = as_symbols(a, "a")
    b = as_symbols(b, "b")
    if len(a) < len(b):
        a, b = b, a
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def _pairs(y_true, y_pred):
    y_true = list(y_true)
    y_pred = list(y_pred)
    if len(y_true) != len(y_pred):
        raise ValueError(f"'y_true' has {len(y_true)} strings but 'y_pred' has {len(y_pred)}.")
    if not y_true:
        raise ValueError("'y_true' must hold at least one string.")
    return y_true, y_pred


def letter_accuracy(y_true, y_pred):
    """``1 - sum ED(y, yhat) / sum |y|`` (can be negative when predictions are much too long)."""
    y_true, y_pred = _pairs(y_true, y_pred)
    total = sum(len(as_symbols(y)) for y in y_true)
    if total == 0:
        raise ValueError("'y_true' holds only empty strings; letter accuracy is undefined.")
    return 1.0 - sum(edit_distance(t, p) for t, p in zip(y_true, y_pred, strict=True)) / total


def symbol_error_rate(y_true, y_pred):
    """``sum ED(y, yhat) / sum |y|`` (phoneme error rate for phoneme strings)."""
    return 1.0 - letter_accuracy(y_true, y_pred)


def string_error_rate(y_true, y_pred):
    """Fraction of strings not predicted exactly (word error rate)."""
    y_true, y_pred = _pairs(y_true, y_pred)
    return float(np.mean([as_symbols(t) != as_symbols(p) for t, p in zip(y_true, y_pred, strict=True)]))

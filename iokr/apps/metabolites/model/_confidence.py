"""Confidence of a top hit: a calibrated probability that the best-scoring candidate is the true structure.

Calibration data are formed on training structures only, after the hyperparameters are chosen: for each of the
cross-validation folds, the model is refitted (same parameters, kernel weights refitted) on the other folds and
held-out structures are ranked. With a decoy table (the default since issue #30, :mod:`._decoys`), every held-out
structure that has an isomer is ranked among all training structures of its formula and its decoys (non-library
isomers of its formula and non-library structures nearest in mass), with the fold model's structure prior (which
has not seen the held-out structure): lists that look like users' PubChem-like lists. Without one, it is ranked (a)
among all held-out structures of its fold and (b) when its molecular formula is shared by other training
structures, among the structures of its formula filled up to 20 by the nearest masses (the prior of a candidate
that is one of the fold model's training structures leaves the candidate itself out). Each ranked list gives one
example: the score margin between the best and the second-best candidate, the list size, and whether the best
candidate is the true one. A logistic regression on ``(margin / scale, log(list size))`` maps them to a
probability; ``scale`` is the median margin of the calibration data, so the coefficients are comparable between
models. The probability is conditional on the true structure being among the candidates: it cannot see a database
that lacks it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
from sklearn.linear_model import LogisticRegression

#: Fewest hold-out ranked lists a calibration is fitted on; fewer give no confidence (a few dozen training structures
#: gave fits of 1.000 for a 763-candidate list and 0.000 for every one-candidate list).
MIN_CALIBRATION_EXAMPLES = 100
#: A fit with a coefficient above this (on margins scaled by their median and log list sizes) is degenerate: it
#: separates its own examples instead of estimating a probability.
MAX_CALIBRATION_COEFFICIENT = 50.0
#: A fit giving every one of its own examples a probability outside ``[LOW, 1 - LOW]`` is degenerate as well.
DEGENERATE_PROBABILITY = 0.01

#: Bins of the expected calibration error and the reliability diagram (equal width on [0, 1]).
N_BINS = 10


@dataclass(frozen=True)
class Calibration:
    """Logistic calibration of the top hit's score margin.

    Attributes
    ----------
    intercept, margin_weight, size_weight : float
        ``p = 1 / (1 + exp(-(intercept + margin_weight * m / scale + size_weight * log(n))))``.
    scale : float
        Median margin of the calibration data.
    max_margin : float
        Largest calibration margin; larger margins (and single-candidate lists) are clipped to it.
    n_examples : int
        Ranked lists the calibration was fitted on.
    """

    intercept: float
    margin_weight: float
    size_weight: float
    scale: float
    max_margin: float
    n_examples: int

    def probability(self, margins, sizes):
        """Probability that each query's top hit is right.

        Parameters
        ----------
        margins : array-like of shape (m,)
            Best minus second-best score (``inf`` or NaN for a single candidate: clipped to ``max_margin``).
        sizes : array-like of shape (m,)
            Number of candidates.

        Returns
        -------
        p : ndarray of shape (m,)
        """
        margins = np.asarray(margins, dtype=np.float64)
        margins = np.where(np.isfinite(margins), margins, self.max_margin)
        margins = np.clip(margins, 0.0, self.max_margin)
        sizes = np.maximum(np.asarray(sizes, dtype=np.float64), 1.0)
        z = self.intercept + self.margin_weight * margins / self.scale + self.size_weight * np.log(sizes)
        return 1.0 / (1.0 + np.exp(-z))

    def to_dict(self):
        return {k: float(v) if k != "n_examples" else int(v) for k, v in asdict(self).items()}

    @classmethod
    def from_dict(cls, data):
        return cls(**{k: (int if k == "n_examples" else float)(data[k]) for k in cls.__dataclass_fields__})


def top_margins(scores, truth=None):
    """Score margin of each list's best candidate over its runner-up, list sizes, and whether the best is true.

    Parameters
    ----------
    scores : list of ndarray
        Candidate scores per list (higher is better).
    truth : sequence of int, optional
        Position of the true candidate per list.

    Returns
    -------
    margins : ndarray of shape (m,)
        ``inf`` for single-candidate lists, NaN for empty ones.
    sizes : ndarray of int, shape (m,)
    correct : ndarray of bool, shape (m,) or None
        The best candidate is the true one and no other candidate has its score.
    """
    margins = np.full(len(scores), np.nan)
    sizes = np.array([len(s) for s in scores], dtype=np.int64)
    correct = None if truth is None else np.zeros(len(scores), dtype=bool)
    for i, s in enumerate(scores):
        s = np.asarray(s, dtype=np.float64)
        if s.size == 0:
            continue
        top2 = np.sort(s)[-2:] if s.size > 1 else s
        margins[i] = top2[-1] - top2[0] if s.size > 1 else np.inf
        if correct is not None and truth[i] is not None and truth[i] >= 0:
            t = s[truth[i]]
            correct[i] = bool(t >= s.max() and np.count_nonzero(s == t) == 1)
    return margins, sizes, correct


def fit_calibration(margins, sizes, correct):
    """Fit :class:`Calibration` on hold-out lists (see the module docstring).

    Parameters
    ----------
    margins, sizes : ndarray of shape (m,)
    correct : ndarray of bool, shape (m,)

    Returns
    -------
    Calibration

    Raises
    ------
    ValueError
        When the examples hold no right or no wrong top hit (nothing to calibrate on), fewer than
        :data:`MIN_CALIBRATION_EXAMPLES` lists, or the fit is degenerate (a coefficient above
        :data:`MAX_CALIBRATION_COEFFICIENT` in magnitude, examples it separates perfectly, or every own example's
        probability within :data:`DEGENERATE_PROBABILITY` of 0 or 1); the message is the reason, one line.
    """
    margins = np.asarray(margins, dtype=np.float64)
    keep = ~np.isnan(margins)
    margins, sizes, correct = margins[keep], np.asarray(sizes)[keep], np.asarray(correct, dtype=bool)[keep]
    # the count first: a handful of lists is the reason even when they also happen to be all right or all wrong
    if correct.size < MIN_CALIBRATION_EXAMPLES:
        raise ValueError(f"calibration needs at least {MIN_CALIBRATION_EXAMPLES} hold-out lists; got {correct.size}")
    if correct.all() or not correct.any():
        raise ValueError(f"calibration needs right and wrong top hits; got {int(correct.sum())} right of "
                         f"{correct.size}")
    finite = margins[np.isfinite(margins)]
    max_margin = float(finite.max()) if finite.size else 1.0
    scale = float(np.median(finite)) if finite.size and np.median(finite) > 0 else max(max_margin, 1e-12)
    margins = np.clip(np.where(np.isfinite(margins), margins, max_margin), 0.0, max_margin)
    X = np.column_stack([margins / scale, np.log(np.maximum(sizes, 1))])
    model = LogisticRegression(C=100.0).fit(X, correct)
    calibration = Calibration(float(model.intercept_[0]), float(model.coef_[0, 0]), float(model.coef_[0, 1]), scale,
                              max_margin, int(correct.size))
    largest = max(abs(calibration.intercept), abs(calibration.margin_weight), abs(calibration.size_weight))
    if not largest <= MAX_CALIBRATION_COEFFICIENT:
        raise ValueError(f"degenerate calibration fit (a coefficient of magnitude {largest:.3g} > "
                         f"{MAX_CALIBRATION_COEFFICIENT:g}) on {correct.size} hold-out lists")
    p = calibration.probability(margins, sizes)
    if p[correct].min() > p[~correct].max():
        raise ValueError(f"degenerate calibration fit (its {correct.size} hold-out lists are separable: every right "
                         "top hit gets a higher probability than every wrong one)")
    if not np.any((p > DEGENERATE_PROBABILITY) & (p < 1 - DEGENERATE_PROBABILITY)):
        raise ValueError(f"degenerate calibration fit (every one of its {correct.size} hold-out lists gets a "
                         f"probability below {DEGENERATE_PROBABILITY} or above {1 - DEGENERATE_PROBABILITY})")
    return calibration


def expected_calibration_error(probabilities, correct, n_bins=N_BINS):
    """Expected calibration error over equal-width bins, and the reliability diagram's bins.

    Parameters
    ----------
    probabilities : ndarray of shape (m,)
    correct : ndarray of bool, shape (m,)

    Returns
    -------
    ece : float
        ``sum_b (n_b / m) |mean(correct in b) - mean(p in b)|``.
    bins : list of dict
        ``low``, ``high``, ``n``, ``mean_confidence``, ``accuracy`` per non-empty bin.
    """
    p = np.asarray(probabilities, dtype=np.float64)
    y = np.asarray(correct, dtype=np.float64)
    if p.size == 0:
        return float("nan"), []
    which = np.minimum((p * n_bins).astype(int), n_bins - 1)
    ece, bins = 0.0, []
    for b in range(n_bins):
        in_bin = which == b
        if not in_bin.any():
            continue
        conf, acc = float(p[in_bin].mean()), float(y[in_bin].mean())
        ece += in_bin.sum() / p.size * abs(acc - conf)
        bins.append({"low": b / n_bins, "high": (b + 1) / n_bins, "n": int(in_bin.sum()),
                     "mean_confidence": conf, "accuracy": acc})
    return float(ece), bins


def calibration_report(calibration, scores, truth):
    """Reliability of the confidence on evaluated lists: expected calibration error and diagram bins.

    Parameters
    ----------
    calibration : Calibration
    scores : list of ndarray
        Candidate scores per query.
    truth : sequence of int or None
        Position of the true candidate per query (queries without it are left out).

    Returns
    -------
    report : dict
        ``ece``, ``bins`` (see :func:`expected_calibration_error`), ``n``, ``mean_confidence``, ``accuracy``.
    """
    keep = [i for i, t in enumerate(truth) if t is not None]
    margins, sizes, correct = top_margins([scores[i] for i in keep], [truth[i] for i in keep])
    p = calibration.probability(margins, sizes)
    ece, bins = expected_calibration_error(p, correct)
    return {"ece": ece, "bins": bins, "n": int(p.size), "mean_confidence": float(p.mean()) if p.size else None,
            "accuracy": float(correct.mean()) if p.size else None}

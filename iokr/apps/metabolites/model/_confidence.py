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
candidate is the true one, and (optional features, :data:`OPTIONAL_FEATURES`, issue #30) the score gap from the
best to the 5th-best candidate and the number of other candidates within one ``scale`` of the best. A logistic
regression on ``(margin / scale, log(list size)[, gap / scale][, log(1 + candidates within)])`` maps them to a
probability; ``scale`` is the median margin of the calibration data, so the coefficients are comparable between
models. The size weight is constrained to be <= 0 (a longer list never makes a top hit likelier to be right; a
positive fitted weight, an artefact of the calibration lists, is set to 0 and the other weights refitted: the
constrained maximum-likelihood fit, since the log-loss is convex). The probability is conditional on the true structure being among the candidates: it cannot see a database
that lacks it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from ._list_softmax import fit_list_softmax, list_softmax_log_odds
from ._noise_floor import N_BINS, bin_of, noise_floor_summary, perfect_calibration_ece

#: Fewest hold-out ranked lists a calibration is fitted on; fewer give no confidence (a few dozen training structures
#: gave fits of 1.000 for a 763-candidate list and 0.000 for every one-candidate list).
MIN_CALIBRATION_EXAMPLES = 100
#: A fit with a coefficient above this (on margins scaled by their median and log list sizes) is degenerate: it
#: separates its own examples instead of estimating a probability.
MAX_CALIBRATION_COEFFICIENT = 50.0
#: A fit giving every one of its own examples a probability outside ``[LOW, 1 - LOW]`` is degenerate as well.
DEGENERATE_PROBABILITY = 0.01

#: Features beyond margin and list size a calibration may use: the score gap from the top hit to the 5th candidate
#: (to the last one in shorter lists), the number of other candidates scoring within one ``scale`` of the top hit,
#: and the log-odds of the list softmax (:mod:`._list_softmax`: every score of the list; its temperature and
#: "elsewhere" mass fitted first).
OPTIONAL_FEATURES = ("gap_to_5th", "n_within_margin", "list_softmax")
#: Calibration families: a logistic model of the features, or the list softmax alone.
FAMILIES = ("logistic", "list_softmax")


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
    gap_weight, within_weight : float
        Weights of ``gap / scale`` (gap to the 5th candidate, clipped to ``[0, max_gap]``) and of
        ``log(1 + n_within)`` (other candidates within one ``scale`` of the top hit); 0 for a calibration that does
        not use them (and for model files written before they existed).
    max_gap : float
        Largest calibration gap; larger gaps (and single-candidate lists) are clipped to it.
    size_weight_clipped : bool
        The unconstrained fit had a positive size weight: it was set to 0 and the other weights refitted.
    softmax_weight, temperature, elsewhere : float
        Weight of the list softmax's log-odds (:mod:`._list_softmax`, temperature ``T`` and "elsewhere" log-mass
        ``b`` in units of ``scale``); 0 for a calibration that does not use it. The list softmax alone is a
        calibration with this weight 1 and every other weight and the intercept 0.
    """

    intercept: float
    margin_weight: float
    size_weight: float
    scale: float
    max_margin: float
    n_examples: int
    gap_weight: float = 0.0
    within_weight: float = 0.0
    max_gap: float = 1.0
    size_weight_clipped: bool = False
    softmax_weight: float = 0.0
    temperature: float = 1.0
    elsewhere: float = 0.0

    @property
    def features(self):
        """The features this calibration uses (margin and size, then those of :data:`OPTIONAL_FEATURES`)."""
        weights = (self.gap_weight, self.within_weight, self.softmax_weight)
        return ("margin", "size") + tuple(f for f, w in zip(OPTIONAL_FEATURES, weights, strict=True) if w != 0)

    def softmax_log_odds(self, scores):
        """The list softmax's log-odds of each list's top hit with this calibration's ``T`` and ``b``."""
        return list_softmax_log_odds(scores, self.scale, self.temperature, self.elsewhere)

    def confidence(self, scores):
        """Probability that each list's top hit is right, from its candidates' scores.

        Parameters
        ----------
        scores : list of m ndarrays
            Candidate scores per list (higher is better); empty lists get NaN.

        Returns
        -------
        p : ndarray of shape (m,)
        """
        margins, sizes, _, gaps, n_within = top_hit_features(scores, self.scale)
        log_odds = self.softmax_log_odds(scores) if self.softmax_weight != 0 else None
        p = self.probability(margins, sizes, gaps, n_within, np.nan_to_num(log_odds) if log_odds is not None else None)
        p[sizes == 0] = np.nan
        return p

    def probability(self, margins, sizes, gaps=None, n_within=None, softmax_log_odds=None):
        """Probability that each query's top hit is right.

        Parameters
        ----------
        margins : array-like of shape (m,)
            Best minus second-best score (``inf`` or NaN for a single candidate: clipped to ``max_margin``).
        sizes : array-like of shape (m,)
            Number of candidates.
        gaps, n_within : array-like of shape (m,), optional
            Gap to the 5th candidate and candidates within one ``scale`` (:func:`top_hit_features`); required
            when the calibration uses them.
        softmax_log_odds : array-like of shape (m,), optional
            :meth:`softmax_log_odds` of the lists; required when the calibration uses it.

        Returns
        -------
        p : ndarray of shape (m,)

        Raises
        ------
        ValueError
            When the calibration uses a feature that is not given.
        """
        margins = _clipped(margins, self.max_margin)
        sizes = np.maximum(np.asarray(sizes, dtype=np.float64), 1.0)
        z = self.intercept + self.margin_weight * margins / self.scale + self.size_weight * np.log(sizes)
        for name, weight, values in (("gaps", self.gap_weight, gaps), ("n_within", self.within_weight, n_within),
                                     ("softmax_log_odds", self.softmax_weight, softmax_log_odds)):
            if weight != 0 and values is None:
                raise ValueError(f"this calibration uses {name}; none were given")
        if self.gap_weight != 0:
            z = z + self.gap_weight * _clipped(gaps, self.max_gap) / self.scale
        if self.within_weight != 0:
            z = z + self.within_weight * np.log1p(np.asarray(n_within, dtype=np.float64))
        if self.softmax_weight != 0:
            z = z + self.softmax_weight * np.asarray(softmax_log_odds, dtype=np.float64)
        return 1.0 / (1.0 + np.exp(-z))

    def to_dict(self):
        return {k: (int(v) if k == "n_examples" else bool(v) if k == "size_weight_clipped" else float(v))
                for k, v in asdict(self).items()}

    @classmethod
    def from_dict(cls, data):
        """From :meth:`to_dict`; model files written before the optional features lack them (weights 0)."""
        fields = {k: v for k, v in cls.__dataclass_fields__.items()
                  if k in data or k in ("intercept", "margin_weight", "size_weight", "scale", "max_margin",
                                        "n_examples")}
        kinds = {"n_examples": int, "size_weight_clipped": bool}
        return cls(**{k: kinds.get(k, float)(data[k]) for k in fields})


def _clipped(values, largest):
    """``values`` with non-finite entries (single-candidate lists) set to ``largest``, clipped to ``[0, largest]``."""
    values = np.asarray(values, dtype=np.float64)
    return np.clip(np.where(np.isfinite(values), values, largest), 0.0, largest)


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


def top_hit_features(scores, scale, truth=None):
    """The calibration's features of each list's top hit (:func:`top_margins` and :data:`OPTIONAL_FEATURES`).

    Parameters
    ----------
    scores : list of m ndarrays
        Candidate scores per list (higher is better).
    scale : float
        The margin unit: ``n_within`` counts candidates scoring at least ``best - scale``.
    truth : sequence of int, optional

    Returns
    -------
    margins, sizes, correct
        As :func:`top_margins`.
    gaps : ndarray of shape (m,)
        Best minus 5th-best score (minus the lowest in lists of 2-4 candidates; ``inf`` for one candidate, NaN for
        none).
    n_within : ndarray of int, shape (m,)
        Other candidates with a score >= best - ``scale`` (ties with the best included).
    """
    margins, sizes, correct = top_margins(scores, truth)
    gaps = np.full(len(scores), np.nan)
    n_within = np.zeros(len(scores), dtype=np.int64)
    for i, s in enumerate(scores):
        s = np.asarray(s, dtype=np.float64)
        if s.size == 0:
            continue
        best = s.max()
        k = min(5, s.size)
        # the k-th largest without a full sort (lists of thousands of candidates)
        gaps[i] = best - np.partition(s, s.size - k)[s.size - k] if s.size > 1 else np.inf
        n_within[i] = np.count_nonzero(s >= best - scale) - 1
    return margins, sizes, correct, gaps, n_within


def fit_calibration_on_lists(scores, truth, features=(), family="logistic"):
    """Fit :class:`Calibration` on hold-out ranked lists, with optional features.

    Parameters
    ----------
    scores : list of m ndarrays
        Candidate scores per hold-out list.
    truth : sequence of m int
        Position of the true candidate per list.
    features : tuple of str
        Those of :data:`OPTIONAL_FEATURES` to use besides margin and list size (``family="logistic"``).
    family : {"logistic", "list_softmax"}
        A logistic model of the features, or the list softmax alone (``features`` must then be empty).

    The margin unit is the median finite margin of the lists; with ``"list_softmax"`` among the features or as the
    family, its temperature and "elsewhere" mass are fitted first (:func:`~._list_softmax.fit_list_softmax`). The
    fit, its result and its refusals (a ``ValueError``, as for an unknown feature or family) are
    :func:`fit_calibration`'s.
    """
    unknown = sorted(set(features) - set(OPTIONAL_FEATURES))
    if unknown:
        raise ValueError(f"calibration features must be among {list(OPTIONAL_FEATURES)}; got {unknown}")
    if family not in FAMILIES or (family == "list_softmax" and features):
        raise ValueError(f"calibration family must be one of {list(FAMILIES)} (the list softmax without other "
                         f"features); got {family!r} with features {list(features)}")
    margins = top_margins(scores)[0]
    finite = margins[np.isfinite(margins)]
    scale = _median_margin(finite, float(finite.max()) if finite.size else 1.0)
    margins, sizes, correct, gaps, n_within = top_hit_features(scores, scale, truth)
    softmax = None
    if family == "list_softmax" or "list_softmax" in features:
        _check_examples(correct[~np.isnan(margins)])
        kept = [s for s, m in zip(scores, margins, strict=True) if not np.isnan(m)]
        temperature, elsewhere = fit_list_softmax(kept, correct[~np.isnan(margins)], scale)
        softmax = (temperature, elsewhere, list_softmax_log_odds(scores, scale, temperature, elsewhere))
    if family == "list_softmax":
        return _softmax_only(margins, sizes, correct, scale, softmax)
    return fit_calibration(margins, sizes, correct, gaps=gaps if "gap_to_5th" in features else None,
                           n_within=n_within if "n_within_margin" in features else None, scale=scale,
                           softmax=softmax)


def _check_examples(correct):
    """Refuse too few lists, or lists that are all right or all wrong (the reason first: the count)."""
    if correct.size < MIN_CALIBRATION_EXAMPLES:
        raise ValueError(f"calibration needs at least {MIN_CALIBRATION_EXAMPLES} hold-out lists; got {correct.size}")
    if correct.all() or not correct.any():
        raise ValueError(f"calibration needs right and wrong top hits; got {int(correct.sum())} right of "
                         f"{correct.size}")


def _softmax_only(margins, sizes, correct, scale, softmax):
    """The list softmax alone as a :class:`Calibration` (weight 1, no intercept), with :func:`fit_calibration`'s
    refusals of degenerate fits."""
    keep = ~np.isnan(margins)
    finite = margins[keep][np.isfinite(margins[keep])]
    temperature, elsewhere, log_odds = softmax
    calibration = Calibration(0.0, 0.0, 0.0, scale, float(finite.max()) if finite.size else 1.0, int(keep.sum()),
                              softmax_weight=1.0, temperature=temperature, elsewhere=elsewhere)
    _check_degenerate(calibration.probability(margins[keep], sizes[keep], softmax_log_odds=log_odds[keep]),
                      correct[keep])
    return calibration


def _median_margin(finite, max_margin):
    median = float(np.median(finite)) if finite.size else 0.0
    return median if median > 0 else max(max_margin, 1e-12)


def fit_calibration(margins, sizes, correct, *, gaps=None, n_within=None, scale=None, softmax=None):
    """Fit :class:`Calibration` on hold-out lists (see the module docstring).

    Parameters
    ----------
    margins, sizes : ndarray of shape (m,)
    correct : ndarray of bool, shape (m,)
    gaps, n_within : ndarray of shape (m,), optional
        The optional features (:func:`top_hit_features`); given ones are used.
    scale : float, optional
        The margin unit ``n_within`` was counted with (default: the median finite margin, which it must be).
    softmax : (temperature, elsewhere, log_odds), optional
        A fitted list softmax and its log-odds per list (shape (m,)): used as one more feature.

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
    gaps = None if gaps is None else np.asarray(gaps, dtype=np.float64)[keep]
    n_within = None if n_within is None else np.asarray(n_within, dtype=np.float64)[keep]
    log_odds = None if softmax is None else np.asarray(softmax[2], dtype=np.float64)[keep]
    # the count first: a handful of lists is the reason even when they also happen to be all right or all wrong
    _check_examples(correct)
    finite = margins[np.isfinite(margins)]
    max_margin = float(finite.max()) if finite.size else 1.0
    scale = _median_margin(finite, max_margin) if scale is None else float(scale)
    finite_gaps = gaps[np.isfinite(gaps)] if gaps is not None else np.zeros(0)
    max_gap = float(finite_gaps.max()) if finite_gaps.size else 1.0
    columns = {"margin": _clipped(margins, max_margin) / scale, "size": np.log(np.maximum(sizes, 1))}
    if gaps is not None:
        columns["gap_to_5th"] = _clipped(gaps, max_gap) / scale
    if n_within is not None:
        columns["n_within_margin"] = np.log1p(n_within)
    if log_odds is not None:
        columns["list_softmax"] = log_odds
    weights, intercept = _logistic(columns, correct)
    clipped = weights["size"] > 0
    if clipped:  # the constrained optimum lies on the bound: size weight 0, the others refitted
        weights, intercept = _logistic({k: v for k, v in columns.items() if k != "size"}, correct)
        weights["size"] = 0.0
    calibration = Calibration(intercept, weights["margin"], weights["size"], scale, max_margin, int(correct.size),
                              weights.get("gap_to_5th", 0.0), weights.get("n_within_margin", 0.0), max_gap, clipped,
                              *((weights["list_softmax"], *softmax[:2]) if softmax is not None else ()))
    largest = max(abs(intercept), *(abs(w) for w in weights.values()))
    if not largest <= MAX_CALIBRATION_COEFFICIENT:
        raise ValueError(f"degenerate calibration fit (a coefficient of magnitude {largest:.3g} > "
                         f"{MAX_CALIBRATION_COEFFICIENT:g}) on {correct.size} hold-out lists")
    _check_degenerate(calibration.probability(margins, sizes, gaps, n_within, log_odds), correct)
    return calibration


def _check_degenerate(p, correct):
    """Refuse a fit that separates its own examples or gives every one of them a probability near 0 or 1."""
    if p[correct].min() > p[~correct].max():
        raise ValueError(f"degenerate calibration fit (its {correct.size} hold-out lists are separable: every right "
                         "top hit gets a higher probability than every wrong one)")
    if not np.any((p > DEGENERATE_PROBABILITY) & (p < 1 - DEGENERATE_PROBABILITY)):
        raise ValueError(f"degenerate calibration fit (every one of its {correct.size} hold-out lists gets a "
                         f"probability below {DEGENERATE_PROBABILITY} or above {1 - DEGENERATE_PROBABILITY})")


def _logistic(columns, correct):
    """Weights (by column name) and intercept of a logistic regression of ``correct`` on ``columns``."""
    # sklearn.linear_model loads scipy.optimize and scipy.stats (0.5 s), and identify never fits a calibration
    from sklearn.linear_model import LogisticRegression  # noqa: PLC0415 - start-up time

    names = list(columns)
    model = LogisticRegression(C=100.0, max_iter=1000).fit(np.column_stack([columns[k] for k in names]), correct)
    return {k: float(w) for k, w in zip(names, model.coef_[0], strict=True)}, float(model.intercept_[0])


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
    which = bin_of(p, n_bins)
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


def calibration_report(calibration, scores, truth, groups=None, seed=0):
    """Reliability of the confidence on evaluated lists: expected calibration error, diagram bins, noise floor.

    Parameters
    ----------
    calibration : Calibration
    scores : list of ndarray
        Candidate scores per query.
    truth : sequence of int or None
        Position of the true candidate per query (queries without it are left out).
    groups : sequence, optional
        Group of each query (the structure of each spectrum): adds ``perfect_ece_shared``.
    seed : int
        Seed of the noise floor's simulations.

    Returns
    -------
    report : dict
        ``ece``, ``bins`` (see :func:`expected_calibration_error`), ``n``, ``mean_confidence``, ``accuracy`` (``ece``,
        ``mean_confidence`` and ``accuracy`` None when no query has its true candidate), and
        ``perfect_ece``: the ECE a perfectly calibrated confidence would show on these queries
        (:func:`~._noise_floor.perfect_calibration_ece`, :func:`~._noise_floor.noise_floor_summary`: ``median``, ``low``, ``high``); with
        ``groups``, ``perfect_ece_shared`` for one shared outcome per group.
    """
    keep = [i for i, t in enumerate(truth) if t is not None]
    kept = [scores[i] for i in keep]
    correct = top_margins(kept, [truth[i] for i in keep])[2]
    p = calibration.confidence(kept)
    ece, bins = expected_calibration_error(p, correct)
    # no query: no ECE (None, written as JSON null, not NaN, which strict JSON readers refuse)
    report = {"ece": ece if p.size else None, "bins": bins, "n": int(p.size),
              "mean_confidence": float(p.mean()) if p.size else None,
              "accuracy": float(correct.mean()) if p.size else None,
              "perfect_ece": noise_floor_summary(perfect_calibration_ece(p, seed=seed))}
    if groups is not None:
        report["perfect_ece_shared"] = noise_floor_summary(
            perfect_calibration_ece(p, seed=seed, groups=np.asarray([groups[i] for i in keep])))
    return report

"""The noise floor of an expected calibration error: the ECE a perfectly calibrated confidence shows by chance.

At the sizes of evaluation sets (60 lists, a few hundred or thousand spectra of the same structures) the ECE of a
perfect confidence is far from 0: outcomes are coin flips with the confidence as their probability, and 10 bins of
a few queries each turn the flips' noise into a positive error. :func:`perfect_calibration_ece` simulates it from
the confidences alone (never real outcomes), so reports can show an ECE beside what noise alone would give.
"""

from __future__ import annotations

import numpy as np

#: Bins of the expected calibration error, its reliability diagram and its noise floor (equal width on [0, 1]).
N_BINS = 10


def bin_of(probabilities, n_bins=N_BINS):
    """Equal-width bin of each confidence on [0, 1] (1.0 in the last bin): the one binning of the ECE, its
    reliability diagram and its simulated noise floor.

    Parameters
    ----------
    probabilities : ndarray of shape (m,)
    n_bins : int

    Returns
    -------
    bins : ndarray of int, shape (m,)
        In ``0 .. n_bins - 1``.
    """
    return np.minimum((probabilities * n_bins).astype(int), n_bins - 1)


#: Simulated outcome sets of :func:`perfect_calibration_ece` (the 95 % band's ends move by about 0.002 between seeds
#: at n = 60).
N_SIMULATIONS = 2000


def perfect_calibration_ece(probabilities, n_simulations=N_SIMULATIONS, seed=0, groups=None, n_bins=N_BINS):
    """The expected calibration error a perfectly calibrated confidence shows by chance: the noise floor of an ECE.

    Each simulation draws the outcomes a perfectly calibrated predictor with these confidences would have
    (``y_i ~ Bernoulli(p_i)``) and measures their ECE with the same bins as :func:`~._confidence.expected_calibration_error`.
    Only the confidences are used, never real outcomes. With ``groups`` (e.g. the structure of each spectrum) the
    queries of a group share one draw ``u_g ~ U(0, 1)`` and ``y_i = u_g < p_i``: every query stays perfectly
    calibrated on its own, while the queries of one structure are right or wrong together (the most correlated
    case; spectra of one structure are neither independent nor identical, so the truth lies between the two).

    Parameters
    ----------
    probabilities : array-like of shape (m,)
    n_simulations : int
    seed : int
    groups : array-like of shape (m,), optional
        Group label of each query.
    n_bins : int

    Returns
    -------
    ece : ndarray of shape (n_simulations,)
        The ECE of each simulated outcome set (empty when ``m`` is 0).

    Notes
    -----
    The bins depend on the confidences only, so ``ECE = sum_b |sum_{i in b} (y_i - p_i)| / m`` is a matrix product of
    the simulated residuals with the bin indicator.
    """
    p = np.asarray(probabilities, dtype=np.float64)
    if p.ndim != 1 or np.any(~np.isfinite(p)) or np.any((p < 0) | (p > 1)):
        raise ValueError(f"probabilities must be a 1-D array of values in [0, 1]; got shape {p.shape} "
                         f"with values {p[~((p >= 0) & (p <= 1))][:3].tolist() if p.ndim == 1 else '...'}")
    if p.size == 0:
        return np.zeros(0)
    rng = np.random.default_rng(seed)
    if groups is None:
        u = rng.random((n_simulations, p.size))
    else:
        labels = np.asarray(groups)
        if labels.shape != p.shape:
            raise ValueError(f"groups must have one label per probability ({p.size}); got shape {labels.shape}")
        _, group_of = np.unique(labels, return_inverse=True)
        u = rng.random((n_simulations, int(group_of.max()) + 1))[:, group_of]
    which = bin_of(p, n_bins)
    indicator = np.zeros((p.size, n_bins))
    indicator[np.arange(p.size), which] = 1.0
    residuals = (u < p).astype(np.float64) - p
    return np.abs(residuals @ indicator).sum(axis=1) / p.size


def noise_floor_summary(ece):
    """Median and 95 % band (2.5 and 97.5 % quantiles) and the 95th percentile of simulated ECEs."""
    ece = np.asarray(ece, dtype=np.float64)
    if ece.size == 0:
        return {}
    low, median, q95, high = np.quantile(ece, [0.025, 0.5, 0.95, 0.975])
    return {"median": float(median), "low": float(low), "high": float(high), "q95": float(q95),
            "n_simulations": int(ece.size)}

"""List softmax of the top hit: a confidence from the whole score distribution of a candidate list (issue #30).

The hand features of :mod:`._confidence` (margin, gap to the 5th, candidates within a margin) summarise a list by
a few order statistics. The list softmax uses every score: with scores ``s_i`` in units of the calibration's
``scale`` (the median top-hit margin of its data), a temperature ``T`` and a log-mass ``b`` of "the true structure
is somewhere else" (beyond the list's best guess),

    P(top hit is right) = exp(s_1 / T) / (exp(b) + sum_i exp(s_i / T))

(``s_1`` the largest score). A list whose runner-ups crowd the top hit, or a long list of near-equal candidates,
gets a low probability; a top hit far above the rest a high one, unless its absolute score is low against ``b``.
``T`` and ``b`` are fitted by maximum likelihood of the top hits' right/wrong outcomes (the binary log-loss the
calibration is judged by). :class:`~._confidence.Calibration` may use its log-odds as one more feature of the
logistic model, or alone.

Notes
-----
With ``k = 1 / T``, ``R = sum_{i >= 2} exp(k (s_i - s_1))`` and ``E = exp(b - k s_1)``:
``log P = -log(1 + R + E)`` and ``log(1 - P) = log(R + E) - log(1 + R + E)``, computed with ``logaddexp`` so that
neither large scores nor single-candidate lists (``R = 0``) overflow. The log-odds is ``-log(R + E)``.
"""

from __future__ import annotations

import numpy as np

#: Largest inverse temperature (per ``scale``) and ``|b|`` a fit may reach: beyond, it separates its own examples.
MAX_INVERSE_TEMPERATURE = 50.0


def _stacked(scores, scale):
    """Top scores ``s_1 / scale`` per list and the others' ``(s_i - s_1) / scale`` with their list ids."""
    tops = np.full(len(scores), np.nan)
    rest, ids = [], []
    for i, s in enumerate(scores):
        s = np.asarray(s, dtype=np.float64)
        if s.size == 0:
            continue
        j = int(np.argmax(s))
        tops[i] = s[j] / scale
        others = np.delete(s, j)
        rest.append((others - s[j]) / scale)
        ids.append(np.full(others.size, i, dtype=np.intp))
    rest = np.concatenate(rest) if rest else np.zeros(0)
    ids = np.concatenate(ids) if ids else np.zeros(0, dtype=np.intp)
    return tops, rest, ids


def _log_terms(tops, rest, ids, inverse_temperature, elsewhere):
    """``log(R + E)`` and ``log(1 + R + E)`` per list (see the module Notes)."""
    with np.errstate(divide="ignore"):
        log_r = np.log(np.bincount(ids, weights=np.exp(inverse_temperature * rest), minlength=tops.size))
    log_e = elsewhere - inverse_temperature * tops
    log_re = np.logaddexp(log_r, log_e)
    return log_re, np.logaddexp(0.0, log_re)


def list_softmax_log_odds(scores, scale, temperature, elsewhere):
    """Log-odds ``log(P / (1 - P))`` of each list's top hit under the list softmax (NaN for empty lists).

    Parameters
    ----------
    scores : list of m ndarrays
        Candidate scores per list (higher is better).
    scale : float
        Score unit (the calibration's median margin).
    temperature, elsewhere : float
        ``T`` and ``b`` of the module docstring.

    Returns
    -------
    log_odds : ndarray of shape (m,)
    """
    tops, rest, ids = _stacked(scores, scale)
    log_re, _ = _log_terms(np.nan_to_num(tops), rest, ids, 1.0 / temperature, elsewhere)
    out = -log_re
    out[np.isnan(tops)] = np.nan
    return out


def fit_list_softmax(scores, correct, scale):
    """Temperature and "elsewhere" log-mass by maximum likelihood of the top hits' outcomes.

    Parameters
    ----------
    scores : list of m ndarrays
    correct : ndarray of bool, shape (m,)
        The top hit of each list is the true structure.
    scale : float

    Returns
    -------
    temperature, elsewhere : float

    Raises
    ------
    ValueError
        When the fit runs to the bounds (an inverse temperature or ``|b|`` of
        :data:`MAX_INVERSE_TEMPERATURE` or more: the lists are separable) or does not converge.
    """
    # scipy.optimize loads in 0.3 s, and identify never fits a calibration
    from scipy.optimize import minimize  # noqa: PLC0415 - start-up time

    tops, rest, ids = _stacked(scores, scale)
    keep = ~np.isnan(tops)
    if not keep.all():
        raise ValueError("list softmax: every calibration list needs a candidate")
    y = np.asarray(correct, dtype=bool)

    def loss(theta):
        log_re, log_all = _log_terms(tops, rest, ids, np.exp(theta[0]), theta[1])
        return float(np.mean(log_all - np.where(y, 0.0, log_re)))

    # start: unit temperature, "elsewhere" as likely as the top hit of a typical list
    start = np.array([0.0, float(np.median(tops))])
    bound = np.log(MAX_INVERSE_TEMPERATURE)
    result = minimize(loss, start, method="L-BFGS-B",
                      bounds=[(-bound - 5.0, bound), (-MAX_INVERSE_TEMPERATURE * (1 + np.abs(tops).max()),
                                                      MAX_INVERSE_TEMPERATURE * (1 + np.abs(tops).max()))])
    inverse_temperature, elsewhere = float(np.exp(result.x[0])), float(result.x[1])
    if not result.success:
        raise ValueError(f"list softmax fit did not converge ({result.message})")
    if inverse_temperature >= MAX_INVERSE_TEMPERATURE * (1 - 1e-6):
        raise ValueError(f"degenerate list softmax fit (inverse temperature {inverse_temperature:.3g} at the bound "
                         f"{MAX_INVERSE_TEMPERATURE:g}) on {y.size} hold-out lists")
    return 1.0 / inverse_temperature, elsewhere

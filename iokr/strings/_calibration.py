"""Calibrated per-segment log-probabilities from regression outputs, for Viterbi decoding with a language model.

The ridge outputs ``g(x) in R^A`` of a segment (regression onto one-hot symbol codes) are scores, not
probabilities: adding ``lm_weight * log P_LM`` to them mixes two scales, and the best weight depends on the
kernel and on ``alpha``. A multinomial logistic regression on the ``A`` outputs,

    log P(c | x) = z_c - logsumexp(z),    z = W g(x) + b,

fitted on *held-out* outputs (leave-one-out ones, which the exact ridge fit gives in closed form; in-sample outputs
are overconfident) turns them into log-posteriors. Decoding then follows the hybrid HMM recipe: the emission of
symbol ``c`` is ``log P(c | x) - prior_weight * log P(c)`` (``P(x | c)`` up to a constant when
``prior_weight = 1``), and the language model enters with weight 1 in the Bayes combination.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy.special import log_softmax
from sklearn.exceptions import ConvergenceWarning as SklearnConvergenceWarning
from sklearn.linear_model import LogisticRegression

from .._validation import check_array_2d, check_positive_scalar


class LogisticCalibration:
    """Multinomial logistic regression from ``A`` segment scores to ``log P(symbol | segment)``.

    Parameters
    ----------
    C : float, default=10.0
        Inverse L2 regularization of ``W`` (as in :class:`sklearn.linear_model.LogisticRegression`).
    max_iter : int, default=1000
        L-BFGS iterations.

    Attributes
    ----------
    coef_ : ndarray of shape (A, A)
        ``W``: logits ``z = scores @ coef_.T + intercept_``.
    intercept_ : ndarray of shape (A,)
    """

    def __init__(self, C=10.0, max_iter=1000):
        self.C = C
        self.max_iter = max_iter

    def fit(self, scores, codes):
        """Fit on held-out scores.

        Parameters
        ----------
        scores : ndarray of shape (n, A)
            Held-out regression outputs of ``n`` segments (column ``c`` scores symbol ``c``).
        codes : ndarray of int of shape (n,)
            True symbol ids in ``0..A-1``.

        Returns
        -------
        self : LogisticCalibration
            The fitted calibration.
        """
        C = check_positive_scalar(self.C, "C", "LogisticCalibration")
        scores = check_array_2d(scores, "scores").astype(np.float64, copy=False)
        codes = np.asarray(codes)
        A = scores.shape[1]
        if codes.shape != (scores.shape[0],) or codes.dtype.kind not in "iu" or (
                codes.size and (codes.min() < 0 or codes.max() >= A)):
            raise ValueError(f"'codes' must hold one symbol id in 0..{A - 1} per row of 'scores' "
                             f"({scores.shape[0]}); got shape {codes.shape}, dtype {codes.dtype}.")
        present = np.unique(codes)
        self.coef_ = np.zeros((A, A))
        # Symbols never seen get probability zero (a logit of -inf) rather than a made-up share.
        self.intercept_ = np.full(A, -np.inf)
        if present.size == 1:
            self.intercept_[present[0]] = 0.0
            return self
        with warnings.catch_warnings():
            # The scores are nearly separable for clean data; the solution at max_iter is still calibrated enough.
            warnings.simplefilter("ignore", SklearnConvergenceWarning)
            clf = LogisticRegression(C=C, max_iter=self.max_iter).fit(scores, codes)
        if present.size == 2:
            # Binary sklearn models hold one logit for the second class: the softmax over (0, z) is the same.
            self.coef_[present[1]] = clf.coef_[0]
            self.intercept_[present] = [0.0, clf.intercept_[0]]
        else:
            self.coef_[present] = clf.coef_
            self.intercept_[present] = clf.intercept_
        return self

    def log_proba(self, scores):
        """``log P(c | x)`` for every row of ``scores``.

        Parameters
        ----------
        scores : ndarray of shape (n, A)
            Regression outputs of ``n`` segments.

        Returns
        -------
        log_proba : ndarray of shape (n, A)
            Each row's exponentials sum to one; ``-inf`` for symbols absent at fit.
        """
        scores = np.asarray(scores, dtype=np.float64)
        if scores.ndim != 2 or scores.shape[1] != self.coef_.shape[0]:
            raise ValueError(f"'scores' must have shape (n, {self.coef_.shape[0]}); got {scores.shape}.")
        with np.errstate(invalid="ignore"):
            logits = scores @ self.coef_.T + self.intercept_
        return log_softmax(logits, axis=1)

"""A CSI:FingerID-style baseline for metabolite identification: per-bit fingerprint probabilities, likelihood ranking.

What a user would pick instead of IOKR (Duehrkop et al. 2015, "Searching molecular structure databases with tandem
mass spectra using CSI:FingerID"; Shen et al. 2014), built with scikit-learn on the same spectrum kernels:

1. The input kernel is the IOKR model's combined spectrum kernel (same base kernels, ALIGNF weights fitted on the
   same training structures), so the comparison isolates the output side: per-bit classification and likelihood
   scoring against IOKR's joint output-kernel regression.
2. Every fingerprint bit (Morgan counts binarized, MACCS) gets a kernel ridge classifier on +-1 targets (scikit-learn
   ``KernelRidge(kernel="precomputed")``, all bits in one solve; a per-bit offset: targets centered on their training
   mean), standing in for CSI:FingerID's per-bit SVMs.
3. Platt scaling per bit (a 1-D logistic regression of the bit on its decision value), fitted on out-of-fold decision
   values of the training structures, gives ``p_j(x)``; probabilities are clipped to ``[EPS, 1 - EPS]``.
4. A candidate ``y`` scores its Bernoulli log-likelihood ``sum_j y_j log p_j + (1 - y_j) log (1 - p_j)``.

``alpha`` is chosen by the same grouped k-fold cross-validation over training structures as IOKR's, with the same
folds and the same surrogate lists (every held-out structure ranked among its fold's structures; score = mean of
top-1, top-10 and top-20).
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit
from sklearn.kernel_ridge import KernelRidge

from iokr.apps.metabolites import fold_ids
from iokr.metrics import top_k_accuracy, true_candidate_rank

ALPHAS = (0.01, 0.03, 0.1, 0.3, 1.0, 3.0)
#: Probability floor: a bit predicted with certainty must not veto a candidate on its own.
EPS = 1e-3


def binarize(Y):
    """0/1 fingerprints (count > 0), float64 of the same shape."""
    return (np.asarray(Y) > 0).astype(np.float64)


def _ridge_decisions(K_train, targets, K_test, alpha):
    """Kernel ridge decision values for all bits at once; ``targets`` (n, p) in {-1, +1}, offset by their mean."""
    offset = targets.mean(axis=0)
    model = KernelRidge(alpha=alpha, kernel="precomputed").fit(K_train, targets - offset)
    return model.predict(K_test) + offset


def fit_platt(decisions, bits, n_iter=30):
    """Per-bit Platt scaling ``p = expit(a * d + b)`` by Newton's method on the log-likelihood (all bits at once).

    Parameters
    ----------
    decisions : ndarray of shape (n, p)
    bits : ndarray of shape (n, p) of 0/1

    Returns
    -------
    a, b : ndarrays of shape (p,)
        Bits constant on the training side get ``a = 0`` and ``b`` the log-odds of their smoothed frequency.
    """
    n = bits.shape[0]
    # Platt's smoothed targets keep the optimum finite for separable bits.
    n_pos = bits.sum(axis=0)
    t = np.where(bits > 0, (n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n - n_pos + 2.0))
    a, b = np.zeros(bits.shape[1]), np.log((n_pos + 1.0) / (n - n_pos + 1.0))
    for _ in range(n_iter):
        p = expit(decisions * a + b)
        w = np.clip(p * (1.0 - p), 1e-12, None)
        r = p - t
        g_a, g_b = (r * decisions).sum(axis=0), r.sum(axis=0)
        h_aa, h_ab, h_bb = (w * decisions**2).sum(axis=0) + 1e-9, (w * decisions).sum(axis=0), w.sum(axis=0) + 1e-9
        det = h_aa * h_bb - h_ab**2
        step_a = (h_bb * g_a - h_ab * g_b) / det
        step_b = (h_aa * g_b - h_ab * g_a) / det
        a, b = a - step_a, b - step_b
        if max(np.abs(step_a).max(), np.abs(step_b).max()) < 1e-8:
            break
    constant = (n_pos == 0) | (n_pos == n)
    a[constant] = 0.0
    return a, b


def _log_odds_weights(probabilities):
    """``(w, c)`` with ``log-likelihood(y) = y @ w + c`` for clipped probabilities of shape (m, p)."""
    p = np.clip(probabilities, EPS, 1.0 - EPS)
    return np.log(p) - np.log1p(-p), np.log1p(-p).sum(axis=1)


def out_of_fold_decisions(K, targets, folds, alpha):
    """Decision values of every training structure from the model fitted without its fold, shape (n, p)."""
    out = np.empty_like(targets)
    for f in np.unique(folds):
        tr, te = np.flatnonzero(folds != f), np.flatnonzero(folds == f)
        out[te] = _ridge_decisions(K[np.ix_(tr, tr)], targets[tr], K[np.ix_(te, tr)], alpha)
    return out


def select_alpha(K, bits, n_folds, seed, alphas=ALPHAS):
    """``alpha`` by grouped k-fold CV on the fold surrogate lists; returns ``(alpha, table)``."""
    folds = fold_ids(K.shape[0], n_folds, seed)
    targets = 2.0 * bits - 1.0
    table = []
    for alpha in alphas:
        decisions = out_of_fold_decisions(K, targets, folds, alpha)
        a, b = fit_platt(decisions, bits)
        w, c = _log_odds_weights(expit(decisions * a + b))
        per_fold = []
        for f in range(n_folds):
            # every held-out structure ranked among all structures of its fold (IOKR's "fold" surrogate lists)
            held = np.flatnonzero(folds == f)
            scores = w[held] @ bits[held].T + c[held][:, None]
            ranks = [true_candidate_rank(row, i) for i, row in enumerate(scores)]
            per_fold.append(top_k_accuracy(ranks, (1, 10, 20)))
        score = float(np.mean([(acc[1] + acc[10] + acc[20]) / 3.0 for acc in per_fold]))
        table.append({"alpha": float(alpha), "score": score})
    best = max(table, key=lambda row: row["score"])
    return best["alpha"], table


class FingerprintLikelihoodBaseline:
    """Per-bit kernel classifiers with Platt scaling on a fitted identifier's input kernel; likelihood scoring.

    Parameters
    ----------
    identifier : MetaboliteIdentifier
        Fitted; gives the training Gram's kernel (:meth:`test_kernel` against its training spectra).
    alpha : float
    n_folds, seed : int
        Folds of the out-of-fold decision values the Platt scaling is fitted on.
    """

    def __init__(self, identifier, alpha, n_folds=3, seed=0):
        self.identifier, self.alpha, self.n_folds, self.seed = identifier, alpha, n_folds, seed

    def fit(self, K, Y):
        """Fit on the training Gram ``K`` (n, n) of the identifier's kernel and training fingerprints ``Y`` (n, p)."""
        bits = binarize(Y)
        targets = 2.0 * bits - 1.0
        folds = fold_ids(K.shape[0], self.n_folds, self.seed)
        self.platt_ = fit_platt(out_of_fold_decisions(K, targets, folds, self.alpha), bits)
        offset = targets.mean(axis=0)
        self.offset_ = offset
        self.ridge_ = KernelRidge(alpha=self.alpha, kernel="precomputed").fit(K, targets - offset)
        return self

    def probabilities(self, K_test):
        """Per-bit probabilities ``p_j(x)`` of query rows of the test-versus-train Gram, shape (m, p)."""
        a, b = self.platt_
        return expit((self.ridge_.predict(K_test) + self.offset_) * a + b)

    def score_sets(self, spectra, candidate_sets, *, test_kernel=None):
        """Log-likelihood of every candidate of every query (the interface of ``MetaboliteIdentifier``)."""
        K_test, _ = self.identifier.test_kernel(spectra) if test_kernel is None else test_kernel
        w, c = _log_odds_weights(self.probabilities(K_test))
        pool = candidate_sets.pool
        return [binarize(pool[idx]) @ w[q] + c[q] for q, idx in enumerate(candidate_sets.indices)]

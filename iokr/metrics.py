"""Evaluation measures: rank of the true candidate, top-k accuracy with tie policies, MRR, set-valued F1 and
Hamming loss, concordance index and AUC."""

from __future__ import annotations

import numpy as np

__all__ = [
    "TIE_POLICIES",
    "auc",
    "concordance_index",
    "example_f1",
    "hamming_loss",
    "kendall_tau_b",
    "mean_reciprocal_rank",
    "pairwise_rank_loss",
    "top_k_accuracy",
    "true_candidate_rank",
]

TIE_POLICIES = ("optimistic", "pessimistic", "average")


def true_candidate_rank(scores, true_index, ties="average"):
    """1-based rank of the true candidate among ``scores`` (higher is better).

    Parameters
    ----------
    scores : array-like of shape (n_candidates,)
    true_index : int
        Position of the true candidate in ``scores``.
    ties : {"optimistic", "pessimistic", "average"}
        Candidates scoring exactly as the true one count as below it (optimistic), above it (pessimistic) or
        half-way (average: the mean of both ranks).

    Returns
    -------
    rank : float

    Raises
    ------
    ValueError
        ``scores`` holds NaN. A NaN compares neither higher nor lower than any score, so it has no rank: counting
        it as a tie would rank the true candidate of ``[nan, nan, nan]`` at 2 (or 1 with ``"optimistic"``) from no
        information at all. The caller decides what a missing score means: drop the candidates without a score
        (``keep = ~np.isnan(scores)``, then the true index among the kept ones), or record the query as unranked
        (``np.nan``, which :func:`top_k_accuracy` counts as a miss and :func:`mean_reciprocal_rank` as 0) when the
        true candidate's own score is NaN. Infinite scores are ordered as usual.

    Examples
    --------
    >>> true_candidate_rank([0.9, 0.5, 0.9], 2)
    1.5
    >>> true_candidate_rank([0.9, 0.5, 0.9], 2, ties="pessimistic")
    2.0
    """
    if ties not in TIE_POLICIES:
        raise ValueError(f"'ties' must be one of {TIE_POLICIES}, got {ties!r}.")
    scores = np.asarray(scores, dtype=np.float64)
    if not 0 <= int(true_index) < scores.size:
        raise ValueError(f"'true_index' {true_index} is outside the {scores.size} candidates.")
    n_nan = int(np.count_nonzero(np.isnan(scores)))
    if n_nan:
        where = "including" if np.isnan(scores[int(true_index)]) else "not including"
        raise ValueError(f"'scores' contains NaN for {n_nan} of the {scores.size} candidates ({where} the true one "
                         "at 'true_index'); NaN scores cannot be ranked: drop those candidates or count the query "
                         "as unranked.")
    true_score = scores[int(true_index)]
    higher = int(np.count_nonzero(scores > true_score))
    equal = int(np.count_nonzero(scores == true_score)) - 1
    optimistic, pessimistic = higher + 1.0, higher + 1.0 + equal
    return {"optimistic": optimistic, "pessimistic": pessimistic, "average": (optimistic + pessimistic) / 2}[ties]


def top_k_accuracy(ranks, k, n_total=None):
    """Percentage of queries whose true candidate has rank <= k.

    Parameters
    ----------
    ranks : array-like of float
        1-based ranks; ``NaN`` marks a query whose list lacks the true candidate (a miss, never a hit).
    k : int or sequence of int
    n_total : int, optional
        Denominator (default ``len(ranks)``).

    Returns
    -------
    accuracy : float or dict of {k: float}
    """
    ranks = np.asarray(ranks, dtype=np.float64)
    total = ranks.size if n_total is None else int(n_total)
    if total == 0:
        raise ValueError("top_k_accuracy needs at least one query.")

    def one(kk):
        return 100.0 * float(np.count_nonzero(np.nan_to_num(ranks, nan=np.inf) <= kk)) / total

    return {int(kk): one(kk) for kk in k} if np.ndim(k) else one(k)


def mean_reciprocal_rank(ranks):
    """Mean of ``1 / rank``; ``NaN`` ranks (true candidate missing) contribute 0."""
    ranks = np.asarray(ranks, dtype=np.float64)
    if ranks.size == 0:
        raise ValueError("mean_reciprocal_rank needs at least one query.")
    return float(np.where(np.isnan(ranks), 0.0, 1.0 / np.where(np.isnan(ranks), 1.0, ranks)).mean())


def _binary_sets(Y_true, Y_pred):
    Y_true, Y_pred = np.asarray(Y_true) != 0, np.asarray(Y_pred) != 0
    if Y_true.shape != Y_pred.shape or Y_true.ndim != 2:
        raise ValueError(f"'Y_true' and 'Y_pred' must be 2-D of equal shape, got {Y_true.shape} and {Y_pred.shape}.")
    return Y_true, Y_pred


def example_f1(Y_true, Y_pred):
    """Example-based F1 for set-valued outputs: mean over examples of ``2 |y & y'| / (|y| + |y'|)`` (1 if both empty)."""
    Y_true, Y_pred = _binary_sets(Y_true, Y_pred)
    inter = np.count_nonzero(Y_true & Y_pred, axis=1)
    total = Y_true.sum(axis=1) + Y_pred.sum(axis=1)
    return float(np.where(total == 0, 1.0, 2.0 * inter / np.maximum(total, 1)).mean())


def hamming_loss(Y_true, Y_pred):
    """Fraction of wrongly predicted labels."""
    Y_true, Y_pred = _binary_sets(Y_true, Y_pred)
    return float(np.mean(Y_true != Y_pred))


def concordance_index(y_true, y_score):
    """Fraction of pairs with different ``y_true`` ordered the same way by ``y_score`` (score ties count 1/2).

    O(n log n) through scipy's compiled Kendall statistics (see ``_concordance_index_fast`` for the identity used);
    exact up to floating-point rounding (about 1e-12).
    """
    return _concordance_index_fast(y_true, y_score)


def auc(y_true, y_score):
    """Area under the ROC curve for binary ``y_true`` (the concordance index over positive/negative pairs)."""
    y_true = np.asarray(y_true).ravel()
    labels = np.unique(y_true)
    if labels.size != 2:
        raise ValueError(f"auc needs binary 'y_true' with both classes, got labels {labels[:5]}.")
    return concordance_index(y_true == labels[1], y_score)


def pairwise_rank_loss(y_true, y_score, groups):
    """Mean over conditioning nodes of the fraction of mis-ordered pairs (Pahikkala et al. 2013, eq. 4).

    Within each group (e.g. all edges starting from one node), the pairs with different ``y_true`` are counted;
    a pair ordered the other way by ``y_score`` costs 1, a tie in ``y_score`` costs 1/2. Groups whose labels are
    all equal are skipped.

    Parameters
    ----------
    y_true, y_score : array-like of shape (n,)
    groups : array-like of shape (n,)
        Conditioning node of each entry (any hashable labels).

    Returns
    -------
    loss : float in [0, 1]
    """
    y_true = np.asarray(y_true, dtype=np.float64).ravel()
    y_score = np.asarray(y_score, dtype=np.float64).ravel()
    groups = np.asarray(groups).ravel()
    if not (y_true.shape == y_score.shape == groups.shape):
        raise ValueError(
            f"'y_true', 'y_score' and 'groups' must have the same length, got {y_true.size}, {y_score.size} and "
            f"{groups.size}."
        )
    _, inverse = np.unique(groups, return_inverse=True)
    inverse = inverse.ravel()
    order = np.argsort(inverse, kind="stable")
    bounds = np.flatnonzero(np.diff(inverse[order])) + 1
    losses = []
    for idx in np.split(order, bounds):
        if np.unique(y_true[idx]).size < 2:
            continue
        losses.append(1.0 - _concordance_index_fast(y_true[idx], y_score[idx]))
    if not losses:
        raise ValueError("pairwise_rank_loss needs at least one group with two different values in 'y_true'.")
    return float(np.mean(losses))


def kendall_tau_b(x, y):
    """Kendall's tau-b rank correlation, ``(n_c - n_d) / sqrt((n_0 - n_1)(n_0 - n_2))`` with tie corrections.

    Computed in O(n log n) by :func:`scipy.stats.kendalltau` (Knight's algorithm); NaN when either input is constant.
    """
    x = np.asarray(x, dtype=np.float64).ravel()
    y = np.asarray(y, dtype=np.float64).ravel()
    if x.shape != y.shape:
        raise ValueError(f"'x' and 'y' must have the same length, got {x.size} and {y.size}.")
    if x.size < 2:
        raise ValueError(f"kendall_tau_b needs at least two observations, got {x.size}.")
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise ValueError("'x' and 'y' must be finite.")
    from scipy.stats import kendalltau  # noqa: PLC0415 - start-up time: scipy.stats takes 0.5 s to import

    return float(kendalltau(x, y, variant="b").statistic)



def _concordance_index_fast(y_true, y_score):
    """:func:`concordance_index` through scipy's O(n log n) Kendall statistics (compiled), for large inputs.

    With ``n0`` all pairs, ``n1`` / ``n2`` / ``n3`` pairs tied in ``y_true`` / ``y_score`` / both, the pairs with
    different ``y_true`` number ``P = n0 - n1``, those tied in ``y_score`` only ``T = n2 - n3``, and the concordant
    minus discordant count is ``S = tau_b sqrt((n0 - n1)(n0 - n2))`` while ``C + D = n0 - n1 - n2 + n3``; so
    ``D = (n0 - n1 - n2 + n3 - S) / 2`` and the index is ``(P - D - T / 2) / P``.
    """
    y_true = np.asarray(y_true, dtype=np.float64).ravel()
    y_score = np.asarray(y_score, dtype=np.float64).ravel()
    if y_true.shape != y_score.shape:
        raise ValueError(f"'y_true' and 'y_score' must have the same length, got {y_true.size} and {y_score.size}.")

    def tied_pairs(key):
        counts = np.unique(key, return_counts=True)[1].astype(np.float64)
        return float((counts * (counts - 1) / 2).sum())

    n = y_true.size
    rank_true = np.unique(y_true, return_inverse=True)[1].ravel().astype(np.int64)
    rank_score = np.unique(y_score, return_inverse=True)[1].ravel().astype(np.int64)
    n0 = n * (n - 1) / 2
    n1, n2 = tied_pairs(rank_true), tied_pairs(rank_score)
    n3 = tied_pairs(rank_true * (int(rank_score.max()) + 1) + rank_score) if n else 0.0
    pairs = n0 - n1
    if pairs == 0:
        raise ValueError("concordance_index needs at least two different values in 'y_true'.")
    if n0 == n2:  # constant scores: every pair is a score tie
        return 0.5
    signed = kendall_tau_b(rank_true, rank_score) * np.sqrt((n0 - n1) * (n0 - n2))
    discordant = (n0 - n1 - n2 + n3 - signed) / 2
    return float((pairs - discordant - 0.5 * (n2 - n3)) / pairs)

"""Scores of hold-out predictions: squared error in the output space and ranking of the true candidate.

All scores follow scikit-learn's "greater is better" convention: ``"mse"`` is reported negated (as scikit-learn's
``"neg_mean_squared_error"``), ``"top<k>"`` is the fraction of held-out examples whose own output ranks among the
``k`` best candidates of their set, ``"mrr"`` the mean reciprocal rank. Ranks count tied candidates half-way
(``iokr.metrics.true_candidate_rank(ties="average")``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ..metrics import true_candidate_rank

_TOP = re.compile(r"^top(\d+)$")


@dataclass(frozen=True)
class HoldoutResult:
    """What a callable ``scoring`` of :class:`IOKRCV` receives for one split (at one parameter setting).

    Attributes
    ----------
    indices : ndarray of int, shape (h,)
        The held-out training examples.
    sq_errors : ndarray of shape (h,)
        ``||h_C(x_i) - psi(y_i)||^2`` in the transformed output space.
    ranks : ndarray of shape (h,) or None
        1-based rank of each example's own output in its candidate set (None without candidate sets; NaN where
        the set lacks the example's own output).
    top_candidates : ndarray of int, shape (h,) or None
        Pool row (of the ``candidate_sets`` given to ``fit``) of each example's best-scoring candidate (first among
        equal scores); -1 for an empty set. None without candidate sets.
    features : ndarray of shape (h, p) or None
        Hold-out predictions in the transformed output feature space (output kernels with explicit features).
    coefficients : ndarray of shape (h, n) or None
        Hold-out predictions as combinations of the training outputs (kernel outputs, and explicit outputs wider
        than the number of training examples, which are handled in this dual form).
    """

    indices: np.ndarray
    sq_errors: np.ndarray
    ranks: np.ndarray | None
    top_candidates: np.ndarray | None
    features: np.ndarray | None
    coefficients: np.ndarray | None


def check_scoring(scoring, owner, allowed_names):
    """Validate ``scoring``: a name among ``allowed_names`` (``"top<k>"`` allowed when ``"top1"`` is) or a callable."""
    if callable(scoring):
        return scoring
    if isinstance(scoring, str):
        if scoring in allowed_names:
            return scoring
        match = _TOP.match(scoring)
        if match and "top1" in allowed_names and int(match.group(1)) >= 1:
            return scoring
    raise ValueError(f"The 'scoring' parameter of {owner} must be one of {sorted(allowed_names)} (or 'top<k>' where "
                     f"'top1' is allowed) or a callable. Got {scoring!r} instead.")


def needs_candidates(scoring):
    return isinstance(scoring, str) and (scoring == "mrr" or _TOP.match(scoring) is not None)


def ranking_score(scoring, ranks):
    """``"top<k>"`` (fraction) or ``"mrr"`` from 1-based ranks."""
    ranks = np.asarray(ranks, dtype=np.float64)
    if scoring == "mrr":
        return float(np.mean(1.0 / ranks))
    return float(np.mean(ranks <= int(_TOP.match(scoring).group(1))))


def ranks_of_truth(scores_per_query, true_positions):
    """1-based ranks (ties average); NaN where the true position is -1 (own output not in the set)."""
    return np.array([true_candidate_rank(s, t, ties="average") if t >= 0 else np.nan
                     for s, t in zip(scores_per_query, true_positions, strict=True)])


def _row_keys(block):
    """Hashable exact keys of float rows (+0.0 turns -0.0 into 0.0 so equal values give equal keys)."""
    block = np.ascontiguousarray(np.asarray(block, dtype=np.float64) + 0.0)
    return [row.tobytes() for row in block]


def true_positions(candidate_sets, Y, owner, required=True):
    """Position of each training example's own output (exact row match) in its candidate set.

    Pool rows are matched to the outputs once by exact keys (one pass over the pool, in blocks), then each set
    is searched by index. A missing output raises when ``required`` (ranking scores), else its position is -1.
    """
    wanted = {}
    for i, key in enumerate(_row_keys(Y)):
        wanted.setdefault(key, []).append(i)
    matches = [[] for _ in range(candidate_sets.n_queries)]
    pool = candidate_sets.pool
    step = 4096
    for start in range(0, pool.shape[0], step):
        for offset, key in enumerate(_row_keys(pool[start:start + step])):
            for i in wanted.get(key, ()):
                matches[i].append(start + offset)
    positions = np.empty(candidate_sets.n_queries, dtype=np.intp)
    for i in range(candidate_sets.n_queries):
        hits = np.flatnonzero(np.isin(candidate_sets.indices[i], matches[i])) if matches[i] else np.zeros(0, int)
        if hits.size == 0 and not required:
            positions[i] = -1
            continue
        if hits.size == 0:
            raise ValueError(f"{owner}: candidate set {i} does not contain training example {i}'s own output "
                             "(exact row match); ranking scores need it in every set.")
        positions[i] = hits[0]
    return positions

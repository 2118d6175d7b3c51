"""Ranked candidate lists returned by the estimators' ``rank`` method."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from ..exceptions import EmptyCandidateSetWarning
from ._scoring import TIE_POLICY, order_by_score


@dataclass(frozen=True)
class QueryRanking:
    """One query's ranked candidates.

    Attributes
    ----------
    order : ndarray of int, shape (k,)
        Positions in the query's candidate set, best first (``k`` = all candidates, or ``top_k``).
    scores : ndarray of shape (k,)
        Scores in that order (higher is better).
    pool_indices : ndarray of int, shape (k,)
        The same candidates as rows of the candidate pool.
    n_candidates : int
        Size of the query's whole candidate set.
    tie_policy : str
        How equal scores were ordered.
    """

    order: np.ndarray
    scores: np.ndarray
    pool_indices: np.ndarray
    n_candidates: int
    tie_policy: str = TIE_POLICY


def rankings_from_scores(scores_per_query, candidate_sets, top_k=None):
    """Sort each query's scores (stable tie policy), cut to ``top_k``, and warn about empty sets."""
    rankings = []
    for q, scores in enumerate(scores_per_query):
        order = order_by_score(scores)
        if top_k is not None:
            order = order[:top_k]
        rankings.append(QueryRanking(order, scores[order], candidate_sets.indices[q][order], int(scores.size)))
    warn_empty(candidate_sets.empty_queries)
    return rankings


def warn_empty(empty):
    if len(empty):
        shown = ", ".join(str(int(q)) for q in empty[:10]) + (" ..." if len(empty) > 10 else "")
        warnings.warn(
            f"{len(empty)} query(ies) have no candidates (queries {shown}); their rankings are empty.",
            EmptyCandidateSetWarning,
            stacklevel=3,
        )

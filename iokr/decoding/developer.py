"""Plumbing of :mod:`iokr.decoding` for code that extends iokr (an estimator's scoring, a distributed scorer).

Users build candidate sets and score them through the names of :mod:`iokr.decoding`; an estimator that scores
candidates, or an executor that splits the scoring, also needs the pieces below, which are stable but not part of
the user-facing surface:

- what an estimator supplies to the streamed scorers: :class:`Scorer` (query and candidate representations under a
  decoding rule), :class:`BinaryRule` (its affine form for bit-packed 0/1 candidates);
- the scorers' chunking and merging: :func:`plan_blocks` (the block sizes every scoring function uses),
  :func:`packed_reader` (bit-packed pool rows), :func:`merge_top_k` and :func:`order_by_score` (the stable tie
  policy, :data:`~iokr.decoding.TIE_POLICY`), :func:`warn_empty`;
- validation and norms: :func:`as_candidate_sets`, :func:`check_decoding`, :func:`row_norms`,
  :func:`inverse_norms`;
- MP-IOKR's candidate statistics: :func:`set_layout` / :class:`SetLayout`, :func:`stream_statistics` /
  :class:`CandidateStatistics`.
"""

from ._candidate_stats import CandidateStatistics, SetLayout, set_layout, stream_statistics
from ._candidates import as_candidate_sets
from ._ranking import warn_empty
from ._rules import check_decoding, inverse_norms, row_norms
from ._scoring import BinaryRule, Scorer, merge_top_k, order_by_score, packed_reader, plan_blocks

__all__ = [
    "BinaryRule",
    "CandidateStatistics",
    "Scorer",
    "SetLayout",
    "as_candidate_sets",
    "check_decoding",
    "inverse_norms",
    "merge_top_k",
    "order_by_score",
    "packed_reader",
    "plan_blocks",
    "row_norms",
    "set_layout",
    "stream_statistics",
    "warn_empty",
]

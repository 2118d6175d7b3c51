"""Candidate sets and chunked, streamed scoring of candidates (top-k), shared by every estimator."""

from ._candidates import CandidateSets, PackedBinaryFeatures, as_candidate_sets
from ._disk import CandidateFile, CandidateFileWriter, write_candidate_file
from ._ranking import QueryRanking, rankings_from_scores, warn_empty
from ._scoring import TIE_POLICY, Scorer, dense_scores, order_by_score, set_scores, top_k_scores

__all__ = [
    "TIE_POLICY",
    "CandidateFile",
    "CandidateFileWriter",
    "CandidateSets",
    "PackedBinaryFeatures",
    "QueryRanking",
    "rankings_from_scores",
    "warn_empty",
    "Scorer",
    "as_candidate_sets",
    "dense_scores",
    "order_by_score",
    "set_scores",
    "top_k_scores",
    "write_candidate_file",
]

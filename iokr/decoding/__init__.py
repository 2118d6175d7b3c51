"""Candidate sets, decoding rules and chunked, streamed scoring of candidates (top-k), shared by every estimator."""

from ._bits import BinaryTanimotoIndex
from ._candidate_stats import CandidateStatistics, SetLayout, set_layout, stream_statistics, subsample_sets
from ._candidates import CandidateSets, CountFeatures, PackedBinaryFeatures, as_candidate_sets
from ._count_tanimoto import CountTanimotoIndex
from ._disk import CandidateFile, CandidateFileWriter, write_candidate_file
from ._neighbours import neighbour_similarity, top_mean
from ._ranking import QueryRanking, rankings_from_scores, warn_empty
from ._rules import (
    DECODINGS,
    CosineDecoding,
    DecodingRule,
    DistanceDecoding,
    InnerDecoding,
    check_decoding,
    decoding_rule,
    inverse_norms,
    row_norms,
)
from ._scoring import (
    TIE_POLICY,
    BinaryRule,
    Scorer,
    dense_scores,
    merge_top_k,
    order_by_score,
    packed_reader,
    plan_blocks,
    set_scores,
    top_k_scores,
)

__all__ = [
    "neighbour_similarity",
    "top_mean",
    "CandidateStatistics",
    "SetLayout",
    "set_layout",
    "stream_statistics",
    "subsample_sets",
    "DECODINGS",
    "TIE_POLICY",
    "BinaryRule",
    "BinaryTanimotoIndex",
    "CountTanimotoIndex",
    "CosineDecoding",
    "DecodingRule",
    "DistanceDecoding",
    "InnerDecoding",
    "check_decoding",
    "decoding_rule",
    "inverse_norms",
    "merge_top_k",
    "packed_reader",
    "plan_blocks",
    "row_norms",
    "CandidateFile",
    "CandidateFileWriter",
    "CandidateSets",
    "CountFeatures",
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

"""Candidate sets, decoding rules and chunked, streamed scoring of candidates (top-k), shared by every estimator.

Plumbing for code that extends iokr (the ``Scorer`` an estimator supplies, block planning, top-k merging) is in
:mod:`iokr.decoding.developer`.
"""

from ._bits import BinaryTanimotoIndex
from ._candidate_stats import subsample_sets
from ._candidates import CandidateSets, CountFeatures, PackedBinaryFeatures
from ._count_tanimoto import CountTanimotoIndex
from ._disk import CandidateFile, CandidateFileWriter, write_candidate_file
from ._neighbours import neighbour_similarity, top_mean
from ._ranking import QueryRanking, rankings_from_scores
from ._rules import (
    DECODINGS,
    CosineDecoding,
    DecodingRule,
    DistanceDecoding,
    InnerDecoding,
    decoding_rule,
)
from ._scoring import (
    TIE_POLICY,
    dense_scores,
    set_scores,
    top_k_scores,
)

__all__ = [
    "neighbour_similarity",
    "top_mean",
    "subsample_sets",
    "DECODINGS",
    "TIE_POLICY",
    "BinaryTanimotoIndex",
    "CountTanimotoIndex",
    "CosineDecoding",
    "DecodingRule",
    "DistanceDecoding",
    "InnerDecoding",
    "decoding_rule",
    "CandidateFile",
    "CandidateFileWriter",
    "CandidateSets",
    "CountFeatures",
    "PackedBinaryFeatures",
    "QueryRanking",
    "rankings_from_scores",
    "dense_scores",
    "set_scores",
    "top_k_scores",
    "write_candidate_file",
]


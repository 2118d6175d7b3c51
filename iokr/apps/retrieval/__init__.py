"""Cross-lingual document retrieval with IOKR: from a document in one language, rank the documents of the other."""

from ._protocol import RetrievalSplit, evaluate_retrieval, make_split, retrieval_ranks
from ._selection import CV_FOLDS, DEFAULT_ALPHAS, fold_candidate_sets, select_alpha

__all__ = ["CV_FOLDS", "DEFAULT_ALPHAS", "RetrievalSplit", "evaluate_retrieval", "fold_candidate_sets",
           "make_split", "retrieval_ranks", "select_alpha"]

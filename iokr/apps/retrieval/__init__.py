"""Cross-lingual document retrieval with IOKR: from a document in one language, rank the documents of the other."""

from ._features import LSA_DIMS, TFIDF, Features, SplitFeatures, feature_grid
from ._protocol import RetrievalSplit, evaluate_retrieval, make_split, retrieval_ranks
from ._selection import CV_FOLDS, DEFAULT_ALPHAS, best_setting, select_alpha, select_setting

__all__ = ["CV_FOLDS", "DEFAULT_ALPHAS", "LSA_DIMS", "Features", "RetrievalSplit", "SplitFeatures", "TFIDF", "best_setting",
           "evaluate_retrieval", "feature_grid", "make_split", "retrieval_ranks",
           "select_alpha", "select_setting"]

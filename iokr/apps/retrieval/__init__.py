"""Cross-lingual document retrieval with IOKR: from a document in one language, rank the documents of the other."""

from ._protocol import RetrievalSplit, evaluate_retrieval, make_split, retrieval_ranks

__all__ = ["RetrievalSplit", "evaluate_retrieval", "make_split", "retrieval_ranks"]

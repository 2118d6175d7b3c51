"""The features of one retrieval split, as IOKR sees them."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class RetrievalSplit:
    """Features of one split.

    Attributes
    ----------
    gram_train : ndarray of shape (n_train, n_train)
        Linear kernel of the source TF-IDF on training documents.
    gram_test : ndarray of shape (n_test, n_train)
        Linear kernel between test and training source documents.
    diag_test : ndarray of shape (n_test,)
        Source test documents' squared norms (for normalization).
    Y_train : ndarray of shape (n_train, vocabulary)
        Target-language TF-IDF of training documents.
    Y_test : ndarray of shape (n_test, vocabulary)
        Target-language TF-IDF of test documents: the candidates, in test order (query i's answer is row i).
    """

    gram_train: np.ndarray
    gram_test: np.ndarray
    diag_test: np.ndarray
    Y_train: np.ndarray
    Y_test: np.ndarray

"""The features of one retrieval split, as IOKR sees them."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class RetrievalSplit:
    """Features of one split: the TF-IDF of :func:`make_split`, or a preprocessing of it (:class:`SplitFeatures`).

    Attributes
    ----------
    gram_train : ndarray of shape (n_train, n_train)
        Linear kernel of the source features on training documents.
    gram_test : ndarray of shape (n_test, n_train)
        Linear kernel between test and training source documents.
    diag_test : ndarray of shape (n_test,)
        Source test documents' squared feature norms (for normalization).
    Y_train : ndarray of shape (n_train, p)
        Target-language features of training documents (``p``: the vocabulary, or the LSA dimension).
    Y_test : ndarray of shape (n_test, p)
        Target-language features of test documents: the candidates, in test order (query i's answer is row i).
    """

    gram_train: np.ndarray
    gram_test: np.ndarray
    diag_test: np.ndarray
    Y_train: np.ndarray
    Y_test: np.ndarray

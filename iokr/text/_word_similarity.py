"""Word transformations learned from unlabeled text: LSA on a positive-PMI word co-occurrence matrix.

The kernels use the word similarity ``W_hat = (1 - mix) I + mix E E^T`` (paper III's word transformation ``W`` with
``W^T W = W_hat``; ``W = [sqrt(1 - mix) I; sqrt(mix) E^T]``), where the rows of ``E`` (n_words, n_components) are
unit-norm latent-semantic vectors: two words are similar when they occur near the same words in unlabeled text.
``mix = 0`` is the identity (words only match themselves).
"""

from __future__ import annotations

import numbers

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import svds
from sklearn.base import BaseEstimator

from ._contexts import RESERVED, _check_texts


class CooccurrenceLSA(BaseEstimator):
    """Unit-norm word vectors from a truncated SVD of the positive PMI of windowed co-occurrence counts.

    Parameters
    ----------
    n_components : int, default=100
        Rank of the truncated SVD (clipped to ``n_words - 1``).
    window : int, default=2
        Two tokens co-occur when at most ``window`` tokens apart.
    random_state : int, default=0
        Start vector of the iterative SVD (ARPACK), for reproducibility.

    Attributes
    ----------
    embedding_ : ndarray of shape (n_words, n_components_)
        Unit rows; zero rows for words never seen next to another known word (and for the reserved words).
    n_components_ : int

    Notes
    -----
    ``PPMI[w, u] = max(0, log(C[w, u] N / (C[w, .] C[., u])))`` with ``C`` the symmetric co-occurrence counts and
    ``N`` their total; ``E`` is the row-normalized ``U_k S_k`` of ``PPMI ~ U S V^T``.
    """

    def __init__(self, n_components=100, window=2, random_state=0):
        self.n_components = n_components
        self.window = window
        self.random_state = random_state

    def fit(self, texts, vocabulary):
        """Learn word vectors from token lists.

        Parameters
        ----------
        texts : iterable of list of str
            Unlabeled text (training text is fine: no labels are used).
        vocabulary : dict of str -> int
            The featurizer's ``vocabulary_`` (indices 0..n_words-1); words outside it are ignored.

        Returns
        -------
        self : CooccurrenceLSA
        """
        owner = type(self).__name__
        for name, value, low in (("n_components", self.n_components, 1), ("window", self.window, 1)):
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
                raise ValueError(f"The '{name}' parameter of {owner} must be an int >= {low}. Got {value!r} instead.")
        if not isinstance(vocabulary, dict) or not vocabulary:
            raise ValueError(f"{owner}: 'vocabulary' must be a non-empty dict of word -> index.")
        n_words = max(vocabulary.values()) + 1
        skip = {vocabulary[w] for w in RESERVED if w in vocabulary}
        rows, cols = [], []
        for tokens in _check_texts(texts, "texts"):
            ids = np.array([vocabulary.get(t, -1) for t in tokens], dtype=np.int64)
            ids = ids[(ids >= 0) & ~np.isin(ids, list(skip))] if ids.size else ids
            for d in range(1, int(self.window) + 1):
                if ids.size > d:
                    rows.extend((ids[:-d], ids[d:]))
                    cols.extend((ids[d:], ids[:-d]))
        if not rows:
            raise ValueError(f"{owner}: no two known words co-occur in 'texts'; give more unlabeled text.")
        r, c = np.concatenate(rows), np.concatenate(cols)
        C = sp.csr_matrix((np.ones(r.size), (r, c)), shape=(n_words, n_words))
        C.sum_duplicates()
        total = C.sum()
        row_sum = np.asarray(C.sum(axis=1)).ravel()
        coo = C.tocoo()
        pmi = np.log(coo.data * total / (row_sum[coo.row] * row_sum[coo.col]))
        keep = pmi > 0
        M = sp.csr_matrix((pmi[keep], (coo.row[keep], coo.col[keep])), shape=C.shape)
        k = int(min(self.n_components, n_words - 2))
        if k < 1:
            raise ValueError(f"{owner}: the vocabulary has {n_words} words, too few for a truncated SVD.")
        v0 = np.random.default_rng(self.random_state).standard_normal(n_words)
        U, S, _ = svds(M, k=k, v0=v0)
        E = U * S
        norms = np.linalg.norm(E, axis=1)
        E[norms > 0] /= norms[norms > 0, None]
        E[norms <= 1e-12 * max(norms.max(initial=0.0), 1e-300)] = 0.0
        self.embedding_ = E
        self.n_components_ = k
        return self

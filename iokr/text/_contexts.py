"""Word-position matrices of the contexts of target occurrences (Pahikkala et al. 2009, section 2).

The context of the token at index ``i`` of a text is the window of the ``window`` tokens on each side of it. It is
represented as a word-position matrix ``X`` of shape (n_words, n_positions): ``X[w, p] = 1`` when word ``w`` stands at
offset ``offsets[p]`` from the target (offsets ``-window .. -1, 1 .. window``; the target itself is left out, as it
is the unknown to predict). A set of contexts is stored as one scipy CSR matrix of shape
(n_contexts, n_words * n_positions), row-major in the word: column ``w * n_positions + p`` holds ``X[w, p]``.

Defined behaviour at the edges:

- Unknown words (not seen in ``fit``, or rarer than ``min_count``) map to the reserved word ``<unk>`` (index 0).
- A window running past the start (end) of the text puts the reserved word ``<s>`` (``</s>``) at the first offset
  outside the text when ``mark_boundaries`` is true; offsets further out stay empty.
- A text made only of the target gives a context with the boundary marks only (or an all-zero row without them):
  every context kernel is then 0 against other contexts, never an error.
"""

from __future__ import annotations

import numbers
from collections import Counter

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

UNKNOWN, START, END = "<unk>", "<s>", "</s>"
RESERVED = (UNKNOWN, START, END)


def context_offsets(window):
    """Offsets ``-window .. -1, 1 .. window`` of the positions of a context, shape (2 * window,)."""
    window = check_window(window)
    return np.concatenate([np.arange(-window, 0), np.arange(1, window + 1)])


def check_window(window, owner=None):
    where = f" of {owner}" if owner else ""
    if isinstance(window, bool) or not isinstance(window, numbers.Integral) or window < 1:
        raise ValueError(f"The 'window' parameter{where} must be an int >= 1. Got {window!r} instead.")
    return int(window)


def _check_texts(texts, name):
    if isinstance(texts, (str, bytes)):
        raise TypeError(f"'{name}' must be a sequence of token lists, got a single string; tokenize it first.")
    texts = list(texts)
    for k, tokens in enumerate(texts):
        if isinstance(tokens, (str, bytes)) or not all(isinstance(t, str) for t in tokens):
            raise TypeError(f"'{name}[{k}]' must be a list of str tokens (see iokr.text.tokenize).")
    return texts


class ContextFeaturizer(BaseEstimator):
    """Sparse word-position matrices of the contexts of target occurrences.

    Parameters
    ----------
    window : int, default=5
        Number of tokens taken on each side of the target; ``n_positions = 2 * window``.
    min_count : int, default=1
        Words seen fewer times than this in ``fit`` are mapped to ``<unk>``.
    mark_boundaries : bool, default=True
        Put ``<s>`` / ``</s>`` at the first offset past the start / end of the text.

    Attributes
    ----------
    vocabulary_ : dict of str -> int
        Word indices; ``<unk>``, ``<s>``, ``</s>`` are 0, 1, 2.
    words_ : list of str
        Index -> word.
    offsets_ : ndarray of shape (n_positions,)
    n_words_ : int

    Examples
    --------
    >>> f = ContextFeaturizer(window=2).fit([["a", "b", "c", "d"]])
    >>> X = f.transform([(["a", "b", "c", "d"], 1)])
    >>> X.shape, X.nnz
    ((1, 28), 4)
    """

    def __init__(self, window=5, min_count=1, mark_boundaries=True):
        self.window = window
        self.min_count = min_count
        self.mark_boundaries = mark_boundaries

    def fit(self, texts):
        """Build the vocabulary from token lists (training and unlabeled text alike).

        Parameters
        ----------
        texts : iterable of list of str
            Tokenized texts.

        Returns
        -------
        self : ContextFeaturizer
            The fitted featurizer.
        """
        owner = type(self).__name__
        check_window(self.window, owner)
        if isinstance(self.min_count, bool) or not isinstance(self.min_count, numbers.Integral) or self.min_count < 1:
            raise ValueError(f"The 'min_count' parameter of {owner} must be an int >= 1. Got {self.min_count!r}.")
        counts = Counter(t for tokens in _check_texts(texts, "texts") for t in tokens)
        kept = sorted(w for w, c in counts.items() if c >= self.min_count and w not in RESERVED)
        self.words_ = list(RESERVED) + kept
        self.vocabulary_ = {w: i for i, w in enumerate(self.words_)}
        self.offsets_ = context_offsets(self.window)
        self.n_words_ = len(self.words_)
        return self

    @property
    def n_positions(self):
        """Number of relative positions in a context (``2 * window``)."""
        return 2 * check_window(self.window)

    def encode(self, tokens):
        """Map tokens to word indices, unknown words to 0 (``<unk>``).

        Parameters
        ----------
        tokens : list of str
            One tokenized text.

        Returns
        -------
        indices : ndarray of shape (len(tokens),), int64
            Vocabulary index of each token.
        """
        check_is_fitted(self, "vocabulary_")
        get = self.vocabulary_.get
        return np.fromiter((get(t, 0) for t in tokens), dtype=np.int64, count=len(tokens))

    def transform(self, occurrences):
        """Word-position matrices of target occurrences.

        Parameters
        ----------
        occurrences : iterable of (tokens, index)
            ``tokens`` a list of str (one text), ``index`` the position of the target token in it.

        Returns
        -------
        X : scipy.sparse.csr_matrix of shape (n_occurrences, n_words * n_positions), float64
            Row ``i`` is the flattened (word-major) word-position matrix of occurrence ``i``.
        """
        check_is_fitted(self, "vocabulary_")
        window, n_pos = check_window(self.window), self.n_positions
        rows, cols = [], []
        encoded = {}
        n = 0
        for k, item in enumerate(occurrences):
            try:
                tokens, index = item
            except (TypeError, ValueError):
                raise TypeError(f"'occurrences[{k}]' must be a (tokens, index) pair, got {item!r}.") from None
            if isinstance(tokens, (str, bytes)):
                raise TypeError(f"'occurrences[{k}]' holds a string; pass its token list (see iokr.text.tokenize).")
            if isinstance(index, bool) or not isinstance(index, numbers.Integral) or not 0 <= index < len(tokens):
                raise ValueError(f"'occurrences[{k}]' has target index {index!r}, but its text has {len(tokens)} "
                                 "tokens; the index must point at a token of the text.")
            key = id(tokens)
            if key not in encoded:  # occurrences of one text share its encoding
                encoded[key] = (tokens, self.encode(tokens))
            ids = encoded[key][1]
            lo, hi = max(0, index - window), min(len(tokens), index + window + 1)
            for j in range(lo, hi):
                if j != index:
                    offset = j - index
                    p = offset + window if offset < 0 else offset + window - 1
                    rows.append(n)
                    cols.append(ids[j] * n_pos + p)
            if self.mark_boundaries:
                if index - window < 0:  # first offset before the text start
                    rows.append(n)
                    cols.append(self.vocabulary_[START] * n_pos + (-index - 1 + window))
                if index + window >= len(tokens):
                    rows.append(n)
                    cols.append(self.vocabulary_[END] * n_pos + (len(tokens) - index + window - 1))
            n += 1
        data = np.ones(len(rows), dtype=np.float64)
        X = sp.csr_matrix((data, (np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64))),
                          shape=(n, self.n_words_ * n_pos))
        X.sum_duplicates()
        return X

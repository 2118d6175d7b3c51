"""Perfect segmentation (sec. 6.2): per-position regression onto the alphabet and Viterbi decoding with an LM."""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from .._validation import check_positive_scalar
from ..kernels import Polynomial
from ._kernels import _check_sequences
from ._language_model import NgramLanguageModel
from ._metrics import letter_accuracy
from ._ngrams import check_order, check_strings
from ._regression import KernelRidgeOutputs
from ._viterbi import viterbi_decode


class SegmentedStringKDE(BaseEstimator):
    """String prediction when each input segment maps to one output symbol (perfect segmentation).

    Each segment (e.g. a letter image) is regressed by kernel ridge onto the one-hot code of its symbol (an
    ``|alphabet|``-dimensional output space, one shared solve); a word is decoded by Viterbi, maximizing
    ``sum_i g_{c_i}(x_i) + lm_weight * log P_LM(c_1 .. c_L)`` with an n-gram language model of the training
    words. Since ``-||g - e_c||^2 = 2 g_c + const``, the emission term is the KDE pre-image objective per position.

    Parameters
    ----------
    kernel : Kernel, default=None
        Kernel on segment feature vectors; ``Polynomial(degree=3)`` when None (the paper's choice).
    alpha : float, default=1.0
        Ridge regularization.
    lm_order : int or None, default=3
        Order of the language model; None decodes each position independently (argmax).
    lm_weight : float, default=1.0
        Weight of the language model's log-probability.
    basis : {"full", "random", "cholesky", "greedy"}, default="full"
        Training approximation, as in :class:`StringKDE`.
    n_basis : int, optional
        Basis size for the approximations, as in :class:`StringKDE`.
    random_state : int, optional
        Seed of ``basis="random"``.

    Attributes
    ----------
    alphabet_ : tuple
    language_model_ : NgramLanguageModel or None
    n_features_in_ : int
    """

    def __init__(self, kernel=None, alpha=1.0, lm_order=3, lm_weight=1.0, basis="full", n_basis=None,
                 random_state=None):
        self.kernel = kernel
        self.alpha = alpha
        self.lm_order = lm_order
        self.lm_weight = lm_weight
        self.basis = basis
        self.n_basis = n_basis
        self.random_state = random_state

    def _check_params(self):
        name = type(self).__name__
        check_positive_scalar(self.alpha, "alpha", name)
        if self.lm_order is not None:
            check_order(self.lm_order, "lm_order", name)
        if (isinstance(self.lm_weight, bool) or not isinstance(self.lm_weight, numbers.Real)
                or not np.isfinite(self.lm_weight) or self.lm_weight < 0):
            raise ValueError(f"The 'lm_weight' parameter of {name} must be a float >= 0. Got {self.lm_weight!r}.")

    def fit(self, X, y):
        """Fit the segment regression and the language model.

        Parameters
        ----------
        X : list of ndarray of shape (L_i, n_features)
            Segment feature vectors of each input sequence.
        y : sequence of str (or sequences of symbols)
            Output strings, ``len(y[i]) == L_i``.

        Returns
        -------
        self : SegmentedStringKDE
            The fitted estimator.
        """
        self._check_params()
        X = _check_sequences(X, "X")
        symbols, self.str_output_ = check_strings(y, "y")
        if len(X) != len(symbols):
            raise ValueError(f"'X' has {len(X)} sequences but 'y' has {len(symbols)} strings.")
        for i, (x, s) in enumerate(zip(X, symbols)):
            if x.shape[0] != len(s):
                raise ValueError(f"'X[{i}]' has {x.shape[0]} segments but 'y[{i}]' has {len(s)} symbols; perfect "
                                 "segmentation needs one segment per symbol.")
        self.alphabet_ = tuple(sorted({c for s in symbols for c in s}, key=lambda c: (type(c).__name__, repr(c))))
        if not self.alphabet_:
            raise ValueError("'y' holds only empty strings; there is nothing to learn.")
        index = {c: i for i, c in enumerate(self.alphabet_)}
        flat = np.vstack(X)
        codes = np.fromiter((index[c] for s in symbols for c in s), dtype=np.int64, count=flat.shape[0])
        targets = np.zeros((flat.shape[0], len(self.alphabet_)))
        targets[np.arange(flat.shape[0]), codes] = 1.0
        kernel = Polynomial(degree=3) if self.kernel is None else self.kernel
        self.regressor_ = KernelRidgeOutputs(kernel, self.alpha, self.basis, self.n_basis, self.random_state,
                                             type(self).__name__)
        self.regressor_.fit(flat, targets)
        A = len(self.alphabet_)
        if self.lm_order is not None:
            self.language_model_ = NgramLanguageModel(self.lm_order, start=A, stop=A + 1)
            self.language_model_.fit([tuple(index[c] for c in s) for s in symbols])
            self.log_transitions_ = self.language_model_.transition_table(list(range(A)))
        else:
            self.language_model_ = None
        self.n_features_in_ = flat.shape[1]
        return self

    def segment_scores(self, X):
        """Compute the regression outputs of every segment.

        Parameters
        ----------
        X : list of ndarray of shape (L_i, n_features)
            Segment feature vectors of each input sequence.

        Returns
        -------
        scores : list of ndarray of shape (L_i, n_symbols)
            Score of every alphabet symbol for every segment.
        """
        check_is_fitted(self, "regressor_")
        X = _check_sequences(X, "X", self.n_features_in_)
        lengths = [x.shape[0] for x in X]
        G = self.regressor_.predict(np.vstack(X)) if sum(lengths) else np.zeros((0, len(self.alphabet_)))
        return np.split(G, np.cumsum(lengths)[:-1])

    def decode(self, scores, lm_weight=None):
        """Decode strings from per-segment scores by Viterbi (argmax without a language model).

        Parameters
        ----------
        scores : list of ndarray of shape (L_i, n_symbols)
            Per-segment scores, as from :meth:`segment_scores`.
        lm_weight : float, optional
            Weight of the language model (default: ``self.lm_weight``).

        Returns
        -------
        y_pred : list of str (or tuples of symbols)
            One predicted string per sequence, one symbol per segment.
        """
        w = self.lm_weight if lm_weight is None else lm_weight
        out = []
        for S in scores:
            if self.language_model_ is None or w == 0:
                path = S.argmax(axis=1)
            else:
                path, _ = viterbi_decode(S, self.log_transitions_, self.lm_order, w)
            chars = [self.alphabet_[i] for i in path]
            out.append("".join(chars) if self.str_output_ else tuple(chars))
        return out

    def predict(self, X):
        """Predict strings, one symbol per segment.

        Parameters
        ----------
        X : list of ndarray of shape (L_i, n_features)
            Segment feature vectors of each input sequence.

        Returns
        -------
        y_pred : list of str (or tuples of symbols)
            One predicted string per sequence, one symbol per segment.
        """
        return self.decode(self.segment_scores(X))

    def score(self, X, y):
        """Return the letter accuracy of the predictions.

        Parameters
        ----------
        X : list of ndarray of shape (L_i, n_features)
            Segment feature vectors of each input sequence.
        y : sequence of str (or sequences of symbols)
            True output strings.

        Returns
        -------
        score : float
            ``1 - sum ED / sum |y|`` (see :func:`iokr.strings.letter_accuracy`).
        """
        return letter_accuracy(y, self.predict(X))

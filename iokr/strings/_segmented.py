"""Perfect segmentation (sec. 6.2): per-position regression onto the alphabet and Viterbi decoding with an LM."""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from .._docstrings import fill_doc
from .._validation import check_nonnegative_scalar, check_positive_scalar
from ..kernels import Polynomial
from ._calibration import LogisticCalibration
from ._kernels import _check_sequences
from ._language_model import NgramLanguageModel
from ._metrics import letter_accuracy
from ._ngrams import check_order, check_strings
from ._regression import KernelRidgeOutputs
from ._viterbi import viterbi_decode

#: Entries shared by the docstrings of the methods: the input sequences and the predicted strings.
_DOCS = {
    "X": """
        X : list of ndarray of shape (L_i, n_features)
            Segment feature vectors of each input sequence.""",
    "y_pred": """
        y_pred : list of str (or tuples of symbols)
            One predicted string per sequence, one symbol per segment.""",
}

@fill_doc(**_DOCS)
class SegmentedStringKDE(BaseEstimator):
    """String prediction when each input segment maps to one output symbol (perfect segmentation).

    Each segment (e.g. a letter image) is regressed by kernel ridge onto the one-hot code of its symbol (an
    ``|alphabet|``-dimensional output space, one shared solve); a word is decoded by Viterbi, maximizing
    ``sum_i g_{c_i}(x_i) + lm_weight * log P_LM(c_1 .. c_L)`` with an n-gram language model of the training
    words. Since ``-||g - e_c||^2 = 2 g_c + const``, the emission term is the KDE pre-image objective per position.

    With ``calibration="logistic"`` the emission of symbol ``c`` becomes ``log P(c | x) - prior_weight * log P(c)``
    where ``P(c | x)`` is a multinomial logistic regression on the ``|alphabet|`` outputs fitted on their closed-form
    leave-one-out values (:class:`LogisticCalibration`) and ``P(c)`` the training symbol frequencies: the hybrid HMM
    combination, in which ``lm_weight = 1`` is the Bayes weight. ``preprocess`` (e.g. :class:`ImageBlur`) maps segment
    features before the kernel, at fit and predict; ``augment`` (e.g. :class:`ImageShifts`) adds transformed
    training copies with the same labels.

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
    preprocess : callable, optional
        Maps an array of segments ``(n, n_features)`` to ``(n, n_features_out)`` before the kernel (training and
        test segments alike), e.g. ``ImageBlur((16, 8), sigma=1.2)``.
    augment : callable, optional
        Maps the training segments ``(n, n_features)`` to ``(c * n, n_features)``: ``c`` stacked blocks, the first
        being the segments themselves and each block labelled like them, e.g. ``ImageShifts((16, 8))``. Applied
        before ``preprocess``; training only.
    calibration : {None, "logistic"}, default=None
        None decodes the raw regression outputs; "logistic" their calibrated log-probabilities (needs
        ``basis="full"`` and no ``augment``: it is fitted on exact leave-one-out outputs).
    calibration_C : float, default=10.0
        Inverse regularization of the logistic calibration.
    prior_weight : float, default=1.0
        With calibration, weight of the symbol log-prior subtracted from the log-posteriors (1 turns them into
        scaled likelihoods ``log P(x | c) + const``).
    lm_discount : float, default=0.75
        Absolute discount of the language model's interpolated smoothing, in (0, 1) (see
        :class:`NgramLanguageModel`).

    Attributes
    ----------
    alphabet_ : tuple
    language_model_ : NgramLanguageModel or None
    calibrator_ : LogisticCalibration or None
    log_prior_ : ndarray of shape (n_symbols,)
        Log frequencies of the training symbols.
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> centers = {"a": np.array([1.0, 0.0]), "b": np.array([0.0, 1.0])}
    >>> words = ["ab", "ba", "aab", "abb", "bab", "aba"] * 3
    >>> X = [np.array([centers[c] for c in w]) + 0.1 * rng.normal(size=(len(w), 2)) for w in words]
    >>> model = SegmentedStringKDE(alpha=0.1, lm_order=2, calibration="logistic").fit(X, words)
    >>> model.predict(X[:3])
    ['ab', 'ba', 'aab']
    """

    def __init__(self, kernel=None, alpha=1.0, lm_order=3, lm_weight=1.0, basis="full", n_basis=None,
                 random_state=None, preprocess=None, augment=None, calibration=None, calibration_C=10.0,
                 prior_weight=1.0, lm_discount=0.75):
        self.kernel = kernel
        self.alpha = alpha
        self.lm_order = lm_order
        self.lm_weight = lm_weight
        self.basis = basis
        self.n_basis = n_basis
        self.random_state = random_state
        self.preprocess = preprocess
        self.augment = augment
        self.calibration = calibration
        self.calibration_C = calibration_C
        self.prior_weight = prior_weight
        self.lm_discount = lm_discount

    def _check_params(self):
        name = type(self).__name__
        check_positive_scalar(self.alpha, "alpha", name)
        if self.lm_order is not None:
            check_order(self.lm_order, "lm_order", name)
        check_nonnegative_scalar(self.lm_weight, "lm_weight", name)
        check_nonnegative_scalar(self.prior_weight, "prior_weight", name)
        d = self.lm_discount
        if isinstance(d, bool) or not isinstance(d, numbers.Real) or not 0 < d < 1:
            raise ValueError(f"The 'lm_discount' parameter of {name} must be a float in (0, 1). Got {d!r} instead.")
        for param in ("preprocess", "augment"):
            value = getattr(self, param)
            if value is not None and not callable(value):
                raise TypeError(f"The '{param}' parameter of {name} must be None or a callable on an array of "
                                f"segments. Got {value!r}.")
        if self.calibration not in (None, "logistic"):
            raise ValueError(f"The 'calibration' parameter of {name} must be None or 'logistic'. "
                             f"Got {self.calibration!r} instead.")
        if self.calibration is not None:
            check_positive_scalar(self.calibration_C, "calibration_C", name)
            if self.basis != "full" or self.augment is not None:
                raise ValueError(f"calibration={self.calibration!r} of {name} is fitted on exact leave-one-out "
                                 f"outputs and needs basis='full' and augment=None; got basis={self.basis!r}, "
                                 f"augment={self.augment!r}.")

    def _segment_features(self, segments, name):
        if self.preprocess is None:
            return segments
        out = np.asarray(self.preprocess(segments))
        if out.ndim != 2 or out.shape[0] != segments.shape[0]:
            raise ValueError(f"'preprocess' must return one row per segment: got shape {out.shape} for "
                             f"{segments.shape[0]} {name} segments.")
        return out

    def fit(self, X, y):
        """Fit the segment regression and the language model.

        Parameters
        ----------
        %(X)s
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
        for i, (x, s) in enumerate(zip(X, symbols, strict=True)):
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
        A = len(self.alphabet_)
        self.log_prior_ = np.log(np.bincount(codes, minlength=A) / codes.size)
        inputs = flat
        if self.augment is not None:
            inputs = np.asarray(self.augment(flat))
            copies, rest = divmod(inputs.shape[0], flat.shape[0])
            if inputs.ndim != 2 or rest or copies < 1 or inputs.shape[1] != flat.shape[1]:
                raise ValueError(f"'augment' must return whole blocks of {flat.shape[0]} segments with "
                                 f"{flat.shape[1]} features; got shape {inputs.shape}.")
            targets = np.tile(targets, (copies, 1))
        kernel = Polynomial(degree=3) if self.kernel is None else self.kernel
        self.regressor_ = KernelRidgeOutputs(kernel, self.alpha, self.basis, self.n_basis, self.random_state,
                                             type(self).__name__)
        held_out = self.regressor_.fit(self._segment_features(inputs, "training"), targets,
                                       loo=self.calibration is not None)
        self.calibrator_ = None
        if self.calibration == "logistic":
            self.calibrator_ = LogisticCalibration(self.calibration_C).fit(held_out, codes)
        if self.lm_order is not None:
            self.language_model_ = NgramLanguageModel(self.lm_order, discount=self.lm_discount, start=A, stop=A + 1)
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
        %(X)s

        Returns
        -------
        scores : list of ndarray of shape (L_i, n_symbols)
            Score of every alphabet symbol for every segment.
        """
        check_is_fitted(self, "regressor_")
        X = _check_sequences(X, "X", self.n_features_in_)
        lengths = [x.shape[0] for x in X]
        if sum(lengths):
            G = self.regressor_.predict(self._segment_features(np.vstack(X), "test"))
        else:
            G = np.zeros((0, len(self.alphabet_)))
        return np.split(G, np.cumsum(lengths)[:-1])

    def emission_scores(self, scores):
        """Per-segment emission scores used by Viterbi: raw outputs, or calibrated log-likelihoods.

        Parameters
        ----------
        scores : ndarray of shape (L, n_symbols)
            Regression outputs of the segments of one sequence (from :meth:`segment_scores`).

        Returns
        -------
        emissions : ndarray of shape (L, n_symbols)
            ``scores`` without calibration, else ``log P(c | x) - prior_weight * log P(c)``.
        """
        check_is_fitted(self, "regressor_")
        if self.calibrator_ is None:
            return scores
        return self.calibrator_.log_proba(scores) - self.prior_weight * self.log_prior_

    def decode(self, scores, lm_weight=None):
        """Decode strings from per-segment scores by Viterbi (argmax without a language model).

        Parameters
        ----------
        scores : list of ndarray of shape (L_i, n_symbols)
            Per-segment regression outputs, as from :meth:`segment_scores` (turned into emissions by
            :meth:`emission_scores`).
        lm_weight : float, optional
            Weight of the language model (default: ``self.lm_weight``).

        Returns
        -------
        %(y_pred)s
        """
        w = self.lm_weight if lm_weight is None else lm_weight
        out = []
        for S in scores:
            S = self.emission_scores(S)
            if self.language_model_ is None or w == 0:
                path = S.argmax(axis=1)
            else:
                path, _ = viterbi_decode(S, self.log_transitions_, self.lm_order, w)
            chars = [self.alphabet_[i] for i in path]
            out.append("".join(chars) if self.str_output_ else tuple(chars))
        return out

    def predict(self, X):
        """Predict strings, one symbol per segment.

        The segments are scored by :meth:`segment_scores` and the strings decoded from the scores by :meth:`decode`.

        Parameters
        ----------
        %(X)s

        Returns
        -------
        %(y_pred)s
        """
        return self.decode(self.segment_scores(X))

    def score(self, X, y):
        """Return the letter accuracy of the predictions.

        Parameters
        ----------
        %(X)s
        y : sequence of str (or sequences of symbols)
            True output strings.

        Returns
        -------
        score : float
            ``1 - sum ED / sum |y|`` (see :func:`iokr.strings.letter_accuracy`).
        """
        return letter_accuracy(y, self.predict(X))

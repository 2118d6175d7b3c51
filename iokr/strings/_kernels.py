"""Kernels on strings and on sequences of vectors, by n-grams.

- :class:`NgramKernel`: ``k(x, y) = sum_n w_n sum_{|u| = n} |x|_u |y|_u`` over padded n-grams (eq. 11 of Cortes,
  Mohri & Weston 2005), computed from sparse count features.
- :class:`SequencePolynomialKernel`: ``k(x, y) = sum_{i, j} (coef0 + gamma <x_i, y_j>) ** degree`` where ``x_i``
  runs over the n-grams of a sequence of vectors (``n`` consecutive vectors concatenated), eq. 15 (image n-grams).

Both take Python sequences (lists of strings, lists of 2-D arrays) instead of one 2-D array, so they override the
array entry points of :class:`~iokr.kernels.Kernel` but keep its chunking under the working-memory budget.
"""

from __future__ import annotations

import numbers

import numpy as np
from scipy import sparse

from .._validation import check_finite, check_positive_scalar
from ..kernels import Kernel
from ..linalg.developer import row_slices
from ._ngrams import NgramVectorizer, check_order, check_orders, check_strings


def _inverse_sqrt(d):
    """``1 / sqrt(d)`` where ``d > 0``, 0 elsewhere (items with a zero feature vector)."""
    return np.where(d > 0, 1.0 / np.sqrt(np.where(d > 0, d, 1.0)), 0.0)


class _SequenceKernel(Kernel):
    """Kernel on Python sequences of objects: evaluates blocks chunked over rows of ``A``."""

    def __call__(self, A, B=None, *, working_memory=None):
        A = self.validate(A, "A")
        B = A if B is None else self.validate(B, "B")
        return self._evaluate(A, B, working_memory)

    def compute(self, A, B):
        """Block ``K(A, B)`` of validated sequences, shape (len(A), len(B)), float64."""
        return self._evaluate(A, B, None)

    def _evaluate(self, A, B, working_memory):
        state = self._prepare(A, B)
        n_a, n_b = self._len(A), self._len(B)
        out = np.empty((n_a, n_b), dtype=np.float64)
        bytes_per_row = max(n_b, 1) * 8 * (1 + self._temporaries_per_row(A, B))
        for rows in row_slices(n_a, bytes_per_row, working_memory):
            out[rows] = self._sequence_block(state, rows)
        if getattr(self, "normalize", False):
            da = self._raw_diag(A)
            db = da if B is A else self._raw_diag(B)
            out *= _inverse_sqrt(da)[:, None]
            out *= _inverse_sqrt(db)[None, :]
        return out

    def compute_diag(self, A):
        """Return the kernel values ``k(a, a)`` of each validated item of ``A``.

        Parameters
        ----------
        A : sequence
            Items the kernel takes (strings or vector sequences), validated.

        Returns
        -------
        diag : ndarray of shape (len(A),)
            ``k(a, a)`` (1 or 0 when normalized).
        """
        d = self._raw_diag(A)
        if getattr(self, "normalize", False):
            return (d > 0).astype(np.float64)
        return d

    def _len(self, A):
        return len(A)

    def _temporaries_per_row(self, A, B):
        return 1


class NgramKernel(_SequenceKernel):
    """n-gram string kernel ``k(x, y) = sum_n sum_{|u| = n} |x|_u |y|_u`` on padded strings.

    Parameters
    ----------
    n : int or sequence of int, default=3
        Orders: an int ``N`` means ``1..N``, a sequence lists them (each order weighs one).
    start, stop : hashable, default="^", "$"
        Pad symbols; strings may not contain them.
    normalize : bool, default=False
        Cosine-normalize: ``k(x, y) / sqrt(k(x, x) k(y, y))``.

    Notes
    -----
    Features are sparse counts over the n-grams present in ``A`` and ``B`` (never ``|alphabet| ** n`` columns),
    so symbols unseen elsewhere simply contribute nothing. Strings shorter than ``n`` (including the empty one)
    still have ``len(s) + n - 1`` padded n-grams.
    """

    has_explicit_features = True

    def __init__(self, n=3, start="^", stop="$", normalize=False):
        self.n = n
        self.start = start
        self.stop = stop
        self.normalize = normalize

    def validate(self, X, name):
        symbols, _ = check_strings(X, name, reserved=(self.start, self.stop))
        return symbols

    def _vectorizer(self):
        return NgramVectorizer(check_orders(self.n, "n", "NgramKernel"), self.start, self.stop)

    def _prepare(self, A, B):
        vec = self._vectorizer()
        vec.fit([a for a in A] + ([] if B is A else [b for b in B]))
        FA = vec.transform_symbols(A)
        FB = FA if B is A else vec.transform_symbols(B)
        return FA, FB.T.tocsc()

    def _sequence_block(self, state, rows):
        FA, FBt = state
        return (FA[rows] @ FBt).toarray()

    def _raw_diag(self, A):
        F = self._vectorizer().fit(A).transform_symbols(A)
        return np.asarray(F.multiply(F).sum(axis=1)).ravel()

    def features(self, A, n_features=2**20):
        """Hashed sparse n-gram counts, CSR of shape (n_strings, n_features); inner products equal the kernel
        unless two n-grams collide (probability ~ n_ngrams**2 / n_features). Rows have unit norm when
        ``normalize`` (zero rows stay zero)."""
        return self._hashed_features(self.validate(A, "A"), n_features)

    def compute_features(self, A):
        """:meth:`features` of validated strings with the default hashing width."""
        return self._hashed_features(A, 2**20)

    def _hashed_features(self, A, n_features):
        vec = NgramVectorizer(check_orders(self.n, "n", "NgramKernel"), self.start, self.stop, n_features)
        vec.fit([])
        F = vec.transform_symbols(A)
        if self.normalize:
            F = sparse.csr_matrix(F.multiply(_inverse_sqrt(np.asarray(F.multiply(F).sum(axis=1)).ravel())[:, None]))
        return F


def _check_sequences(X, name, n_features=None):
    if isinstance(X, np.ndarray) and X.ndim == 3:
        X = list(X)
    try:
        items = list(X)
    except TypeError:
        raise TypeError(
            f"'{name}' must be a sequence of 2-D arrays (one per sequence). Got {type(X).__name__}."
        ) from None
    if not items:
        raise ValueError(f"'{name}' must hold at least one sequence, got an empty sequence.")
    out = []
    for i, x in enumerate(items):
        arr = np.asarray(x, dtype=np.float64)
        if arr.ndim != 2:
            raise ValueError(
                f"'{name}[{i}]' must be a 2-D array of shape (length, n_features), got shape {arr.shape}."
            )
        if n_features is None:
            n_features = arr.shape[1]
        elif arr.shape[1] != n_features:
            raise ValueError(f"'{name}[{i}]' has {arr.shape[1]} features, expected {n_features} like '{name}[0]'.")
        check_finite(arr, f"{name}[{i}]")
        out.append(arr)
    return out


class SequenceNgramKernel(_SequenceKernel):
    """Base kernel summed over all pairs of n-grams of two vector sequences.

    ``k(x, y) = sum_{i, j} base(x_i, y_j)`` where ``x_i`` is the concatenation of ``n`` consecutive vectors of
    ``x``; with a Gaussian base this is a product of per-position Gaussians (two bigrams are similar when both
    their images are). :class:`SequencePolynomialKernel` is the polynomial case (eq. 15).

    Parameters
    ----------
    base : Kernel
        Kernel on the concatenated n-gram vectors (e.g. ``iokr.kernels.Gaussian(gamma=0.02)``).
    n : int, default=1
    pad : bool, default=True
        Pad each sequence by ``n - 1`` zero vectors on both sides (boundary n-grams).
    normalize : bool, default=False
    """

    def __init__(self, base=None, n=1, pad=True, normalize=False):
        self.base = base
        self.n = n
        self.pad = pad
        self.normalize = normalize

    def _base(self):
        if not isinstance(self.base, Kernel):
            raise ValueError(f"The 'base' parameter of {type(self).__name__} must be a Kernel. Got {self.base!r}.")
        return self.base

    def _check_params(self):
        check_order(self.n, "n", type(self).__name__)
        self._base()

    def validate(self, X, name):
        return _check_sequences(X, name)

    def _base_block(self, Za, Zb):
        return self._base().compute(Za, Zb)

    def _base_diag_block(self, z):
        return self._base().compute(z, z)

    def ngram_vectors(self, X):
        """Stacked n-gram vectors ``Z`` (n_ngrams, n * n_features) and sequence offsets (n_sequences + 1,)."""
        n = self.n
        blocks = []
        offsets = [0]
        for x in X:
            if self.pad and n > 1:
                z = np.zeros((n - 1, x.shape[1]))
                x = np.vstack([z, x, z])
            count = max(x.shape[0] - n + 1, 0)
            if count:
                blocks.append(np.hstack([x[i : i + count] for i in range(n)]))
            offsets.append(offsets[-1] + count)
        width = n * X[0].shape[1]
        Z = np.vstack(blocks) if blocks else np.zeros((0, width))
        return Z, np.asarray(offsets, dtype=np.int64)

    @staticmethod
    def _membership(offsets):
        m = offsets.size - 1
        counts = np.diff(offsets)
        rows = np.repeat(np.arange(m), counts)
        return sparse.csr_matrix((np.ones(offsets[-1]), (rows, np.arange(offsets[-1]))), shape=(m, offsets[-1]))

    def _prepare(self, A, B):
        self._check_params()
        if A[0].shape[1] != B[0].shape[1]:
            raise ValueError(f"{type(self).__name__}: 'A' has {A[0].shape[1]} features but 'B' has {B[0].shape[1]}.")
        ZA, oa = self.ngram_vectors(A)
        ZB, ob = (ZA, oa) if B is A else self.ngram_vectors(B)
        return ZA, oa, ZB, self._membership(ob).T.tocsc()

    def _temporaries_per_row(self, A, B):
        # n-grams per sequence of A times n-grams of B, relative to len(B): bounded by the longest sequences.
        la = max(x.shape[0] for x in A) + self.n
        lb = sum(x.shape[0] + self.n for x in B) / max(len(B), 1)
        return int(np.ceil(2 * la * lb))

    def _sequence_block(self, state, rows):
        ZA, oa, ZB, SBt = state
        lo, hi = oa[rows.start], oa[rows.stop]
        P = self._base_block(ZA[lo:hi], ZB)
        SA = self._membership(oa[rows.start : rows.stop + 1] - lo)
        return np.asarray((SA @ P) @ SBt)

    def _raw_diag(self, A):
        self._check_params()
        Z, offsets = self.ngram_vectors(A)
        out = np.empty(len(A))
        for i in range(len(A)):
            z = Z[offsets[i] : offsets[i + 1]]
            out[i] = self._base_diag_block(z).sum()
        return out


class SequencePolynomialKernel(SequenceNgramKernel):
    """Polynomial kernel summed over all pairs of n-grams of two vector sequences (eq. 15).

    ``k(x, y) = sum_{i, j} (coef0 + gamma <x_i, y_j>) ** degree`` where ``x_i`` is the concatenation of ``n``
    consecutive vectors of ``x``. With ``pad=True`` each sequence is padded by ``n - 1`` zero vectors on both sides
    (boundary n-grams, the analogue of start/stop symbols; a sequence of length ``L`` has ``L + n - 1`` n-grams),
    otherwise a sequence shorter than ``n`` has no n-grams and a zero row.

    Parameters
    ----------
    n : int, default=1
    degree : int, default=2
    gamma : float, default=1.0
    coef0 : float, default=1.0
    pad : bool, default=True
    normalize : bool, default=False
        Cosine-normalize the kernel.

    Notes
    -----
    Evaluated as ``S_A P S_B^T`` with ``P = (coef0 + gamma Z_A Z_B^T) ** degree`` over the stacked n-gram vectors
    ``Z`` and sparse sequence-membership matrices ``S``, chunked over sequences of ``A``.
    """

    def __init__(self, n=1, degree=2, gamma=1.0, coef0=1.0, pad=True, normalize=False):
        self.n = n
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0
        self.pad = pad
        self.normalize = normalize

    def _check_params(self):
        check_order(self.n, "n", "SequencePolynomialKernel")
        check_order(self.degree, "degree", "SequencePolynomialKernel")
        check_positive_scalar(self.gamma, "gamma", "SequencePolynomialKernel")
        if isinstance(self.coef0, bool) or not isinstance(self.coef0, numbers.Real) or self.coef0 < 0:
            raise ValueError(
                f"The 'coef0' parameter of SequencePolynomialKernel must be a float >= 0. Got {self.coef0!r} instead."
            )

    def _base_block(self, Za, Zb):
        P = Za @ Zb.T
        P *= self.gamma
        P += self.coef0
        if self.degree != 1:
            P **= self.degree
        return P

    def _base_diag_block(self, z):
        return self._base_block(z, z)


class SequenceProductKernel(_SequenceKernel):
    """Product kernel on padded n-grams of vector sequences, summed over all pairs of n-grams and over orders.

    ``k(x, y) = sum_n w_n sum_{i, j} prod_{t < n} b(x~_{i+t}, y~_{j+t})`` where ``x~`` is ``x`` padded by ``n - 1``
    pad positions on both sides and ``b`` extends the per-item ``base`` kernel to pads: ``b(pad, pad) = pad_value``,
    ``b(pad, item) = 0``. A pad is thus a distinct symbol, matched only with pads.

    Its feature map is ``sum_i phi~(x~_i) (x) ... (x) phi~(x~_{i+n-1})`` with ``phi~(item) = (phi(item), 0)`` and
    ``phi~(pad) = (0, sqrt(pad_value))``: the tensor RKHS of ``base``. When each output symbol ``a`` is (close to) a
    function ``f_a`` in the RKHS of ``base`` evaluated on one input item, the count of the padded output n-gram
    ``a_1..a_n`` of a sequence read item by item is ``sum_i prod_t f_{a_t}(x~_{i+t})``, an element of this RKHS: the
    regression of output n-gram counts is well specified, unlike eq. 15 where the polynomial is taken of the
    *sum* of the item inner products. Nothing tells the model which output symbol belongs to which item.

    Parameters
    ----------
    base : Kernel
        Kernel on single items (e.g. ``iokr.kernels.Polynomial(degree=3)`` on the 128 pixels of a letter image).
    n : int or sequence of int, default=2
        Orders: an int ``N`` means ``1..N``, a sequence lists them.
    weights : sequence of float, optional
        Weight ``w_n`` per order (same length as the orders; all ones when None).
    pad_value : float, default=1.0
        ``b(pad, pad)``; > 0.
    normalize : bool, default=False
        Cosine-normalize the kernel.

    Notes
    -----
    Evaluated as ``S_A Q_n S_B^T`` where ``Q_n[p, q] = prod_t P[p + t, q + t]`` over the per-item Gram matrix ``P``
    of the stacked padded sequences (one ``base`` evaluation per pair of items, shared by all orders) and ``S`` are
    sparse membership matrices of n-gram start positions, chunked over sequences of ``A``. Cost
    ``O(|A| |B| (d + N))`` for ``|A|``, ``|B|`` stacked items of dimension ``d``.

    Examples
    --------
    >>> import numpy as np
    >>> from iokr.kernels import Linear
    >>> from iokr.strings import SequenceProductKernel
    >>> x = [np.array([[1.0, 0.0], [0.0, 1.0]])]
    >>> SequenceProductKernel(Linear(), n=2)(x)   # unigrams: 1 + 1; bigrams ^x1, x1x2, x2$: 1 + 1 + 1
    array([[5.]])
    """

    def __init__(self, base=None, n=2, weights=None, pad_value=1.0, normalize=False):
        self.base = base
        self.n = n
        self.weights = weights
        self.pad_value = pad_value
        self.normalize = normalize

    def _orders_weights(self):
        name = type(self).__name__
        if not isinstance(self.base, Kernel):
            raise TypeError(f"The 'base' parameter of {name} must be a Kernel. Got {self.base!r}.")
        orders = check_orders(self.n, "n", name)
        if self.weights is None:
            weights = np.ones(len(orders))
        else:
            weights = np.asarray(self.weights, dtype=np.float64).ravel()
            if weights.size != len(orders) or not np.all(np.isfinite(weights)) or np.any(weights < 0):
                raise ValueError(
                    f"The 'weights' parameter of {name} must hold {len(orders)} finite floats >= 0 (one per order "
                    f"{orders}). Got {self.weights!r}."
                )
        check_positive_scalar(self.pad_value, "pad_value", name)
        return orders, weights

    def validate(self, X, name):
        return _check_sequences(X, name)

    def padded_items(self, X):
        """Stack the items of all sequences, each padded by ``max(n) - 1`` pad rows on both sides.

        Parameters
        ----------
        X : list of ndarray of shape (length, n_features)
            Sequences (validated).

        Returns
        -------
        Z : ndarray of shape (n_rows, n_features)
            Items, pad rows zero.
        is_pad : ndarray of shape (n_rows,) of bool
            Which rows are pads.
        offsets : ndarray of shape (n_sequences + 1,)
            Row range of each padded sequence in ``Z``.
        """
        orders, _ = self._orders_weights()
        p = max(orders) - 1
        d = X[0].shape[1]
        blocks, flags, offsets = [], [], [0]
        for x in X:
            blocks.append(np.vstack([np.zeros((p, d)), x, np.zeros((p, d))]))
            flags.append(np.r_[np.ones(p, bool), np.zeros(x.shape[0], bool), np.ones(p, bool)])
            offsets.append(offsets[-1] + x.shape[0] + 2 * p)
        return np.vstack(blocks), np.concatenate(flags), np.asarray(offsets, dtype=np.int64)

    @staticmethod
    def _starts(offsets, order, max_order):
        """Membership (n_sequences, n_rows) of the padded order-``order`` n-gram start rows of each sequence."""
        m = offsets.size - 1
        skip = max_order - order
        lengths = np.diff(offsets) - 2 * (max_order - 1)
        counts = lengths + order - 1
        rows = np.repeat(np.arange(m), counts)
        first = np.repeat(offsets[:-1] + skip, counts)
        within = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
        return sparse.csr_matrix((np.ones(rows.size), (rows, first + within)), shape=(m, offsets[-1]))

    def _item_block(self, Za, pad_a, Zb, pad_b):
        P = self.base.compute(Za, Zb)
        P[pad_a] = 0.0
        P[:, pad_b] = 0.0
        P[np.ix_(pad_a, pad_b)] = float(self.pad_value)
        return P

    def _prepare(self, A, B):
        orders, weights = self._orders_weights()
        if A[0].shape[1] != B[0].shape[1]:
            raise ValueError(f"{type(self).__name__}: 'A' has {A[0].shape[1]} features but 'B' has {B[0].shape[1]}.")
        ZA, pa, oa = self.padded_items(A)
        ZB, pb, ob = (ZA, pa, oa) if B is A else self.padded_items(B)
        N = max(orders)
        SBt = [self._starts(ob, o, N).T.tocsc() for o in orders]
        return orders, weights, ZA, pa, oa, ZB, pb, SBt

    def _temporaries_per_row(self, A, B):
        orders, _ = self._orders_weights()
        p = 2 * (max(orders) - 1)
        la = max(x.shape[0] for x in A) + p
        lb = sum(x.shape[0] + p for x in B) / max(len(B), 1)
        return int(np.ceil(3 * la * lb))

    def _sequence_block(self, state, rows):
        orders, weights, ZA, pa, oa, ZB, pb, SBt = state
        N = max(orders)
        lo, hi = oa[rows.start], oa[rows.stop]
        P = self._item_block(ZA[lo:hi], pa[lo:hi], ZB, pb)
        local = oa[rows.start : rows.stop + 1] - lo
        out = np.zeros((rows.stop - rows.start, SBt[0].shape[1]))
        Q = None
        for t in range(N):
            # Q[p, q] = prod_{s <= t} P[p + s, q + s]: one more factor per order, valid for start rows whose
            # (t + 1)-gram stays inside its padded sequence (the only rows the membership matrices select).
            Q = P if t == 0 else Q[:-1, :-1] * P[t:, t:]
            if t + 1 in orders:
                k = orders.index(t + 1)
                SA = self._starts(local, t + 1, N)[:, : Q.shape[0]]
                out += weights[k] * np.asarray((SA @ Q) @ SBt[k][: Q.shape[1]])
        return out

    def _raw_diag(self, A):
        return np.array([self._sequence_block(self._prepare([x], [x]), slice(0, 1))[0, 0] for x in A])

"""The input and output sides of kernel regression estimators, shared by IOKR, IOKRCV and MP-IOKR.

The input side turns inputs (features or a precomputed Gram) into the transformed training Gram and transformed
test-versus-train blocks. The output side turns outputs into either explicit transformed features (when the output
kernel has a finite feature map: the fast path) or transformed kernel blocks against the training outputs, and
produces candidate representations for each decoding rule (:func:`iokr.decoding.decoding_rule`). Both implement the
protocols of :mod:`iokr.estimators._protocols`.
"""

from __future__ import annotations

import numpy as np

from .._validation import check_array_2d, check_finite, check_n_features, check_square_gram
from ..decoding import BinaryTanimotoIndex, CountTanimotoIndex, decoding_rule
from ..decoding.developer import row_norms
from ..kernels import FeatureTransform, GaussianTanimoto, KernelTransform, Linear, Tanimoto, make_kernel


def check_output_features(Y, owner):
    """``Y`` as a 2-D array of output features (validated in detail later by the output kernel)."""
    if Y is None:
        raise ValueError(f"{owner} requires y to be passed, but the target y is None; pass 'Y', "
                         "the (n, p) array of output features.")
    if hasattr(Y, "toarray") and not isinstance(Y, np.ndarray):  # scipy.sparse: np.asarray makes a 0-d object array
        raise TypeError(f"{owner}: sparse matrices are not supported for 'Y'; pass a dense array (Y.toarray()), got "
                        f"a {type(Y).__name__} of shape {Y.shape}.")
    Y = np.asarray(Y)
    if Y.ndim != 2:
        raise ValueError(f"'Y' must be a 2-D array of output features (n, p), got shape {Y.shape}.")
    return Y


def gram_norms(H, gram):
    """``||h||`` of coefficient rows ``H`` (m, n) over a basis with Gram ``gram`` (n, n): ``sqrt(h^T K h)``."""
    return np.sqrt(np.clip(np.einsum("ij,ij->i", H @ gram, H), 0.0, None))


class InputSide:
    """Transformed input kernel: training Gram and test-versus-train blocks.

    Parameters
    ----------
    kernel : Kernel or str
        Input kernel, or ``"precomputed"``.
    center, normalize : bool
        Feature-space centering around the training mean, then unit norm.
    owner : str, optional
        Name of the estimator, for error messages.
    """

    def __init__(self, kernel, center, normalize, owner=None):
        self.kernel = make_kernel(kernel, "input_kernel")
        self.transform = KernelTransform(center, normalize, parameter="normalize_input", owner=owner)
        self.precomputed = self.kernel == "precomputed"
        self.owner = owner

    def fit_gram(self, X):
        """Validate ``X`` and return the transformed training Gram (n, n), float64."""
        if self.precomputed:
            gram = check_square_gram(X, "X")
            self.n_train = gram.shape[0]
            self.n_features_in = gram.shape[0]
        else:
            # The kernel's own validation: Precomputed takes integer indices, min-max Tanimoto non-negative features.
            X = self.kernel.validate(X, "X")
            self.X_train = X
            self.n_train, self.n_features_in = X.shape
            gram = self.kernel(X)
        return self.transform.fit_transform(gram)

    def check_test(self, X_test, input_diag=None):
        """Validate test inputs; returns the array (features, or test-by-train Gram for precomputed)."""
        X_test = check_array_2d(X_test, "X") if self.precomputed else self.kernel.validate(X_test, "X")
        if self.precomputed:
            if X_test.shape[1] != self.n_train:
                raise ValueError(
                    f"X has {X_test.shape[1]} features, but {getattr(self, 'owner', None) or 'the model'} is "
                    f"expecting {self.n_train} features as input: with a precomputed kernel, 'X' must be the "
                    f"(n_test, n_train) kernel between test and training inputs; got {X_test.shape[1]} columns for "
                    f"{self.n_train} training inputs."
                )
            if self.transform.normalize:
                if input_diag is None:
                    raise ValueError(
                        "With input_kernel='precomputed' and normalize_input=True, pass 'input_diag', the test "
                        "inputs' kernel diagonal k(x, x) of shape (n_test,), needed to normalize them."
                    )
                input_diag = np.asarray(input_diag, dtype=np.float64).ravel()
                if input_diag.shape != (X_test.shape[0],):
                    raise ValueError(f"'input_diag' must have shape ({X_test.shape[0]},), got {input_diag.shape}.")
                check_finite(input_diag, "input_diag")
                if (input_diag < 0).any():  # normalization would zero these points silently (constant scores)
                    raise ValueError(f"'input_diag' must hold k(x, x) >= 0 (normalize_input=True divides by its square "
                                     f"root), got {int((input_diag < 0).sum())} negative values (smallest "
                                     f"{float(input_diag.min()):.3g}).")
        else:
            check_n_features(X_test, self.n_features_in, "X", getattr(self, "owner", None))
        return X_test, input_diag

    def test_block(self, X_test, rows, input_diag=None):
        """Transformed ``k(x_test[rows], x_train)`` of shape (n_rows, n_train), float64."""
        if self.precomputed:
            cross = np.asarray(X_test[rows], dtype=np.float64)
            diag = None if input_diag is None else input_diag[rows]
        else:
            block = X_test[rows]
            cross = np.asarray(self.kernel.compute(block, self.X_train), dtype=np.float64)
            diag = self.kernel.compute_diag(block) if self.transform.normalize else None
        transformed, _ = self.transform.transform(cross, diag)
        return transformed


def _binary_tanimoto_state(kernel, Y):
    """Training outputs indexed for an exact fast Tanimoto path (0/1 rows: intersection counts; non-negative integer
    counts: float32 inner products), or None when neither applies."""
    if type(kernel) not in (Tanimoto, GaussianTanimoto) or kernel.form != "inner":
        return None
    return BinaryTanimotoIndex.build(Y) or CountTanimotoIndex.build(Y)


#: Bytes of the float64 kernel block :meth:`OutputSide.candidate_block` transforms at a time (a cache's share).
CACHE_ROWS_BYTES = 1 << 21


def _candidate_term(cross_term, cross):
    """``cross_term(cross)`` checked: one finite value per candidate row of the raw block ``cross``."""
    cross.flags.writeable = False  # the term reads the block the representation is computed from
    term = np.asarray(cross_term(cross), dtype=np.float64)
    n = cross.shape[0]
    if term.shape != (n,):
        # a scalar or a column would be broadcast (a scalar silently shifts every score)
        raise ValueError(f"'candidate_term' must return one value per candidate, shape ({n},) for a block of {n}; "
                         f"got shape {term.shape}.")
    if not np.isfinite(term).all():
        # a NaN score makes the top-k scan skip the candidate's whole block (its row maximum is NaN)
        raise ValueError(f"'candidate_term' returned non-finite values for {np.count_nonzero(~np.isfinite(term))} "
                         f"of {term.size} candidates; scores must be finite.")
    return term


class OutputSide:
    """Transformed output kernel: explicit features when available, kernel blocks otherwise.

    Attributes
    ----------
    explicit : bool
        True when the output kernel has a finite feature map (linear, normalized linear).
    train_features : ndarray of shape (n, p)
        Transformed training output features (explicit path).
    train_gram : ndarray of shape (n, n)
        Transformed training output Gram (kernel path).
    binary : BinaryTanimotoIndex, CountTanimotoIndex or None
        Training outputs indexed for an exact fast path under a Tanimoto kernel (kernel path): packed bits for 0/1
        outputs, float32 rows for integer counts (see :mod:`iokr.decoding._count_tanimoto`).
    """

    def __init__(self, kernel, center, normalize):
        self.kernel = make_kernel(kernel, "output_kernel")
        if self.kernel == "precomputed":
            raise ValueError("The 'output_kernel' parameter cannot be 'precomputed': candidates must be scored "
                             "against training outputs; pass a Kernel object instead.")
        self.explicit = self.kernel.has_explicit_features
        self.center, self.normalize = center, normalize
        self.binary = None

    def fit(self, Y):
        Y = self.kernel.validate(Y, "Y")
        self.n_features = Y.shape[1]
        if self.explicit:
            features = self.kernel.compute_features(Y)
            self.feature_transform = FeatureTransform(self.center, self.normalize).fit(features)
            self.train_features = self.feature_transform.transform(features, dtype=np.float64)
        else:
            self.Y_train = Y
            self.kernel_transform = self._new_kernel_transform()
            self.binary = _binary_tanimoto_state(self.kernel, Y)
            self._train_gram = self.kernel_transform.fit_transform(self._raw_train_gram())
        return self

    def _new_kernel_transform(self):
        """The unfitted centering / normalization of the kernel path (fit, restore and the lazy training Gram)."""
        return KernelTransform(self.center, self.normalize, parameter="normalize_output")

    def _raw_train_gram(self):
        # the exact fast path gives the general kernel's values (see _cross_block), at half the cost for counts
        return self.kernel(self.Y_train) if self.binary is None else self._cross_block(self.Y_train)

    def restore(self, Y, transform_state):
        """The kernel path fitted on ``Y`` from its transform's saved statistics
        (:meth:`~iokr.kernels.KernelTransform.fitted_state`), without the ``n x n`` training Gram: candidates are
        scored exactly as after :meth:`fit` (the same statistics), and :attr:`train_gram`, which only cosine
        decoding and prediction norms read, is computed on first use, by :meth:`fit`'s own steps."""
        if self.explicit:
            raise ValueError("Only a kernel output side is restored from its transform's statistics; "
                             f"{type(self.kernel).__name__} has explicit features.")
        Y = self.kernel.validate(Y, "Y")
        self.n_features = Y.shape[1]
        self.Y_train = Y
        self.kernel_transform = self._new_kernel_transform()
        self.kernel_transform.restore(transform_state, Y.shape[0])
        self.binary = _binary_tanimoto_state(self.kernel, Y)
        self._train_gram = None
        return self

    @property
    def train_gram(self):
        """Transformed training output Gram (kernel path), shape (n, n); computed on first use after
        :meth:`restore`."""
        if self._train_gram is None:
            transform = self._new_kernel_transform()
            self._train_gram = transform.fit_transform(self._raw_train_gram())
        return self._train_gram

    def _cross_block(self, C):
        """``k(C, Y_train)``: under a Tanimoto kernel, from exact intersection counts (binary fingerprints) or exact
        float32 inner products (count fingerprints), equal to the general kernel's values."""
        dtype = np.result_type(C.dtype, self.Y_train.dtype, np.float32)
        if isinstance(self.binary, BinaryTanimotoIndex) and self.binary.applies_to(C):
            return self.kernel.from_tanimoto(self.binary.similarities(C, dtype=dtype))
        if isinstance(self.binary, CountTanimotoIndex):
            T = self.binary.similarities(C, dtype=dtype)
            if T is not None:
                return self.kernel.from_tanimoto(T)
        return self.kernel.compute(C, self.Y_train)

    def _cross_rows(self, C):
        """``rows -> k(C[rows], Y_train)``: count fingerprints' exact products are computed once for the block and
        their Tanimoto made per row range; other kernels' block is computed whole (:meth:`_cross_block`)."""
        if isinstance(self.binary, CountTanimotoIndex):
            rows_of = self.binary.similarity_rows(C, dtype=np.result_type(C.dtype, self.Y_train.dtype, np.float32))
            if rows_of is not None:
                return lambda rows: self.kernel.from_tanimoto(rows_of(rows))
        cross = self._cross_block(C)
        return lambda rows: cross[rows]

    def _kernel_rows(self, C, dtype, cross_term):
        """``(R, squared norms, term)`` of the kernel path, :data:`CACHE_ROWS_BYTES` of the float64 block at a time.

        The steps after the kernel values (the term, centering, normalization, the cast) are about ten passes over
        the block, each row on its own: in row ranges that stay in cache they took a third of the time on the whole
        block (1,089 candidates against 1,649 training structures, one thread, alone: 0.028 -> 0.010 s; with other
        processes sharing the cache, little of it), with the same values; the whole float64 block is never held.
        """
        cross_of, diag = self._cross_rows(C), self.kernel.compute_diag(C)
        m, n = C.shape[0], self.Y_train.shape[0]
        R = np.empty((m, n), dtype=dtype)
        sq_norms, term = np.empty(m), None if cross_term is None else np.empty(m)
        step = max(1, CACHE_ROWS_BYTES // (8 * max(n, 1)))
        for start in range(0, m, step):
            rows = slice(start, start + step)
            cross = cross_of(rows)
            if term is not None:
                term[rows] = _candidate_term(cross_term, cross)
            part, part_norms = self.kernel_transform.transform(cross, diag[rows])
            R[rows] = part.astype(dtype, copy=False)
            sq_norms[rows] = part_norms
        return R, sq_norms, term

    def candidate_block(self, C, decoding, name="candidates", cross_term=None):
        """Representation ``R`` and additive ``offset`` of a block of candidates for ``decoding``.

        float32 candidates give a float32 representation, so they are scored with float32 BLAS. ``cross_term``
        (kernel path only): ``f(k(C, Y_train)) -> (n_c,)`` read from the raw cross block before it is transformed,
        added to the offset (a per-candidate term such as a prior, at no second kernel evaluation).
        """
        if cross_term is not None and self.explicit:
            raise ValueError("A candidate term on the raw output-kernel block needs a kernel output side; this "
                             "output kernel is scored through explicit features.")
        rule = decoding_rule(decoding)
        C = np.asarray(C)
        if C.ndim != 2 or C.shape[1] != self.n_features:
            raise ValueError(
                f"'{name}' has candidates with {C.shape[-1] if C.ndim else 0} features, but the model was fitted "
                f"on outputs with {self.n_features} features."
            )
        C = self.kernel.validate(C, name)
        dtype = np.float32 if C.dtype == np.float32 else np.float64
        if self.explicit:
            # R is only read by the rule (scaled into a new array for cosine), so the untransformed input may be
            # used as is.
            R, sq_norms = self.feature_transform.transform_with_norms(
                self.kernel.compute_features(C), dtype=dtype, copy=False, norms=rule.needs_candidate_norms)
        else:
            R, sq_norms, term = self._kernel_rows(C, dtype, cross_term)
        R, offset = rule.candidate(R, sq_norms, unit_norm=self.normalize)
        if cross_term is not None:
            offset = term if offset is None else offset + term
        return R, offset

    def binary_rule(self, decoding):
        """:meth:`candidate_block` for 0/1 candidates in affine form (a :class:`~iokr.decoding.developer.BinaryRule`).

        Applies when the candidate representation is the candidate itself up to centering and a per-candidate
        factor, i.e. a plain linear output kernel; ``None`` otherwise. The rule's factors reproduce
        :meth:`candidate_block` (see :meth:`iokr.decoding.DecodingRule.binary_rule`).
        """
        if not self.explicit or type(self.kernel) is not Linear:
            return None
        mean = self.feature_transform.mean_ if self.center else None
        return decoding_rule(decoding).binary_rule(mean, unit_norm=self.normalize)

    def candidate_bytes_per_row(self, n_train):
        # kernel path: the block against the training outputs, and the candidate row itself (expanded from a compact
        # pool, validated, its norms), which dominates with few training outputs and long fingerprints
        width = self.n_features if self.explicit else n_train + self.n_features
        return 3 * 8 * width

    def query_norms(self, H):
        """``||h||`` in output space of predictions ``H``: row norms (explicit), ``sqrt(c^T K_y c)`` (kernel)."""
        return row_norms(H) if self.explicit else gram_norms(H, self.train_gram)

    def query_representation(self, coefficients_or_features, decoding, *, norm_floor=None):
        """Fold the decoding rule into the query side (``2 h`` for distance, ``h / ||h||`` for cosine).

        ``norm_floor`` (per query): for cosine, an ``h`` with ``||h|| <= norm_floor`` is rounding noise around 0
        and is scored as the zero vector.
        """
        return decoding_rule(decoding).query(coefficients_or_features, self.query_norms, norm_floor=norm_floor)

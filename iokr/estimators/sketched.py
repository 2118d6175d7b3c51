"""IOKR for large training sets: sketched inputs and outputs (Nystrom, p-sparsified, random features) and the
Nystrom-preconditioned CG (Falkon-style) solve of the full problem."""

from __future__ import annotations

import numpy as np
from sklearn.utils.validation import check_is_fitted

from .._validation import check_finite, check_n_features, check_positive_scalar
from ..kernels import Gaussian, Kernel, KernelTransform, RandomFourierFeatures, make_kernel
from ..linalg import (
    falkon_solve,
    greedy_landmarks,
    nystrom_whitening,
    pivoted_cholesky_landmarks,
    ridge_primal,
    sparse_sketch,
)
from ..linalg.developer import row_slices, subsample_indices
from ._sides import InputSide, OutputSide
from .iokr import IOKR

SOLVERS = ("nystrom", "greedy", "cholesky", "sparse", "rff", "falkon")


class _SketchedFeatures(Kernel):
    """Explicit features ``k(A, X_S) W`` of a sub-sampling sketch, or ``k(A, X) S^T W`` of a sparse one.

    ``k(A, X_S) W`` are the coordinates of the projection of ``phi(a)`` on the sketched subspace (the input
    features of the sketched solvers). With ``residual=True`` (the output sketch of "Sketch In, Sketch Out") one
    more coordinate ``r(a) = sqrt(k(a, a) - ||k(a, X_S) W||^2)``, the norm of what the projection leaves out, makes
    ``||f(a)||^2 = k(a, a)``: centering and normalization see each candidate's true norm. When the subspace holds
    every training output (landmarks on all distinct outputs), their residuals are 0 and every IOKR score equals
    the unsketched one.
    """

    has_explicit_features = True

    def __init__(self, base, points, whitening, sketch=None, residual=False):
        self.base = base
        self.points = points
        self.whitening = whitening
        self.sketch = sketch
        self.residual = residual

    def validate(self, X, name):
        return self.base.validate(X, name)

    def compute_features(self, A):
        cross = np.asarray(self.base.compute(A, self.points), dtype=np.float64)
        if self.sketch is not None:
            cross = np.asarray(self.sketch @ cross.T).T
        features = cross @ self.whitening
        if self.residual:
            left_out = np.asarray(self.base.compute_diag(A), dtype=np.float64) - np.einsum("ij,ij->i", features, features)
            features = np.hstack([features, np.sqrt(np.clip(left_out, 0.0, None))[:, None]])
        return features.astype(np.float32 if A.dtype == np.float32 else np.float64, copy=False)

    def compute(self, A, B):
        return self.compute_features(A) @ self.compute_features(B).T

    def compute_diag(self, A):
        Z = self.compute_features(A)
        return np.einsum("ij,ij->i", Z, Z)


def _landmarks(kernel, X, solver, n_components, rng, targets, working_memory):
    """Training indices of the Nystrom landmarks: uniform, pivoted Cholesky of ``K``, or greedy on ``targets``."""
    n = X.shape[0]
    if solver == "nystrom":
        return subsample_indices(n, n_components, rng)

    def columns(idx):
        idx = np.atleast_1d(np.asarray(idx, dtype=np.int64))
        return np.asarray(kernel.compute(X, X[idx]), dtype=np.float64)

    if solver == "cholesky":
        chosen = pivoted_cholesky_landmarks(columns, np.asarray(kernel.compute_diag(X), dtype=np.float64), n_components)
    else:
        chosen = greedy_landmarks(columns, targets, n_components, working_memory)
    return np.sort(chosen)


def _sketch_features(kernel, X, solver, n_components, sparsity, rng, working_memory, targets=None):
    """Fit a feature map of ``kernel`` on ``X`` for ``solver``; returns (feature kernel, training features)."""
    n = X.shape[0]
    if solver == "rff":
        if type(kernel) is not Gaussian:
            raise ValueError(f"solver='rff' approximates the Gaussian kernel only; got {type(kernel).__name__}.")
        rff = RandomFourierFeatures(kernel.gamma, int(n_components), int(rng.integers(2**31)))
        return rff, rff.compute_features(np.asarray(X, dtype=np.float64))
    if solver == "sparse":
        S = sparse_sketch(n_components, n, sparsity, rng)
        cross = np.empty((n, S.shape[0]))
        for rows in row_slices(n, 8 * n * (1 + kernel.temporaries_per_entry), working_memory):
            cross[rows] = np.asarray(S @ np.asarray(kernel.compute(X[rows], X), dtype=np.float64).T).T
        K_ss = np.asarray(S @ cross)
        W = nystrom_whitening(K_ss)
        return _SketchedFeatures(kernel, X, W, S), cross @ W
    landmarks = _landmarks(kernel, X, solver, n_components, rng, targets, working_memory)
    points = X[landmarks]
    cross = np.asarray(kernel(X, points, working_memory=working_memory), dtype=np.float64)
    W = nystrom_whitening(cross[landmarks])
    return _SketchedFeatures(kernel, points, W), cross @ W


def _distinct_rows(Y):
    """Indices, sorted, of the first occurrence of each distinct row of ``Y`` (all indices for non-array outputs).

    Output landmarks are drawn among distinct outputs: a repeated output adds nothing to the span of the sketch,
    and with at most ``output_components`` distinct outputs the sketch spans every training output, so the
    predictions (which lie in that span) are represented exactly.
    """
    if isinstance(Y, np.ndarray) and Y.ndim == 2:
        return np.sort(np.unique(Y, axis=0, return_index=True)[1])
    return np.arange(len(Y))


class _FeatureTransform:
    """Centering/normalization of sketched features with the true kernel diagonal.

    The squared norm of a centered point is ``k(x, x) - 2 <phi(x), m> + ||m||^2``, the kernel-form value of
    :class:`~iokr.kernels.KernelTransform`; using ``||phi(x) - m||^2`` instead would normalize the projection of a
    test point on the sketched span rather than the point itself, which differs even for a full-rank sketch.
    """

    def __init__(self, center, normalize):
        self.center, self.normalize = center, normalize

    def fit(self, Phi, diag):
        self.mean_ = Phi.mean(axis=0) if self.center else np.zeros(Phi.shape[1])
        self.diag_tol_ = 1e-10 * max(float(np.abs(diag).mean()) if diag.size else 0.0, np.finfo(np.float64).tiny)
        return self

    def transform(self, Phi, diag):
        out = Phi - self.mean_ if self.center else np.array(Phi, dtype=np.float64, copy=True)
        if self.normalize:
            sq = np.asarray(diag, dtype=np.float64) - 2.0 * (Phi @ self.mean_) + self.mean_ @ self.mean_
            inv = np.zeros_like(sq)
            positive = sq > self.diag_tol_
            inv[positive] = 1.0 / np.sqrt(sq[positive])
            out *= inv[:, None]
        return out


class _FeatureInput:
    """Input side of a sketched model: transformed explicit features instead of kernel blocks."""

    precomputed = False

    def __init__(self, feature_kernel, transform, n_train, n_features_in):
        self.feature_kernel, self.transform = feature_kernel, transform
        self.n_train, self.n_features_in = n_train, n_features_in

    def diag(self, X):
        """``k(x, x)`` of the kernel being approximated (of the random-feature kernel itself for ``"rff"``)."""
        return np.asarray(getattr(self.feature_kernel, "base", self.feature_kernel).compute_diag(X), dtype=np.float64)

    def check_test(self, X_test, input_diag=None):
        X_test = self.feature_kernel.validate(X_test, "X")
        check_n_features(X_test, self.n_features_in, "X")
        return X_test, input_diag

    def test_block(self, X_test, rows, input_diag=None):
        block = X_test[rows]
        features = np.asarray(self.feature_kernel.compute_features(block), dtype=np.float64)
        return self.transform.transform(features, self.diag(block) if self.transform.normalize else None)


class SketchedIOKR(IOKR):
    """IOKR for large ``n``: sketched input and output kernels, or the full problem by preconditioned CG.

    Parameters
    ----------
    alpha : float, default=1.0
        As in :class:`~iokr.IOKR`.
    input_kernel, output_kernel : Kernel or str, default="linear"
        As in :class:`~iokr.IOKR` (``input_kernel="precomputed"`` is not supported).
    center_input, normalize_input, center_output, normalize_output : bool, default=True
        As in :class:`~iokr.IOKR`.
    decoding : {"distance", "inner", "cosine"}, default="distance"
        As in :class:`~iokr.IOKR`.
    working_memory : float, optional
        As in :class:`~iokr.IOKR`.
    solver : {"nystrom", "greedy", "cholesky", "sparse", "rff", "falkon"}, default="nystrom"
        - ``"nystrom"``: sub-sampling input sketch of ``n_components`` landmarks drawn uniformly; ridge on Nystrom
          features, ``O(n s^2)`` time and ``O(n s)`` memory.
        - ``"greedy"``: Nystrom features on landmarks chosen by the largest-residual incremental basis (Cortes et
          al. 2005, eq. 9-10): the next landmark is the training point whose transformed output features are worst
          fitted by least squares on the input-kernel columns of the landmarks so far. Needs explicit output
          features (a linear output kernel, or ``output_components``). Deterministic. Extra memory: the residual,
          ``n x p`` float64 (``p`` output features), and an ``n x s`` orthonormal basis; time
          ``O(s n (p + s))``.
        - ``"cholesky"``: Nystrom features on the pivots of an incomplete Cholesky factorization of the input
          kernel (largest residual diagonal first; stops early when the kernel is numerically of lower rank).
          Deterministic; ``O(n s^2)`` time, ``n x s`` extra memory.
        - ``"sparse"``: p-sparsified input sketch (``sparsity``); needs ``k(x, X)`` for all training points, so it is
          for moderate ``n``.
        - ``"rff"``: ``n_components`` random Fourier features (Gaussian input kernel only).
        - ``"falkon"``: the exact IOKR solution by block CG on ``(K + alpha I) C = Psi`` (``K`` computed block-wise,
          never stored), preconditioned by a Nystrom approximation with ``n_components`` landmarks. Needs an
          explicit output feature map (a linear output kernel, or ``output_components``).
    n_components : int, default=500
        Size ``s`` of the input sketch (landmarks, sketch rows or random features).
    output_components : int, optional
        Size of a sub-sampling output sketch: the output kernel is replaced by its Nystrom features on that many
        distinct training outputs (drawn at random among the distinct rows of ``Y``), so scoring costs
        ``output_components`` per candidate instead of ``n``. When ``Y`` has at most ``output_components`` distinct
        rows the sketch spans every training output and the scores equal the unsketched ones. One more feature,
        the norm of what the projection leaves out, keeps each candidate's true norm for centering and
        normalization. ``None`` keeps the output kernel as it is.
    sparsity : float, default=0.05
        Probability ``p`` of a nonzero entry of the p-sparsified sketch.
    max_iter : int, default=100
        Cap on the CG iterations of ``solver="falkon"`` (a :class:`~iokr.exceptions.ConvergenceWarning` if some
        output column has not reached ``tol`` by then).
    tol : float, default=1e-8
        Stopping rule of ``solver="falkon"``: CG stops output column ``j`` at the first iterate whose true relative
        residual ``||Psi_j - (K + alpha I) c_j|| / ||Psi_j||`` is at most ``tol`` (the unpreconditioned residual of
        the full problem, confirmed by one product with ``K``; reported in ``cg_info_``).
    random_state : int or None, default=None
        Seed of the landmark sampling, sketches and random features.

    Attributes
    ----------
    coef_ : ndarray of shape (r, p)
        Ridge weights on the input features (explicit output path, sketch solvers).
    dual_coef_ : ndarray of shape (n, p)
        ``(K + alpha I)^{-1} Psi`` (``solver="falkon"``).
    n_iter_ : int
        CG iterations (``solver="falkon"``).
    cg_info_ : CGInfo
        ``solver="falkon"``: ``relative_residuals`` (one per output column, the true
        ``||Psi_j - (K + alpha I) c_j|| / ||Psi_j||`` at the stop) and ``converged``.
    n_components_ : int
        Rank of the input sketch actually used (eigenvalues of ``S K S^T`` under ``1e-10 x max`` are dropped).

    Notes
    -----
    With the features ``Phi = K S^T (S K S^T)^{-1/2}``, the sketched model solves
    ``min_W ||Phi W - Psi||^2 + alpha ||W||^2``, i.e. ``W = (Phi^T Phi + alpha I)^{-1} Phi^T Psi`` and
    ``h(x) = phi(x)^T W``. With a full-rank sketch (``n_components >= n``) ``Phi Phi^T = K`` and this is exactly IOKR.
    Centering and normalization act on the sketched features (equal to the kernel-form transforms at full rank).
    ``"falkon"`` applies the exact kernel-form transforms and converges to IOKR's solution for any sketch size; the
    sketch size only sets how fast.

    References
    ----------
    El Ahmad, Brogat-Motte, Laforgue, d'Alche-Buc, Sketch In, Sketch Out: Accelerating both Learning and Inference
    for Structured Prediction with Kernels, AISTATS 2024.
    Rudi, Carratino, Rosasco, FALKON: An Optimal Large Scale Kernel Method, NeurIPS 2017.
    """

    def __init__(self, alpha=1.0, input_kernel="linear", output_kernel="linear", center_input=True,
                 normalize_input=True, center_output=True, normalize_output=True, decoding="distance",
                 working_memory=None, solver="nystrom", n_components=500, output_components=None, sparsity=0.05,
                 max_iter=100, tol=1e-8, random_state=None):
        super().__init__(alpha=alpha, input_kernel=input_kernel, output_kernel=output_kernel,
                         center_input=center_input, normalize_input=normalize_input, center_output=center_output,
                         normalize_output=normalize_output, decoding=decoding, working_memory=working_memory)
        self.solver = solver
        self.n_components = n_components
        self.output_components = output_components
        self.sparsity = sparsity
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state

    def _check_sketch_params(self):
        name = type(self).__name__
        if self.solver not in SOLVERS:
            raise ValueError(f"The 'solver' parameter of {name} must be one of {SOLVERS}. Got {self.solver!r} instead.")
        for param in ("n_components", "max_iter") + (("output_components",) if self.output_components is not None
                                                      else ()):
            value = getattr(self, param)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(f"The '{param}' parameter of {name} must be an int >= 1. Got {value!r} instead.")
        check_positive_scalar(self.tol, "tol", name)
        if self.solver == "sparse" and not 0 < self.sparsity <= 1:
            raise ValueError(f"The 'sparsity' parameter of {name} must be in (0, 1]. Got {self.sparsity!r} instead.")
        if make_kernel(self.input_kernel, "input_kernel") == "precomputed":
            raise ValueError(f"{name} computes kernel blocks itself; 'input_kernel' cannot be 'precomputed'.")

    def fit(self, X, Y):
        """Fit the sketched (or preconditioned) regression; see :class:`IOKR`.

        Parameters
        ----------
        X : array-like of shape (n, d)
            Training inputs.
        Y : array-like of shape (n, p)
            Output features.

        Returns
        -------
        self : SketchedIOKR
            The fitted estimator.
        """
        alpha = self._check_params()
        self._check_sketch_params()
        Y = self._check_outputs(Y)
        rng = np.random.default_rng(self.random_state)
        kernel = make_kernel(self.input_kernel, "input_kernel")
        X = kernel.validate(X, "X")
        if Y.shape[0] != X.shape[0]:
            raise ValueError(f"'X' has {X.shape[0]} examples but 'Y' has {Y.shape[0]}.")
        self.n_features_in_ = X.shape[1]
        self.output_ = self._fit_output(Y, rng)
        self.n_output_features_ = self.output_.n_features
        if self.solver == "falkon":
            self._fit_falkon(kernel, X, alpha, rng)
        else:
            feature_kernel, Phi = _sketch_features(kernel, X, self.solver, self.n_components, self.sparsity, rng,
                                                   self.working_memory, self._greedy_targets())
            self.input_ = _FeatureInput(feature_kernel, None, X.shape[0], X.shape[1])
            diag = self.input_.diag(X)
            transform = _FeatureTransform(self.center_input, self.normalize_input).fit(Phi, diag)
            self.input_.transform = transform
            Phi = transform.transform(Phi, diag)
            self.n_components_ = Phi.shape[1]
            targets = self.output_.train_features if self.output_.explicit else None
            if targets is not None:
                self.coef_, self.jitter_ = ridge_primal(Phi, targets, alpha)
                self._projector = None
            else:  # kernel output path: c(x)^T = phi(x)^T (Phi^T Phi + alpha I)^{-1} Phi^T, width n
                self._projector, self.jitter_ = ridge_primal(Phi, np.eye(Phi.shape[0]), alpha)
        return self

    def _greedy_targets(self):
        """The transformed training output features that ``solver="greedy"`` fits (None for other solvers)."""
        if self.solver != "greedy":
            return None
        if not self.output_.explicit:
            raise ValueError(f"solver='greedy' selects landmarks by the residual of the output features, so it needs "
                             f"explicit output features; {type(self.output_.kernel).__name__} has none. Use a linear "
                             "output kernel or set 'output_components' (an output sketch).")
        return self.output_.train_features

    def _fit_output(self, Y, rng):
        output = OutputSide(self.output_kernel, self.center_output, self.normalize_output)
        if self.output_components is not None:
            base = output.kernel
            Y_checked = base.validate(Y, "Y")
            distinct = _distinct_rows(Y_checked)
            points = Y_checked[distinct[subsample_indices(distinct.size, self.output_components, rng)]]
            whitening = nystrom_whitening(base(points))
            output.kernel = _SketchedFeatures(base, points, whitening, residual=True)
            output.explicit = True
        return output.fit(Y)

    def _fit_falkon(self, kernel, X, alpha, rng):
        if not self.output_.explicit:
            raise ValueError("solver='falkon' needs explicit output features: use a linear output kernel or set "
                             "'output_components' (an output sketch).")
        n = X.shape[0]
        diag = np.asarray(kernel.compute_diag(X), dtype=np.float64)
        bytes_per_row = 8 * n * (2 + kernel.temporaries_per_entry)
        # One pass for the centering statistics (row means of K) without storing K.
        row_means = np.empty(n)
        for rows in row_slices(n, bytes_per_row, self.working_memory):
            row_means[rows] = np.asarray(kernel.compute(X[rows], X), dtype=np.float64).mean(axis=1)
        transform = KernelTransform(self.center_input, self.normalize_input, parameter="normalize_input",
                                    owner=type(self).__name__)
        transform.diag_tol_ = 1e-10 * max(float(np.abs(diag).mean()) if n else 0.0, np.finfo(np.float64).tiny)
        centered_diag = diag.copy()
        if self.center_input:
            transform.train_row_means_ = row_means
            transform.train_mean_ = float(row_means.mean())
            centered_diag += transform.train_mean_ - 2.0 * row_means
        centered_diag[centered_diag <= transform.diag_tol_] = 0.0
        transform.train_diag_ = centered_diag
        side = InputSide(kernel, self.center_input, self.normalize_input)
        side.transform, side.X_train, side.n_train, side.n_features_in = transform, X, n, X.shape[1]
        self.input_ = side

        def blocks():
            for rows in row_slices(n, bytes_per_row, self.working_memory):
                yield rows, side.test_block(X, rows, diag[rows] if self.normalize_input else None)

        landmarks = subsample_indices(n, self.n_components, rng)
        cross = np.empty((n, landmarks.size))
        for rows, block in blocks():
            cross[rows] = block[:, landmarks]
        Phi = cross @ nystrom_whitening(cross[landmarks])
        self.n_components_ = Phi.shape[1]

        def matmat(V):
            out = np.empty_like(V)
            for rows, block in blocks():
                out[rows] = block @ V
            return out

        self.dual_coef_, info = falkon_solve(matmat, self.output_.train_features, Phi, alpha, rtol=self.tol,
                                             max_iter=self.max_iter)
        self.n_iter_ = info.n_iter
        self.cg_info_ = info
        self.jitter_ = 0.0
        check_finite(self.dual_coef_, "dual_coef_")

    def _fit_coefficients(self, gram, alpha):  # pragma: no cover - fit is overridden
        raise NotImplementedError

    def _explicit_weights(self):
        if self.solver == "falkon":
            return self.dual_coef_
        return self.coef_ if self.output_.explicit else None

    def _coefficients(self, test_block):
        check_is_fitted(self, "input_")
        if self.solver == "falkon":
            return test_block @ self.dual_coef_
        if self.output_.explicit:
            return test_block @ self.coef_
        return test_block @ self._projector

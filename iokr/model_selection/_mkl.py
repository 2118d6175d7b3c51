"""Multiple kernel learning on inputs: uniform (UNIMKL), ALIGN and ALIGNF (centered kernel alignment).

Convention (one for learning and applying): every base kernel is centered in feature space and, by default,
cosine-normalized with its *training* statistics (:class:`~iokr.kernels.KernelTransform`); the weights are learned
on these transformed training Grams, and the learned kernel applies the same transforms to any new block before
summing, ``k(a, b) = sum_m w_m T_m[k_m](a, b)``.

Alignment (Cortes, Mohri, Rostamizadeh, JMLR 2012) of centered Grams: ``rho(K, L) = <K, L>_F / (||K||_F ||L||_F)``.

- ``"unimkl"``: ``w_m = 1 / M``.
- ``"align"``: each kernel weighted by its own alignment with the target, ``w_m ∝ max(rho(K_m, K_y), 0)``.
- ``"alignf"``: the weights maximizing the alignment of the combined kernel, ``w ∝ v*`` with
  ``v* = argmin_{v >= 0} v^T M v - 2 v^T a``, ``M_kl = <K_k, K_l>_F``, ``a_k = <K_k, K_y>_F`` (Prop. 9 of the
  paper). This small QP is solved as a non-negative least-squares problem: with ``M = B^T B``
  (``B = diag(sqrt(s)) U^T`` from ``M = U diag(s) U^T``) and ``b`` solving ``B^T b = a``, the objective is
  ``||B v - b||^2 - ||b||^2``, so ``v* = nnls(B, b)`` (:func:`scipy.optimize.nnls`).

Weights are normalized to sum to one.
"""

from __future__ import annotations

import numpy as np

from ..kernels import Kernel, KernelTransform, TrainingGrams, make_kernel

MKL_METHODS = ("unimkl", "align", "alignf")


def centered_alignment_terms(grams, target):
    """``M_kl = <K_k, K_l>_F`` and ``a_k = <K_k, K_y>_F`` for (already centered) Grams."""
    flat = np.stack([np.asarray(g, dtype=np.float64).ravel() for g in grams])
    return flat @ flat.T, flat @ np.asarray(target, dtype=np.float64).ravel()


def alignf_weights(M, a):
    """Solve ``min_{v >= 0} v^T M v - 2 v^T a`` via NNLS and return ``v / sum(v)`` (see the module notes)."""
    M = 0.5 * (np.asarray(M, dtype=np.float64) + np.asarray(M, dtype=np.float64).T)
    a = np.asarray(a, dtype=np.float64)
    s, U = np.linalg.eigh(M)
    keep = s > s.max() * 1e-12 * s.size if s.size and s.max() > 0 else np.zeros_like(s, dtype=bool)
    if not keep.any():
        raise ValueError("ALIGNF: all centered base kernels are zero; no weights can be learned.")
    B = np.sqrt(s[keep])[:, None] * U[:, keep].T
    # a lies in the range of M (a_k = <K_k, K_y> and M's null space combines kernels to the zero matrix).
    b = (U[:, keep].T @ a) / np.sqrt(s[keep])
    from scipy.optimize import nnls  # noqa: PLC0415 - start-up time: scipy.optimize loads when ALIGNF runs

    v, _ = nnls(B, b)
    if v.sum() <= 0:
        raise ValueError("ALIGNF: no non-negative combination of the kernels is positively aligned with the target.")
    return v / v.sum()


def alignf_gram_weights(grams, target):
    """ALIGNF weights: maximize the centered alignment of ``sum_k w_k K_k`` with ``target`` over ``w >= 0``.

    The form of ALIGNF for base Grams already computed (dense, or held out of core by
    :class:`~iokr.kernels.TrainingGrams`): centers the Grams and the target one row block at a time
    (:meth:`TrainingGrams.alignment_terms`), then solves ``min_{v >= 0} v^T M v - 2 v^T a``
    (``M_kl = <K_k^c, K_l^c>_F``, ``a_k = <K_k^c, T^c>_F``) with :func:`alignf_weights`; returns ``v / sum(v)``,
    or uniform weights when no combination is positively aligned with the target (or every centered Gram is zero).

    Parameters
    ----------
    grams : list of ndarray of shape (n, n), or TrainingGrams
    target : ndarray of shape (n, n)

    Returns
    -------
    weights : ndarray of shape (n_kernels,), summing to 1

    References
    ----------
    Cortes, Mohri, Rostamizadeh, Algorithms for learning kernels based on centered alignment, JMLR 13, 2012.
    """
    grams = grams if isinstance(grams, TrainingGrams) else TrainingGrams(grams)
    try:
        return alignf_weights(*grams.alignment_terms(target))
    except ValueError:
        return np.full(grams.n_kernels, 1.0 / grams.n_kernels)


def learn_weights(grams, target, method):
    """Weights of ``method`` for transformed training Grams and a centered target Gram."""
    if method not in MKL_METHODS:
        raise ValueError(f"The 'method' parameter of AlignedKernelSum must be one of {MKL_METHODS}. "
                         f"Got {method!r} instead.")
    if method == "unimkl":
        return np.full(len(grams), 1.0 / len(grams))
    M, a = centered_alignment_terms(grams, target)
    if method == "align":
        norms = np.sqrt(np.clip(np.diag(M), 0.0, None))
        target_norm = float(np.linalg.norm(np.asarray(target, dtype=np.float64)))
        rho = np.divide(a, norms * target_norm, out=np.zeros_like(a), where=norms * target_norm > 0)
        rho = np.clip(rho, 0.0, None)
        if rho.sum() <= 0:
            raise ValueError("ALIGN: no kernel is positively aligned with the target.")
        return rho / rho.sum()
    return alignf_weights(M, a)


class AlignedKernelSum(Kernel):
    """Learned combination ``sum_m w_m T_m[k_m]`` of centered (and normalized) input kernels.

    Parameters
    ----------
    kernels : sequence of Kernel or str
        Base kernels on the same inputs.
    method : {"unimkl", "align", "alignf"}, default="alignf"
    center, normalize : bool, default=True
        Transform of every base kernel, fitted on the training inputs (used to learn and to apply the weights).
    output_kernel : Kernel or str, default="linear"
        Kernel on ``Y`` giving the target Gram (centered) of ALIGN / ALIGNF.

    Attributes
    ----------
    weights_ : ndarray of shape (n_kernels,)
        Non-negative weights summing to one.
    alignments_ : ndarray of shape (n_kernels,) or None
        Centered alignment of each transformed base kernel with the target (None without a target).

    Notes
    -----
    After ``fit(X, Y)`` this is an ordinary kernel: ``k(A, B)`` evaluates every base kernel, transforms it with
    its training statistics (centering needs ``k_m(A, X_train)`` and ``k_m(B, X_train)``) and sums. Pass it as
    ``input_kernel`` of :class:`~iokr.IOKR` or :class:`~iokr.model_selection.IOKRCV`; the combination is already
    centered, so ``center_input`` there changes nothing on the training data.

    Examples
    --------
    >>> import numpy as np
    >>> from iokr.kernels import Gaussian, Linear
    >>> rng = np.random.default_rng(0)
    >>> X, Y = rng.normal(size=(20, 3)), rng.normal(size=(20, 2))
    >>> mkl = AlignedKernelSum([Linear(), Gaussian(0.5)], method="alignf").fit(X, Y)
    >>> float(mkl.weights_.sum())
    1.0
    """

    temporaries_per_entry = 3

    def __init__(self, kernels, method="alignf", center=True, normalize=True, output_kernel="linear"):
        self.kernels = kernels
        self.method = method
        self.center = center
        self.normalize = normalize
        self.output_kernel = output_kernel

    def _base(self):
        kernels = [make_kernel(k, "kernels") for k in self.kernels]
        if not kernels or any(k == "precomputed" for k in kernels):
            raise ValueError("The 'kernels' parameter of AlignedKernelSum must hold at least one Kernel object "
                             "(use iokr.kernels.Precomputed for Gram matrices). Got "
                             f"{self.kernels!r} instead.")
        return kernels

    def fit(self, X, Y=None, *, target_gram=None):
        """Fit the transforms on ``X`` and learn the weights against the (centered) output Gram.

        Parameters
        ----------
        X : array-like of shape (n, d)
        Y : array-like of shape (n, p), optional
            Outputs; their Gram under ``output_kernel`` is the alignment target.
        target_gram : ndarray of shape (n, n), optional
            The target Gram directly (instead of ``Y``); it is centered here.

        Returns
        -------
        self
        """
        kernels = self._base()
        X = kernels[0].validate(X, "X")
        grams, self.transforms_ = [], []
        for kernel in kernels:
            transform = KernelTransform(self.center, self.normalize)
            grams.append(transform.fit_transform(kernel(X)))
            self.transforms_.append(transform)
        self.X_train_ = X
        self.kernels_ = kernels
        target = None
        if Y is not None and target_gram is not None:
            raise ValueError("AlignedKernelSum.fit: give the alignment target as 'Y' or as 'target_gram', not both.")
        if Y is not None or target_gram is not None:
            target = make_kernel(self.output_kernel, "output_kernel")(Y) if target_gram is None else \
                np.asarray(target_gram, dtype=np.float64)
            if target.shape != (X.shape[0], X.shape[0]):
                raise ValueError(f"The target Gram must have shape ({X.shape[0]}, {X.shape[0]}), got {target.shape}.")
            target = KernelTransform(True, False).fit_transform(target)
        elif self.method in ("align", "alignf"):
            raise ValueError(f"AlignedKernelSum(method={self.method!r}) needs an alignment target: pass 'Y' or "
                             "'target_gram' to fit.")
        self.weights_ = learn_weights(grams, target, self.method)
        self.alignments_ = None
        if target is not None:
            M, a = centered_alignment_terms(grams, target)
            norms = np.sqrt(np.clip(np.diag(M), 0.0, None)) * float(np.linalg.norm(target))
            self.alignments_ = np.divide(a, norms, out=np.zeros_like(a), where=norms > 0)
        return self

    def training_gram(self):
        """The combined transformed training Gram ``sum_m w_m T_m[K_m]``, shape (n, n)."""
        return self._combine(self.X_train_, self.X_train_)

    def validate(self, X, name):
        return self._base()[0].validate(X, name)

    def _transformed(self, m, A, B):
        kernel, transform = self.kernels_[m], self.transforms_[m]
        block = np.asarray(kernel.compute(A, B), dtype=np.float64)
        if transform.center:
            row_a = np.asarray(kernel.compute(A, self.X_train_), dtype=np.float64).mean(axis=1)
            row_b = np.asarray(kernel.compute(B, self.X_train_), dtype=np.float64).mean(axis=1)
            block = block - row_a[:, None] - row_b[None, :] + transform.train_mean_
            diag_a = kernel.compute_diag(A) - 2.0 * row_a + transform.train_mean_
            diag_b = kernel.compute_diag(B) - 2.0 * row_b + transform.train_mean_
        else:
            diag_a, diag_b = kernel.compute_diag(A), kernel.compute_diag(B)
        if transform.normalize:
            block = block * _inv_sqrt(diag_a)[:, None] * _inv_sqrt(diag_b)[None, :]
        return block

    def _combine(self, A, B):
        if not hasattr(self, "weights_"):
            raise ValueError("AlignedKernelSum must be fitted (fit(X, Y)) before it is evaluated.")
        total = np.zeros((A.shape[0], B.shape[0]))
        for m, weight in enumerate(self.weights_):
            if weight > 0:
                total += weight * self._transformed(m, A, B)
        return total

    def compute(self, A, B):
        return self._combine(A, B)

    def compute_diag(self, A):
        if not hasattr(self, "weights_"):
            raise ValueError("AlignedKernelSum must be fitted (fit(X, Y)) before it is evaluated.")
        total = np.zeros(A.shape[0])
        for m, weight in enumerate(self.weights_):
            kernel, transform = self.kernels_[m], self.transforms_[m]
            diag = np.asarray(kernel.compute_diag(A), dtype=np.float64)
            if transform.center:
                row = np.asarray(kernel.compute(A, self.X_train_), dtype=np.float64).mean(axis=1)
                diag = diag - 2.0 * row + transform.train_mean_
            if transform.normalize:
                diag = (diag > 0).astype(np.float64)
            total += weight * np.clip(diag, 0.0, None)
        return total


def _inv_sqrt(values):
    values = np.clip(np.asarray(values, dtype=np.float64), 0.0, None)
    out = np.zeros_like(values)
    out[values > 0] = 1.0 / np.sqrt(values[values > 0])
    return out

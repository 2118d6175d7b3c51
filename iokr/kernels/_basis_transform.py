"""Transformed kernel blocks against an extended basis: the training points followed by extra points.

MP-IOKR's representer theorem expands ``h`` over training examples *and* candidates. The centering/normalization of
the kernel is still fitted on the training points only (as in IOKR), and applied to every other point:

    Kc(a, b) = K(a, b) - r(a) - r(b) + mu,     r(a) = mean_j K(a, s_j),   mu = mean_ij K(s_i, s_j)
    Kn(a, b) = Kc(a, b) / sqrt(Kc(a, a) Kc(b, b))

which :class:`~iokr.kernels.KernelTransform` only offers against the training points. This module extends it to
blocks against ``[training points, extra points]``, with the extra points' ``r`` and centered diagonal cached.
"""

from __future__ import annotations

import numpy as np


def _inverse_sqrt(values):
    out = np.zeros_like(values, dtype=np.float64)
    positive = values > 0
    out[positive] = 1.0 / np.sqrt(values[positive])
    return out


class TransformedBasis:
    """Transformed kernel values against ``[train; extra]``.

    Parameters
    ----------
    kernel : Kernel
    transform : KernelTransform
        Fitted on ``kernel(train)``.
    train : array-like of shape (l, p)
        The points ``transform`` was fitted on (already validated by the kernel).
    extra : array-like of shape (z, p)
        Extra basis points (validated by the kernel here).

    Attributes
    ----------
    extra_cross : ndarray of shape (z, l)
        Transformed ``k(extra, train)``.
    n_basis : int
        ``l + z``.
    """

    def __init__(self, kernel, transform, train, extra):
        self.kernel, self.transform, self.train = kernel, transform, train
        self.extra = kernel.validate(extra, "candidates") if extra.shape[0] else extra
        self.n_train = train.shape[0]
        self.n_basis = self.n_train + self.extra.shape[0]
        if self.extra.shape[0]:
            raw = np.asarray(kernel(self.extra, train), dtype=np.float64)
            self.extra_means, self.extra_scale = self._row_stats(raw, kernel.compute_diag(self.extra))
            self.extra_cross = self._apply(raw, self.extra_means, self.extra_scale, self._train_means(),
                                           self._train_scale())
        else:
            self.extra_means = self.extra_scale = np.zeros(0)
            self.extra_cross = np.zeros((0, self.n_train))

    def _train_means(self):
        return self.transform.train_row_means_ if self.transform.center else np.zeros(self.n_train)

    def _train_scale(self):
        return _inverse_sqrt(self.transform.train_diag_) if self.transform.normalize else np.ones(self.n_train)

    def _row_stats(self, cross_train, diag):
        """``r(a)`` and the normalization scale ``1 / sqrt(Kc(a, a))`` (ones without normalization)."""
        diag = np.asarray(diag, dtype=np.float64)
        if self.transform.center:
            means = cross_train.mean(axis=1)
            centered = np.clip(diag - 2.0 * means + self.transform.train_mean_, 0.0, None)
        else:
            means, centered = np.zeros(cross_train.shape[0]), np.clip(diag, 0.0, None)
        scale = _inverse_sqrt(centered) if self.transform.normalize else np.ones_like(centered)
        return means, scale

    def _apply(self, cross, means_a, scale_a, means_b, scale_b):
        out = np.array(cross, dtype=np.float64, copy=True)
        if self.transform.center:
            out -= means_a[:, None]
            out -= means_b[None, :]
            out += self.transform.train_mean_
        out *= scale_a[:, None]
        out *= scale_b[None, :]
        return out

    def block(self, A):
        """Transformed ``k(A, [train; extra])`` of shape (m, l + z) and the transformed diagonal ``k'(a, a)``."""
        cross_train = np.asarray(self.kernel.compute(A, self.train), dtype=np.float64)
        means, scale = self._row_stats(cross_train, self.kernel.compute_diag(A))
        parts = [self._apply(cross_train, means, scale, self._train_means(), self._train_scale())]
        if self.extra.shape[0]:
            cross_extra = np.asarray(self.kernel.compute(A, self.extra), dtype=np.float64)
            parts.append(self._apply(cross_extra, means, scale, self.extra_means, self.extra_scale))
        diag = np.asarray(self.kernel.compute_diag(A), dtype=np.float64)
        if self.transform.center:
            diag = np.clip(diag - 2.0 * means + self.transform.train_mean_, 0.0, None)
        diag_t = diag * scale**2
        return np.concatenate(parts, axis=1), diag_t

    def gram(self, train_gram):
        """Transformed Gram over the basis, from the transformed training Gram (l, l)."""
        if not self.extra.shape[0]:
            return np.array(train_gram, dtype=np.float64)
        extra_gram = self._apply(np.asarray(self.kernel(self.extra), dtype=np.float64), self.extra_means,
                                 self.extra_scale, self.extra_means, self.extra_scale)
        extra_gram = 0.5 * (extra_gram + extra_gram.T)
        return np.block([[train_gram, self.extra_cross.T], [self.extra_cross, extra_gram]])

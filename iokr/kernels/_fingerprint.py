"""Kernels on molecular fingerprints: Tanimoto (inner-product and min-max forms), Gaussian-Tanimoto."""

from __future__ import annotations

import numpy as np

from .._validation import check_positive_scalar
from ._base import Kernel, squared_norms

_FORMS = ("inner", "minmax")


def _tanimoto_block(A, B, form):
    """Tanimoto similarity block; ``T(0, 0) = 1`` (two empty sets are identical), ``T(0, b != 0) = 0``."""
    if form == "inner":
        # <a,b> / (|a|^2 + |b|^2 - <a,b>): the Jaccard index for binary vectors, the real-valued Tanimoto otherwise.
        numerator = A @ B.T
        denominator = squared_norms(A)[:, None] + squared_norms(B)[None, :] - numerator
    elif form == "minmax":
        # sum_k min(a_k, b_k) / sum_k max(a_k, b_k) for non-negative vectors, via min = (a + b - |a - b|) / 2.
        # scipy.spatial loads scipy.special and scipy.constants (0.15 s of start-up); only min-max Tanimoto needs it
        from scipy.spatial.distance import cdist  # noqa: PLC0415 - start-up time

        l1 = cdist(A, B, metric="cityblock").astype(np.result_type(A, B), copy=False)
        sums = A.sum(axis=1)[:, None] + B.sum(axis=1)[None, :]
        numerator = sums - l1
        denominator = sums + l1
    else:
        raise ValueError(f"The 'form' parameter of Tanimoto must be one of {_FORMS}. Got {form!r} instead.")
    both_zero = denominator <= 0
    np.divide(numerator, denominator, out=numerator, where=~both_zero)
    numerator[both_zero] = 1.0
    return numerator


def _check_form(form, owner):
    if form not in _FORMS:
        raise ValueError(f"The 'form' parameter of {owner} must be one of {_FORMS}. Got {form!r} instead.")


class Tanimoto(Kernel):
    """Tanimoto (Jaccard) kernel.

    Parameters
    ----------
    form : {"inner", "minmax"}, default="inner"
        ``"inner"``: ``<a,b> / (|a|^2 + |b|^2 - <a,b>)``, the Jaccard index on binary fingerprints and the
        real-valued Tanimoto otherwise. ``"minmax"``: ``sum min(a,b) / sum max(a,b)`` for non-negative counts.

    Notes
    -----
    Both forms are positive semidefinite on their domains. Two all-zero fingerprints have similarity 1.
    """

    temporaries_per_entry = 3

    def __init__(self, form="inner"):
        self.form = form

    def validate(self, X, name):
        X = super().validate(X, name)
        if self.form == "minmax" and X.size and X.min() < 0:
            raise ValueError(f"Tanimoto(form='minmax') needs non-negative features; '{name}' has {X.min():g}.")
        return X

    def compute(self, A, B):
        return self.from_tanimoto(_tanimoto_block(A, B, self.form))

    def compute_diag(self, A):
        _check_form(self.form, "Tanimoto")
        return np.ones(A.shape[0], dtype=A.dtype)

    def from_tanimoto(self, T):
        """Kernel values from Tanimoto similarities ``T`` (any shape), in place where possible.

        The identity here; :class:`GaussianTanimoto` maps ``T`` to ``exp(-gamma (2 - 2 T))``. Code that gets ``T``
        another way (exact intersection counts of bit-packed fingerprints) applies the kernel through this method.
        """
        return T


class GaussianTanimoto(Tanimoto):
    """Gaussian kernel on the Tanimoto distance: ``k(a, b) = exp(-gamma (2 - 2 T(a, b)))``.

    ``2 - 2T`` is the squared distance between the Tanimoto feature maps, so this kernel is positive semidefinite.

    Parameters
    ----------
    gamma : float, default=1.0
    form : {"inner", "minmax"}, default="inner"
        Tanimoto form, as in :class:`Tanimoto`.
    """

    def __init__(self, gamma=1.0, form="inner"):
        self.gamma = gamma
        self.form = form

    def from_tanimoto(self, T):
        """``exp(-gamma (2 - 2 T))`` of Tanimoto similarities ``T``, computed in place (``T`` is overwritten)."""
        gamma = check_positive_scalar(self.gamma, "gamma", "GaussianTanimoto")
        T -= 1.0
        T *= 2.0 * gamma
        return np.exp(T, out=T)

    def compute_diag(self, A):
        check_positive_scalar(self.gamma, "gamma", "GaussianTanimoto")
        return super().compute_diag(A)

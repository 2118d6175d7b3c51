"""Cholesky solves of shifted symmetric positive (semi)definite systems ``(K + alpha I) X = B``.

A factorization that fails is retried with an escalating jitter (relative to the mean diagonal) and a
:class:`~iokr.exceptions.NumericalStabilityWarning` states the jitter used, as linear_operator's
``psd_safe_cholesky`` does. The factorization always runs in float64 on a copy.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from scipy import linalg as sla

from .._config import get_config
from ..exceptions import NumericalStabilityWarning


@dataclass(frozen=True)
class CholeskyFactor:
    """Lower Cholesky factor of ``K + (alpha + jitter) I``.

    Attributes
    ----------
    lower : ndarray of shape (n, n)
        Lower-triangular factor L with ``L L^T = K + (alpha + jitter) I`` (float64).
    alpha : float
        Requested shift.
    jitter : float
        Extra shift that was needed for the factorization to succeed (0.0 when none).
    """

    lower: np.ndarray
    alpha: float
    jitter: float

    def solve(self, rhs):
        """Solve ``(K + (alpha + jitter) I) X = rhs``; ``rhs`` of shape (n,) or (n, k), returns float64."""
        return sla.cho_solve((self.lower, True), np.asarray(rhs, dtype=np.float64), check_finite=False)

    def solve_lower(self, rhs):
        """Solve ``L X = rhs`` (a half solve, e.g. for whitening)."""
        return sla.solve_triangular(self.lower, np.asarray(rhs, dtype=np.float64), lower=True, check_finite=False)

    def logdet(self):
        """Log-determinant of the factored matrix."""
        return 2.0 * float(np.log(np.diag(self.lower)).sum())

    def packed(self):
        """The factor's lower triangle, row by row, shape (n (n + 1) / 2,): what a model file stores (the upper
        triangle is zero), read back exactly by :meth:`from_packed`."""
        return self.lower[np.tril_indices(self.lower.shape[0])]

    @classmethod
    def from_packed(cls, packed, n, alpha, jitter):
        """The factor of :meth:`packed`'s output, checked: float64, finite, a positive diagonal (a factor that does
        not come from a successful factorization is refused rather than solved with).

        Parameters
        ----------
        packed : ndarray of shape (n (n + 1) / 2,)
        n : int
        alpha, jitter : float
            The shift and the extra jitter the factorization used (``K + (alpha + jitter) I = L L^T``).

        Returns
        -------
        factor : CholeskyFactor
        """
        packed = np.asarray(packed)
        if packed.dtype != np.float64 or packed.shape != (n * (n + 1) // 2,):
            raise ValueError(f"A packed Cholesky factor of order {n} must be float64 of shape ({n * (n + 1) // 2},), "
                             f"got {packed.dtype} of shape {packed.shape}.")
        if not (np.isfinite(alpha) and np.isfinite(jitter) and jitter >= 0):
            raise ValueError(f"A Cholesky factor's shift and jitter must be finite (jitter >= 0), got {alpha!r} and "
                             f"{jitter!r}.")
        lower = np.zeros((n, n))
        start = 0
        for i in range(n):  # row slices: no n^2 index arrays (tril_indices) at load time
            lower[i, :i + 1] = packed[start:start + i + 1]
            start += i + 1
        diagonal = np.diagonal(lower)
        if not (np.isfinite(packed).all() and (diagonal > 0).all()):
            raise ValueError(f"A packed Cholesky factor of order {n} must be finite with a positive diagonal.")
        return cls(lower, float(alpha), float(jitter))


def cholesky_shifted(gram, alpha=0.0, *, name="K"):
    """Factor ``gram + alpha I`` by Cholesky, retrying with escalating jitter when it fails.

    Parameters
    ----------
    gram : ndarray of shape (n, n)
        Symmetric positive semidefinite matrix; not modified.
    alpha : float, default=0.0
        Shift added to the diagonal.
    name : str
        Name used in error and warning messages.

    Returns
    -------
    factor : CholeskyFactor

    Raises
    ------
    ValueError
        If ``gram`` contains NaN or infinity or is not square.
    numpy.linalg.LinAlgError
        If the matrix is not positive definite even with the largest jitter of the schedule.
    """
    gram = np.asarray(gram)
    if gram.ndim != 2 or gram.shape[0] != gram.shape[1]:
        raise ValueError(f"'{name}' must be a square matrix, got shape {gram.shape}.")
    if not np.isfinite(gram).all():
        raise ValueError(f"'{name}' contains NaN or infinity; cannot factor it.")
    n = gram.shape[0]
    shifted = np.array(gram, dtype=np.float64, copy=True)
    shifted[np.diag_indices(n)] += alpha
    scale = float(np.mean(np.abs(np.diag(shifted)))) if n else 1.0
    scale = scale if scale > 0 else 1.0
    lower = _lower_factor(shifted.copy())
    if lower is not None:
        return CholeskyFactor(lower, float(alpha), 0.0)
    for relative in get_config()["jitter_schedule"]:
        jitter = relative * scale
        trial = shifted.copy()
        trial[np.diag_indices(n)] += jitter
        lower = _lower_factor(trial)
        if lower is None:
            continue
        warnings.warn(
            f"Cholesky factorization of '{name}' + {alpha:g} I failed; succeeded after adding jitter {jitter:.3g} "
            f"({relative:g} x mean diagonal) to the diagonal.",
            NumericalStabilityWarning,
            stacklevel=2,
        )
        return CholeskyFactor(lower, float(alpha), float(jitter))
    raise np.linalg.LinAlgError(
        f"'{name}' + {alpha:g} I is not positive definite even with jitter "
        f"{get_config()['jitter_schedule'][-1] * scale:.3g}; check that the kernel is positive semidefinite "
        "or increase alpha."
    )


def _lower_factor(symmetric):
    """Lower Cholesky factor of a symmetric float64 matrix, overwriting it; None if it is not positive definite.

    LAPACK ``potrf`` runs on the Fortran-ordered view: the transpose of a C-ordered symmetric matrix is the same
    matrix, so no copy is made (``scipy.linalg.cholesky`` copies C-ordered input, several times slower here).
    """
    if symmetric.size == 0:
        return symmetric
    factor, info = sla.lapack.dpotrf(symmetric.T, lower=1, clean=1, overwrite_a=1)
    return factor if info == 0 else None


def solve_shifted(gram, rhs, alpha, *, name="K"):
    """Solve ``(gram + alpha I) X = rhs`` by Cholesky with jitter retry; returns float64."""
    return cholesky_shifted(gram, alpha, name=name).solve(rhs)

"""Kernel base class: block evaluation ``K(A, B)`` and diagonal, chunked under the working-memory budget."""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator

from .._validation import check_array_2d
from ..linalg import row_slices


class Kernel(BaseEstimator):
    """Base class of all kernels.

    Subclasses implement ``_block(A, B)`` (the dense block, assuming validated inputs) and ``_diag(A)``,
    and declare ``temporaries_per_entry``: how many arrays of the block's size ``_block`` allocates besides
    its result, so chunks can be sized to the budget. Parameters are stored by ``__init__`` only, which makes
    kernels cloneable and usable in scikit-learn parameter grids (``input_kernel__gamma``).
    """

    #: Extra block-sized temporaries allocated by ``_block`` (besides its output).
    temporaries_per_entry = 1
    #: True when ``features(A)`` returns an explicit finite feature map with ``K(A, B) = features(A) features(B)^T``.
    has_explicit_features = False

    def __call__(self, A, B=None, *, working_memory=None):
        """Evaluate the kernel block.

        Parameters
        ----------
        A : array-like of shape (n_a, n_features)
        B : array-like of shape (n_b, n_features), optional
            Defaults to ``A``.
        working_memory : float, optional
            Budget in MiB for temporaries; the global setting by default.

        Returns
        -------
        K : ndarray of shape (n_a, n_b)
            float32 when both inputs are float32, float64 otherwise.
        """
        A = self._check_input(A, "A")
        B = A if B is None else self._check_input(B, "B")
        self._check_compatible(A, B)
        # Index inputs (Precomputed, or sums of them) are integers; the kernel values are still floats.
        dtype = np.result_type(A.dtype, B.dtype, np.float32)
        out = np.empty((A.shape[0], B.shape[0]), dtype=dtype)
        bytes_per_row = max(B.shape[0], 1) * dtype.itemsize * (1 + self.temporaries_per_entry)
        for rows in row_slices(A.shape[0], bytes_per_row, working_memory):
            out[rows] = self._block(A[rows], B)
        return out

    def diag(self, A):
        """Diagonal ``k(a_i, a_i)`` without forming ``K(A, A)``; shape (n_a,)."""
        A = self._check_input(A, "A")
        return self._diag(A)

    def features(self, A):
        """Explicit feature map ``(n_a, n_features_out)``, for kernels with ``has_explicit_features``."""
        return self._features(self._check_input(A, "A"))

    def _features(self, A):
        """Explicit feature map of validated inputs."""
        raise NotImplementedError(f"{type(self).__name__} has no explicit finite feature map.")

    # -- hooks -------------------------------------------------------------------------------------------------
    def _check_input(self, X, name):
        return check_array_2d(X, name)

    def _check_compatible(self, A, B):
        if A.shape[1] != B.shape[1]:
            raise ValueError(
                f"{type(self).__name__}: 'A' has {A.shape[1]} features but 'B' has {B.shape[1]}; "
                "both must describe the same feature space."
            )

    def _block(self, A, B):  # pragma: no cover - abstract
        raise NotImplementedError

    def _diag(self, A):  # pragma: no cover - abstract
        raise NotImplementedError


def squared_norms(A):
    """Row-wise squared Euclidean norms, shape (n,)."""
    return np.einsum("ij,ij->i", A, A)

"""Kernel base class: block evaluation ``K(A, B)`` and diagonal, chunked under the working-memory budget.

Writing a kernel
----------------
A kernel is a :class:`Kernel` subclass whose ``__init__`` only stores its keyword arguments (so it can be cloned and
tuned in parameter grids) and which overrides the public extension methods:

- :meth:`Kernel.compute` ``(A, B) -> (n_a, n_b)``: the dense block on *validated* inputs (required);
- :meth:`Kernel.compute_diag` ``(A) -> (n_a,)``: ``k(a_i, a_i)`` without forming the block (required);
- :meth:`Kernel.compute_features` ``(A) -> (n_a, n_features_out)``: an explicit finite feature map with
  ``K(A, B) = F(A) F(B)^T``; only with ``has_explicit_features = True`` (optional);
- :meth:`Kernel.validate` ``(X, name) -> X``: input checks and conversion (optional; 2-D finite arrays by default);
- :meth:`Kernel.check_compatible` ``(A, B)``: checks between the two validated sides (optional; equal widths).

Users call ``kernel(A, B)``, ``kernel.diag(A)`` and ``kernel.features(A)``: these validate the inputs and chunk the
rows of ``A`` under the working-memory budget, using ``temporaries_per_entry`` (the block-sized arrays ``compute``
allocates besides its result). Wrappers and estimators that already hold validated inputs call the ``compute*``
methods directly. See ``docs/kernels.md`` for a worked example and ``tests/kernels/test_conformance.py`` for the
properties every kernel of the package is held to.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator

from .._validation import check_array_2d
from ..linalg.developer import row_slices


class Kernel(BaseEstimator):
    """Base class of all kernels.

    Subclasses implement :meth:`compute` (the dense block, assuming validated inputs) and :meth:`compute_diag`,
    optionally :meth:`compute_features` (with ``has_explicit_features = True``), :meth:`validate` and
    :meth:`check_compatible`, and declare ``temporaries_per_entry``: how many arrays of the block's size
    :meth:`compute` allocates besides its result, so chunks can be sized to the budget. Parameters are stored by
    ``__init__`` only, which makes kernels cloneable and usable in scikit-learn parameter grids
    (``input_kernel__gamma``).

    Dtype policy: float32 inputs give float32 blocks, anything else float64 (``__call__`` allocates the result in
    ``result_type(A, B, float32)``).

    Examples
    --------
    >>> import numpy as np
    >>> class Cosine(Kernel):
    ...     temporaries_per_entry = 0
    ...     def compute(self, A, B):
    ...         na, nb = np.linalg.norm(A, axis=1), np.linalg.norm(B, axis=1)
    ...         return (A @ B.T) / np.outer(na, nb)
    ...     def compute_diag(self, A):
    ...         return np.ones(A.shape[0], dtype=A.dtype)
    >>> Cosine()(np.array([[1.0, 0.0], [1.0, 1.0]])).round(3)
    array([[1.   , 0.707],
           [0.707, 1.   ]])
    """

    #: Extra block-sized temporaries allocated by ``compute`` (besides its output).
    temporaries_per_entry = 1
    #: True when ``features(A)`` returns an explicit finite feature map with ``K(A, B) = features(A) features(B)^T``.
    has_explicit_features = False

    # -- user API: validation and chunking -------------------------------------------------------------------
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
        A = self.validate(A, "A")
        B = A if B is None else self.validate(B, "B")
        self.check_compatible(A, B)
        # Index inputs (Precomputed, or sums of them) are integers; the kernel values are still floats.
        dtype = np.result_type(A.dtype, B.dtype, np.float32)
        out = np.empty((A.shape[0], B.shape[0]), dtype=dtype)
        bytes_per_row = max(B.shape[0], 1) * dtype.itemsize * (1 + self.temporaries_per_entry)
        for rows in row_slices(A.shape[0], bytes_per_row, working_memory):
            out[rows] = self.compute(A[rows], B)
        return out

    def diag(self, A):
        """Evaluate the diagonal ``k(a_i, a_i)`` without forming ``K(A, A)``.

        Parameters
        ----------
        A : array-like of shape (n_a, n_features)
            Inputs as the user passes them, checked and converted by :meth:`validate`.

        Returns
        -------
        diag : ndarray of shape (n_a,)
            ``k(a_i, a_i)`` for every row of ``A``.
        """
        return self.compute_diag(self.validate(A, "A"))

    def features(self, A):
        """Map the inputs to the explicit feature space, for kernels with ``has_explicit_features``.

        Parameters
        ----------
        A : array-like of shape (n_a, n_features)
            Inputs as the user passes them (the whole block at once: feature maps are not chunked here).

        Returns
        -------
        F : ndarray of shape (n_a, n_features_out)
            Feature rows with ``K(A, B) = F(A) F(B)^T``.

        Raises
        ------
        NotImplementedError
            When the kernel has no explicit finite feature map.
        """
        return self.compute_features(self.validate(A, "A"))

    # -- extension methods (override these) ------------------------------------------------------------------
    def validate(self, X, name="X"):
        """Check and convert one side's inputs; the result is what the ``compute*`` methods receive.

        Parameters
        ----------
        X : array-like
            Inputs as the user passes them.
        name : str, default="X"
            Parameter name used in error messages.

        Returns
        -------
        X : ndarray of shape (n, n_features)
            A finite 2-D float array by default.
        """
        return check_array_2d(X, name)

    def check_compatible(self, A, B):
        """Raise a ValueError unless validated ``A`` and ``B`` describe the same feature space.

        Parameters
        ----------
        A : ndarray of shape (n_a, n_features)
            Validated first side.
        B : ndarray of shape (n_b, n_features)
            Validated second side.

        Raises
        ------
        ValueError
            When ``A`` and ``B`` have different numbers of columns.
        """
        if A.shape[1] != B.shape[1]:
            raise ValueError(
                f"{type(self).__name__}: 'A' has {A.shape[1]} features but 'B' has {B.shape[1]}; "
                "both must describe the same feature space."
            )

    def compute(self, A, B):
        """Compute the dense block ``K[i, j] = k(a_i, b_j)`` of validated inputs.

        May allocate ``temporaries_per_entry`` extra arrays of the block's size; the result may be a fresh array
        the caller owns (wrappers scale it in place).

        Parameters
        ----------
        A : ndarray of shape (n_a, n_features)
            Validated first side (the result of :meth:`validate`).
        B : ndarray of shape (n_b, n_features)
            Validated second side.

        Returns
        -------
        K : ndarray of shape (n_a, n_b)
            The kernel block.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement compute(A, B).")

    def compute_diag(self, A):
        """Compute the diagonal ``k(a_i, a_i)`` of validated inputs without forming the block.

        Parameters
        ----------
        A : ndarray of shape (n_a, n_features)
            Validated inputs (the result of :meth:`validate`); wrappers holding such inputs call this directly.

        Returns
        -------
        diag : ndarray of shape (n_a,)
            ``k(a_i, a_i)`` for every row of ``A``.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement compute_diag(A).")

    def compute_features(self, A):
        """Compute the explicit feature map of validated inputs; see ``has_explicit_features``.

        Parameters
        ----------
        A : ndarray of shape (n_a, n_features)
            Validated inputs (the result of :meth:`validate`).

        Returns
        -------
        F : ndarray of shape (n_a, n_features_out)
            Feature rows with ``K(A, B) = F(A) F(B)^T``.
        """
        raise NotImplementedError(f"{type(self).__name__} has no explicit finite feature map.")


def squared_norms(A):
    """Row-wise squared Euclidean norms, shape (n,)."""
    return np.einsum("ij,ij->i", A, A)

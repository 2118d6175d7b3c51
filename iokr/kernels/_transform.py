"""Centering and normalization of kernels, fitted on training data and applied to any other block.

``center`` subtracts the training mean in feature space, ``phi(a) - mean_j phi(x_j)``; ``normalize`` then scales
every feature vector to unit norm. Both are expressed through kernel values only:

    Kc(a, b) = K(a, b) - r(a) - r(b) + mu,     r(a) = mean_j K(a, x_j),  mu = mean_ij K(x_i, x_j)
    Kn(a, b) = Kc(a, b) / sqrt(Kc(a, a) Kc(b, b))

so test inputs and candidates are transformed exactly as the training inputs were (as in the aalto IOKR code).
"""

from __future__ import annotations

import numpy as np

#: Centered squared norms under this fraction of the mean diagonal of a float32 Gram count as zero: below it the
#: float32 rounding of ``k(x, x) - 2 mean_j k(x, x_j) + mean k`` (a few ``eps32 = 1.2e-7`` times ``d`` terms) can
#: decide the direction of the normalized vector.
ZERO_NORM_RTOL_FLOAT32 = 1e-4


class KernelTransform:
    """Feature-space centering around the training mean, then unit-norm scaling, in kernel form.

    Parameters
    ----------
    center : bool, default=True
    normalize : bool, default=True
    parameter : str, default="normalize"
        The estimator parameter that asked for normalization, for the error a negative diagonal raises.
    owner : str, optional
        The estimator's name, for that error.

    Attributes
    ----------
    train_row_means_ : ndarray of shape (n,)
        ``r(x_j)`` of the training points (present when ``center``).
    train_mean_ : float
        ``mu``, mean of the training Gram (present when ``center``).
    train_diag_ : ndarray of shape (n,)
        Centered (not yet normalized) training diagonal.
    """

    def __init__(self, center=True, normalize=True, parameter="normalize", owner=None):
        self.center = center
        self.normalize = normalize
        self.parameter = parameter
        self.owner = owner

    def _check_normalizable(self, diag):
        """Raise when the (centered) training diagonal has squared norms below zero beyond rounding: dividing by
        their square root is impossible, and treating them as zero vectors would silently give constant scores."""
        negative = diag < -self.diag_tol_
        if self.normalize and negative.any():
            owner = f" of {self.owner}" if self.owner else ""
            raise ValueError(
                f"The '{self.parameter}' parameter{owner} needs a kernel with a positive diagonal (normalization "
                f"divides by sqrt(k(x, x)){' after centering' if self.center else ''}), but {int(negative.sum())} of "
                f"{diag.size} training points have k(x, x) < 0 (smallest {float(diag.min()):.3g}): the kernel is not "
                f"positive semidefinite. Check the kernel (e.g. its sign), or set {self.parameter}=False.")

    def fit_transform(self, gram):
        """Fit on the training Gram (n, n) and return its transform (float64, new array)."""
        # The centered diagonal cancels k(x, x) against the means, so its rounding error is that of the Gram's own
        # precision: a float32 Gram (float32 inputs) resolves much less than a float64 one.
        relative_tol = ZERO_NORM_RTOL_FLOAT32 if getattr(gram, "dtype", None) == np.float32 else 1e-10
        gram = np.array(gram, dtype=np.float64, copy=True)
        # Centering a point that sits at the training mean leaves rounding noise on its diagonal; normalizing by
        # the square root of that noise would blow it up to O(1) (and break positive semidefiniteness), so such
        # points are treated as zero vectors.
        self.diag_tol_ = relative_tol * max(float(np.abs(np.diag(gram)).mean()) if gram.size else 0.0,
                                            np.finfo(np.float64).tiny)
        if self.center:
            self.train_row_means_ = gram.mean(axis=1)
            self.train_mean_ = float(self.train_row_means_.mean())
            gram -= self.train_row_means_[:, None]
            gram -= self.train_row_means_[None, :]
            gram += self.train_mean_
            gram = 0.5 * (gram + gram.T)
        self.train_diag_ = np.diag(gram).copy()
        self._check_normalizable(self.train_diag_)
        self.train_diag_[self.train_diag_ <= self.diag_tol_] = 0.0
        if self.normalize:
            inv = _inverse_sqrt(self.train_diag_)
            gram *= inv[:, None]
            gram *= inv[None, :]
        return gram

    def fitted_state(self):
        """The fitted statistics as float64 arrays by name (what :meth:`transform` reads), for saving a fitted
        model without its training Gram; :meth:`restore` sets them back exactly."""
        state = {"diag_tol": np.array([self.diag_tol_]), "diag": np.asarray(self.train_diag_, dtype=np.float64)}
        if self.center:
            state["row_means"] = np.asarray(self.train_row_means_, dtype=np.float64)
            state["mean"] = np.array([self.train_mean_])
        return state

    def restore(self, state, n):
        """Set the statistics of :meth:`fitted_state` on ``n`` training points, checked (float64, shapes, finite,
        a non-negative diagonal); returns self."""
        names = {"diag_tol": (1,), "diag": (n,), **({"row_means": (n,), "mean": (1,)} if self.center else {})}
        if set(state) != set(names):
            raise ValueError(f"A kernel transform's state must hold exactly {sorted(names)}, got {sorted(state)}.")
        for name, shape in names.items():
            value = np.asarray(state[name])
            if value.dtype != np.float64 or value.shape != shape or not np.isfinite(value).all():
                raise ValueError(f"A kernel transform's {name!r} must be finite float64 of shape {shape}, got "
                                 f"{value.dtype} of shape {value.shape}.")
        if (state["diag"] < 0).any() or state["diag_tol"][0] <= 0:
            raise ValueError("A kernel transform's 'diag' must be non-negative and its 'diag_tol' positive.")
        self.diag_tol_ = float(state["diag_tol"][0])
        self.train_diag_ = state["diag"]
        if self.center:
            self.train_row_means_ = state["row_means"]
            self.train_mean_ = float(state["mean"][0])
        return self

    def transform(self, cross, diag=None):
        """Transform a block against the training points.

        Parameters
        ----------
        cross : ndarray of shape (m, n)
            ``K(a_i, x_j)`` for new points ``a_i`` and training points ``x_j``. Not modified.
        diag : ndarray of shape (m,), optional
            ``K(a_i, a_i)``; required when ``normalize``.

        Returns
        -------
        cross_t : ndarray of shape (m, n)
            Transformed block (dtype of ``cross``, new array).
        diag_t : ndarray of shape (m,) or None
            Transformed diagonal (``None`` if ``diag`` was not given).
        """
        out = np.array(cross, copy=True, dtype=np.result_type(cross.dtype, np.float32))
        diag_t = None if diag is None else np.array(diag, dtype=np.float64, copy=True)
        if self.center:
            row_means = cross.mean(axis=1, dtype=np.float64)
            out -= row_means[:, None].astype(out.dtype)
            out -= self.train_row_means_[None, :].astype(out.dtype)
            out += out.dtype.type(self.train_mean_)
            if diag_t is not None:
                diag_t += self.train_mean_ - 2.0 * row_means
        if diag_t is not None:
            diag_t[diag_t <= self.diag_tol_] = 0.0
        if self.normalize:
            if diag_t is None:
                raise ValueError("Normalization of new points needs their kernel diagonal k(a, a); pass 'diag'.")
            out *= _inverse_sqrt(diag_t)[:, None].astype(out.dtype)
            out *= _inverse_sqrt(self.train_diag_)[None, :].astype(out.dtype)
            diag_t = (diag_t > 0).astype(np.float64)
        return out, diag_t


class FeatureTransform:
    """The same centering/normalization on explicit feature vectors (for linear kernels).

    Attributes
    ----------
    mean_ : ndarray of shape (p,)
        Training feature mean (present when ``center``).
    """

    def __init__(self, center=True, normalize=True):
        self.center = center
        self.normalize = normalize

    def fit(self, features):
        if self.center:
            self.mean_ = np.asarray(features).mean(axis=0, dtype=np.float64)
        return self

    def transform(self, features, dtype=None):
        """Transformed copy of ``features`` (m, p), in ``dtype`` (default: float32 stays, else float64)."""
        return self.transform_with_norms(features, dtype)[0]

    def transform_with_norms(self, features, dtype=None, *, copy=True, norms=True):
        """Transformed ``features`` and the squared norms of its rows (float64, shape (m,), or None).

        The transform writes one new array and works in place on it, so it reads the input once; scoring of large
        candidate pools depends on this being cheap.

        Parameters
        ----------
        features : ndarray of shape (m, p)
        dtype : dtype, optional
            float32 stays float32, anything else becomes float64 by default.
        copy : bool, default=True
            With ``copy=False`` and neither centering nor normalization, the input itself is returned when it has
            the right dtype; the caller must then not modify the result.
        norms : bool, default=True
            Compute the squared norms (always computed when normalizing).
        """
        features = np.asarray(features)
        dtype = dtype or (np.float32 if features.dtype == np.float32 else np.float64)
        if self.center:  # one pass that reads the input and writes the centered copy
            out = np.subtract(features, self.mean_.astype(dtype), dtype=dtype)
        else:
            out = np.array(features, dtype=dtype, copy=copy or self.normalize)
        sq_norms = np.einsum("ij,ij->i", out, out).astype(np.float64) if norms or self.normalize else None
        if self.normalize:
            out *= _inverse_sqrt(sq_norms)[:, None].astype(dtype)
            sq_norms = (sq_norms > 0).astype(np.float64)
        return out, sq_norms


def _inverse_sqrt(values):
    values = np.asarray(values, dtype=np.float64)
    out = np.zeros_like(values)
    positive = values > 0
    out[positive] = 1.0 / np.sqrt(values[positive])
    return out

"""Segment features that are small images (e.g. 16 x 8 OCR letters): Gaussian blur and shifted training copies.

Both act on rows of a 2-D array, each row one image flattened in C order (``image.reshape(-1)``), and are meant
as the ``preprocess`` and ``augment`` options of :class:`~iokr.strings.SegmentedStringKDE`:

- :class:`ImageBlur` is linear, ``x -> B x`` with ``B = B_rows kron B_cols`` made of 1-D Gaussian filters with zero
  padding (the result of ``scipy.ndimage.gaussian_filter(..., mode="constant")`` per image). Binary 16 x 8 letters
  differ by one-pixel displacements that a Gaussian kernel on raw pixels sees as large distances; blurring first
  makes such neighbours close.
- :class:`ImageShifts` returns the images and copies shifted by whole pixels (zero fill), "virtual examples" that
  teach the regression the same invariance from data.
"""

from __future__ import annotations

import numbers

import numpy as np

from .._validation import check_array_2d, check_positive_scalar


def _check_shape(shape, owner):
    if (not isinstance(shape, (tuple, list)) or len(shape) != 2
            or not all(isinstance(s, numbers.Integral) and not isinstance(s, bool) and s >= 1 for s in shape)):
        raise ValueError(f"The 'shape' parameter of {owner} must be a pair of ints >= 1 (rows, columns). "
                         f"Got {shape!r} instead.")
    return int(shape[0]), int(shape[1])


def _check_images(X, shape, owner):
    X = check_array_2d(X, "X", allow_empty_rows=True)
    if X.shape[1] != shape[0] * shape[1]:
        raise ValueError(f"{owner} with shape={shape} expects rows of {shape[0] * shape[1]} pixels; 'X' has "
                         f"{X.shape[1]} columns.")
    return X


def gaussian_filter_matrix(size, sigma, truncate=4.0):
    """Matrix of a 1-D Gaussian filter with zero padding: ``(F @ v)[i] = sum_j w(i - j) v[j]``.

    Parameters
    ----------
    size : int
        Length of the signal.
    sigma : float
        Standard deviation in pixels (> 0).
    truncate : float, default=4.0
        The filter has radius ``int(truncate * sigma + 0.5)`` and weights normalized to sum to one over it, as in
        ``scipy.ndimage.gaussian_filter1d``.

    Returns
    -------
    F : ndarray of shape (size, size)
        Banded symmetric filter matrix; rows near the border sum to less than one (zero padding).
    """
    radius = int(truncate * sigma + 0.5)
    offsets = np.arange(-radius, radius + 1)
    weights = np.exp(-0.5 * (offsets / sigma) ** 2)
    weights /= weights.sum()
    diff = np.arange(size)[:, None] - np.arange(size)[None, :]
    F = np.zeros((size, size))
    inside = np.abs(diff) <= radius
    F[inside] = weights[diff[inside] + radius]
    return F


class ImageBlur:
    """Gaussian blur of flattened images, a linear map applied to every row.

    Parameters
    ----------
    shape : tuple of int
        ``(rows, columns)`` of one image; rows of ``X`` hold ``rows * columns`` pixels in C order.
    sigma : float, default=1.0
        Standard deviation of the Gaussian in pixels, along both axes.

    Notes
    -----
    ``blur(X) = X @ (F_r kron F_c)^T`` with :func:`gaussian_filter_matrix` factors: pixels outside the image count
    as zero, so mass near the border is lost (``scipy.ndimage.gaussian_filter`` with ``mode="constant"``).

    Examples
    --------
    >>> import numpy as np
    >>> x = np.zeros((1, 9)); x[0, 4] = 1.0
    >>> ImageBlur((3, 3), sigma=0.5)(x).reshape(3, 3).round(3)[1]
    array([0.084, 0.619, 0.084])
    """

    def __init__(self, shape, sigma=1.0):
        self.shape = shape
        self.sigma = sigma

    def matrix(self):
        """Return the blur as a matrix acting on flattened images.

        Returns
        -------
        B : ndarray of shape (p, p)
            ``F_r kron F_c`` with ``p = rows * columns``: ``blur(x) = B @ x``.
        """
        rows, cols = _check_shape(self.shape, "ImageBlur")
        sigma = check_positive_scalar(self.sigma, "sigma", "ImageBlur")
        return np.kron(gaussian_filter_matrix(rows, sigma), gaussian_filter_matrix(cols, sigma))

    def __call__(self, X):
        """Blurred copy of ``X``.

        Parameters
        ----------
        X : ndarray of shape (n, rows * columns)
            Flattened images, one per row.

        Returns
        -------
        X_blurred : ndarray of shape (n, rows * columns)
            Each image blurred by the Gaussian filter of :meth:`matrix`.
        """
        B = self.matrix()
        X = _check_images(X, _check_shape(self.shape, "ImageBlur"), "ImageBlur")
        return X @ B.T

    def __repr__(self):
        return f"ImageBlur(shape={self.shape!r}, sigma={self.sigma!r})"


class ImageShifts:
    """The images and their copies shifted by whole pixels (zero fill), for training-set augmentation.

    Parameters
    ----------
    shape : tuple of int
        ``(rows, columns)`` of one image.
    shifts : sequence of (int, int), default=((1, 0), (-1, 0), (0, 1), (0, -1))
        Displacements ``(down, right)`` in pixels; the unshifted images always come first and ``(0, 0)`` may not
        be listed again.

    Attributes
    ----------
    n_copies : int
        ``1 + len(shifts)``: rows of the output per input row.
    """

    def __init__(self, shape, shifts=((1, 0), (-1, 0), (0, 1), (0, -1))):
        self.shape = shape
        self.shifts = shifts

    def _check(self):
        shape = _check_shape(self.shape, "ImageShifts")
        try:
            shifts = [tuple(s) for s in self.shifts]
            ok = all(len(s) == 2 and all(isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in s)
                     for s in shifts)
        except TypeError:
            ok = False
        if ok:
            shifts = [(int(s[0]), int(s[1])) for s in shifts]
        else:
            raise ValueError(f"The 'shifts' parameter of ImageShifts must be a sequence of (int, int) pairs. "
                             f"Got {self.shifts!r} instead.")
        if (0, 0) in shifts or len(set(shifts)) != len(shifts):
            raise ValueError(f"The 'shifts' parameter of ImageShifts must list distinct non-zero shifts (the original "
                             f"images are always included). Got {self.shifts!r} instead.")
        too_far = [s for s in shifts if abs(s[0]) >= shape[0] or abs(s[1]) >= shape[1]]
        if too_far:
            raise ValueError(f"The 'shifts' parameter of ImageShifts has shifts {too_far} that move a {shape} image "
                             "entirely out of view.")
        return shape, shifts

    @property
    def n_copies(self):
        """Rows of the output per input row, ``1 + len(shifts)``."""
        return 1 + len(self._check()[1])

    def __call__(self, X):
        """Stack ``X`` and its shifted copies.

        Parameters
        ----------
        X : ndarray of shape (n, rows * columns)
            Flattened training images, one per row.

        Returns
        -------
        X_augmented : ndarray of shape (n_copies * n, rows * columns)
            Block ``b`` (rows ``b * n .. (b + 1) * n - 1``) is ``X`` shifted by ``shifts[b - 1]`` (block 0 is ``X``),
            so the labels of the copies are ``np.tile(labels, n_copies)``.
        """
        (rows, cols), shifts = self._check()
        X = _check_images(X, (rows, cols), "ImageShifts")
        n = X.shape[0]
        images = X.reshape(n, rows, cols)
        out = np.zeros((1 + len(shifts), n, rows, cols), dtype=X.dtype)
        out[0] = images
        for b, (dr, dc) in enumerate(shifts, 1):
            out[b, :, max(dr, 0) : rows + min(dr, 0), max(dc, 0) : cols + min(dc, 0)] = \
                images[:, max(-dr, 0) : rows + min(-dr, 0), max(-dc, 0) : cols + min(-dc, 0)]
        return out.reshape((1 + len(shifts)) * n, rows * cols)

    def __repr__(self):
        return f"ImageShifts(shape={self.shape!r}, shifts={self.shifts!r})"

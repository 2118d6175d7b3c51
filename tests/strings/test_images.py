"""Image preprocessing and augmentation for segment features, against scipy.ndimage and explicit pixel loops."""

import numpy as np
import pytest
from scipy import ndimage

from iokr.strings._images import ImageBlur, ImageShifts, gaussian_filter_matrix


@pytest.mark.parametrize("shape", [(16, 8), (5, 3), (1, 4)])
@pytest.mark.parametrize("sigma", [0.3, 0.8, 1.2, 2.5])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_blur_matches_scipy_gaussian_filter(shape, sigma, dtype, rng):
    X = (rng.random((7, shape[0] * shape[1])) > 0.6).astype(dtype)
    ours = ImageBlur(shape, sigma)(X)
    ref = ndimage.gaussian_filter(X.astype(np.float64).reshape(-1, *shape), sigma=(0, sigma, sigma),
                                  mode="constant").reshape(X.shape)
    tol = 1e-6 if dtype == np.float32 else 1e-13
    np.testing.assert_allclose(ours, ref, rtol=0, atol=tol)
    assert ours.shape == X.shape


def test_filter_matrix_rows_sum_to_one_inside():
    F = gaussian_filter_matrix(40, 1.5)
    # rows far from the border keep all the mass; border rows lose what falls outside (zero padding)
    np.testing.assert_allclose(F[10:30].sum(axis=1), 1.0, rtol=0, atol=1e-14)
    assert F[0].sum() < 1.0
    np.testing.assert_array_equal(F, F.T)


def test_blur_does_not_modify_input(rng):
    X = rng.random((3, 128))
    before = X.copy()
    ImageBlur((16, 8), 1.0)(X)
    np.testing.assert_array_equal(X, before)


def _shift_reference(image, dr, dc):
    rows, cols = image.shape
    out = np.zeros_like(image)
    for r in range(rows):
        for c in range(cols):
            if 0 <= r - dr < rows and 0 <= c - dc < cols:
                out[r, c] = image[r - dr, c - dc]
    return out


@pytest.mark.parametrize("shape", [(16, 8), (4, 3)])
@pytest.mark.parametrize("shifts", [((1, 0), (-1, 0), (0, 1), (0, -1)), ((2, -1),), ((1, 1), (-1, -1), (0, 2))])
def test_shifts_match_pixel_loop(shape, shifts, rng):
    n = 5
    X = rng.random((n, shape[0] * shape[1]))
    aug = ImageShifts(shape, shifts)
    out = aug(X)
    assert out.shape == (aug.n_copies * n, X.shape[1]) and aug.n_copies == 1 + len(shifts)
    np.testing.assert_array_equal(out[:n], X)
    for b, (dr, dc) in enumerate(shifts, 1):
        for i in range(n):
            ref = _shift_reference(X[i].reshape(shape), dr, dc).reshape(-1)
            np.testing.assert_array_equal(out[b * n + i], ref)


def test_shifts_keep_pixels_of_centred_images():
    image = np.zeros((6, 5))
    image[2:4, 1:4] = 1.0
    out = ImageShifts((6, 5), ((1, 0), (-1, 1)))(image.reshape(1, -1))
    np.testing.assert_array_equal(out.sum(axis=1), [6.0, 6.0, 6.0])  # nothing falls off the border


@pytest.mark.parametrize("shifts, match", [(((0, 0),), "distinct non-zero"), (((1, 0), (1, 0)), "distinct"),
                                           (((16, 0),), "out of view"), ((1, 2), "pairs"), ((("a", 1),), "pairs")])
def test_shifts_bad_parameters(shifts, match):
    with pytest.raises(ValueError, match=match):
        ImageShifts((16, 8), shifts)(np.zeros((1, 128)))


def test_bad_shapes():
    with pytest.raises(ValueError, match="'shape'"):
        ImageBlur((16, 0))(np.zeros((1, 128)))
    with pytest.raises(ValueError, match="128 pixels"):
        ImageBlur((16, 8))(np.zeros((1, 100)))
    with pytest.raises(ValueError, match="'sigma'"):
        ImageBlur((16, 8), sigma=0)(np.zeros((1, 128)))

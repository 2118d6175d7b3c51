"""Normalization needs a positive kernel diagonal: a negative-definite kernel is refused with an error naming the
parameter, instead of scores that are all -1 (before: every normalized vector became the zero vector)."""

import numpy as np
import pytest

from iokr import IOKR
from iokr.kernels import KernelTransform


def _negative_definite(n=8, seed=0):
    X = np.random.default_rng(seed).normal(size=(n, 3))
    return -(X @ X.T + np.eye(n))


@pytest.mark.parametrize("center_input", [True, False])
def test_iokr_normalize_input_refuses_a_negative_definite_kernel(center_input):
    K = _negative_definite()
    Y = (np.random.default_rng(1).random((8, 5)) > 0.5).astype(float)
    model = IOKR(input_kernel="precomputed", output_kernel="linear", center_input=center_input)
    with pytest.raises(ValueError, match=r"The 'normalize_input' parameter of IOKR needs a kernel with a positive "
                                         r"diagonal .* 8 of 8 training points have k\(x, x\) < 0"):
        model.fit(K, Y)


def test_psd_kernel_with_points_at_the_mean_still_normalizes():
    # centering leaves rounding noise (either sign) on a point at the training mean: treated as a zero vector
    X = np.array([[1.0, 0.0], [-1.0, 0.0], [0.0, 0.0]])
    out = KernelTransform(center=True, normalize=True).fit_transform(X @ X.T)
    np.testing.assert_allclose(np.diag(out), [1.0, 1.0, 0.0], atol=1e-12)


def test_negative_test_diagonal_is_refused():
    X = np.random.default_rng(0).normal(size=(8, 3))
    K = X @ X.T
    Y = (np.random.default_rng(1).random((8, 5)) > 0.5).astype(float)
    model = IOKR(input_kernel="precomputed", output_kernel="linear").fit(K, Y)
    with pytest.raises(ValueError, match=r"'input_diag' must hold k\(x, x\) >= 0 .* 1 negative values"):
        model.decision_function(K[:2], Y[:3], input_diag=np.array([1.0, -2.0]))

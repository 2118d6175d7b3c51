"""Centering/normalization in kernel form vs the same transform applied to explicit feature vectors."""

import numpy as np
import pytest
from reference import center_normalize, polynomial2_features

from iokr import IOKR
from iokr.kernels import FeatureTransform, KernelTransform, Linear, Polynomial

FLAGS = [(True, True), (True, False), (False, True), (False, False)]


def _kernel_and_features(kind):
    if kind == "linear":
        return Linear(), lambda X: np.asarray(X, dtype=np.float64)
    kernel = Polynomial(degree=2, gamma=0.5, coef0=1.0)
    return kernel, lambda X: polynomial2_features(X, gamma=0.5, coef0=1.0)


@pytest.mark.parametrize("center, normalize", FLAGS)
@pytest.mark.parametrize("kind", ["linear", "poly2"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_kernel_transform_matches_explicit_features(rng, kind, center, normalize, dtype):
    kernel, phi = _kernel_and_features(kind)
    # Small integers and 8 training rows keep the training mean and all linear-kernel sums exact, so the test point
    # placed at the training mean becomes exactly the zero vector after centering; its normalized similarities
    # are then defined as 0 (no noise / sqrt(noise) amplification).
    train = rng.integers(-3, 4, size=(8, 3)).astype(float)
    test = rng.normal(size=(5, 3))
    candidates = rng.integers(0, 3, size=(6, 3)).astype(float)
    test[0] = train.mean(axis=0)
    train, test, candidates = (a.astype(dtype) for a in (train, test, candidates))
    F_train, F_test, F_cand = center_normalize(phi(train), phi(test), phi(candidates), center=center,
                                               normalize=normalize)
    transform = KernelTransform(center=center, normalize=normalize)
    K_train = kernel(train)
    K_train_copy = K_train.copy()
    rtol = 1e-10 if dtype == np.float64 else 2e-4
    atol = 1e-10 if dtype == np.float64 else 2e-4
    np.testing.assert_allclose(transform.fit_transform(K_train), F_train @ F_train.T, rtol=rtol, atol=atol)
    np.testing.assert_array_equal(K_train, K_train_copy)
    for new, F_new in [(test, F_test), (candidates, F_cand)]:
        cross = kernel(new, train)
        cross_copy = cross.copy()
        cross_t, diag_t = transform.transform(cross, kernel.diag(new))
        assert cross_t.dtype == dtype
        np.testing.assert_array_equal(cross, cross_copy)
        np.testing.assert_allclose(cross_t, F_new @ F_train.T, rtol=rtol, atol=atol)
        np.testing.assert_allclose(diag_t, np.einsum("ij,ij->i", F_new, F_new), rtol=rtol, atol=atol)
    if kind == "linear" and center:
        assert diag_t is not None
        cross_t, diag_t = transform.transform(kernel(test[:1], train), kernel.diag(test[:1]))
        np.testing.assert_allclose(diag_t, [0.0], atol=atol)
        if normalize:
            np.testing.assert_array_equal(cross_t, 0.0)


def test_kernel_transform_needs_diag_to_normalize(rng):
    X = rng.normal(size=(6, 2))
    transform = KernelTransform(center=True, normalize=True)
    transform.fit_transform(X @ X.T)
    with pytest.raises(ValueError, match="pass 'diag'"):
        transform.transform(X[:2] @ X.T)
    centered = KernelTransform(center=True, normalize=False)
    centered.fit_transform(X @ X.T)
    cross_t, diag_t = centered.transform(X[:2] @ X.T)
    assert diag_t is None
    Xc = X - X.mean(axis=0)
    np.testing.assert_allclose(cross_t, Xc[:2] @ Xc.T, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("center, normalize", FLAGS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_feature_transform_matches_explicit(rng, center, normalize, dtype):
    train = rng.integers(-3, 4, size=(8, 4)).astype(dtype)  # exact mean (see above)
    test = rng.normal(size=(3, 4)).astype(dtype)
    test[1] = train.astype(np.float64).mean(axis=0)
    train_copy, test_copy = train.copy(), test.copy()
    F_train, F_test = center_normalize(train, test, center=center, normalize=normalize)
    transform = FeatureTransform(center=center, normalize=normalize).fit(train)
    out_train, out_test = transform.transform(train), transform.transform(test)
    assert out_test.dtype == dtype
    assert transform.transform(test, dtype=np.float64).dtype == np.float64
    tol = 1e-12 if dtype == np.float64 else 1e-5
    np.testing.assert_allclose(out_train, F_train, rtol=tol, atol=tol)
    np.testing.assert_allclose(out_test, F_test, rtol=tol, atol=tol)
    np.testing.assert_array_equal(train, train_copy)
    np.testing.assert_array_equal(test, test_copy)


def test_point_at_training_mean_is_a_zero_vector_after_normalization():
    # Rows symmetric around 0.1 * ones put a test point exactly at the training mean; centering leaves only rounding
    # noise on its diagonal, which must not be amplified to O(1) similarities by the normalization.
    rng = np.random.default_rng(3)
    half = rng.normal(size=(10, 6))
    X = np.vstack([half, -half]) + 0.1
    at_mean = np.full((1, 6), 0.1) + 1e-17
    transform = KernelTransform(center=True, normalize=True)
    transform.fit_transform(Linear()(X))
    block, diag = transform.transform(Linear()(at_mean, X), Linear().diag(at_mean))
    assert diag[0] == 0.0
    assert np.all(block == 0.0)



def test_float32_point_near_the_mean_stays_psd_and_bounded():
    # Regression (found by tests/properties/test_prop_iokr.py::test_float32_close_to_float64): a float32 input
    # 2.4e-4 from the training mean has a true centered squared norm (5.8e-8) under the float32 rounding of the
    # Gram's centering; normalizing that noise gave similarities of 1.33 and a Gram that is not PSD, so
    # IOKR(alpha=0.5).fit raised LinAlgError. The float32 threshold treats such a point as the zero vector.
    X = np.array([[-1.1097178], [0.58458674], [0.5068626], [2.4228733], [0.36080733], [0.27720597]], np.float32)
    transform = KernelTransform(center=True, normalize=True)
    gram = transform.fit_transform(Linear()(X))
    assert np.abs(gram).max() <= 1.0 + 1e-5
    assert np.linalg.eigvalsh(gram).min() >= -1e-5
    assert transform.train_diag_[2] == 0.0
    Y = np.random.default_rng(0).normal(size=(6, 2)).astype(np.float32)
    scores = IOKR(alpha=0.5).fit(X, Y).decision_function(X, Y)
    assert np.isfinite(scores).all()
    # float64 inputs resolve the same point: it keeps its (normalized) direction
    transform64 = KernelTransform(center=True, normalize=True)
    transform64.fit_transform(Linear()(X.astype(np.float64)))
    assert transform64.train_diag_[2] > 0.0

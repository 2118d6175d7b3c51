"""Multiple kernel learning: ALIGNF against a brute-force QP, ALIGN/UNIMKL formulas, one transform convention."""

import itertools

import numpy as np
import pytest

from iokr import IOKR
from iokr.kernels import FileGram, Gaussian, Linear, Polynomial, TrainingGrams
from iokr.kernels._training_grams import compact_gram
from iokr.model_selection import IOKRCV, AlignedKernelSum, alignf_gram_weights, alignf_weights, learn_weights


def brute_force_qp(M, a):
    """min_{v >= 0} v^T M v - 2 a^T v by enumerating active sets and checking the KKT conditions."""
    m = a.size
    best, best_value = None, np.inf
    for size in range(1, m + 1):
        for support in itertools.combinations(range(m), size):
            S = list(support)
            try:
                v_s = np.linalg.solve(M[np.ix_(S, S)], a[S])
            except np.linalg.LinAlgError:
                continue
            if (v_s < -1e-12).any():
                continue
            v = np.zeros(m)
            v[S] = v_s
            gradient = M @ v - a
            if (gradient[[k for k in range(m) if k not in S]] < -1e-10).any():
                continue
            value = v @ M @ v - 2 * a @ v
            if value < best_value:
                best, best_value = v, value
    return best / best.sum()


def centered(K):
    n = K.shape[0]
    H = np.eye(n) - 1.0 / n
    return H @ K @ H


@pytest.mark.parametrize("seed", range(6))
def test_alignf_matches_brute_force_qp(seed):
    rng = np.random.default_rng(seed)
    n, m = 15, 4
    grams = []
    for _ in range(m):
        F = rng.normal(size=(n, rng.integers(1, 5)))
        grams.append(centered(F @ F.T))
    Fy = rng.normal(size=(n, 3))
    target = centered(Fy @ Fy.T + grams[0] * rng.random())
    flat = np.stack([g.ravel() for g in grams])
    M, a = flat @ flat.T, flat @ target.ravel()
    expected = brute_force_qp(M, a)
    np.testing.assert_allclose(alignf_weights(M, a), expected, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(learn_weights(grams, target, "alignf"), expected, rtol=1e-7, atol=1e-9)


def test_align_and_unimkl_weights(rng):
    features = [rng.normal(size=(10, 2)) for _ in range(3)]
    grams = [centered(F @ F.T) for F in features]  # PSD, so every alignment is >= 0
    target = centered(np.outer(np.arange(10.0), np.arange(10.0)))
    rho = np.array([np.sum(g * target) / (np.linalg.norm(g) * np.linalg.norm(target)) for g in grams])
    expected = np.clip(rho, 0, None) / np.clip(rho, 0, None).sum()
    np.testing.assert_allclose(learn_weights(grams, target, "align"), expected, rtol=1e-12)
    np.testing.assert_allclose(learn_weights(grams, target, "unimkl"), np.full(3, 1 / 3))


def explicit_transformed_features(phi_train, phi_test):
    """Center by the training mean and normalize, on explicit features (the reference for the kernel form)."""
    mean = phi_train.mean(axis=0)
    out = []
    for phi in (phi_train, phi_test):
        c = phi - mean
        out.append(c / np.linalg.norm(c, axis=1, keepdims=True))
    return out


def poly2_features(X):
    """Explicit map of (x.y + 1)^2 for 2-D inputs."""
    x1, x2 = X[:, 0], X[:, 1]
    r2 = np.sqrt(2.0)
    return np.stack([np.ones_like(x1), r2 * x1, r2 * x2, x1**2, x2**2, r2 * x1 * x2], axis=1)


@pytest.mark.parametrize("method", ["unimkl", "align", "alignf"])
def test_learned_kernel_applies_the_training_transforms(rng, method):
    X, X_test = rng.normal(size=(20, 2)), rng.normal(size=(7, 2))
    Y = np.c_[X[:, 0] ** 2, X[:, 1]] + 0.1 * rng.normal(size=(20, 2))
    mkl = AlignedKernelSum([Linear(), Polynomial(degree=2, gamma=1.0, coef0=1.0)], method=method).fit(X, Y)
    assert mkl.weights_.shape == (2,) and mkl.weights_.sum() == pytest.approx(1.0) and (mkl.weights_ >= 0).all()
    lin_tr, lin_te = explicit_transformed_features(X, X_test)
    pol_tr, pol_te = explicit_transformed_features(poly2_features(X), poly2_features(X_test))
    w = mkl.weights_
    expected_train = w[0] * lin_tr @ lin_tr.T + w[1] * pol_tr @ pol_tr.T
    expected_cross = w[0] * lin_te @ lin_tr.T + w[1] * pol_te @ pol_tr.T
    np.testing.assert_allclose(mkl.training_gram(), expected_train, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(mkl(X_test, X), expected_cross, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(mkl.diag(X_test), np.full(7, 1.0), rtol=1e-12)
    if method != "unimkl":
        # The weights were learned on exactly these transformed training Grams.
        target = centered(Y @ Y.T)
        np.testing.assert_allclose(w, learn_weights([lin_tr @ lin_tr.T, pol_tr @ pol_tr.T], target, method),
                                   rtol=1e-8, atol=1e-10)


def test_learned_kernel_plugs_into_iokr_and_iokrcv(rng):
    X, Y = rng.normal(size=(25, 3)), rng.normal(size=(25, 4))
    mkl = AlignedKernelSum([Linear(), Gaussian(0.5), Gaussian(2.0)], method="alignf").fit(X, Y)
    cv = IOKRCV(alphas=[0.1, 1.0], input_kernel=mkl, normalize_input=False).fit(X, Y)
    assert hasattr(cv.best_estimator_.input_.kernel, "weights_")  # the fitted kernel is not cloned away
    model = IOKR(alpha=cv.alpha_, input_kernel=mkl, normalize_input=False).fit(X, Y)
    np.testing.assert_allclose(cv.predict_features(X[:3]), model.predict_features(X[:3]), rtol=1e-10)


def test_bad_input(rng):
    X = rng.normal(size=(8, 2))
    with pytest.raises(ValueError, match="'method' parameter"):
        AlignedKernelSum([Linear()], method="best").fit(X, X)
    with pytest.raises(ValueError, match="needs an alignment target"):
        AlignedKernelSum([Linear()], method="alignf").fit(X)
    with pytest.raises(ValueError, match="at least one Kernel"):
        AlignedKernelSum([]).fit(X, X)
    with pytest.raises(ValueError, match="must be fitted"):
        AlignedKernelSum([Linear()])(X)


def test_alignf_gram_weights_maximize_the_centered_alignment_against_random_search():
    """ALIGNF on Grams (the metabolite app's MKL) against 3,000 random weightings."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 5))
    target = X[:, :2] @ X[:, :2].T
    grams = [X[:, :2] @ X[:, :2].T, X[:, 2:] @ X[:, 2:].T, np.eye(40)]
    w = alignf_gram_weights(grams, target)

    def alignment(v):
        K = sum(vi * G for vi, G in zip(v, grams, strict=True))
        H = np.eye(40) - 1.0 / 40
        Kc, Tc = H @ K @ H, H @ target @ H
        return np.vdot(Kc, Tc) / np.linalg.norm(Kc)

    best = max(alignment(v) for v in rng.dirichlet(np.ones(3), size=3000))
    assert alignment(w) >= best - 1e-9
    np.testing.assert_allclose(w.sum(), 1.0)


def test_alignf_gram_weights_is_the_same_on_out_of_core_grams_and_uniform_when_nothing_aligns():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(30, 4))
    grams = [X[:, :2] @ X[:, :2].T, X[:, 2:] @ X[:, 2:].T]
    target = grams[0] + 0.1 * grams[1]
    np.testing.assert_allclose(alignf_gram_weights(TrainingGrams([FileGram(compact_gram(g)) for g in grams]), target),
                               alignf_gram_weights(grams, target), rtol=1e-10)
    np.testing.assert_array_equal(alignf_gram_weights([np.ones((30, 30))] * 2, target), [0.5, 0.5])

"""Closed-form hold-out / leave-one-out values against explicit retraining on the held-out split.

In the style of scikit-learn's ``test_ridge_gcv_vs_ridge_loo_cv``: every shortcut is checked against the naive
formula ``f_C(X_H) = K_HC (K_CC + alpha I)^{-1} Y_C``, over routes, dtypes, tall/wide shapes and target counts.
"""

import warnings

import numpy as np
import pytest
from sklearn.model_selection import GroupKFold, KFold

from iokr.exceptions import NumericalStabilityWarning
from iokr.linalg import (
    RegularizationPath,
    holdout_coefficients,
    holdout_predictions,
    holdout_residual_coefficients,
    holdout_residuals,
    loo_coefficients,
    loo_residuals,
)
from iokr.linalg._holdout import _spd_solve
from iokr.linalg.developer import EIGEN_MIN_ALPHAS, check_alphas, check_holdouts, sq_norms_in_kernel

ALPHAS = [1e-2, 0.3, 10.0]


def retrained_prediction(K, Y, rows, alpha):
    """Naive reference: train on the complement of ``rows`` and predict ``rows`` (float64)."""
    K, Y = np.asarray(K, dtype=np.float64), np.asarray(Y, dtype=np.float64)
    train = np.setdiff1d(np.arange(K.shape[0]), rows)
    coef = np.linalg.solve(K[np.ix_(train, train)] + alpha * np.eye(train.size), Y[train])
    return K[np.ix_(rows, train)] @ coef


def psd_float64(K):
    """The matrix the paths actually solve with: symmetrized, in float64, round-off negative eigenvalues clipped."""
    K = np.asarray(K, dtype=np.float64)
    values, vectors = np.linalg.eigh(0.5 * (K + K.T))
    return (vectors * np.clip(values, 0.0, None)) @ vectors.T


def make_problem(rng, shape, n_targets, dtype):
    n, d = shape
    X = rng.normal(size=(n, d)).astype(dtype)
    K = X @ X.T
    K = (K + K.T) / 2
    Y = rng.normal(size=(n,) if n_targets is None else (n, n_targets)).astype(dtype)
    return K, Y


def holdout_sets(kind, n, rng):
    if kind == "loo":
        return [np.array([i]) for i in range(n)]
    if kind == "kfold":
        return [test for _, test in KFold(5, shuffle=True, random_state=0).split(np.zeros((n, 1)))]
    groups = rng.integers(0, 7, size=n)
    return [test for _, test in GroupKFold(4).split(np.zeros((n, 1)), groups=groups)]


@pytest.mark.parametrize("method", ["eigen", "cholesky"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("shape", [(30, 5), (20, 50)], ids=["tall", "wide"])
@pytest.mark.parametrize("n_targets", [None, 3])
@pytest.mark.parametrize("kind", ["loo", "kfold", "grouped"])
def test_holdout_predictions_vs_retraining(rng, method, dtype, shape, n_targets, kind):
    K, Y = make_problem(rng, shape, n_targets, dtype)
    holdouts = check_holdouts(holdout_sets(kind, K.shape[0], rng), K.shape[0])
    path = RegularizationPath(K, ALPHAS, method=method)
    assert path.method == method
    # A float32 Gram carries round-off asymmetry and negative eigenvalues of relative size 1e-7 which the eigen
    # route clips (it solves with the nearest PSD matrix, in float64): retrain on that matrix.
    K_ref = psd_float64(K) if dtype == np.float32 and method == "eigen" else K
    rtol = 1e-8 if dtype == np.float64 else 1e-5
    for alpha, solver in zip(ALPHAS, path, strict=True):
        predictions = holdout_predictions(solver, Y, holdouts)
        for rows, pred in zip(holdouts, predictions, strict=True):
            expected = retrained_prediction(K_ref, Y, rows, alpha)
            assert pred.dtype == np.float64 and pred.shape == expected.shape
            np.testing.assert_allclose(pred, expected, rtol=rtol, atol=rtol * 1e-2 * np.abs(expected).max())


@pytest.mark.parametrize("method", ["eigen", "cholesky"])
@pytest.mark.parametrize("n_targets", [None, 4])
def test_loo_residuals_vs_retraining(rng, method, n_targets):
    K, Y = make_problem(rng, (25, 8), n_targets, np.float64)
    path = RegularizationPath(K, ALPHAS, method=method)
    for alpha, solver in zip(ALPHAS, path, strict=True):
        residuals = loo_residuals(solver, solver.prepare(Y))
        expected = np.stack([Y[i] - retrained_prediction(K, Y, np.array([i]), alpha)[0] for i in range(25)])
        np.testing.assert_allclose(residuals, expected.reshape(residuals.shape), rtol=1e-8, atol=1e-12)


@pytest.mark.parametrize("method", ["eigen", "cholesky"])
@pytest.mark.parametrize("kind", ["loo", "kfold", "grouped"])
def test_combination_coefficients_reproduce_predictions(rng, method, kind):
    """W_H = E_H - (G_HH)^-1 G_H: W_H Y equals the retrained prediction, and W_H vanishes on H."""
    K, Y = make_problem(rng, (24, 6), 5, np.float64)
    holdouts = check_holdouts(holdout_sets(kind, 24, rng), 24)
    solver = RegularizationPath(K, [0.2], method=method).at(0)
    for rows, W in zip(holdouts, holdout_coefficients(solver, holdouts), strict=True):
        assert W.shape == (rows.size, 24)
        assert np.all(W[:, rows] == 0.0)
        np.testing.assert_allclose(W @ Y, retrained_prediction(K, Y, rows, 0.2), rtol=1e-8, atol=1e-12)
    if kind == "loo":
        W_loo = loo_coefficients(solver)
        np.testing.assert_allclose(W_loo, np.vstack(holdout_coefficients(solver, holdouts)), rtol=1e-10,
                                   atol=1e-14)


@pytest.mark.parametrize("kind", ["loo", "kfold"])
def test_output_space_errors_through_output_gram(rng, kind):
    """||h_C(x_i) - psi(y_i)||^2 from R_H and K_y equals the error of the retrained explicit-feature model."""
    Kx, _ = make_problem(rng, (22, 4), None, np.float64)
    Psi = rng.normal(size=(22, 7))
    Ky = Psi @ Psi.T
    holdouts = check_holdouts(holdout_sets(kind, 22, rng), 22)
    solver = RegularizationPath(Kx, [0.5], method="eigen").at(0)
    for rows, R in zip(holdouts, holdout_residual_coefficients(solver, holdouts), strict=True):
        expected = ((Psi[rows] - retrained_prediction(Kx, Psi, rows, 0.5)) ** 2).sum(axis=1)
        np.testing.assert_allclose(sq_norms_in_kernel(R, Ky), expected, rtol=1e-8)


@pytest.mark.parametrize("kind", ["loo", "kfold"])
def test_stacked_coefficients_and_blocked_norms_equal_the_list_route(rng, kind):
    Kx, _ = make_problem(rng, (40, 4), None, np.float64)
    Psi = rng.normal(size=(40, 6))
    Ky = Psi @ Psi.T
    holdouts = check_holdouts(holdout_sets(kind, 40, rng), 40)
    solver = RegularizationPath(Kx, [0.5], method="eigen").at(0)
    listed = np.vstack(holdout_residual_coefficients(solver, holdouts))
    stacked = holdout_residual_coefficients(solver, holdouts, stacked=True)
    np.testing.assert_array_equal(stacked, listed)
    whole = np.einsum("ij,ij->i", listed @ Ky, listed)
    tiny_budget = 8 * 40 * 3 / 2**20  # three rows per block
    np.testing.assert_allclose(sq_norms_in_kernel(listed, Ky, tiny_budget), whole, rtol=1e-12)


def test_residuals_match_between_routes(rng):
    K, Y = make_problem(rng, (18, 30), 2, np.float64)
    holdouts = check_holdouts(holdout_sets("kfold", 18, rng), 18)
    eig = RegularizationPath(K, ALPHAS, method="eigen")
    chol = RegularizationPath(K, ALPHAS, method="cholesky")
    for se, sc in zip(eig, chol, strict=True):
        for a, b in zip(holdout_residuals(se, se.prepare(Y), holdouts), holdout_residuals(sc, sc.prepare(Y), holdouts), strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-9)


def test_auto_route_follows_grid_length():
    K = np.eye(4)
    assert RegularizationPath(K, np.ones(EIGEN_MIN_ALPHAS - 1), method="auto").method == "cholesky"
    assert RegularizationPath(K, np.ones(EIGEN_MIN_ALPHAS), method="auto").method == "eigen"


def test_singular_kernel_tiny_alpha_falls_back_to_eigen_route(rng):
    X = rng.normal(size=(30, 2))
    K = X @ X.T * 1e6  # rank 2, huge scale: K + 1e-12 I is numerically singular
    Y = rng.normal(size=30)
    path = RegularizationPath(K, [1e-12, 1.0], method="cholesky")
    with pytest.warns(NumericalStabilityWarning):
        solver = path.at(0)
    assert path.method == "eigen" and path.fallback
    residuals = loo_residuals(solver, solver.prepare(Y))
    assert np.isfinite(residuals).all()
    with warnings.catch_warnings():
        warnings.simplefilter("error", NumericalStabilityWarning)
        # The well-conditioned alpha is exact on the eigen route.
        good = loo_residuals(path.at(1), path.at(1).prepare(Y))
    expected = np.array([Y[i] - retrained_prediction(K, Y, np.array([i]), 1.0)[0] for i in range(30)])
    np.testing.assert_allclose(good, expected, rtol=1e-6)


def test_small_block_fallback_warns_and_stays_finite():
    block = np.array([[1.0, 1.0], [1.0, 1.0]])
    with pytest.warns(NumericalStabilityWarning, match="numerically singular"):
        out = _spd_solve(block, np.array([1.0, 1.0]))
    assert np.isfinite(out).all()


@pytest.mark.parametrize("alphas, match", [
    ([], "empty grid"),
    ([1.0, 0.0], "position 1"),
    ([1.0, -2.0], "position 1"),
    ([np.nan], "position 0"),
    (1.0, "1-D sequence"),
    ("abc", "1-D sequence"),
    ([[1.0, 2.0]], "1-D sequence"),
])
def test_check_alphas_rejects_bad_grids(alphas, match):
    with pytest.raises(ValueError, match=match):
        check_alphas(alphas)


@pytest.mark.parametrize("holdouts, match", [
    ([np.array([], dtype=int)], "is empty"),
    ([np.array([0, 5])], "outside"),
    ([np.array([1, 1])], "repeats"),
    ([np.arange(5)], "training side empty"),
    ([], "at least one"),
    ([np.array([0.5])], "integer"),
])
def test_check_holdouts_rejects_bad_sets(holdouts, match):
    with pytest.raises(ValueError, match=match):
        check_holdouts(holdouts, 5)


def retrained_with_intercept(K, Y, rows, alpha):
    """Reference: min ||Y_C - K_CC c - 1 b^T||^2 + alpha c^T K_CC c on the complement, via its KKT system
    [[K + alpha I, 1], [1^T, 0]] [c; b] = [Y; 0]; predicts K_HC c + b."""
    train = np.setdiff1d(np.arange(K.shape[0]), rows)
    m = train.size
    S = np.zeros((m + 1, m + 1))
    S[:m, :m] = K[np.ix_(train, train)] + alpha * np.eye(m)
    S[:m, m] = S[m, :m] = 1.0
    Yc = Y[train].reshape(m, -1)
    sol = np.linalg.solve(S, np.vstack([Yc, np.zeros((1, Yc.shape[1]))]))
    pred = K[np.ix_(rows, train)] @ sol[:m] + sol[m]
    return pred.reshape((rows.size,) + Y.shape[1:])


@pytest.mark.parametrize("method", ["eigen", "cholesky"])
@pytest.mark.parametrize("n_targets", [None, 3])
@pytest.mark.parametrize("kind", ["loo", "kfold", "grouped"])
def test_intercept_holdout_vs_retraining(rng, method, n_targets, kind):
    K, Y = make_problem(rng, (26, 5), n_targets, np.float64)
    Y = Y + 3.0  # a non-zero mean, which the intercept must absorb
    holdouts = check_holdouts(holdout_sets(kind, 26, rng), 26)
    path = RegularizationPath(K, ALPHAS, method=method, intercept=True)
    for alpha, solver in zip(ALPHAS, path, strict=True):
        for rows, pred in zip(holdouts, holdout_predictions(solver, Y, holdouts), strict=True):
            np.testing.assert_allclose(pred, retrained_with_intercept(K, Y, rows, alpha), rtol=1e-8, atol=1e-10)
        if kind == "loo":
            loo = loo_residuals(solver, solver.prepare(Y))
            expected = np.stack([Y[i] - retrained_with_intercept(K, Y, np.array([i]), alpha)[0] for i in range(26)])
            np.testing.assert_allclose(loo, expected.reshape(loo.shape), rtol=1e-8, atol=1e-10)


def test_intercept_equals_refitted_centering(rng):
    """Linear features: the intercept model's hold-out equals centering X and Y on each training side's own means."""
    X = rng.normal(size=(20, 4)) + 2.0
    Y = rng.normal(size=(20, 2)) - 1.0
    solver = RegularizationPath(X @ X.T, [0.7], intercept=True).at(0)
    holdouts = check_holdouts(holdout_sets("kfold", 20, rng), 20)
    for rows, pred in zip(holdouts, holdout_predictions(solver, Y, holdouts), strict=True):
        train = np.setdiff1d(np.arange(20), rows)
        mx, my = X[train].mean(axis=0), Y[train].mean(axis=0)
        Xc = X[train] - mx
        W = np.linalg.solve(Xc.T @ Xc + 0.7 * np.eye(4), Xc.T @ (Y[train] - my))
        np.testing.assert_allclose(pred, (X[rows] - mx) @ W + my, rtol=1e-8)

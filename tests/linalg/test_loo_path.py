"""Grid leave-one-out squared errors (skeleton-compressed) against per-alpha closed forms and explicit retraining."""

import numpy as np
import pytest

from iokr import RLS, RLSCV, config_context
from iokr.linalg import EigenPath, loo_residuals, loo_squared_errors
from iokr.linalg._loo_path import _combined_norms
from iokr.linalg.developer import AlphaSkeleton, EigenShift, InterceptShift

GRID = np.logspace(-6, 2, 31)


def gaussian_gram(rng, n, d, gamma, center=True):
    X = rng.normal(size=(n, d))
    sq = (X**2).sum(axis=1)
    K = np.exp(-gamma * np.clip(sq[:, None] + sq[None, :] - 2 * X @ X.T, 0, None))
    if center:
        K = K - K.mean(axis=0) - K.mean(axis=1)[:, None] + K.mean()
    return K


def per_alpha_errors(path, Y, alphas):
    """The per-alpha closed form ``A_i / G_ii`` on the same decomposition: differences are the compression's."""
    out = []
    for alpha in alphas:
        solver = EigenShift(path, alpha)
        residuals = loo_residuals(solver, solver.prepare(Y))
        out.append((residuals**2).reshape(path.n, -1).sum(axis=1))
    return np.array(out)


def retrained_errors(K, Y, alpha, rows, intercept):
    """Leave-one-out by refitting without each row (KKT system with an unpenalized intercept when asked)."""
    Y2 = Y.reshape(K.shape[0], -1)
    errors = []
    for i in rows:
        keep = np.delete(np.arange(K.shape[0]), i)
        m = keep.size
        if intercept:
            S = np.zeros((m + 1, m + 1))
            S[:m, :m] = K[np.ix_(keep, keep)] + alpha * np.eye(m)
            S[:m, m] = S[m, :m] = 1.0
            sol = np.linalg.solve(S, np.vstack([Y2[keep], np.zeros((1, Y2.shape[1]))]))
            pred = K[i, keep] @ sol[:m] + sol[m]
        else:
            pred = K[i, keep] @ np.linalg.solve(K[np.ix_(keep, keep)] + alpha * np.eye(m), Y2[keep])
        errors.append(((Y2[i] - pred) ** 2).sum())
    return np.array(errors)


@pytest.mark.parametrize("d, gamma", [(64, 1 / 64), (20, 0.05), (2, 1.0)], ids=["wide", "mid", "low-rank"])
@pytest.mark.parametrize("intercept", [False, True])
@pytest.mark.parametrize("p", [1, 7, 150])
def test_grid_errors_equal_per_alpha_closed_form(rng, d, gamma, intercept, p):
    K = gaussian_gram(rng, 160, d, gamma)
    Y = rng.normal(size=(160, p)) if p > 1 else rng.normal(size=160)
    path = EigenPath(K, deflate_constant=intercept)
    expected = per_alpha_errors(path, Y, GRID)
    errors, skeleton = loo_squared_errors(path, Y, GRID)
    np.testing.assert_allclose(errors, expected, rtol=1e-9)
    direct, identity = loo_squared_errors(path, Y, GRID, compress=False)
    assert not identity.compressed
    np.testing.assert_allclose(errors, direct, rtol=1e-9)


@pytest.mark.parametrize("intercept", [False, True])
def test_grid_errors_equal_retraining(rng, intercept):
    K = gaussian_gram(rng, 60, 10, 0.1, center=False)
    Y = rng.normal(size=(60, 4))
    errors, skeleton = loo_squared_errors(EigenPath(K, deflate_constant=intercept), Y, GRID)
    assert skeleton.compressed
    for j in (0, 9, 20, 30):
        np.testing.assert_allclose(errors[j, :6], retrained_errors(K, Y, GRID[j], range(6), intercept), rtol=1e-8)


def test_chunked_equals_unchunked(rng):
    K = gaussian_gram(rng, 120, 30, 0.03)
    Y = rng.normal(size=(120, 40))
    full, _ = loo_squared_errors(EigenPath(K, deflate_constant=True), Y, GRID)
    # A budget of 0.05 MiB forces several output-column blocks and row chunks.
    small, _ = loo_squared_errors(EigenPath(K, deflate_constant=True), Y, GRID, working_memory=0.05)
    with config_context(working_memory=0.05):
        global_small, _ = loo_squared_errors(EigenPath(K, deflate_constant=True), Y, GRID)
    np.testing.assert_allclose(small, full, rtol=1e-12)
    np.testing.assert_allclose(global_small, full, rtol=1e-12)


def test_skeleton_certificate_holds_on_every_eigenvalue(rng):
    s = np.clip(np.linalg.eigvalsh(gaussian_gram(rng, 300, 40, 0.02)), 0, None)
    skeleton = AlphaSkeleton(s, GRID, rtol=1e-12)
    assert skeleton.compressed and skeleton.indices.size < GRID.size
    g = 1.0 / (s[:, None] + GRID[None, :])
    rebuilt = g[:, skeleton.indices] @ skeleton.coefficients
    assert np.max(np.abs(rebuilt - g) / g) <= 1e-12
    assert skeleton.max_relative_error <= 1e-12
    # Skeleton alphas reproduce themselves exactly.
    np.testing.assert_array_equal(skeleton.coefficients[:, skeleton.indices], np.eye(skeleton.indices.size))


def test_short_grids_and_tight_tolerances_are_not_compressed(rng):
    s = np.linspace(0, 5, 50)
    assert not AlphaSkeleton(s, np.array([0.1, 1.0])).compressed
    tight = AlphaSkeleton(s, GRID, rtol=0.0)
    assert not tight.compressed
    np.testing.assert_array_equal(tight.coefficients, np.eye(GRID.size))


def test_inputs_not_mutated(rng):
    K = gaussian_gram(rng, 50, 5, 0.2)
    Y = rng.normal(size=(50, 3))
    path = EigenPath(K, deflate_constant=True)
    before = (Y.copy(), path.eigenvalues.copy(), path.eigenvectors.copy())
    loo_squared_errors(path, Y, GRID)
    for a, b in zip(before, (Y, path.eigenvalues, path.eigenvectors), strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("center", [False, True])
def test_deflated_path_is_the_intercept_model(rng, center):
    """EigenPath(deflate_constant=True) serves (K + t 1 1^T + alpha I)^{-1} as t -> inf: equal to the
    Sherman-Morrison form, annihilates the constant vector, and has orthonormal eigenvectors orthogonal to it."""
    K = gaussian_gram(rng, 70, 6, 0.3, center=center)
    deflated = EigenPath(K, deflate_constant=True)
    assert deflated.n == 70 and deflated.eigenvalues.shape == (69,)
    V = deflated.eigenvectors
    np.testing.assert_allclose(V.T @ V, np.eye(69), atol=1e-12)
    np.testing.assert_allclose(V.T @ np.ones(70), 0.0, atol=1e-11)
    B = rng.normal(size=(70, 3))
    for alpha in (1e-3, 0.5, 20.0):
        expected = InterceptShift(EigenShift(EigenPath(K), alpha)).solve(B)
        np.testing.assert_allclose(deflated.solve(B, alpha), expected, rtol=1e-8, atol=1e-10 * np.abs(expected).max())
        big_t = np.linalg.solve(K + 1e7 * np.ones((70, 70)) + alpha * np.eye(70), B)
        np.testing.assert_allclose(deflated.solve(B, alpha), big_t, rtol=1e-4, atol=1e-6 * np.abs(big_t).max())


@pytest.mark.parametrize("distinct", [1, 3, 7])
def test_spectrum_with_few_distinct_eigenvalues(rng, distinct):
    # Regression (found by tests/test_sklearn_contract.py): a low-rank Gram has few distinct eigenvalues, so the
    # sampled spectrum had fewer rows than skeleton alphas and the QR factor was not square ("expected square
    # matrix" from RLSCV() on 3 features). The skeleton must still reproduce every alpha on the whole spectrum.
    s = np.repeat(np.concatenate([[0.0], np.logspace(-2, 2, distinct - 1)]), 7)
    skeleton = AlphaSkeleton(s, GRID)
    g = 1.0 / (s[:, None] + GRID[None, :])
    assert np.max(np.abs(g[:, skeleton.indices] @ skeleton.coefficients - g) / g) <= 1e-9


def test_rlscv_default_grid_on_a_rank_deficient_gram_matches_explicit_loo(rng):
    X, y = rng.normal(size=(21, 3)), rng.normal(size=21)
    search = RLSCV().fit(X, y)  # the default alpha grid, linear kernel: a rank-3 Gram
    for j in (0, len(search.cv_results_["params"]) // 2, -1):
        alpha = search.cv_results_["param_alpha"][j]
        errors = [(RLS(alpha=alpha).fit(np.delete(X, i, 0), np.delete(y, i)).predict(X[i:i + 1])[0] - y[i]) ** 2
                  for i in range(21)]
        np.testing.assert_allclose(search.cv_results_["mean_test_score"][j], -np.mean(errors), rtol=1e-7)


# -- tolerance route ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("d, gamma", [(64, 1 / 64), (20, 0.05), (2, 1.0)], ids=["wide", "mid", "low-rank"])
@pytest.mark.parametrize("tol", [1e-2, 1e-3, 1e-5])
@pytest.mark.parametrize("p", [1, 30])
def test_tolerance_route_is_certified_against_the_exact_route(rng, d, gamma, tol, p):
    K = gaussian_gram(rng, 200, d, gamma)
    Y = rng.normal(size=(200, p)) if p > 1 else rng.normal(size=200)
    path = EigenPath(K, deflate_constant=True)
    exact, _ = loo_squared_errors(path, Y, GRID, compress=False)
    errors, skeleton, bounds = loo_squared_errors(path, Y, GRID, tol=tol, return_bounds=True)
    tight, _ = loo_squared_errors(path, Y, GRID)
    assert skeleton.indices.size <= loo_squared_errors(path, Y, GRID)[1].indices.size
    # The certified bounds hold row by row and on the means, and the means are within tol.
    assert np.all(np.abs(errors - exact) <= bounds.rows)
    mean, exact_mean = errors.mean(axis=1), exact.mean(axis=1)
    assert np.all(np.abs(mean - exact_mean) <= bounds.mean)
    assert np.all(bounds.mean <= tol * exact_mean)
    # The selected alpha is the exact route's.
    assert np.argmin(mean) == np.argmin(exact_mean)
    assert tight.shape == errors.shape


def test_tolerance_route_saves_products(rng):
    K = gaussian_gram(rng, 300, 64, 1 / 64)
    Y = rng.normal(size=(300, 20))
    path = EigenPath(K, deflate_constant=True)
    loose = loo_squared_errors(path, Y, GRID, tol=1e-3)[1].indices.size
    assert loose < loo_squared_errors(path, Y, GRID)[1].indices.size


def test_zero_tolerance_is_the_exact_route_bit_for_bit(rng):
    K = gaussian_gram(rng, 150, 20, 0.05)
    Y = rng.normal(size=(150, 9))
    path = EigenPath(K, deflate_constant=True)
    default, skeleton = loo_squared_errors(path, Y, GRID)
    zero, zero_skeleton, bounds = loo_squared_errors(path, Y, GRID, tol=0.0, return_bounds=True)
    np.testing.assert_array_equal(zero, default)
    np.testing.assert_array_equal(zero_skeleton.indices, skeleton.indices)
    assert bounds.refined.size == 0
    direct, _ = loo_squared_errors(path, Y, GRID, compress=False)
    assert np.all(np.abs(default - direct) <= bounds.rows)
    assert np.all(bounds.mean <= 1e-9 * direct.mean(axis=1))


def test_overlapping_intervals_are_recomputed_exactly(rng):
    # A loose tolerance makes the best alpha's interval overlap its neighbours': those alphas are recomputed
    # directly, so they equal the per-alpha route and carry round-off bounds only.
    K = gaussian_gram(rng, 200, 20, 0.05)
    Y = rng.normal(size=(200, 5))
    path = EigenPath(K, deflate_constant=True)
    exact, _ = loo_squared_errors(path, Y, GRID, compress=False)
    errors, skeleton, bounds = loo_squared_errors(path, Y, GRID, tol=0.3, return_bounds=True)
    assert skeleton.compressed and bounds.refined.size > 1
    assert int(np.argmin(exact.mean(axis=1))) in bounds.refined
    np.testing.assert_allclose(errors[bounds.refined], exact[bounds.refined], rtol=1e-10)
    assert np.all(bounds.mean[bounds.refined] <= 1e-9 * exact.mean(axis=1)[bounds.refined])
    assert np.argmin(errors.mean(axis=1)) == np.argmin(exact.mean(axis=1))


def test_squares_through_row_grams_equal_direct_combinations(rng):
    # The tolerance route squares the skeleton combinations through each row's r x r Gram; same skeleton, same
    # values as forming the combinations (up to the round-off term it adds to the bounds).
    K = gaussian_gram(rng, 160, 20, 0.05)
    Y = rng.normal(size=(160, 12))
    path = EigenPath(K, deflate_constant=True)
    s, U = path.eigenvalues, path.eigenvectors
    g = 1.0 / (s[:, None] + GRID[None, :])
    skeleton = AlphaSkeleton(s, GRID, rtol=1e-6)
    assert skeleton.compressed
    direct, znorm2, none = _combined_norms(U, Y, g, skeleton.indices, skeleton.coefficients, None)
    grams, znorm2_b, rounding = _combined_norms(U, Y, g, skeleton.indices, skeleton.coefficients, None,
                                                through_gram=True)
    assert none is None and rounding.shape == direct.shape
    np.testing.assert_allclose(znorm2_b, znorm2)
    assert np.all(np.abs(grams - direct) <= rounding + 1e-13 * direct)
    np.testing.assert_allclose(grams, direct, rtol=1e-9)


@pytest.mark.parametrize("tol", [0.0, 1e-3])
def test_projected_outputs_give_the_same_errors(rng, tol):
    K = gaussian_gram(rng, 120, 20, 0.05)
    Y = rng.normal(size=(120, 7))
    path = EigenPath(K, deflate_constant=True)
    Y_before = Y.copy()
    projected = path.project(Y)
    given, _, given_bounds = loo_squared_errors(path, Y, GRID, tol=tol, projected=projected, return_bounds=True)
    computed, _, bounds = loo_squared_errors(path, Y, GRID, tol=tol, return_bounds=True)
    np.testing.assert_allclose(given, computed, rtol=1e-12)
    np.testing.assert_allclose(given_bounds.mean, bounds.mean, rtol=1e-9)
    np.testing.assert_array_equal(projected, path.project(Y_before))


@pytest.mark.parametrize("intercept", [False, True])
def test_tolerance_route_within_bounds_of_retraining(rng, intercept):
    K = gaussian_gram(rng, 60, 10, 0.1, center=False)
    Y = rng.normal(size=(60, 4))
    errors, _, bounds = loo_squared_errors(EigenPath(K, deflate_constant=intercept), Y, GRID, tol=1e-2,
                                           return_bounds=True)
    for j in (0, 9, 20, 30):
        retrained = retrained_errors(K, Y, GRID[j], range(6), intercept)
        assert np.all(np.abs(errors[j, :6] - retrained) <= bounds.rows[j, :6] + 1e-8 * retrained)


@pytest.mark.parametrize("tol", [-1e-3, 1.0, "0.1", True, np.nan])
def test_tolerance_is_validated(rng, tol):
    path = EigenPath(gaussian_gram(rng, 20, 3, 0.5))
    with pytest.raises(ValueError, match="'tol' parameter of loo_squared_errors must be a float in"):
        loo_squared_errors(path, rng.normal(size=20), GRID, tol=tol)

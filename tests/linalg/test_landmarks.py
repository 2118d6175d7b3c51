"""Landmark selection (pivoted Cholesky, greedy largest residual) against dense brute-force references, and
SketchedIOKR with those landmarks against exact IOKR."""

import numpy as np
import pytest

from iokr import IOKR
from iokr.estimators.sketched import SketchedIOKR
from iokr.kernels import Gaussian, Tanimoto
from iokr.linalg._sketch import greedy_landmarks, pivoted_cholesky_landmarks


def _gram(n=30, d=3, gamma=0.3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    K = Gaussian(gamma)(X)
    return rng, X, K


def _columns(K, calls=None):
    def columns(idx):
        idx = np.atleast_1d(idx)
        if calls is not None:
            calls.append(idx.size)
        return K[:, idx]
    return columns


def _dense_pivoted_cholesky(K, k):
    """Reference: pivot = argmax of the diagonal of the Schur complement K - K_S K_SS^-1 K_S*, formed densely."""
    pivots = []
    for _ in range(k):
        if pivots:
            K_S = K[:, pivots]
            schur = K - K_S @ np.linalg.solve(K[np.ix_(pivots, pivots)], K_S.T)
        else:
            schur = K
        d = np.diag(schur).copy()
        d[pivots] = -np.inf
        pivots.append(int(np.argmax(d)))
    return np.array(pivots)


def _brute_force_greedy(K, Y, k):
    """Reference: at each step the not-yet-chosen row of largest least-squares residual ``Y - K_S lstsq(K_S, Y)``."""
    chosen = []
    for _ in range(k):
        if chosen:
            K_S = K[:, chosen]
            R = Y - K_S @ np.linalg.lstsq(K_S, Y, rcond=None)[0]
        else:
            R = Y
        norms = np.einsum("ij,ij->i", R, R)
        norms[chosen] = -np.inf
        chosen.append(int(np.argmax(norms)))
    return np.array(chosen)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_pivoted_cholesky_equals_dense_reference(seed):
    _, _, K = _gram(seed=seed)
    pivots = pivoted_cholesky_landmarks(_columns(K), np.diag(K), 8)
    np.testing.assert_array_equal(pivots, _dense_pivoted_cholesky(K, 8))


def test_pivoted_cholesky_stops_at_numerical_rank():
    rng = np.random.default_rng(3)
    A = rng.normal(size=(25, 4))
    K = A @ A.T  # rank 4
    pivots = pivoted_cholesky_landmarks(_columns(K), np.diag(K), 25)
    assert pivots.size == 4
    K_S = K[:, pivots]
    np.testing.assert_allclose(K_S @ np.linalg.solve(K[np.ix_(pivots, pivots)], K_S.T), K, atol=1e-9)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("working_memory", [None, 1e-4])
def test_greedy_picks_brute_force_largest_residual(seed, working_memory):
    rng, _, K = _gram(seed=seed)
    Y = rng.normal(size=(30, 5))
    calls = []
    chosen = greedy_landmarks(_columns(K, calls), Y, 10, working_memory=working_memory)
    np.testing.assert_array_equal(chosen, _brute_force_greedy(K, Y, 10))
    assert sum(calls) == 10  # one kernel column per step


def test_greedy_skips_columns_in_the_span_and_does_not_modify_targets():
    rng = np.random.default_rng(4)
    A = rng.normal(size=(20, 3))
    K = A @ A.T  # every column lies in a 3-D span
    Y = rng.normal(size=(20, 2))
    Y_copy = Y.copy()
    chosen = greedy_landmarks(_columns(K), Y, 10)
    assert chosen.size == 3
    np.testing.assert_array_equal(Y, Y_copy)
    with pytest.raises(ValueError, match="'targets' must be a 2-D"):
        greedy_landmarks(_columns(K), Y[:, 0], 3)


def _data(n=40, d=4, p=6, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    Y = X @ rng.normal(size=(d, p)) + 0.1 * rng.normal(size=(n, p))
    return X, Y, rng.normal(size=(7, d)), rng.normal(size=(25, p))


@pytest.mark.parametrize("solver", ["greedy", "cholesky"])
@pytest.mark.parametrize("center,normalize", [(False, False), (True, True)])
@pytest.mark.parametrize("extra", [0, 10])
def test_full_size_landmarks_equal_exact_iokr(solver, center, normalize, extra):
    X, Y, X_test, C = _data()
    common = dict(alpha=0.3, input_kernel=Gaussian(0.5), center_input=center, normalize_input=normalize,
                  decoding="distance")
    exact = IOKR(**common).fit(X, Y)
    sketched = SketchedIOKR(**common, solver=solver, n_components=X.shape[0] + extra).fit(X, Y)
    np.testing.assert_allclose(sketched.decision_function(X_test, C), exact.decision_function(X_test, C),
                               rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("solver", ["greedy", "cholesky"])
def test_sketched_landmarks_match_explicit_nystrom_formula(solver):
    """Model on the selected landmarks S equals ridge on Phi = K_{*S} K_SS^{-1/2} computed by hand."""
    X, Y, X_test, _ = _data(n=50)
    kernel, alpha, s = Gaussian(0.3), 0.5, 12
    model = SketchedIOKR(alpha=alpha, input_kernel=kernel, solver=solver, n_components=s, center_input=False,
                         normalize_input=False, center_output=False, normalize_output=False).fit(X, Y)
    K = kernel(X)
    S = np.sort(_dense_pivoted_cholesky(K, s) if solver == "cholesky" else _brute_force_greedy(K, Y, s))
    values, vectors = np.linalg.eigh(K[np.ix_(S, S)])
    W = vectors / np.sqrt(values)
    Phi = K[:, S] @ W
    coef = np.linalg.solve(Phi.T @ Phi + alpha * np.eye(s), Phi.T @ Y)
    H = kernel(X_test, X[S]) @ W @ coef
    np.testing.assert_allclose(model.predict_features(X_test), H, rtol=1e-7, atol=1e-8)


def test_greedy_landmarks_do_not_depend_on_random_state():
    X, Y, X_test, C = _data(n=120, seed=5)
    common = dict(alpha=0.3, input_kernel=Gaussian(0.3))
    a = SketchedIOKR(**common, solver="greedy", n_components=15, random_state=0).fit(X, Y)
    b = SketchedIOKR(**common, solver="greedy", n_components=15, random_state=1).fit(X, Y)
    np.testing.assert_array_equal(a.decision_function(X_test, C), b.decision_function(X_test, C))


@pytest.mark.parametrize("params, match", [
    (dict(solver="greedy", output_kernel=Tanimoto()), "solver='greedy'.*explicit output features"),
    (dict(solver="greedy", n_components=0), "'n_components' parameter"),
    (dict(solver="cholesky", n_components=1.5), "'n_components' parameter"),
    (dict(solver="pivoted"), "'solver' parameter"),
])
def test_bad_landmark_parameters(params, match):
    rng = np.random.default_rng(0)
    X, Y = rng.normal(size=(20, 3)), (rng.random((20, 8)) < 0.5).astype(float)
    with pytest.raises(ValueError, match=match):
        SketchedIOKR(input_kernel=Gaussian(0.3), **params).fit(X, Y)


def test_greedy_with_output_sketch_uses_sketched_output_features():
    rng = np.random.default_rng(6)
    X, Y = rng.normal(size=(30, 3)), (rng.random((30, 16)) < 0.5).astype(float)
    model = SketchedIOKR(input_kernel=Gaussian(0.3), output_kernel=Tanimoto(), solver="greedy", n_components=30,
                         output_components=30).fit(X, Y)
    exact = SketchedIOKR(input_kernel=Gaussian(0.3), output_kernel=Tanimoto(), solver="nystrom", n_components=30,
                         output_components=30, random_state=0).fit(X, Y)
    np.testing.assert_allclose(model.decision_function(X[:5], Y), exact.decision_function(X[:5], Y), atol=1e-6)

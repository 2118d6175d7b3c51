"""Rounding thresholds, degree repair and the three basis approximations against naive references."""

import numpy as np
import pytest

from iokr.kernels import Gaussian
from iokr.linalg import cholesky_shifted
from iokr.strings import fit_subset, learn_thresholds, repair_degrees, round_counts, select_basis
from iokr.strings._basis import KernelColumns


def test_round_counts_intervals():
    v = np.array([-0.3, 0.2, 0.31, 1.3, 1.31, 2.0])
    np.testing.assert_array_equal(round_counts(v, 0.3), [0, 0, 1, 1, 2, 2])
    np.testing.assert_array_equal(round_counts(v, 0.5), np.maximum(np.floor(v + 0.5), 0))


@pytest.mark.parametrize("criterion", ["l1", "total"])
def test_learn_thresholds_matches_brute_force(criterion, rng):
    Y = rng.integers(0, 3, size=(40, 5)).astype(float)
    P = Y + rng.normal(scale=0.4, size=Y.shape) - 0.2
    grid = np.linspace(0.1, 0.9, 9)
    got = learn_thresholds(P, Y, grid=grid, criterion=criterion)
    for j in range(Y.shape[1]):
        losses = []
        for t in grid:
            R = round_counts(P[:, j], t)
            losses.append(np.abs(R - Y[:, j]).sum() if criterion == "l1" else abs(R.sum() - Y[:, j].sum()))
        losses = np.array(losses) + 1e-9 * np.abs(grid - 0.5)
        assert got[j] == grid[np.argmin(losses)]


def test_repair_picks_cheapest_balancing_move():
    # vertices: 0 = start, 1 = a, 2 = b, 3 = stop; edges: start->a, a->b, b->stop, a->stop, start->b
    src = np.array([0, 1, 2, 1, 0])
    dst = np.array([1, 2, 3, 3, 2])
    thresholds = np.full(5, 0.5)
    # rounded path start->a->b->stop is missing a->b (predicted 0.45, just below its threshold)
    values = np.array([0.9, 0.45, 0.8, 0.1, 0.05])
    counts = round_counts(values, thresholds)
    repaired, balanced = repair_degrees(counts, values, thresholds, src, dst, 4, 0, 3)
    assert balanced
    np.testing.assert_array_equal(repaired, [1, 1, 1, 0, 0])
    np.testing.assert_array_equal(counts, [1, 0, 1, 0, 0])  # input not modified


def test_repair_reports_unbalanceable():
    src, dst = np.array([0]), np.array([1])
    repaired, balanced = repair_degrees(np.array([2]), np.array([2.0]), np.array([0.5]), src, dst, 3, 0, 2)
    assert not balanced


def _data(rng, m=40, d=3, k=4):
    X = rng.normal(size=(m, d))
    Y = np.sin(X @ rng.normal(size=(d, k)))
    return X, Y


@pytest.mark.parametrize("method", ["random", "cholesky", "greedy"])
def test_full_basis_equals_kernel_ridge(method, rng):
    X, Y = _data(rng)
    kern = Gaussian(gamma=0.5)
    K = kern(X)
    alpha = 0.1
    S = select_basis(method, KernelColumns(kern, X), X.shape[0], Y, X.shape[0], random_state=0)
    assert sorted(S) == list(range(X.shape[0]))
    beta = fit_subset(K[:, S], S, Y, alpha)
    exact = cholesky_shifted(K, alpha).solve(Y)
    np.testing.assert_allclose(K[:, S] @ beta, K @ exact, atol=1e-6)


def test_greedy_matches_naive_refits(rng):
    X, Y = _data(rng, m=30)
    K = Gaussian(gamma=0.5)(X)
    S = select_basis("greedy", KernelColumns(None, None, gram=K), 30, Y, 8)
    chosen = []
    for _ in range(8):
        if chosen:
            C = K[:, chosen]
            coef, *_ = np.linalg.lstsq(C, Y, rcond=None)
            R = Y - C @ coef
        else:
            R = Y
        res = np.einsum("ij,ij->i", R, R)
        res[chosen] = -np.inf
        chosen.append(int(np.argmax(res)))
    np.testing.assert_array_equal(S, chosen)


def test_cholesky_pivots_match_naive(rng):
    X, _ = _data(rng, m=25)
    K = Gaussian(gamma=0.3)(X)
    S = select_basis("cholesky", KernelColumns(None, None, gram=K), 25, None, 6)
    chosen = []
    for _ in range(6):
        if chosen:
            KS = K[np.ix_(chosen, chosen)]
            C = K[:, chosen]
            resid = np.diag(K) - np.einsum("ij,ij->i", C @ np.linalg.solve(KS, np.eye(len(chosen))), C)
        else:
            resid = np.diag(K).copy()
        resid[chosen] = -np.inf
        chosen.append(int(np.argmax(resid)))
    np.testing.assert_array_equal(S, chosen)


def test_bad_basis_method(rng):
    X, Y = _data(rng)
    with pytest.raises(ValueError, match="'basis'"):
        select_basis("kmeans", KernelColumns(Gaussian(), X), 40, Y, 5)

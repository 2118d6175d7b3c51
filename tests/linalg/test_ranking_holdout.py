"""Hold-out of least-squares ranking and leave-pair-out of ridge (with and without intercept) against explicit
retraining on the training side: dense systems solved from scratch, no closed form."""

import numpy as np
import pytest

from iokr.exceptions import NumericalStabilityWarning
from iokr.linalg import (
    EigenPath,
    RegularizationPath,
    complete_graph_holdout,
    complete_graph_pair_holdout,
    loo_residuals,
    pair_holdout_predictions,
    query_holdout_predictions,
)
from iokr.linalg.developer import BlockCentering, EigenShift, check_pairs, ridge_solution


def _laplacian(groups, normalized):
    """Block Laplacian of complete preference graphs, ``l_q I - 1 1^T`` per group (divided by ``l_q`` if normalized)."""
    n = groups.size
    L = np.zeros((n, n))
    for q in np.unique(groups):
        idx = np.flatnonzero(groups == q)
        block = idx.size * np.eye(idx.size) - 1.0
        L[np.ix_(idx, idx)] = block / idx.size if normalized else block
    return L


def retrained_ranker(K, y, groups, train, test, alpha, normalized):
    """Scores on ``test`` of the ranker ``(L K + alpha I) a = L y`` trained on ``train`` alone (dense solve)."""
    L = _laplacian(groups[train], normalized)
    a = np.linalg.solve(L @ K[np.ix_(train, train)] + alpha * np.eye(train.size), L @ y[train])
    return K[np.ix_(test, train)] @ a


def retrained_intercept_ridge(K, Y, train, test, alpha):
    """``f = K c + b`` with unpenalized ``b``, trained on ``train`` through its KKT system."""
    m = train.size
    system = np.zeros((m + 1, m + 1))
    system[:m, :m] = K[np.ix_(train, train)] + alpha * np.eye(m)
    system[:m, m] = system[m, :m] = 1.0
    rhs = np.zeros((m + 1,) + Y.shape[1:])
    rhs[:m] = Y[train]
    solution = np.linalg.solve(system, rhs)
    return K[np.ix_(test, train)] @ solution[:m] + solution[m]


def retrained_ridge(K, Y, train, test, alpha):
    coef = np.linalg.solve(K[np.ix_(train, train)] + alpha * np.eye(train.size), Y[train])
    return K[np.ix_(test, train)] @ coef


def centered_per_group(values, groups):
    out = np.array(values, dtype=np.float64)
    for q in np.unique(groups):
        out[groups == q] -= out[groups == q].mean()
    return out


@pytest.fixture
def gaussian_gram(rng):
    X = rng.normal(size=(18, 3))
    sq = np.sum((X[:, None] - X[None]) ** 2, axis=-1)
    return np.exp(-0.3 * sq), X


def test_block_centering_is_the_square_root_of_the_laplacian(rng):
    groups = np.array([0, 0, 1, 1, 1, 2, 2, 2, 2, 0])
    for normalized in (False, True):
        W = BlockCentering.complete_graphs(groups, normalized)
        dense = W.apply(np.eye(groups.size))
        np.testing.assert_allclose(dense @ dense, _laplacian(groups, normalized), atol=1e-12)
        K = rng.normal(size=(10, 10))
        np.testing.assert_allclose(W.sandwich(K), dense @ K @ dense, atol=1e-12)
        V = rng.normal(size=(10, 3))
        np.testing.assert_allclose(W.apply(V), dense @ V, atol=1e-12)
    assert W.whole_groups(np.array([2, 3, 4])) and not W.whole_groups(np.array([2, 3]))
    with pytest.raises(ValueError, match="non-empty groups"):
        BlockCentering(np.array([0, 2]), np.ones(3))


@pytest.mark.parametrize("normalized", [False, True])
@pytest.mark.parametrize("method", ["eigen", "cholesky"])
@pytest.mark.parametrize("alpha", [1e-3, 0.5, 20.0])
def test_query_holdout_vs_retraining(rng, gaussian_gram, normalized, method, alpha):
    K, _ = gaussian_gram
    groups = np.repeat([0, 1, 2, 3, 4], [4, 3, 5, 2, 4])
    y = rng.normal(size=groups.size)
    W = BlockCentering.complete_graphs(groups, normalized)
    solver = RegularizationPath(W.sandwich(K), [alpha], method=method).at(0)
    # leave-query-out, then two queries at a time (grouped k-fold)
    holdouts = [np.flatnonzero(groups == q) for q in range(5)] + [np.flatnonzero(np.isin(groups, [1, 3]))]
    for rows, got in zip(holdouts, query_holdout_predictions(solver, W, y, holdouts), strict=True):
        train = np.setdiff1d(np.arange(groups.size), rows)
        expected = retrained_ranker(K, y, groups, train, rows, alpha, normalized)
        np.testing.assert_allclose(got, centered_per_group(expected, groups[rows]), rtol=1e-8, atol=1e-9)
        np.testing.assert_allclose(got, centered_per_group(got, groups[rows]), atol=1e-12)  # centered per query


def test_query_holdout_needs_whole_queries(rng, gaussian_gram):
    K, _ = gaussian_gram
    groups = np.repeat([0, 1, 2], 6)
    W = BlockCentering.complete_graphs(groups)
    solver = EigenShift(EigenPath(W.sandwich(K)), 1.0)
    with pytest.raises(ValueError, match=r"'holdouts\[1\]' splits a query"):
        query_holdout_predictions(solver, W, rng.normal(size=18), [np.arange(6), np.array([6, 7])])


@pytest.mark.parametrize("normalized", [False, True])
@pytest.mark.parametrize("alpha", [1e-3, 0.5, 20.0])
def test_complete_graph_holdout_vs_retraining(rng, gaussian_gram, normalized, alpha):
    K, _ = gaussian_gram
    n = K.shape[0]
    y = rng.normal(size=n)
    groups = np.zeros(n, dtype=int)
    W = BlockCentering.complete_graphs(groups, normalized)
    eigen = EigenPath(W.sandwich(K), deflate_constant=True)
    holdouts = [np.array([4]), np.array([0, 9, 13]), np.array([17, 2, 5, 8, 1, 12]), np.array([3, 6, 7])]
    predictions = complete_graph_holdout(eigen, y, holdouts, alpha, normalized=normalized)
    for rows, got in zip(holdouts, predictions, strict=True):
        train = np.setdiff1d(np.arange(n), rows)
        expected = retrained_ranker(K, y, groups, train, rows, alpha, normalized)
        # one model per set: equal up to the offset no ranking sees; the offset is the intercept model's own
        np.testing.assert_allclose(got - got.mean(), expected - expected.mean(), rtol=1e-8, atol=1e-9)
        np.testing.assert_allclose(got, retrained_intercept_ridge(
            K, y, train, rows, alpha / (1.0 if normalized else train.size)), rtol=1e-8, atol=1e-9)


@pytest.mark.parametrize("normalized", [False, True])
def test_complete_graph_pair_holdout_vs_retraining(rng, gaussian_gram, normalized):
    K, _ = gaussian_gram
    n = K.shape[0]
    y = rng.normal(size=n)
    groups = np.zeros(n, dtype=int)
    eigen = EigenPath(BlockCentering.complete_graphs(groups, normalized).sandwich(K), deflate_constant=True)
    first, second = np.triu_indices(n, k=1)
    got = complete_graph_pair_holdout(eigen, y, first, second, 0.3, normalized=normalized)
    assert got.shape == (first.size, 2)
    for k in range(0, first.size, 7):
        rows = np.array([first[k], second[k]])
        expected = retrained_ranker(K, y, groups, np.setdiff1d(np.arange(n), rows), rows, 0.3, normalized)
        np.testing.assert_allclose(got[k, 0] - got[k, 1], expected[0] - expected[1], rtol=1e-8, atol=1e-10)
    with pytest.raises(ValueError, match="deflated"):
        complete_graph_pair_holdout(EigenPath(K), y, first, second, 0.3)


@pytest.mark.parametrize("intercept", [False, True])
@pytest.mark.parametrize("method", ["eigen", "cholesky"])
@pytest.mark.parametrize("n_targets", [None, 2])
@pytest.mark.parametrize("n_pairs", [5, 60])  # fewer pairs than examples (their rows) and more (whole inverse)
def test_pair_holdout_vs_retraining(rng, gaussian_gram, intercept, method, n_targets, n_pairs):
    K, _ = gaussian_gram
    n = K.shape[0]
    Y = rng.normal(size=(n,) if n_targets is None else (n, n_targets))
    first = rng.integers(0, n, size=n_pairs)
    second = (first + rng.integers(1, n, size=n_pairs)) % n
    solver = RegularizationPath(K, [0.2], method=method, intercept=intercept).at(0)
    got = pair_holdout_predictions(solver, Y, first, second)
    assert got.shape == (n_pairs, 2) + Y.shape[1:]
    retrain = retrained_intercept_ridge if intercept else retrained_ridge
    for k in range(n_pairs):
        rows = np.array([first[k], second[k]])
        expected = retrain(K, Y, np.setdiff1d(np.arange(n), rows), rows, 0.2)
        np.testing.assert_allclose(got[k], expected, rtol=1e-8, atol=1e-10)


class _DenseInverse:
    """A shifted-solver stand-in serving a given symmetric ``G`` (to reach blocks no SPD shift can produce)."""

    def __init__(self, G):
        self.G, self.n = G, G.shape[0]

    def prepare(self, rhs):
        return rhs

    def solve_prepared(self, token):
        return self.G @ token

    def inverse_diag(self):
        return np.diag(self.G).copy()

    def inverse_rows(self, rows):
        return self.G[rows]

    def inverse_block(self, rows):
        return self.G[np.ix_(rows, rows)]


def test_pair_holdout_singular_block_is_guarded(rng):
    B = rng.normal(size=(6, 6))
    G = B @ B.T + np.eye(6)
    G[np.ix_([0, 1], [0, 1])] = 1.0  # G[0, 0] G[1, 1] - G[0, 1]^2 = 0: a singular 2 x 2 block
    G[0, 2:] = G[1, 2:] = G[2:, 0] = G[2:, 1] = 0.0
    y = rng.normal(size=6)
    with pytest.warns(NumericalStabilityWarning, match="numerically singular"):
        got = pair_holdout_predictions(_DenseInverse(G), y, np.array([0, 2]), np.array([1, 3]))
    assert np.isfinite(got).all()
    rows = np.array([2, 3])  # a regular pair keeps the exact formula y_H - (G_HH)^-1 (G y)_H
    np.testing.assert_allclose(got[1], y[rows] - np.linalg.solve(G[np.ix_(rows, rows)], (G @ y)[rows]), rtol=1e-12)


def test_check_pairs_messages():
    with pytest.raises(ValueError, match="equal length"):
        check_pairs(np.array([0, 1]), np.array([2]), 4)
    with pytest.raises(ValueError, match=r"\[0, 4\)"):
        check_pairs(np.array([0]), np.array([4]), 4)
    with pytest.raises(ValueError, match="two different"):
        check_pairs(np.array([1]), np.array([1]), 4)
    first, second = check_pairs(np.array([0, 3], dtype=np.int32), np.array([1, 2]), 4)
    assert first.dtype == np.intp and second.tolist() == [1, 2]


@pytest.mark.parametrize("n_targets", [None, 3])
@pytest.mark.parametrize("method", ["eigen", "cholesky"])
def test_ridge_solution_vs_dense(rng, gaussian_gram, n_targets, method):
    K, _ = gaussian_gram
    n = K.shape[0]
    Y = rng.normal(size=(n,) if n_targets is None else (n, n_targets))
    every = np.arange(n)
    for intercept in (False, True):
        solver = RegularizationPath(K, [0.4], method=method, intercept=intercept).at(0)
        dual, b = ridge_solution(solver, K, Y, intercept=intercept)
        retrain = retrained_intercept_ridge if intercept else retrained_ridge
        np.testing.assert_allclose(K @ dual + b, retrain(K, Y, every, every, 0.4), rtol=1e-9, atol=1e-10)
        if intercept:
            np.testing.assert_allclose(dual.sum(axis=0), 0.0, atol=1e-9)


def test_loo_residuals_reuses_given_coefficients(rng, gaussian_gram):
    K, _ = gaussian_gram
    Y = rng.normal(size=(K.shape[0], 2))
    solver = EigenShift(EigenPath(K), 1e-3)
    token = solver.prepare(Y)
    np.testing.assert_array_equal(loo_residuals(solver, token, solver.solve_prepared(token)),
                                  loo_residuals(solver, token))
    for i in (0, 7):
        train = np.setdiff1d(np.arange(K.shape[0]), [i])
        np.testing.assert_allclose(Y[i] - loo_residuals(solver, token)[i],
                                   retrained_ridge(K, Y, train, np.array([i]), 1e-3)[0], rtol=1e-7, atol=1e-8)

"""MINRES and block CG stop on the true relative residual ||b - A x|| / ||b||, checked against dense algebra."""

import numpy as np
import pytest

from iokr.exceptions import ConvergenceWarning
from iokr.linalg import block_cg, minres


def _spd(rng, n, cond=1e3):
    Q, _ = np.linalg.qr(rng.normal(size=(n, n)))
    return (Q * np.logspace(0, np.log10(cond), n)) @ Q.T


def _true_relative(A, x, b):
    return np.linalg.norm(b - A @ x, axis=0) / np.linalg.norm(b, axis=0)


@pytest.mark.parametrize("rtol", [1e-4, 1e-8, 1e-12])
def test_minres_reaches_the_stated_residual_and_the_dense_solution(rng, rtol):
    A, b = _spd(rng, 60), rng.normal(size=60)
    x, info = minres(lambda v: A @ v, b, rtol=rtol)
    assert info.converged.all() and info.n_iter <= 3 * 60  # round-off can take a Krylov method past n steps
    assert info.relative_residuals[0] == pytest.approx(_true_relative(A, x, b), rel=1e-6, abs=1e-13)
    assert _true_relative(A, x, b) <= rtol
    exact = np.linalg.solve(A, b)
    assert np.linalg.norm(x - exact) <= 1e3 * rtol * np.linalg.norm(exact)  # cond(A) = 1e3 bounds the error


def test_minres_needs_no_more_iterations_than_cg(rng):
    A, b = _spd(rng, 200, cond=1e4), rng.normal(size=200)
    for rtol in (1e-3, 1e-6, 1e-9):
        _, cg = block_cg(lambda V: A @ V, b, rtol=rtol)
        _, mr = minres(lambda v: A @ v, b, rtol=rtol)
        assert mr.n_iter <= cg.n_iter
        assert mr.relative_residuals[0] <= rtol and cg.relative_residuals[0] <= rtol


def test_minres_semidefinite_consistent_system_and_edge_cases(rng):
    F = rng.normal(size=(30, 8))
    K = F @ F.T  # rank 8: the system K x = K z is consistent
    b = K @ rng.normal(size=30)
    x, info = minres(lambda v: K @ v, b, rtol=1e-10)
    assert info.converged[0] and _true_relative(K, x, b) <= 1e-10
    x0, info0 = minres(lambda v: K @ v, np.zeros(30))
    assert np.all(x0 == 0) and info0.n_iter == 0 and info0.converged[0]
    with pytest.raises(ValueError, match="1-D vector"):
        minres(lambda v: v, np.ones((3, 2)))


def test_minres_warns_when_capped(rng):
    A, b = _spd(rng, 80, cond=1e6), rng.normal(size=80)
    with pytest.warns(ConvergenceWarning, match="MINRES stopped after 5 iterations"):
        x, info = minres(lambda v: A @ v, b, rtol=1e-12, max_iter=5)
    assert not info.converged[0]
    assert info.relative_residuals[0] == pytest.approx(_true_relative(A, x, b), rel=1e-10)


@pytest.mark.parametrize("max_iter", [7, None])
def test_block_cg_reports_the_true_residual(rng, max_iter):
    A, B = _spd(rng, 70, cond=1e5), rng.normal(size=(70, 3))
    X, info = block_cg(lambda V: A @ V, B, rtol=1e-10, max_iter=max_iter, warn=False)
    # Equal up to the round-off of forming b - A x (about eps * cond(A) relative to ||b||).
    np.testing.assert_allclose(info.relative_residuals, _true_relative(A, X, B), rtol=1e-6, atol=1e-12)
    if max_iter is None:
        assert info.converged.all() and (_true_relative(A, X, B) <= 1e-10).all()
    else:
        assert not info.converged.any()

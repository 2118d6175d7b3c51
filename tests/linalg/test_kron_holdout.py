"""Kronecker ridge closed forms against brute force: settings A-C, one-domain leave-edge-out, and setting D for a
grid of alphas, each against explicit retraining."""

import numpy as np
import pytest

from iokr.estimators import KronRLS
from iokr.linalg import (
    EigenPath,
    _kron_holdout,
    kron_ridge_dual,
    kron_ridge_holdout,
    kron_ridge_leave_edge_out,
    kron_ridge_symmetric_dual,
    leave_row_and_column_out,
)
from iokr.metrics import concordance_index
from tests.reference import kron_ridge_leave_row_and_column_out

ALPHAS = [1e-3, 0.05, 0.3, 2.0, 40.0]


def _psd(rng, n, rank=None):
    F = rng.normal(size=(n, rank or n + 2))
    return F @ F.T / F.shape[1]


@pytest.mark.parametrize("shape, rank2", [((5, 4), None), ((4, 6), 3), ((6, 6), 2)])
def test_grid_matches_explicit_kronecker_retraining(rng, shape, rank2):
    K1, K2 = _psd(rng, shape[0]), _psd(rng, shape[1], rank=rank2)  # rank-deficient K2 on purpose
    Y = rng.normal(size=shape)
    P = leave_row_and_column_out(K1, EigenPath(K2), Y, ALPHAS)
    assert P.shape == (len(ALPHAS), *shape)
    for a, alpha in enumerate(ALPHAS):
        expected = kron_ridge_leave_row_and_column_out(K1, K2, Y, alpha)
        np.testing.assert_allclose(P[a], expected, rtol=1e-8, atol=1e-10 * np.abs(expected).max())


def test_grid_equals_one_alpha_at_a_time_and_chunks(rng):
    K1, K2, Y = _psd(rng, 7), _psd(rng, 5), rng.normal(size=(7, 5))
    eig2 = EigenPath(K2)
    P = leave_row_and_column_out(K1, eig2, Y, ALPHAS)
    for a, alpha in enumerate(ALPHAS):
        np.testing.assert_allclose(P[a], leave_row_and_column_out(K1, eig2, Y, [alpha])[0], rtol=1e-12, atol=1e-14)
    # One alpha per chunk (a budget below two alphas' temporaries) gives the same numbers.
    tiny = 3 * 8 * 6 * 5 * 1.5 / 2**20
    np.testing.assert_allclose(leave_row_and_column_out(K1, eig2, Y, ALPHAS, working_memory=tiny), P,
                               rtol=1e-12, atol=1e-14)


# ------------------------------------------- setting D over 1e-6..1e3 against extended precision and the old route
WIDE_ALPHAS = np.logspace(-6, 3, 10)
EXTENDED = np.finfo(np.longdouble).eps < 1e-18  # x87 80-bit long double; elsewhere the reference is not extended


def _cholesky_solve(A, b):
    """``A x = b`` for SPD ``A`` by Cholesky in ``A``'s dtype (numpy's LAPACK has no long double)."""
    n = A.shape[0]
    L = np.zeros_like(A)
    for k in range(n):
        L[k, k] = np.sqrt(A[k, k] - L[k, :k] @ L[k, :k])
        L[k + 1:, k] = (A[k + 1:, k] - L[k + 1:, :k] @ L[k, :k]) / L[k, k]
    y = np.zeros_like(b)
    for k in range(n):
        y[k] = (b[k] - L[k, :k] @ y[:k]) / L[k, k]
    x = np.zeros_like(b)
    for k in reversed(range(n)):
        x[k] = (y[k] - L[k + 1:, k] @ x[k + 1:]) / L[k, k]
    return x


def _retraining_long_double(K1, K2, Y, alpha):
    """Setting D by explicit retraining (as ``tests.reference``), every operation in long double."""
    K1, K2, Y = (np.asarray(a, dtype=np.longdouble) for a in (K1, K2, Y))
    n1, n2 = Y.shape
    out = np.empty(Y.shape, dtype=np.longdouble)
    for i in range(n1):
        R = np.delete(np.arange(n1), i)
        for j in range(n2):
            C = np.delete(np.arange(n2), j)
            Kbar = np.kron(K2[np.ix_(C, C)], K1[np.ix_(R, R)])
            a = _cholesky_solve(Kbar + np.longdouble(alpha) * np.eye(Kbar.shape[0], dtype=np.longdouble),
                                Y[np.ix_(R, C)].ravel(order="F"))
            out[i, j] = K1[i, R] @ a.reshape((R.size, C.size), order="F") @ K2[C, j]
    return out.astype(np.float64)


def _products_route(K1, eig2, Y, alphas):
    """The previous setting-D route: ``q_k [((s2 D) o Yt) U^T - H o Z] / (alpha D UU)`` on every row, three products per
    alpha (module notes)."""
    n1, n2 = Y.shape
    U, s2 = eig2.eigenvectors, eig2.eigenvalues
    UU = (U * U).T
    out = np.empty((len(alphas), n1, n2))
    for i in range(n1):
        rest = np.delete(np.arange(n1), i)
        eig1 = EigenPath(K1[np.ix_(rest, rest)])
        V, s1 = eig1.eigenvectors, eig1.eigenvalues
        Z = V.T @ Y[rest]
        Yt, q = Z @ U, K1[i, rest] @ V
        for a, alpha in enumerate(alphas):
            D = 1.0 / (np.outer(s1, s2) + alpha)
            Dw = D * s2
            out[a, i] = q @ (((Dw * Yt) @ U.T - (Dw @ UU) * Z) / (D @ UU)) / alpha
    return out


WIDE_CASES = [((5, 4), None, None), ((4, 5), 2, None), ((5, 4), None, 2)]  # rank-deficient loop / column domain


@pytest.mark.skipif(not EXTENDED, reason="long double is not extended precision on this platform")
@pytest.mark.parametrize("shape, rank1, rank2", WIDE_CASES)
@pytest.mark.parametrize("all_hat_form", [False, True])
def test_grid_matches_extended_precision_retraining_from_1e_6_to_1e3(rng, monkeypatch, shape, rank1, rank2,
                                                                      all_hat_form):
    K1, K2, Y = _psd(rng, shape[0], rank=rank1), _psd(rng, shape[1], rank=rank2), rng.normal(size=shape)
    if all_hat_form:  # the hat form (A') on every row at every alpha, as rows with negligible s1' always take it
        monkeypatch.setattr(_kron_holdout, "RESIDUAL_FORM_RTOL", np.inf)
    P = leave_row_and_column_out(K1, EigenPath(K2), Y, WIDE_ALPHAS)
    norms = np.linalg.norm(K1, 2) * np.linalg.norm(K2, 2)
    for a, alpha in enumerate(WIDE_ALPHAS):
        expected = _retraining_long_double(K1, K2, Y, alpha)
        scale = np.abs(expected).max()
        # Any float64 route inherits the conditioning ||K1|| ||K2|| / alpha of the problem (~1e7 at 1e-6: the
        # eigendecompositions' backward error alone moves the zero eigenvalues of a rank-deficient K by ~1e-17).
        atol = (1e-12 + 2 * np.finfo(np.float64).eps * norms / alpha) * scale
        np.testing.assert_allclose(P[a], expected, rtol=0, atol=atol, err_msg=f"alpha={alpha}")


@pytest.mark.skipif(not EXTENDED, reason="long double is not extended precision on this platform")
def test_full_rank_kernels_keep_full_accuracy_at_every_alpha(rng):
    # Each row takes the form without cancellation at its alpha (module notes); the previous route, three products
    # in the hat form on every row, was off by ~2e-10 of the scale at alpha = 1e-6 on such data.
    K1, K2, Y = _psd(rng, 5), _psd(rng, 4), rng.normal(size=(5, 4))
    P = leave_row_and_column_out(K1, EigenPath(K2), Y, WIDE_ALPHAS)
    for a, alpha in enumerate(WIDE_ALPHAS):
        expected = _retraining_long_double(K1, K2, Y, alpha)
        np.testing.assert_allclose(P[a], expected, rtol=0, atol=1e-12 * np.abs(expected).max(), err_msg=f"{alpha=}")


@pytest.mark.parametrize("shape, rank1, rank2", WIDE_CASES + [((6, 6), None, None)])
def test_grid_matches_the_previous_products_route_and_float64_retraining(rng, shape, rank1, rank2):
    K1, K2, Y = _psd(rng, shape[0], rank=rank1), _psd(rng, shape[1], rank=rank2), rng.normal(size=shape)
    eig2 = EigenPath(K2)
    P = leave_row_and_column_out(K1, eig2, Y, WIDE_ALPHAS)
    before = _products_route(K1, eig2, Y, WIDE_ALPHAS)
    for a, alpha in enumerate(WIDE_ALPHAS):
        scale = np.abs(before[a]).max()
        # The previous route is itself off by up to ~2e-10 of the scale at alpha = 1e-6 (module notes).
        np.testing.assert_allclose(P[a], before[a], rtol=0, atol=1e-9 * scale, err_msg=f"alpha={alpha}")
        brute = kron_ridge_leave_row_and_column_out(K1, K2, Y, alpha)
        np.testing.assert_allclose(P[a], brute, rtol=0, atol=1e-8 * scale, err_msg=f"alpha={alpha}")


@pytest.mark.parametrize("shape", [(5, 7), (7, 4)])  # loops over rows, then over columns (the smaller domain)
def test_kronrls_cv_path_d_matches_retraining_and_per_alpha_route(rng, shape):
    K1, K2, Y = _psd(rng, shape[0]), _psd(rng, shape[1]), rng.normal(size=shape)
    model = KronRLS(alpha=1.0).fit(K1, K2, Y)

    def mse(y, p):  # continuous, so round-off cannot flip it
        return -np.mean((y - p) ** 2)

    scores = model.cv_path(ALPHAS, "D", scoring=mse)
    per_alpha = [mse(Y.ravel(), model.holdout_predictions("D", alpha=a).ravel()) for a in ALPHAS]
    brute = [mse(Y.ravel(), kron_ridge_leave_row_and_column_out(K1, K2, Y, a).ravel()) for a in ALPHAS]
    np.testing.assert_allclose(scores, per_alpha, rtol=1e-12)
    np.testing.assert_allclose(scores, brute, rtol=1e-8)
    default = model.cv_path(ALPHAS[:2], "D")
    expected = [concordance_index(Y.ravel(), kron_ridge_leave_row_and_column_out(K1, K2, Y, a).ravel())
                for a in ALPHAS[:2]]
    np.testing.assert_allclose(default, expected, rtol=1e-12)


# --------------------------------------------------------------- settings A-C and one-domain A by explicit retraining
def _dense_refit(K1, K2, Y, mask, alpha, i, j):
    """Kronecker ridge on the labelled entries ``mask`` (explicit pair kernel), predicting pair ``(i, j)``."""
    r, c = np.nonzero(mask)
    Kq = K1[np.ix_(r, r)] * K2[np.ix_(c, c)]
    a = np.linalg.solve(Kq + alpha * np.eye(r.size), Y[r, c])
    return (K1[i, r] * K2[j, c]) @ a


def _held_out_mask(shape, setting, i, j):
    mask = np.ones(shape, bool)
    if setting == "A":
        mask[i, j] = False
    if setting in "BD":
        mask[i, :] = False
    if setting in "CD":
        mask[:, j] = False
    return mask


@pytest.mark.parametrize("setting", ["A", "B", "C"])
@pytest.mark.parametrize("alpha", [1e-2, 0.7])
def test_kron_ridge_holdout_matches_explicit_retraining(rng, setting, alpha):
    K1, K2 = _psd(rng, 5), _psd(rng, 4, rank=2)  # rank-deficient K2 on purpose
    Y = rng.normal(size=(5, 4))
    e1, e2 = EigenPath(K1), EigenPath(K2)
    got = kron_ridge_holdout(e1.eigenvectors, e1.eigenvalues, e2.eigenvectors, e2.eigenvalues, Y, alpha, setting)
    expected = np.array([[_dense_refit(K1, K2, Y, _held_out_mask(Y.shape, setting, i, j), alpha, i, j)
                          for j in range(4)] for i in range(5)])
    np.testing.assert_allclose(got, expected, rtol=1e-8, atol=1e-10 * np.abs(expected).max())


def test_kron_ridge_dual_solves_the_kronecker_system(rng):
    K1, K2, Y = _psd(rng, 4), _psd(rng, 3), rng.normal(size=(4, 3))
    e1, e2 = EigenPath(K1), EigenPath(K2)
    A = kron_ridge_dual(e1.eigenvectors, e1.eigenvalues, e2.eigenvectors, e2.eigenvalues, Y, 0.3)
    np.testing.assert_allclose(K1 @ A @ K2 + 0.3 * A, Y, atol=1e-12)


@pytest.mark.parametrize("sign", [1, -1])
def test_leave_edge_out_matches_explicit_retraining(rng, sign):
    n, alpha = 4, 0.3
    K, Y = _psd(rng, n), rng.normal(size=(n, n))
    eig = EigenPath(K)
    A = kron_ridge_symmetric_dual(eig.eigenvectors, eig.eigenvalues, Y, alpha, sign)
    got = kron_ridge_leave_edge_out(eig.eigenvectors, eig.eigenvalues, Y, A, alpha, sign)
    r, c = (x.ravel() for x in np.indices((n, n)))

    def kernel(ra, ca, rb, cb):  # (K(a, c) K(b, d) + sign K(a, d) K(b, c)) / 2, eq. 8-9
        return 0.5 * (K[np.ix_(ra, rb)] * K[np.ix_(ca, cb)] + sign * K[np.ix_(ra, cb)] * K[np.ix_(ca, rb)])

    expected = np.empty((n, n))
    for i in range(n):
        for j in range(n):
            train = ~(((r == i) & (c == j)) | ((r == j) & (c == i)))
            a = np.linalg.solve(kernel(r[train], c[train], r[train], c[train]) + alpha * np.eye(train.sum()),
                                Y.ravel()[train])
            expected[i, j] = (kernel(np.array([i]), np.array([j]), r[train], c[train]) @ a)[0]
    np.testing.assert_allclose(got, expected, rtol=1e-8, atol=1e-10 * np.abs(expected).max())

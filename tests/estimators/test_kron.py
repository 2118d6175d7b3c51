"""KronRLS and ConditionalRankRLS against dense references: explicit Kronecker kernels, dense ranking systems,
symmetric/reciprocal kernels, conjugate gradient vs closed form, closed-form CV vs explicit retraining."""

import numpy as np
import pytest

import iokr
from iokr.estimators import ConditionalRankRLS, KronRLS, TwoStepRLS, kron
from iokr.exceptions import ConvergenceWarning
from iokr.kernels import Gaussian, Linear
from iokr.linalg import sampled_kron_features
from iokr.linalg.developer import commutation_matrix
from iokr.metrics import concordance_index
from iokr.model_selection import pairwise_splits as _scheme_splits


def _psd(rng, n, rank=None):
    F = rng.normal(size=(n, rank or n + 2))
    return F @ F.T / F.shape[1]


def _dense_kron_rls(K1, K2, Y, alpha):
    """Ordinary kernel RLS on the explicit Kronecker kernel, vec in column-major order."""
    Kbar = np.kron(K2, K1)
    a = np.linalg.solve(Kbar + alpha * np.eye(Kbar.shape[0]), Y.ravel(order="F"))
    return a.reshape(Y.shape, order="F")


@pytest.fixture
def data(rng):
    n1, n2 = 6, 5
    K1, K2 = _psd(rng, n1), _psd(rng, n2)
    Y = rng.normal(size=(n1, n2))
    return K1, K2, Y


@pytest.mark.parametrize("alpha", [1e-2, 1.0, 30.0])
@pytest.mark.parametrize("shape", [(6, 5), (3, 8)])
def test_kronrls_matches_dense_kernel_rls(rng, alpha, shape):
    K1, K2 = _psd(rng, shape[0]), _psd(rng, shape[1])
    Y = rng.normal(size=shape)
    model = KronRLS(alpha=alpha).fit(K1, K2, Y)
    A = _dense_kron_rls(K1, K2, Y, alpha)
    np.testing.assert_allclose(model.dual_coef_, A, rtol=1e-9, atol=1e-11)
    T1, T2 = rng.normal(size=(4, shape[0])), rng.normal(size=(3, shape[1]))
    expected = (np.kron(T2, T1) @ A.ravel(order="F")).reshape((4, 3), order="F")
    np.testing.assert_allclose(model.predict(T1, T2), expected, rtol=1e-9, atol=1e-11)
    r, c = np.array([0, 3, 3, 1]), np.array([2, 0, 2, 1])
    np.testing.assert_allclose(model.predict(T1, T2, pairs=(r, c)), expected[r, c], rtol=1e-10)


def test_kronrls_feature_kernels_equal_precomputed(rng):
    X1, X2, Y = rng.normal(size=(7, 3)), rng.normal(size=(5, 2)), rng.normal(size=(7, 5))
    T1, T2 = rng.normal(size=(2, 3)), rng.normal(size=(4, 2))
    g1, g2 = Gaussian(gamma=0.3), Linear()
    model = KronRLS(alpha=0.5, kernel1=g1, kernel2=g2).fit(X1, X2, Y)
    ref = KronRLS(alpha=0.5).fit(g1(X1), g2(X2), Y)
    np.testing.assert_allclose(model.predict(T1, T2), ref.predict(g1(T1, X1), g2(T2, X2)), rtol=1e-10)
    with pytest.raises(ValueError, match="features"):
        model.predict(T1[:, :2], T2)


def _dense_ranking_system(K1, K2, rows, cols, y, alpha):
    """Solve (L Kq + lambda I) a = L y with L the per-row-node centering of eq. 31, built explicitly."""
    Kq = K1[np.ix_(rows, rows)] * K2[np.ix_(cols, cols)]
    q = y.size
    L = np.eye(q)
    for node in np.unique(rows):
        idx = np.flatnonzero(rows == node)
        L[np.ix_(idx, idx)] -= 1.0 / idx.size
    return np.linalg.solve(L @ Kq + alpha * np.eye(q), L @ y)


@pytest.mark.parametrize("alpha", [1e-2, 1.0])
def test_conditional_rankrls_matches_dense_system(data, alpha):
    K1, K2, Y = data
    rows, cols = (a.ravel() for a in np.indices(Y.shape))
    a = _dense_ranking_system(K1, K2, rows, cols, Y.ravel(), alpha)
    model = ConditionalRankRLS(alpha=alpha).fit(K1, K2, Y)
    np.testing.assert_allclose(model.dual_coef_.ravel(), a, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("solver", ["minres", "cg"])
def test_conditional_rankrls_cg_incomplete_matches_dense(rng, solver):
    K1, K2 = _psd(rng, 7), _psd(rng, 6)
    rows, cols = rng.integers(0, 7, size=30), rng.integers(0, 6, size=30)
    rows[1], cols[1] = rows[0], cols[0]
    y = rng.normal(size=30)
    a = _dense_ranking_system(K1, K2, rows, cols, y, 0.3)
    model = ConditionalRankRLS(alpha=0.3, tol=1e-13, solver=solver).fit(K1, K2, (rows, cols, y))
    np.testing.assert_allclose(model.edge_coef_, a, rtol=1e-7, atol=1e-9)
    # predictions: sum over edges of a_e K1[., r_e] K2[., c_e]
    T1, T2 = rng.normal(size=(3, 7)), rng.normal(size=(2, 6))
    expected = np.einsum("e,ie,je->ij", a, T1[:, rows], T2[:, cols])
    np.testing.assert_allclose(model.predict(T1, T2), expected, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("solver", ["minres", "cg"])
@pytest.mark.parametrize("model_cls", [KronRLS, ConditionalRankRLS])
def test_cg_on_complete_data_matches_closed_form(data, model_cls, solver):
    K1, K2, Y = data
    rows, cols = (a.ravel() for a in np.indices(Y.shape))
    closed = model_cls(alpha=0.7).fit(K1, K2, Y)
    cg = model_cls(alpha=0.7, tol=1e-13, solver=solver).fit(K1, K2, (rows, cols, Y.ravel()))
    assert cg.n_iter_ > 0 and closed.n_iter_ == 0
    np.testing.assert_allclose(cg.dual_coef_, closed.dual_coef_, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("solver", ["minres", "cg"])
def test_kronrls_cg_incomplete_matches_dense(rng, solver):
    K1, K2 = _psd(rng, 8), _psd(rng, 5)
    rows, cols = rng.integers(0, 8, size=25), rng.integers(0, 5, size=25)
    y = rng.normal(size=25)
    Kq = K1[np.ix_(rows, rows)] * K2[np.ix_(cols, cols)]
    a = np.linalg.solve(Kq + 0.5 * np.eye(25), y)
    model = KronRLS(alpha=0.5, tol=1e-13, solver=solver).fit(K1, K2, (rows, cols, y))
    np.testing.assert_allclose(model.edge_coef_, a, rtol=1e-8, atol=1e-10)


def test_early_stopping_without_tikhonov(rng):
    K1, K2 = _psd(rng, 8), _psd(rng, 5)
    rows, cols = rng.integers(0, 8, size=25), rng.integers(0, 5, size=25)
    y = rng.normal(size=25)
    model = KronRLS(alpha=0.0, max_iter=3, solver="cg").fit(K1, K2, (rows, cols, y))
    assert model.n_iter_ == 3
    # Three CG steps from zero stay in the Krylov space span{y, Kq y, Kq^2 y}.
    Kq = K1[np.ix_(rows, rows)] * K2[np.ix_(cols, cols)]
    basis = np.column_stack([y, Kq @ y, Kq @ Kq @ y])
    coef, *_ = np.linalg.lstsq(basis, model.edge_coef_, rcond=None)
    np.testing.assert_allclose(basis @ coef, model.edge_coef_, atol=1e-8 * np.abs(model.edge_coef_).max())
    with pytest.raises(ValueError, match="max_iter"):
        KronRLS(alpha=0.0).fit(K1, K2, (rows, cols, y))


@pytest.mark.parametrize("solver", ["minres", "cg"])
def test_cg_warns_when_not_converged(rng, solver):
    K1, K2 = _psd(rng, 8), _psd(rng, 5)
    rows, cols = (a.ravel() for a in np.indices((8, 5)))
    with pytest.warns(ConvergenceWarning):
        KronRLS(alpha=1e-6, tol=1e-15, solver=solver).fit(K1, K2, (rows[:30], cols[:30], rng.normal(size=30)))


# ----------------------------------------------------------------------------------- symmetric / reciprocal
def _dense_symmetric(K, sign):
    n = K.shape[0]
    return 0.5 * np.kron(K, K) @ (np.eye(n * n) + sign * commutation_matrix(n))


@pytest.mark.parametrize("symmetry,sign", [("symmetric", 1), ("reciprocal", -1)])
def test_symmetric_kernels_match_dense(rng, symmetry, sign):
    n = 5
    K = _psd(rng, n)
    Y = rng.normal(size=(n, n))
    KS = _dense_symmetric(K, sign)
    a = np.linalg.solve(KS + 0.4 * np.eye(n * n), Y.ravel())  # C-order: index r * n + c
    model = KronRLS(alpha=0.4, symmetry=symmetry).fit(K, None, Y)
    np.testing.assert_allclose(model.dual_coef_.ravel(), a, rtol=1e-9, atol=1e-11)
    T = rng.normal(size=(3, n))
    test_kernel = 0.5 * (np.kron(T, T) + sign * np.kron(T, T) @ commutation_matrix(n))
    np.testing.assert_allclose(model.predict(T).ravel(), test_kernel @ a, rtol=1e-9, atol=1e-11)
    P = model.predict(T)
    np.testing.assert_allclose(P, sign * P.T, atol=1e-12)
    # Proposition 3: ordinary kernel with each edge in both directions gives the same predictions.
    both = KronRLS(alpha=0.4).fit(K, K, 0.5 * (Y + sign * Y.T))
    np.testing.assert_allclose(both.predict(T, T), P, rtol=1e-9, atol=1e-11)
    # CG on triplets with the symmetric operator agrees too.
    rows, cols = (x.ravel() for x in np.indices((n, n)))
    cg = KronRLS(alpha=0.4, symmetry=symmetry, tol=1e-13).fit(K, K, (rows, cols, Y.ravel()))
    np.testing.assert_allclose(cg.predict(T), P, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("symmetry,sign", [("symmetric", 1), ("reciprocal", -1)])
def test_symmetric_ranking_matches_dense(rng, symmetry, sign):
    n = 5
    K = _psd(rng, n)
    rows, cols = rng.integers(0, n, size=18), rng.integers(0, n, size=18)
    y = rng.normal(size=18)
    KS = _dense_symmetric(K, sign)
    Kq = KS[np.ix_(rows * n + cols, rows * n + cols)]
    L = np.eye(18)
    for node in np.unique(rows):
        idx = np.flatnonzero(rows == node)
        L[np.ix_(idx, idx)] -= 1.0 / idx.size
    a = np.linalg.solve(L @ Kq + 0.2 * np.eye(18), L @ y)
    model = ConditionalRankRLS(alpha=0.2, symmetry=symmetry, tol=1e-13).fit(K, None, (rows, cols, y))
    np.testing.assert_allclose(model.edge_coef_, a, rtol=1e-7, atol=1e-9)


# ------------------------------------------------------------------------------ closed-form CV vs retraining
def _retrain_predictions(K1, K2, Y, alpha, setting, model_cls=KronRLS):
    n1, n2 = Y.shape
    out = np.empty(Y.shape)
    for i in range(n1):
        for j in range(n2):
            if setting == "A":
                mask = np.ones(Y.shape, bool)
                mask[i, j] = False
                r, c = np.nonzero(mask)
                m = model_cls(alpha=alpha, tol=1e-14).fit(K1, K2, (r, c, Y[r, c]))
                out[i, j] = m.predict(K1[[i]], K2[[j]])[0, 0]
                continue
            R = np.delete(np.arange(n1), i) if setting in "BD" else np.arange(n1)
            C = np.delete(np.arange(n2), j) if setting in "CD" else np.arange(n2)
            m = model_cls(alpha=alpha).fit(K1[np.ix_(R, R)], K2[np.ix_(C, C)], Y[np.ix_(R, C)])
            out[i, j] = m.predict(K1[np.ix_([i], R)], K2[np.ix_([j], C)])[0, 0]
    return out


@pytest.mark.parametrize("setting", ["A", "B", "C", "D"])
@pytest.mark.parametrize("shape", [(5, 4), (4, 6)])
def test_kronrls_closed_form_cv_matches_retraining(rng, setting, shape):
    K1, K2 = _psd(rng, shape[0]), _psd(rng, shape[1], rank=3)  # K2 rank-deficient on purpose
    Y = rng.normal(size=shape)
    model = KronRLS(alpha=0.3).fit(K1, K2, Y)
    expected = _retrain_predictions(K1, K2, Y, 0.3, setting)
    np.testing.assert_allclose(model.holdout_predictions(setting), expected, rtol=1e-6, atol=1e-9)
    # Another alpha through the cached eigendecompositions equals a refit at that alpha.
    refit = KronRLS(alpha=2.0).fit(K1, K2, Y)
    np.testing.assert_allclose(model.holdout_predictions(setting, alpha=2.0), refit.holdout_predictions(setting),
                               rtol=1e-10, atol=1e-12)


def test_conditional_ranking_leave_row_out_matches_retraining(rng):
    K1, K2 = _psd(rng, 6), _psd(rng, 5)
    Y = rng.normal(size=(6, 5))
    model = ConditionalRankRLS(alpha=0.3).fit(K1, K2, Y)
    expected = _retrain_predictions(K1, K2, Y, 0.3, "B", ConditionalRankRLS)
    expected -= expected.mean(axis=1, keepdims=True)
    got = model.holdout_predictions("B")
    np.testing.assert_allclose(got - got.mean(axis=1, keepdims=True), expected, rtol=1e-8, atol=1e-10)


def test_cv_path_scores(data):
    K1, K2, Y = data
    model = KronRLS(alpha=1.0).fit(K1, K2, Y)
    scores = model.cv_path([0.1, 1.0, 10.0], "B")
    assert scores.shape == (3,) and np.all((scores >= 0) & (scores <= 1))
    P = model.holdout_predictions("B", alpha=10.0)
    assert scores[2] == pytest.approx(concordance_index(Y.ravel(), P.ravel()), rel=1e-12)
    rank = ConditionalRankRLS(alpha=1.0).fit(K1, K2, Y)
    assert rank.cv_path([0.1, 1.0], "B").shape == (2,)
    # custom scoring sees the flat labels and predictions
    got = model.cv_path([1.0], "C", scoring=lambda y, p: -np.mean((y - p) ** 2))
    assert got[0] == pytest.approx(-np.mean((Y - model.holdout_predictions("C")) ** 2), rel=1e-12)


# ------------------------------------------------------------------------------------------------ bad input
def test_bad_triplets(data):
    K1, K2, _ = data
    with pytest.raises(ValueError, match=r"rows indices must lie in \[0, 6\)"):
        KronRLS().fit(K1, K2, (np.array([0, 6]), np.array([0, 1]), np.ones(2)))
    with pytest.raises(ValueError, match=r"cols indices must lie in \[0, 5\)"):
        KronRLS().fit(K1, K2, (np.array([0, 1]), np.array([-1, 1]), np.ones(2)))
    with pytest.raises(ValueError, match="same length"):
        KronRLS().fit(K1, K2, (np.array([0, 1]), np.array([0, 1]), np.ones(3)))
    with pytest.raises(ValueError, match="integer"):
        KronRLS().fit(K1, K2, (np.array([0.0, 1.0]), np.array([0, 1]), np.ones(2)))
    with pytest.raises(ValueError, match="NaN"):
        KronRLS().fit(K1, K2, (np.array([0, 1]), np.array([0, 1]), np.array([1.0, np.nan])))
    with pytest.raises(ValueError, match="length 2"):
        KronRLS().fit(K1, K2, (np.array([0, 1]), np.array([0, 1])))


def test_bad_shapes_and_params(data, rng):
    K1, K2, Y = data
    with pytest.raises(ValueError, match=r"shape \(n1, n2\) = \(6, 5\)"):
        KronRLS().fit(K1, K2, Y.T)
    with pytest.raises(ValueError, match="square"):
        KronRLS(symmetry="symmetric").fit(rng.normal(size=(4, 3)), None, np.ones((4, 4)))
    with pytest.raises(ValueError, match="one domain"):
        KronRLS(symmetry="reciprocal").fit(K1, K2, np.ones((6, 5)))
    with pytest.raises(ValueError, match="'symmetry' parameter"):
        KronRLS(symmetry="antisymmetric").fit(K1, K2, Y)
    with pytest.raises(ValueError, match="'alpha' parameter"):
        KronRLS(alpha=-1.0).fit(K1, K2, Y)
    with pytest.raises(ValueError, match="> 0 for complete"):
        KronRLS(alpha=0.0).fit(K1, K2, Y)
    model = KronRLS().fit(K1, K2, Y)
    with pytest.raises(ValueError, match="6 columns"):
        model.predict(np.ones((2, 5)), K2)
    with pytest.raises(ValueError, match="X2_test"):
        model.predict(K1)
    with pytest.raises(ValueError, match=r"pairs' rows must lie"):
        model.predict(K1, K2, pairs=(np.array([9]), np.array([0])))
    with pytest.raises(ValueError, match="'setting'"):
        model.holdout_predictions("E")


def test_does_not_mutate_inputs(data):
    K1, K2, Y = data
    copies = [K1.copy(), K2.copy(), Y.copy()]
    ConditionalRankRLS(alpha=1.0).fit(K1, K2, Y).holdout_predictions("B")
    for before, after in zip(copies, (K1, K2, Y), strict=True):
        np.testing.assert_array_equal(before, after)


def test_public_shape_of_issue(data):
    K1, K2, Y = data
    for cls in (KronRLS, ConditionalRankRLS):
        model = cls(alpha=1.0, kernel1="precomputed", kernel2="precomputed", symmetry=None)
        assert model.get_params()["alpha"] == 1.0
        assert model.fit(K1, K2, Y) is model
        assert model.predict(K1[:2], K2[:3]).shape == (2, 3)


# ------------------------------------------------------------------------------------------------- two-step
def test_two_step_matches_dense_and_retraining(rng):
    K1, K2 = _psd(rng, 5), _psd(rng, 4)
    Y = rng.normal(size=(5, 4))
    a1, a2 = 0.3, 0.8
    model = TwoStepRLS(alpha1=a1, alpha2=a2).fit(K1, K2, Y)
    A = np.linalg.solve(K2 + a2 * np.eye(4), np.linalg.solve(K1 + a1 * np.eye(5), Y).T).T
    np.testing.assert_allclose(model.dual_coef_, A, rtol=1e-9)
    for setting in "BCD":
        expected = np.empty(Y.shape)
        for i in range(5):
            for j in range(4):
                R = np.delete(np.arange(5), i) if setting in "BD" else np.arange(5)
                C = np.delete(np.arange(4), j) if setting in "CD" else np.arange(4)
                m = TwoStepRLS(alpha1=a1, alpha2=a2).fit(K1[np.ix_(R, R)], K2[np.ix_(C, C)], Y[np.ix_(R, C)])
                expected[i, j] = m.predict(K1[np.ix_([i], R)], K2[np.ix_([j], C)])[0, 0]
        np.testing.assert_allclose(model.holdout_predictions(setting), expected, rtol=1e-8, atol=1e-10)
    # Setting A is the self-consistent imputation: putting F[i, j] in place of Y[i, j] reproduces F[i, j].
    F = model.holdout_predictions("A")
    Y2 = Y.copy()
    Y2[2, 1] = F[2, 1]
    refit = TwoStepRLS(alpha1=a1, alpha2=a2).fit(K1, K2, Y2)
    assert refit.predict(K1, K2)[2, 1] == pytest.approx(F[2, 1], rel=1e-9)


@pytest.mark.parametrize("setting", ["A", "B", "C", "D"])
def test_holdout_stable_when_leverage_is_one(rng, setting):
    # Identity kernels: a held-out pair carries no information, so every hold-out prediction is exactly 0; with
    # alpha = 1e-20 the leverage rounds to 1, and 1 - h must come from alpha / (s + alpha), not from 1 - h.
    Y = rng.normal(size=(4, 5))
    model = KronRLS(alpha=1e-20).fit(np.eye(4), np.eye(5), Y)
    np.testing.assert_allclose(model.holdout_predictions(setting), 0.0, atol=1e-12)


# ------------------------------------------------------------------ CV in every setting vs dense explicit retraining
def _dense_refit_predict(K1, K2, r, c, v, r_test, c_test, alpha, ranking, sign=None):
    """Retrain on the labelled pairs (r, c, v) by a dense solve of (L Kq + alpha I) a = L y and score test pairs.

    Kq is the explicit pair kernel (ordinary, or (K1 K1 + sign K1 K1^T) / 2 in one domain); L centers each row's
    labels for ranking (identity for regression). Ranking scores of rows with training labels get the row's
    least-squares intercept (mean training residual), as the estimators document."""
    def kq(ra, ca, rb, cb):
        if sign is None:
            return K1[np.ix_(ra, rb)] * K2[np.ix_(ca, cb)]
        return 0.5 * (K1[np.ix_(ra, rb)] * K1[np.ix_(ca, cb)] + sign * K1[np.ix_(ra, cb)] * K1[np.ix_(ca, rb)])

    K = kq(r, c, r, c)
    L = np.eye(r.size)
    if ranking:
        for g in np.unique(r):
            idx = np.flatnonzero(r == g)
            L[np.ix_(idx, idx)] -= 1.0 / idx.size
    a = np.linalg.solve(L @ K + alpha * np.eye(r.size), L @ v)
    pred = kq(r_test, c_test, r, c) @ a
    if ranking:
        resid = v - K @ a
        offset = {g: resid[r == g].mean() for g in np.unique(r)}
        pred = pred + np.array([offset.get(g, 0.0) for g in r_test])
    return pred


def _held_out(setting, rows, cols, i, j, one_domain):
    """Pairs the setting removes from training to predict pair (i, j) (leave-one-group-out)."""
    if not one_domain:
        return {"A": (rows == i) & (cols == j), "B": rows == i, "C": cols == j, "D": (rows == i) | (cols == j)}[setting]
    def touches(node):
        return (rows == node) | (cols == node)

    edge = ((rows == i) & (cols == j)) | ((rows == j) & (cols == i))
    return {"A": edge, "B": touches(i), "C": touches(j), "D": touches(i) | touches(j)}[setting]


def _loo_reference(K1, K2, rows, cols, values, alpha, setting, ranking, sign=None):
    out = np.empty(rows.size)
    for e, (i, j) in enumerate(zip(rows, cols, strict=True)):
        train = ~_held_out(setting, rows, cols, i, j, sign is not None)
        out[e] = _dense_refit_predict(K1, K2, rows[train], cols[train], values[train], np.array([i]), np.array([j]),
                                      alpha, ranking, sign)[0]
    return out


@pytest.mark.parametrize("setting", ["A", "C", "D"])
@pytest.mark.parametrize("shape", [(6, 5), (4, 7)])
def test_conditional_ranking_closed_form_cv_matches_retraining(rng, setting, shape):
    K1, K2 = _psd(rng, shape[0]), _psd(rng, shape[1], rank=3)  # rank-deficient C K2 C: extra null directions
    Y = rng.normal(size=shape)
    rows, cols = (a.ravel() for a in np.indices(shape))
    expected = _loo_reference(K1, K2, rows, cols, Y.ravel(), 0.3, setting, ranking=True).reshape(shape)
    model = ConditionalRankRLS(alpha=1.0).fit(K1, K2, Y)
    got = model.holdout_predictions(setting, alpha=0.3)
    np.testing.assert_allclose(got, expected, rtol=1e-8, atol=1e-10 * np.abs(expected).max())


@pytest.mark.parametrize("model_cls", [KronRLS, ConditionalRankRLS])
@pytest.mark.parametrize("symmetry,sign", [("symmetric", 1), ("reciprocal", -1)])
@pytest.mark.parametrize("setting", ["A", "B", "C", "D"])
def test_one_domain_cv_matches_retraining(rng, model_cls, symmetry, sign, setting):
    """KronRLS setting A is the closed form of kron_ridge_leave_edge_out; the rest retrain (ranking: by CG)."""
    n = 5
    K = _psd(rng, n)
    Y = rng.normal(size=(n, n))
    rows, cols = (a.ravel() for a in np.indices((n, n)))
    ranking = model_cls is ConditionalRankRLS
    expected = _loo_reference(K, K, rows, cols, Y.ravel(), 0.4, setting, ranking=ranking, sign=sign).reshape(n, n)
    got = model_cls(alpha=0.4, symmetry=symmetry, tol=1e-14).fit(K, None, Y).holdout_predictions(setting)
    if setting in "BC":
        # a self-pair (i, i) has both nodes new: a setting-D pair, not predicted under B / C
        assert np.isnan(np.diagonal(got)).all()
        off = ~np.eye(n, dtype=bool)
        got, expected = got[off], expected[off]
    np.testing.assert_allclose(got, expected, rtol=1e-8, atol=1e-10 * np.abs(expected).max())


@pytest.mark.parametrize("model_cls", [KronRLS, ConditionalRankRLS])
@pytest.mark.parametrize("symmetry,sign", [(None, None), ("reciprocal", -1)])
@pytest.mark.parametrize("setting", ["A", "B", "C", "D"])
def test_incomplete_labels_cv_by_retraining(rng, model_cls, symmetry, sign, setting):
    n1, n2 = 5, 4
    if symmetry is None:
        K1, K2 = _psd(rng, n1), _psd(rng, n2)
    else:
        K1 = K2 = _psd(rng, n1)
        n2 = n1
    rows = rng.integers(0, n1, size=14)
    cols = rng.integers(0, n2, size=14)
    rows[1], cols[1] = rows[0], cols[0]  # a repeated pair: held out together in setting A
    values = rng.normal(size=14)
    model = model_cls(alpha=0.5, tol=1e-14, symmetry=symmetry).fit(K1, None if symmetry else K2, (rows, cols, values))
    got = model.holdout_predictions(setting)
    expected = _loo_reference(K1, K2, rows, cols, values, 0.5, setting, ranking=model_cls is ConditionalRankRLS,
                              sign=sign)
    keep = ~np.isnan(got)  # one domain B / C: self-pairs (both nodes new) are not predicted
    assert keep.sum() >= rows.size - np.sum(rows == cols)
    np.testing.assert_allclose(got[keep], expected[keep], rtol=1e-8, atol=1e-9 * np.abs(expected).max())


@pytest.mark.parametrize("model_cls", [KronRLS, ConditionalRankRLS])
@pytest.mark.parametrize("setting", ["A", "B", "C", "D"])
def test_k_fold_splits_follow_the_setting(rng, model_cls, setting):
    """k-fold by retraining: each prediction comes from a model that saw neither the pair's held-out group(s);
    checked by replaying the fold assignment against a dense refit on exactly the allowed pairs."""
    n1, n2 = 6, 5
    K1, K2 = _psd(rng, n1), _psd(rng, n2)
    Y = rng.normal(size=(n1, n2))
    model = model_cls(alpha=0.7, tol=1e-14).fit(K1, K2, Y)
    got = model.holdout_predictions(setting, n_folds=3, random_state=4).ravel()
    rows, cols = (a.ravel() for a in np.indices((n1, n2)))
    expected = np.full(rows.size, np.nan)
    covered = np.zeros(rows.size, int)
    for train, test in _scheme_splits(setting, rows, cols, False, 3, 4):
        # the split removes every pair sharing a held-out row (B, D) or column (C, D) with a test pair
        if setting in "BD":
            assert not np.isin(rows[train], rows[test]).any()
        if setting in "CD":
            assert not np.isin(cols[train], cols[test]).any()
        covered[test] += 1
        expected[test] = _dense_refit_predict(K1, K2, rows[train], cols[train], Y.ravel()[train], rows[test],
                                              cols[test], 0.7, model_cls is ConditionalRankRLS)
    assert (covered == 1).all()
    np.testing.assert_allclose(got, expected, rtol=1e-8, atol=1e-9 * np.abs(expected).max())
    assert model.cv_path([0.7], setting, n_folds=3, random_state=4).shape == (1,)


def test_one_domain_folds_cover_b_and_d(rng):
    n = 7
    rows, cols = (a.ravel() for a in np.indices((n, n)))
    seen = np.zeros(rows.size, int)
    for train, test in _scheme_splits("D", rows, cols, True, 3, 0):
        nodes = np.union1d(rows[test], cols[test])
        assert not (np.isin(rows[train], nodes) | np.isin(cols[train], nodes)).any()
        seen[test] += 1
    assert (seen == 1).all()
    for train, test in _scheme_splits("B", rows, cols, True, 3, 0):
        assert not np.isin(rows[test], cols[test]).any()  # column nodes of B test pairs stay known
        assert not (np.isin(rows[train], rows[test]) | np.isin(cols[train], rows[test])).any()


def test_cv_argument_errors(data):
    K1, K2, Y = data
    model = KronRLS().fit(K1, K2, Y)
    with pytest.raises(ValueError, match="'n_folds'"):
        model.holdout_predictions("B", n_folds=1)
    with pytest.raises(ValueError, match="'alpha'"):
        model.holdout_predictions("B", alpha=-1.0)


# ------------------------------------------------------------------------ iterative solvers: stated stopping rule
def _sampled_system(rng, n1=9, n2=7, q=40):
    K1, K2 = _psd(rng, n1), _psd(rng, n2)
    flat = rng.choice(n1 * n2, size=q, replace=False)
    r, c = flat // n2, flat % n2
    return K1, K2, r, c, rng.normal(size=q)


@pytest.mark.parametrize("solver", ["cg", "minres"])
@pytest.mark.parametrize("tol", [1e-4, 1e-10])
def test_iterative_solvers_stop_on_the_stated_residual(rng, solver, tol):
    assert KronRLS().solver == "minres"  # the default, chosen by benchmarks/bench_kron_solvers.py
    K1, K2, r, c, y = _sampled_system(rng)
    alpha = 0.05
    M = K1[np.ix_(r, r)] * K2[np.ix_(c, c)] + alpha * np.eye(r.size)  # the pair system, densely
    model = KronRLS(alpha=alpha, tol=tol, solver=solver).fit(K1, K2, (r, c, y))
    a = model.edge_coef_
    relative = np.linalg.norm(y - M @ a) / np.linalg.norm(y)
    assert relative <= tol
    assert model.cg_info_.relative_residuals[0] == pytest.approx(relative, rel=1e-6, abs=1e-13)
    exact = np.linalg.solve(M, y)
    np.testing.assert_allclose(a, exact, atol=np.linalg.cond(M) * tol * np.linalg.norm(exact))
    if tol == 1e-10:
        np.testing.assert_allclose(model.predict(K1, K2), KronRLS(alpha=alpha, tol=1e-13).fit(
            K1, K2, (r, c, y)).predict(K1, K2), rtol=1e-6, atol=1e-8)


def test_minres_ranking_matches_cg_and_needs_no_more_iterations(rng):
    K1, K2, r, c, y = _sampled_system(rng, q=50)
    cg = ConditionalRankRLS(alpha=0.1, tol=1e-9, solver="cg").fit(K1, K2, (r, c, y))
    mr = ConditionalRankRLS(alpha=0.1, tol=1e-9, solver="minres").fit(K1, K2, (r, c, y))
    np.testing.assert_allclose(mr.edge_coef_, cg.edge_coef_, rtol=1e-6, atol=1e-8)
    assert mr.n_iter_ <= cg.n_iter_ and mr.cg_info_.relative_residuals[0] <= 1e-9


def test_invalid_solver_is_rejected(data):
    K1, K2, Y = data
    with pytest.raises(ValueError, match="The 'solver' parameter of KronRLS must be 'cg' or 'minres'. Got 'lsqr'"):
        KronRLS(solver="lsqr").fit(K1, K2, Y)


# ------------------------------------------------------------------------ a grid of alphas through holdout_predictions
@pytest.mark.parametrize("model_cls", [KronRLS, ConditionalRankRLS])
@pytest.mark.parametrize("setting", ["A", "D"])
@pytest.mark.parametrize("complete", [True, False])
def test_holdout_predictions_of_a_grid_stack_single_alphas(rng, model_cls, setting, complete):
    K1, K2 = _psd(rng, 5), _psd(rng, 4)
    if complete:
        Y = rng.normal(size=(5, 4))
    else:
        Y = (rng.integers(0, 5, size=12), rng.integers(0, 4, size=12), rng.normal(size=12))
    model = model_cls(alpha=1.0, tol=1e-13).fit(K1, K2, Y)
    alphas = [0.05, 2.0]
    grid = model.holdout_predictions(setting, alpha=alphas)
    single = np.stack([model.holdout_predictions(setting, alpha=a) for a in alphas])
    assert grid.shape == single.shape == ((2, 5, 4) if complete else (2, 12))
    np.testing.assert_allclose(grid, single, rtol=1e-10, atol=1e-12)


def test_split_modules_keep_the_old_import_path():
    assert kron.ConditionalRankRLS is iokr.ConditionalRankRLS and kron.TwoStepRLS is iokr.TwoStepRLS
    assert kron.KronRLS is iokr.KronRLS


# ------------------------------------------------------------------ CG preconditioned by the top Kronecker eigenpairs
def test_sampled_kron_features_are_the_restricted_truncation(rng):
    K1, K2, r, c, _ = _sampled_system(rng, n1=7, n2=6, q=30)
    Phi, lambda_next = sampled_kron_features(K1, K2, r, c, 9)
    w, V = np.linalg.eigh(np.kron(K1, K2))  # brute force: the dense Kronecker kernel and its truncation
    Kr = (V[:, -9:] * w[-9:]) @ V[:, -9:].T
    flat = r * 6 + c
    np.testing.assert_allclose(Phi @ Phi.T, Kr[np.ix_(flat, flat)], atol=1e-10 * w[-1])
    assert lambda_next == pytest.approx(w[-10], rel=1e-10)
    gap = np.linalg.eigvalsh(K1[np.ix_(r, r)] * K2[np.ix_(c, c)] - Phi @ Phi.T)
    assert gap[0] > -1e-10 * w[-1] and gap[-1] <= lambda_next * (1 + 1e-10)


@pytest.mark.parametrize("tol", [1e-3, 1e-9])
def test_preconditioned_cg_reaches_the_dense_solution_in_fewer_iterations(rng, tol):
    # solver="cg" is required (MINRES, the default, has no preconditioned form here).
    K1, K2, r, c, y = _sampled_system(rng, n1=12, n2=10, q=90)
    alpha = 1e-3
    M = K1[np.ix_(r, r)] * K2[np.ix_(c, c)] + alpha * np.eye(r.size)
    plain = KronRLS(alpha=alpha, tol=tol, solver="cg").fit(K1, K2, (r, c, y))
    pre = KronRLS(alpha=alpha, tol=tol, solver="cg", preconditioner_rank=20).fit(K1, K2, (r, c, y))
    relative = np.linalg.norm(y - M @ pre.edge_coef_) / np.linalg.norm(y)
    assert relative <= tol and pre.cg_info_.relative_residuals[0] == pytest.approx(relative, rel=1e-6)
    exact = np.linalg.solve(M, y)
    np.testing.assert_allclose(pre.edge_coef_, exact, atol=np.linalg.cond(M) * tol * np.linalg.norm(exact))
    assert pre.n_iter_ < plain.n_iter_


def test_preconditioned_ranking_matches_plain_cg(rng):
    K1, K2, r, c, y = _sampled_system(rng, q=50)
    plain = ConditionalRankRLS(alpha=0.1, tol=1e-11, solver="cg").fit(K1, K2, (r, c, y))
    pre = ConditionalRankRLS(alpha=0.1, tol=1e-11, solver="cg", preconditioner_rank=10).fit(K1, K2, (r, c, y))
    np.testing.assert_allclose(pre.edge_coef_, plain.edge_coef_, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("params", [{"preconditioner_rank": 0}, {"preconditioner_rank": 2.5},
                                    {"preconditioner_rank": 3, "solver": "minres"},
                                    {"preconditioner_rank": 3, "solver": "cg", "symmetry": "symmetric"},
                                    {"preconditioner_rank": 3, "solver": "cg", "alpha": 0.0, "max_iter": 5}])
def test_preconditioner_rank_is_validated(rng, params):
    K1, K2, r, c, y = _sampled_system(rng, n1=6, n2=6, q=20)
    with pytest.raises(ValueError, match="'preconditioner_rank' parameter of KronRLS"):
        KronRLS(**params).fit(K1, None if "symmetry" in params else K2, (r, c, y))


@pytest.mark.parametrize("params", [{"solver": "cg"}, {"solver": "minres"}, {"solver": "cg", "preconditioner_rank": 4}])
def test_cv_refits_use_the_models_solver(rng, params):
    # Early stopping (max_iter=2) makes the iterates solver-dependent: the explicit k-fold refits must use the
    # fitted model's solver and preconditioner, not the defaults.
    K1, K2, r, c, y = _sampled_system(rng, n1=9, n2=7, q=40)
    model = KronRLS(alpha=0.1, max_iter=2, **params).fit(K1, K2, (r, c, y))
    P = model.holdout_predictions("A", n_folds=3, random_state=1)
    expected = np.full(y.size, np.nan)
    for train, test in _scheme_splits("A", r, c, False, 3, 1):
        refit = KronRLS(alpha=0.1, max_iter=2, **params).fit(K1, K2, (r[train], c[train], y[train]))
        expected[test] = refit.predict(K1, K2, pairs=(r[test], c[test]))
    np.testing.assert_allclose(P, expected, rtol=1e-10, atol=1e-12)

"""Sketched IOKR against exact IOKR (full-rank sketches), the explicit Nystrom formula, random Fourier features
against the Gaussian kernel, and Falkon-PCG against the exact solution."""

import numpy as np
import pytest
from reference import IOKR_LIKE_SKLEARN_CHECKS, assert_close_to_scale
from sklearn.base import clone
from sklearn.utils import estimator_checks

from iokr import IOKR
from iokr.estimators.sketched import SketchedIOKR
from iokr.kernels import Gaussian, Tanimoto
from iokr.kernels._random_features import RandomFourierFeatures
from iokr.linalg._sketch import NystromPreconditioner, nystrom_whitening, sparse_sketch, subsample_indices

#: A full-rank sketch equals the exact model in exact arithmetic; in floating point the Nystrom whitening keeps
#: eigenvalues down to 1e-10 of the largest (``nystrom_whitening``'s cutoff), so rounding of about eps = 2.2e-16 is
#: amplified up to 1e10 times: about 2e-6 of the scores' scale, whatever the BLAS kernel (seen: 2e-7 to 3e-7).
FULL_RANK_SKETCH_RTOL = 2e-6


def _data(n=50, d=4, p=6, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    Y = X @ rng.normal(size=(d, p)) + 0.1 * rng.normal(size=(n, p))
    return X, Y, rng.normal(size=(7, d)), rng.normal(size=(30, p))


@pytest.mark.parametrize("solver", ["nystrom", "sparse"])
@pytest.mark.parametrize("center,normalize", [(False, False), (True, True)])
@pytest.mark.parametrize("decoding", ["distance", "cosine"])
def test_full_rank_sketch_equals_exact_iokr(solver, center, normalize, decoding):
    X, Y, X_test, C = _data()
    common = dict(alpha=0.3, input_kernel=Gaussian(0.2), center_input=center, normalize_input=normalize,
                  decoding=decoding)
    exact = IOKR(**common).fit(X, Y)
    sketched = SketchedIOKR(**common, solver=solver, n_components=X.shape[0], sparsity=1.0, random_state=0).fit(X, Y)
    assert sketched.n_components_ == X.shape[0]
    np.testing.assert_allclose(sketched.decision_function(X_test, C), exact.decision_function(X_test, C),
                               rtol=1e-7, atol=1e-7)


def test_nystrom_matches_explicit_formula():
    X, Y, X_test, _ = _data(n=60)
    kernel, alpha, m = Gaussian(0.3), 0.5, 15
    model = SketchedIOKR(alpha=alpha, input_kernel=kernel, solver="nystrom", n_components=m, random_state=3,
                         center_input=False, normalize_input=False, center_output=False,
                         normalize_output=False).fit(X, Y)
    L = subsample_indices(60, m, np.random.default_rng(3))
    K_nm, K_mm = kernel(X, X[L]), kernel(X[L])
    beta = np.linalg.solve(K_nm.T @ K_nm + alpha * K_mm, K_nm.T @ Y)  # Rudi et al. 2015, eq. (5)
    np.testing.assert_allclose(model.predict_features(X_test), kernel(X_test, X[L]) @ beta, rtol=1e-6, atol=1e-8)


def test_sparse_sketch_statistics():
    S = sparse_sketch(40, 500, 0.1, np.random.default_rng(0))
    assert S.shape == (40, 500) and np.all(np.diff(S.indptr) > 0)
    np.testing.assert_allclose(np.abs(S.data), 1 / np.sqrt(40 * 0.1))
    with pytest.raises(ValueError, match="sparsity"):
        sparse_sketch(4, 5, 0.0)


def test_nystrom_whitening_drops_null_directions():
    rng = np.random.default_rng(0)
    F = rng.normal(size=(10, 3))
    W = nystrom_whitening(F @ F.T)
    assert W.shape == (10, 3)
    np.testing.assert_allclose((F @ F.T) @ W @ W.T @ (F @ F.T), F @ F.T, atol=1e-9)


def test_rff_error_decreases_with_components():
    rng = np.random.default_rng(0)
    A = rng.normal(size=(40, 5)) * 0.5
    exact = Gaussian(0.4)(A)
    errors = [np.mean([np.abs(RandomFourierFeatures(0.4, D, seed)(A) - exact).mean() for seed in range(3)])
              for D in (20, 200, 2000)]
    assert errors[0] > 2 * errors[1] > 4 * errors[2]  # O(1/sqrt(D)): sqrt(10) per step
    assert errors[2] < 0.02


def test_rff_solver_close_to_exact_with_many_features():
    X, Y, X_test, C = _data(n=80)
    exact = IOKR(alpha=0.5, input_kernel=Gaussian(0.1)).fit(X, Y).decision_function(X_test, C)
    approx = SketchedIOKR(alpha=0.5, input_kernel=Gaussian(0.1), solver="rff", n_components=3000,
                          random_state=0).fit(X, Y).decision_function(X_test, C)
    assert np.abs(approx - exact).max() < 0.1 * np.abs(exact).max()


@pytest.mark.parametrize("center,normalize", [(False, False), (True, True)])
def test_falkon_converges_to_exact_solution(center, normalize):
    X, Y, X_test, C = _data(n=70)
    common = dict(alpha=0.05, input_kernel=Gaussian(0.2), center_input=center, normalize_input=normalize)
    exact = IOKR(**common).fit(X, Y)
    falkon = SketchedIOKR(**common, solver="falkon", n_components=10, tol=1e-12, max_iter=300, random_state=0,
                          working_memory=0.01).fit(X, Y)
    np.testing.assert_allclose(falkon.dual_coef_, exact.dual_coef_, rtol=1e-7, atol=1e-8)
    np.testing.assert_allclose(falkon.decision_function(X_test, C), exact.decision_function(X_test, C),
                               rtol=1e-7, atol=1e-8)


@pytest.mark.parametrize("tol", [1e-3, 1e-6])
def test_falkon_stops_on_true_relative_residual(tol):
    # The stated rule: column j stops at the first iterate with ||Psi_j - (K + alpha I) c_j|| / ||Psi_j|| <= tol,
    # checked here against the explicit kernel (no input transforms, so K is the Gaussian Gram itself).
    X, Y, _, _ = _data(n=80)
    alpha = 1e-3
    model = SketchedIOKR(alpha=alpha, input_kernel=Gaussian(0.2), center_input=False, normalize_input=False,
                         solver="falkon", n_components=2, tol=tol, max_iter=500, random_state=0).fit(X, Y)
    K = Gaussian(0.2)(X)
    Psi, C = model.output_.train_features, model.dual_coef_
    true = np.linalg.norm(Psi - (K + alpha * np.eye(len(X))) @ C, axis=0) / np.linalg.norm(Psi, axis=0)
    np.testing.assert_allclose(model.cg_info_.relative_residuals, true, rtol=1e-6)
    assert model.cg_info_.converged.all() and (true <= tol * (1 + 1e-9)).all()
    assert true.max() > tol / 1e3  # it stopped on the rule, not by running to machine precision
    assert model.n_iter_ < 500


def test_nystrom_preconditioner_is_woodbury_inverse():
    rng = np.random.default_rng(0)
    Phi, R = rng.normal(size=(20, 4)), rng.normal(size=(20, 3))
    P = NystromPreconditioner(Phi, 0.7)
    np.testing.assert_allclose((Phi @ Phi.T + 0.7 * np.eye(20)) @ P(R), R, atol=1e-10)


def test_preconditioner_reduces_iterations():
    X, Y, _, _ = _data(n=120)
    common = dict(alpha=1e-3, input_kernel=Gaussian(0.2), solver="falkon", tol=1e-8, max_iter=2000, random_state=0)
    few = SketchedIOKR(**common, n_components=1).fit(X, Y).n_iter_
    many = SketchedIOKR(**common, n_components=60).fit(X, Y).n_iter_
    assert many < few


def test_output_sketch_full_rank_equals_exact_kernel_output():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(40, 3))
    Y = (rng.random((40, 30)) < 0.3).astype(np.float64)
    C = (rng.random((25, 30)) < 0.3).astype(np.float64)
    common = dict(alpha=0.2, input_kernel=Gaussian(0.3), output_kernel=Tanimoto(), normalize_output=False,
                  decoding="inner")
    exact = IOKR(**common).fit(X, Y).decision_function(X[:5], C)
    kernel_out = SketchedIOKR(**common, n_components=40, random_state=0).fit(X, Y)
    assert not kernel_out.output_.explicit
    assert_close_to_scale(kernel_out.decision_function(X[:5], C), exact, FULL_RANK_SKETCH_RTOL)
    sketched = SketchedIOKR(**common, n_components=40, output_components=40, random_state=0).fit(X, Y)
    assert sketched.output_.explicit and sketched.n_output_features_ == 30
    assert_close_to_scale(sketched.decision_function(X[:5], C), exact, FULL_RANK_SKETCH_RTOL)


@pytest.mark.parametrize("params, match", [({"solver": "qr"}, "solver"), ({"n_components": 0}, "n_components"),
                                           ({"input_kernel": "precomputed"}, "precomputed"),
                                           ({"solver": "rff", "input_kernel": "linear"}, "Gaussian"),
                                           ({"solver": "falkon", "output_kernel": Tanimoto()}, "explicit")])
def test_bad_parameters(params, match):
    X, Y, _, _ = _data()
    with pytest.raises(ValueError, match=match):
        SketchedIOKR(**params).fit(X, np.abs(Y))


# The contract checks that apply to IOKR (see tests/estimators/test_iokr.py for those that do not).
SKETCHED_SKLEARN_CHECKS = IOKR_LIKE_SKLEARN_CHECKS


@pytest.mark.parametrize("check_name", SKETCHED_SKLEARN_CHECKS)
@pytest.mark.parametrize("estimator", [SketchedIOKR(n_components=5, random_state=0),
                                       SketchedIOKR(solver="falkon", input_kernel=Gaussian(0.5), n_components=3,
                                                    random_state=0, max_iter=500),
                                       SketchedIOKR(solver="rff", input_kernel=Gaussian(0.5), n_components=20,
                                                    output_kernel=Tanimoto(), output_components=4, random_state=0)],
                         ids=["nystrom", "falkon", "rff-output-sketch"])
def test_sklearn_estimator_checks(check_name, estimator):
    getattr(estimator_checks, check_name)(type(estimator).__name__, clone(estimator))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_output_sketch_on_repeated_outputs_spans_every_distinct_output(dtype):
    # 60 examples, 12 distinct outputs: 12 landmarks drawn among distinct rows reproduce the unsketched model,
    # whereas drawing 12 of the 60 rows would almost surely miss some outputs.
    rng = np.random.default_rng(8)
    X = rng.normal(size=(60, 3))
    distinct = (rng.random((12, 20)) < 0.4).astype(dtype)
    Y = distinct[rng.integers(0, 12, size=60)]
    Y[:12] = distinct  # every distinct output occurs
    common = dict(alpha=0.1, input_kernel=Gaussian(0.3), output_kernel="linear", normalize_output=False,
                  decoding="inner")
    exact = IOKR(**common).fit(X, Y).decision_function(X[:7], Y[:9])
    Y_before = Y.copy()
    for seed in range(3):
        sketched = SketchedIOKR(**common, n_components=60, output_components=12, random_state=seed).fit(X, Y)
        np.testing.assert_allclose(sketched.decision_function(X[:7], Y[:9]), exact, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(Y, Y_before)


@pytest.mark.parametrize("decoding", ["cosine", "distance", "inner"])
def test_output_sketch_on_all_distinct_outputs_is_exact_with_normalized_kernel_outputs(decoding):
    # Candidates outside the span of the training outputs: the residual coordinate gives them their true norm, so
    # centered and normalized Tanimoto scores equal the unsketched ones.
    rng = np.random.default_rng(9)
    X = rng.normal(size=(50, 3))
    distinct = (rng.random((10, 24)) < 0.4).astype(np.float64)
    Y = np.vstack([distinct, distinct[rng.integers(0, 10, size=40)]])
    C = np.vstack([distinct[:3], (rng.random((8, 24)) < 0.4).astype(np.float64)])
    common = dict(alpha=0.1, input_kernel=Gaussian(0.3), output_kernel=Tanimoto(), decoding=decoding)
    exact = IOKR(**common).fit(X, Y).decision_function(X[:6], C)
    sketched = SketchedIOKR(**common, n_components=50, output_components=10, random_state=0).fit(X, Y)
    assert sketched.output_.train_features.shape[1] == 11  # 10 landmarks + the residual coordinate
    assert_close_to_scale(sketched.decision_function(X[:6], C), exact, FULL_RANK_SKETCH_RTOL)

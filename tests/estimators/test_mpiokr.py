"""MP-IOKR against brute-force references: objective (4) minimized directly with explicit (linear) feature maps.

References here never use the estimator's algebra (the ``G`` mixing matrix, the statistics): they build the
pairwise-difference least-squares problem of objective (4) literally, or the paper's Proposition 3 formula with
its ``V`` / ``D_n`` matrices, and solve it.
"""

import math
import warnings

import numpy as np
import pytest
from scipy import linalg as sla
from scipy import optimize
from scipy.linalg import block_diag
from sklearn.base import clone

from iokr.decoding import CandidateSets, PackedBinaryFeatures, subsample_sets
from iokr.decoding.developer import set_layout, stream_statistics
from iokr.estimators._mp_sides import _BlockDiagonal
from iokr.estimators.iokr import IOKR
from iokr.estimators.mpiokr import MPIOKR
from iokr.exceptions import EmptyCandidateSetWarning
from iokr.kernels import Kernel, Polynomial, WeightedSum


class ColumnLinear(Kernel):
    """``scale * <a[cols], b[cols]>``: linear base kernels on feature subsets, with explicit features in tests."""

    temporaries_per_entry = 0

    def __init__(self, cols, scale=1.0):
        self.cols = cols
        self.scale = scale

    def compute(self, A, B):
        return self.scale * (A[:, self.cols] @ B[:, self.cols].T)

    def compute_diag(self, A):
        return self.scale * np.einsum("ij,ij->i", A[:, self.cols], A[:, self.cols])

    def feature_map(self, A):
        return math.sqrt(self.scale) * A[:, self.cols]


IMPLICIT_LINEAR = Polynomial(degree=1, gamma=1.0, coef0=0.0)  # the linear kernel without explicit features


# -- problems ---------------------------------------------------------------------------------------------------
def make_problem(seed, n=9, d=5, p=4, n_pool=13, sizes=None, empty=()):
    """Training pairs, and candidate sets drawn from a shared pool (candidates in several sets, unequal sizes)."""
    rng = np.random.default_rng(seed)
    X, Y = rng.normal(size=(n, d)), rng.normal(size=(n, p))
    pool_X, pool_Y = rng.normal(size=(n_pool, d)), rng.normal(size=(n_pool, p))
    sizes = sizes if sizes is not None else rng.integers(1, 7, size=n)
    indices = [np.sort(rng.choice(n_pool, size=0 if i in empty else int(sizes[i]), replace=False))
               for i in range(n)]
    return X, Y, pool_X, pool_Y, indices


def transform_features(train, *others, center, normalize):
    """The estimator's centering/normalization, on explicit features (fitted on ``train``)."""
    mean = train.mean(axis=0) if center else np.zeros(train.shape[1])

    def apply(F):
        F = F - mean
        if normalize:
            norms = np.linalg.norm(F, axis=1)
            F = F / np.where(norms > 0, norms, 1.0)[:, None]
        return F

    return [apply(train)] + [apply(o) for o in others]


def objective4_solution(phi_S, psi_S, phi_C, psi_C, indices, alpha):
    """``W`` minimizing objective (4) literally: sum_i 1/n_i sum_j ||W(phi_i - phi_j) - (psi_i - psi_j)||^2.

    Examples with an empty set contribute ``||W phi_i - psi_i||^2`` (the limit the estimator implements).
    Normal equations ``W (sum w d d^T + alpha I) = sum w e d^T`` of the quadratic; solved without an inverse.
    """
    dx, dy = phi_S.shape[1], psi_S.shape[1]
    lhs, rhs = alpha * np.eye(dx), np.zeros((dy, dx))
    for i, idx in enumerate(indices):
        if len(idx) == 0:
            pairs = [(phi_S[i], psi_S[i], 1.0)]
        else:
            pairs = [(phi_S[i] - phi_C[i][j], psi_S[i] - psi_C[i][j], 1.0 / len(idx)) for j in range(len(idx))]
        for dphi, dpsi, w in pairs:
            lhs += w * np.outer(dphi, dphi)
            rhs += w * np.outer(dpsi, dphi)
    return sla.solve(lhs, rhs.T, assume_a="pos").T


def proposition3(phi_S, psi_S, phi_C_sets, psi_C_sets, alpha, phi_test):
    """The paper's Proposition 3 literally: ``h(x) = Psi' (lambda I + Phi'^T Phi')^{-1} Phi'^T phi(x)`` built from
    kernel values with ``V`` (n x l) and ``D_n`` as stated after the proposition (linear kernels)."""
    n_ex = phi_S.shape[0]
    sizes = [len(s) for s in phi_C_sets]
    n = sum(sizes)
    Phi_C = np.concatenate(phi_C_sets).T
    Psi_C = np.concatenate(psi_C_sets).T
    V = np.zeros((n, n_ex))
    d = np.zeros(n)
    start = 0
    for i, size in enumerate(sizes):
        V[start:start + size, i] = 1.0
        d[start:start + size] = 1.0 / math.sqrt(size)
        start += size
    D, D2 = np.diag(d), np.diag(d**2)
    K_S, K_SC, K_C = phi_S @ phi_S.T, phi_S @ Phi_C, Phi_C.T @ Phi_C
    K1 = K_S - K_SC @ D2 @ V - (K_SC @ D2 @ V).T + V.T @ D2 @ K_C @ D2 @ V
    K12 = (K_SC - V.T @ D2 @ K_C) @ (np.eye(n) - D2 @ V @ V.T) @ D
    K2 = D @ (np.eye(n) - V @ V.T @ D2) @ K_C @ (np.eye(n) - D2 @ V @ V.T) @ D
    gram = np.block([[K1, K12], [K12.T, K2]])
    k_S, k_C = phi_S @ phi_test.T, Phi_C.T @ phi_test.T
    k = np.concatenate([k_S - V.T @ D2 @ k_C, D @ (np.eye(n) - V @ V.T @ D2) @ k_C])
    Psi_bar = Psi_C @ D2 @ V  # p x n_ex: set means as columns
    Psi_prime = np.concatenate([psi_S.T - Psi_bar, (Psi_C - Psi_bar @ V.T) @ D], axis=1)
    return (Psi_prime @ sla.solve(alpha * np.eye(n_ex + n) + gram, k, assume_a="pos")).T


def reverse_model(phi_S, psi_S, gamma):
    """``g(y) = Phi_S (gamma I + K_Y)^{-1} k_Y(y)`` (eq. 10) as a function of explicit output features."""
    coef = sla.solve(gamma * np.eye(psi_S.shape[0]) + psi_S @ psi_S.T, phi_S, assume_a="pos")
    return lambda psi: psi @ psi_S.T @ coef


def fit_model(approximation, X, Y, pool_X, pool_Y, indices, **params):
    sets = [pool_Y[idx] for idx in indices]
    inputs = [pool_X[idx] for idx in indices] if approximation == "known" else None
    model = MPIOKR(approximation=approximation, **params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EmptyCandidateSetWarning)
        return model.fit(X, Y, sets, inputs)


# -- Proposition 3: known candidate inputs -------------------------------------------------------------------------
@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("center,normalize", [(False, False), (True, True), (True, False)])
@pytest.mark.parametrize("output_kernel", ["linear", IMPLICIT_LINEAR])
def test_known_inputs_match_objective4(seed, center, normalize, output_kernel):
    X, Y, pool_X, pool_Y, indices = make_problem(seed)
    X_test = np.random.default_rng(50 + seed).normal(size=(4, X.shape[1]))
    alpha = 0.3
    model = fit_model("known", X, Y, pool_X, pool_Y, indices, alpha=alpha, center_input=center,
                      normalize_input=normalize, center_output=center, normalize_output=normalize,
                      output_kernel=output_kernel, decoding="inner")
    phi_S, phi_pool, phi_test = transform_features(X, pool_X, X_test, center=center, normalize=normalize)
    psi_S, psi_pool = transform_features(Y, pool_Y, center=center, normalize=normalize)
    W = objective4_solution(phi_S, psi_S, [phi_pool[i] for i in indices], [psi_pool[i] for i in indices],
                            indices, alpha)
    H = phi_test @ W.T
    if output_kernel == "linear":
        np.testing.assert_allclose(model.predict_features(X_test), H, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(model.decision_function(X_test, pool_Y), H @ psi_pool.T, rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("seed", [0, 3])
def test_proposition3_formula_matches_objective4_and_model(seed):
    X, Y, pool_X, pool_Y, indices = make_problem(seed)
    X_test = np.random.default_rng(7).normal(size=(3, X.shape[1]))
    alpha = 0.7
    H_prop3 = proposition3(X, Y, [pool_X[i] for i in indices], [pool_Y[i] for i in indices], alpha, X_test)
    W = objective4_solution(X, Y, [pool_X[i] for i in indices], [pool_Y[i] for i in indices], indices, alpha)
    np.testing.assert_allclose(H_prop3, X_test @ W.T, rtol=1e-9, atol=1e-10)
    model = fit_model("known", X, Y, pool_X, pool_Y, indices, alpha=alpha, center_input=False,
                      normalize_input=False, center_output=False, normalize_output=False)
    np.testing.assert_allclose(model.predict_features(X_test), H_prop3, rtol=1e-9, atol=1e-10)


def test_objective4_reference_is_the_minimizer():
    """The normal-equation reference against a generic optimizer on objective (4) itself."""
    X, Y, pool_X, pool_Y, indices = make_problem(4, n=6, d=3, p=2, n_pool=8)
    alpha = 0.5
    phi_C, psi_C = [pool_X[i] for i in indices], [pool_Y[i] for i in indices]

    def objective(w):
        W = w.reshape(Y.shape[1], X.shape[1])
        total = alpha * np.sum(W**2)
        for i in range(len(indices)):
            diff = (X[i] - phi_C[i]) @ W.T - (Y[i] - psi_C[i])
            total += np.sum(diff**2) / len(indices[i])
        return total

    result = optimize.minimize(objective, np.zeros(Y.shape[1] * X.shape[1]), method="BFGS",
                               options={"gtol": 1e-10})
    W = objective4_solution(X, Y, phi_C, psi_C, indices, alpha)
    np.testing.assert_allclose(result.x.reshape(W.shape), W, atol=1e-6)


@pytest.mark.parametrize("output_kernel", ["linear", IMPLICIT_LINEAR])
def test_candidates_equal_to_training_examples_are_merged_exactly(output_kernel):
    """The paper's cross-lingual setting (every set = the training outputs, inputs known), plus repeated pool rows:
    merged units give the literal objective-(4) solution on a smaller basis."""
    X, Y, pool_X, pool_Y, _ = make_problem(27, n_pool=4, sizes=np.full(9, 2))
    pool_X = np.concatenate([X, pool_X, pool_X[:2]])
    pool_Y = np.concatenate([Y, pool_Y, pool_Y[:2]])
    rng = np.random.default_rng(1)
    indices = [np.arange(X.shape[0])] * 3 + [rng.choice(len(pool_X), size=6, replace=False) for _ in range(6)]
    model = MPIOKR(alpha=0.4, output_kernel=output_kernel, decoding="inner", center_input=False,
                   normalize_input=False, center_output=False, normalize_output=False)
    model.fit(X, Y, CandidateSets(pool_Y, indices), pool_X)
    assert model.input_.basis.n_basis <= X.shape[0] + 4
    W = objective4_solution(X, Y, [pool_X[i] for i in indices], [pool_Y[i] for i in indices], indices, 0.4)
    X_test = rng.normal(size=(3, X.shape[1]))
    np.testing.assert_allclose(model.decision_function(X_test, pool_Y), X_test @ W.T @ pool_Y.T, rtol=1e-9,
                               atol=1e-10)


@pytest.mark.parametrize("output_kernel", ["linear", IMPLICIT_LINEAR])
@pytest.mark.parametrize("decoding", ["inner", "distance"])
def test_training_outputs_as_every_set_equal_centered_iokr_with_half_alpha(output_kernel, decoding):
    """Cross-lingual setting: C_i = all training examples for every i. With features centered on the training mean
    (the estimator's default input/output centering), Phi' Phi'^T = 2 Phi Phi^T and Psi' Phi'^T = 2 Psi Phi^T, so
    MP-IOKR is exactly IOKR with alpha / 2 (without that centering they differ by the intercept that objective (4)
    leaves free)."""
    X, Y, _, _, _ = make_problem(28)
    n = X.shape[0]
    common = dict(normalize_input=False, normalize_output=False, output_kernel=output_kernel, decoding=decoding)
    mp = MPIOKR(alpha=0.8, **common).fit(X, Y, CandidateSets.shared(Y, n), X)
    iokr = IOKR(alpha=0.4, **common).fit(X, Y)
    X_test = np.random.default_rng(10).normal(size=(4, X.shape[1]))
    C = np.random.default_rng(11).normal(size=(6, Y.shape[1]))
    np.testing.assert_allclose(mp.decision_function(X_test, C), iokr.decision_function(X_test, C), rtol=1e-9,
                               atol=1e-10)


def test_shared_candidate_sets_object_equals_list_of_arrays():
    X, Y, pool_X, pool_Y, indices = make_problem(5)
    listed = fit_model("known", X, Y, pool_X, pool_Y, indices, alpha=0.2)
    pooled = MPIOKR(alpha=0.2).fit(X, Y, CandidateSets(pool_Y, indices), pool_X)
    X_test = np.random.default_rng(1).normal(size=(3, X.shape[1]))
    np.testing.assert_allclose(pooled.predict_features(X_test), listed.predict_features(X_test), rtol=1e-10,
                               atol=1e-12)


# -- Proposition 4: approximated inputs, single kernel -----------------------------------------------------------------
@pytest.mark.parametrize("seed", [0, 2])
@pytest.mark.parametrize("center,normalize", [(False, False), (True, True)])
@pytest.mark.parametrize("output_kernel", ["linear", IMPLICIT_LINEAR])
def test_joint_approximation_matches_primal_with_g(seed, center, normalize, output_kernel):
    X, Y, pool_X, pool_Y, indices = make_problem(seed)
    X_test = np.random.default_rng(60 + seed).normal(size=(4, X.shape[1]))
    alpha, gamma = 0.4, 0.8
    model = fit_model("joint", X, Y, pool_X, pool_Y, indices, alpha=alpha, gamma=gamma, center_input=center,
                      normalize_input=normalize, center_output=center, normalize_output=normalize,
                      output_kernel=output_kernel, decoding="inner")
    phi_S, phi_test = transform_features(X, X_test, center=center, normalize=normalize)
    psi_S, psi_pool = transform_features(Y, pool_Y, center=center, normalize=normalize)
    g = reverse_model(phi_S, psi_S, gamma)
    W = objective4_solution(phi_S, psi_S, [g(psi_pool[i]) for i in indices], [psi_pool[i] for i in indices],
                            indices, alpha)
    H = phi_test @ W.T
    if output_kernel == "linear":
        np.testing.assert_allclose(model.predict_features(X_test), H, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(model.decision_function(X_test, pool_Y), H @ psi_pool.T, rtol=1e-9, atol=1e-10)


def test_joint_approximation_matches_proposition4_formula():
    """Eq. (11) with ``A = [I - M Psi_S^T Psi_bar, M Psi_S^T Psi'_C]`` built literally."""
    X, Y, pool_X, pool_Y, indices = make_problem(8)
    X_test = np.random.default_rng(2).normal(size=(3, X.shape[1]))
    alpha, gamma = 0.25, 1.5
    n_ex = X.shape[0]
    M = sla.solve(gamma * np.eye(n_ex) + Y @ Y.T, np.eye(n_ex), assume_a="pos")
    Psi_bar = np.stack([pool_Y[idx].mean(axis=0) for idx in indices], axis=1)
    Psi_C = np.concatenate([(pool_Y[idx] - pool_Y[idx].mean(axis=0)).T / math.sqrt(len(idx)) for idx in indices],
                           axis=1)
    A = np.concatenate([np.eye(n_ex) - M @ Y @ Psi_bar, M @ Y @ Psi_C], axis=1)
    Psi_prime = np.concatenate([Y.T - Psi_bar, Psi_C], axis=1)
    H = (Psi_prime @ A.T @ sla.solve(alpha * np.eye(n_ex) + X @ X.T @ A @ A.T, X @ X_test.T)).T
    model = fit_model("joint", X, Y, pool_X, pool_Y, indices, alpha=alpha, gamma=gamma, center_input=False,
                      normalize_input=False, center_output=False, normalize_output=False)
    np.testing.assert_allclose(model.predict_features(X_test), H, rtol=1e-9, atol=1e-10)


# -- Proposition 5: separate approximation per base kernel ---------------------------------------------------------
@pytest.mark.parametrize("gammas", [[0.5, 2.0, 0.5], [0.3, 1.0, 3.0], [1.0, 1.0, 1.0]])
@pytest.mark.parametrize("output_kernel", ["linear", IMPLICIT_LINEAR])
@pytest.mark.parametrize("center,normalize", [(False, False), (True, True)])
def test_separate_approximation_matches_primal_with_g(gammas, output_kernel, center, normalize):
    X, Y, pool_X, pool_Y, indices = make_problem(11, d=6)
    X_test = np.random.default_rng(3).normal(size=(4, X.shape[1]))
    bases = [ColumnLinear([0, 1]), ColumnLinear([2, 3, 4], scale=2.0), ColumnLinear([5, 0])]
    weights = [0.5, 0.2, 0.3]
    alpha = 0.35
    model = fit_model("separate", X, Y, pool_X, pool_Y, indices, alpha=alpha, gamma=gammas,
                      input_kernel=WeightedSum(bases, weights), output_kernel=output_kernel, decoding="inner",
                      center_input=center, normalize_input=normalize, center_output=center,
                      normalize_output=normalize)
    # phi(x) = [sqrt(mu_k) phi_k(x)], transformed as a whole; g approximates each block with its own gamma.
    def stacked(A):
        return np.concatenate([math.sqrt(w) * b.feature_map(A) for b, w in zip(bases, weights, strict=True)], axis=1)

    phi_S, phi_test = transform_features(stacked(X), stacked(X_test), center=center, normalize=normalize)
    psi_S, psi_pool = transform_features(Y, pool_Y, center=center, normalize=normalize)
    widths = np.cumsum([0] + [len(b.cols) for b in bases])
    reverse = [reverse_model(phi_S[:, widths[k]:widths[k + 1]], psi_S, gammas[k]) for k in range(len(bases))]
    def g(psi):
        return np.concatenate([r(psi) for r in reverse], axis=1)

    W = objective4_solution(phi_S, psi_S, [g(psi_pool[i]) for i in indices], [psi_pool[i] for i in indices],
                            indices, alpha)
    H = phi_test @ W.T
    np.testing.assert_allclose(model.decision_function(X_test, pool_Y), H @ psi_pool.T, rtol=1e-8, atol=1e-10)
    assert len(model.gamma_groups_) == len(set(gammas))


def test_separate_with_one_gamma_equals_joint():
    X, Y, pool_X, pool_Y, indices = make_problem(12, d=6)
    X_test = np.random.default_rng(4).normal(size=(3, X.shape[1]))
    kernel = WeightedSum([ColumnLinear([0, 1, 2]), ColumnLinear([3, 4, 5])])
    sep = fit_model("separate", X, Y, pool_X, pool_Y, indices, alpha=0.5, gamma=0.7, input_kernel=kernel)
    joint = fit_model("joint", X, Y, pool_X, pool_Y, indices, alpha=0.5, gamma=0.7, input_kernel=kernel)
    np.testing.assert_allclose(sep.predict_features(X_test), joint.predict_features(X_test), rtol=1e-9,
                               atol=1e-11)


@pytest.mark.parametrize("approximation", ["known", "joint", "separate"])
@pytest.mark.parametrize("decoding", ["distance", "inner", "cosine"])
def test_kernelized_outputs_score_like_explicit_features(approximation, decoding):
    X, Y, pool_X, pool_Y, indices = make_problem(29, d=6)
    X_test = np.random.default_rng(12).normal(size=(4, X.shape[1]))
    kernel = WeightedSum([ColumnLinear([0, 1, 2]), ColumnLinear([3, 4, 5])])
    params = dict(alpha=0.3, input_kernel=kernel, decoding=decoding,
                  gamma=[0.5, 2.0] if approximation == "separate" else 0.5)
    explicit = fit_model(approximation, X, Y, pool_X, pool_Y, indices, **params)
    implicit = fit_model(approximation, X, Y, pool_X, pool_Y, indices, output_kernel=IMPLICIT_LINEAR, **params)
    np.testing.assert_allclose(implicit.decision_function(X_test, pool_Y), explicit.decision_function(X_test, pool_Y),
                               rtol=1e-9, atol=1e-10)


# -- the IOKR limit ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("approximation", ["known", "joint", "separate"])
@pytest.mark.parametrize("output_kernel", ["linear", IMPLICIT_LINEAR])
def test_all_sets_empty_equals_iokr(approximation, output_kernel):
    """With every set empty (mean 0, no covariance), objective (4) is IOKR's: same alpha, same transforms."""
    X, Y, pool_X, pool_Y, indices = make_problem(13, empty=set(range(9)))
    X_test = np.random.default_rng(5).normal(size=(4, X.shape[1]))
    kernel = WeightedSum([ColumnLinear([0, 1]), ColumnLinear([2, 3, 4])])
    params = dict(alpha=0.3, input_kernel=kernel, output_kernel=output_kernel)
    model = fit_model(approximation, X, Y, pool_X, pool_Y, indices, gamma=[0.5, 2.0] if approximation ==
                      "separate" else 0.5, **params)
    iokr = IOKR(**params).fit(X, Y)
    for decoding in ("distance", "inner", "cosine"):
        model.set_params(decoding=decoding)
        iokr.set_params(decoding=decoding)
        np.testing.assert_allclose(model.decision_function(X_test, pool_Y), iokr.decision_function(X_test, pool_Y),
                                   rtol=1e-9, atol=1e-10)


def test_some_sets_empty_follow_the_stated_limit():
    X, Y, pool_X, pool_Y, indices = make_problem(14, empty={1, 4})
    X_test = np.random.default_rng(6).normal(size=(3, X.shape[1]))
    sets = [pool_Y[idx] for idx in indices]
    with pytest.warns(EmptyCandidateSetWarning, match="2 training example"):
        model = MPIOKR(alpha=0.6, center_input=False, normalize_input=False, center_output=False,
                       normalize_output=False).fit(X, Y, sets, [pool_X[idx] for idx in indices])
    W = objective4_solution(X, Y, [pool_X[i] for i in indices], [pool_Y[i] for i in indices], indices, 0.6)
    np.testing.assert_allclose(model.predict_features(X_test), X_test @ W.T, rtol=1e-9, atol=1e-10)


def test_set_without_its_own_output_is_used_as_given():
    """No set here holds its example's own output (pool and Y are drawn apart): objective (4) is fitted over the
    listed candidates as given, with no error, no warning and no added ``y_i``."""
    X, Y, pool_X, pool_Y, indices = make_problem(15)
    sets = [pool_Y[idx] for idx in indices]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = MPIOKR(alpha=0.5, center_input=False, normalize_input=False, center_output=False,
                       normalize_output=False).fit(X, Y, sets, [pool_X[idx] for idx in indices])
    W = objective4_solution(X, Y, [pool_X[i] for i in indices], sets, indices, 0.5)
    np.testing.assert_allclose(model.predict_features(X[:3]), X[:3] @ W.T, rtol=1e-9, atol=1e-10)


# -- predictions, subsampling, statistics reuse ----------------------------------------------------------------------
def test_rank_and_predict_use_the_shared_decoding():
    X, Y, pool_X, pool_Y, indices = make_problem(16)
    model = fit_model("joint", X, Y, pool_X, pool_Y, indices, alpha=0.5)
    sets = [pool_Y[:5], pool_Y[3:9]]
    rankings = model.rank(X[:2], sets)
    best = model.predict(X[:2], sets)
    for q, ranking in enumerate(rankings):
        scores = model.decision_function(X[q:q + 1], sets[q])[0]
        np.testing.assert_allclose(ranking.scores, np.sort(scores)[::-1], rtol=1e-12)
        np.testing.assert_array_equal(best[q], sets[q][np.argmax(scores)])


@pytest.mark.parametrize("approximation", ["known", "joint"])
def test_candidate_fraction_is_seeded_and_equals_fitting_the_subsample(approximation):
    X, Y, pool_X, pool_Y, indices = make_problem(17, sizes=np.full(9, 6), n_pool=20)
    sets = CandidateSets(pool_Y, indices)
    inputs = pool_X if approximation == "known" else None
    model = MPIOKR(alpha=0.5, approximation=approximation, candidate_fraction=0.4, random_state=3)
    model.fit(X, Y, sets, inputs)
    again = clone(model).fit(X, Y, sets, inputs)
    kept = subsample_sets(sets, 0.4, 3)
    assert [len(i) for i in kept.indices] == [math.ceil(0.4 * 6)] * 9
    direct = MPIOKR(alpha=0.5, approximation=approximation).fit(X, Y, kept, inputs)
    X_test = X[:3] + 0.1
    np.testing.assert_array_equal(model.predict_features(X_test), again.predict_features(X_test))
    np.testing.assert_allclose(model.predict_features(X_test), direct.predict_features(X_test), rtol=1e-12,
                               atol=1e-14)
    assert model.n_candidates_used_ == 9 * math.ceil(0.4 * 6)


@pytest.mark.parametrize("output_kernel", ["linear", IMPLICIT_LINEAR])
def test_candidate_stats_are_reused_across_alpha_and_gamma(output_kernel):
    X, Y, pool_X, pool_Y, indices = make_problem(18)
    sets = CandidateSets(pool_Y, indices)
    first = MPIOKR(alpha=0.5, gamma=1.0, approximation="joint", output_kernel=output_kernel).fit(X, Y, sets)
    reused = MPIOKR(alpha=0.1, gamma=3.0, approximation="joint", output_kernel=output_kernel).fit(
        X, Y, sets, candidate_stats=first.candidate_stats_)
    fresh = MPIOKR(alpha=0.1, gamma=3.0, approximation="joint", output_kernel=output_kernel).fit(X, Y, sets)
    np.testing.assert_allclose(reused.decision_function(X[:3], pool_Y), fresh.decision_function(X[:3], pool_Y),
                               rtol=1e-12, atol=1e-13)
    with pytest.raises(ValueError, match="candidate_stats"):
        MPIOKR(approximation="joint", normalize_output=False).fit(X, Y, sets,
                                                                    candidate_stats=first.candidate_stats_)
    with pytest.raises(ValueError, match="candidate_stats"):
        MPIOKR(approximation="joint", output_kernel=output_kernel).fit(X, Y + 1.0, sets,
                                                                        candidate_stats=first.candidate_stats_)


# -- streamed statistics ---------------------------------------------------------------------------------------------
def naive_statistics(pool, indices, represent):
    means, within = [], 0.0
    for idx in indices:
        if len(idx) == 0:
            means.append(np.zeros(represent(pool[:1]).shape[1]))
            continue
        R = represent(pool[idx]).astype(np.float64)
        mean = R.mean(axis=0)
        means.append(mean)
        within = within + (R - mean).T @ (R - mean) / len(idx)
    return np.array(means), within


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("working_memory", [None, 0.002])
def test_streamed_statistics_match_naive(dtype, working_memory):
    rng = np.random.default_rng(19)
    pool = rng.normal(size=(40, 6)).astype(dtype)
    indices = [rng.choice(40, size=s, replace=False) for s in (3, 7, 1, 12, 5)] + [np.array([4, 4, 9])]
    indices.append(np.zeros(0, dtype=int))
    def represent(block):  # any row-wise map; an offset makes means non-zero
        return np.tanh(block) + 1.0

    layout = set_layout(CandidateSets(pool, indices))
    stats = stream_statistics(layout, represent, 6, working_memory=working_memory, bytes_per_row=8 * 6 * 4)
    means, within = naive_statistics(pool, indices, represent)
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(stats.means, means, **tol)
    np.testing.assert_allclose(stats.within_cov, within, **tol)
    np.testing.assert_array_equal(layout.used_rows, np.unique(np.concatenate(indices)))


def test_streamed_statistics_read_packed_pools_in_blocks():
    rng = np.random.default_rng(20)
    bits = (rng.random((300, 37)) < 0.2).astype(np.uint8)
    packed = PackedBinaryFeatures.from_dense(bits)
    indices = [rng.choice(300, size=s, replace=False) for s in rng.integers(5, 60, size=12)]
    layout = set_layout(CandidateSets(packed, indices))
    stats = stream_statistics(layout, lambda b: b, 37, working_memory=0.01)
    means, within = naive_statistics(bits.astype(np.float64), indices, lambda b: b)
    np.testing.assert_allclose(stats.means, means, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(stats.within_cov, within, rtol=1e-6, atol=1e-5)


def test_packed_fingerprint_candidates_fit_like_dense():
    rng = np.random.default_rng(21)
    Y = (rng.random((10, 24)) < 0.3).astype(np.float64)
    pool = (rng.random((50, 24)) < 0.3).astype(np.uint8)
    X = rng.normal(size=(10, 4))
    indices = [rng.choice(50, size=s, replace=False) for s in rng.integers(2, 12, size=10)]
    packed = MPIOKR(alpha=0.3, approximation="joint").fit(X, Y, CandidateSets(PackedBinaryFeatures.from_dense(pool),
                                                                               indices))
    dense = MPIOKR(alpha=0.3, approximation="joint").fit(X, Y, CandidateSets(pool.astype(np.float64), indices))
    np.testing.assert_allclose(packed.predict_features(X[:3]), dense.predict_features(X[:3]), rtol=1e-5,
                               atol=1e-6)


@pytest.mark.parametrize("approximation", ["known", "joint"])
def test_float32_data_match_float64(approximation):
    X, Y, pool_X, pool_Y, indices = make_problem(24)
    X_test = np.random.default_rng(8).normal(size=(3, X.shape[1]))
    f64 = fit_model(approximation, X, Y, pool_X, pool_Y, indices, alpha=0.5)
    f32 = fit_model(approximation, *(a.astype(np.float32) for a in (X, Y, pool_X, pool_Y)), indices, alpha=0.5)
    np.testing.assert_allclose(f32.predict_features(X_test.astype(np.float32)), f64.predict_features(X_test),
                               rtol=1e-4, atol=1e-5)


def test_precomputed_input_gram_equals_linear_features_for_approximations():
    X, Y, pool_X, pool_Y, indices = make_problem(25)
    X_test = np.random.default_rng(9).normal(size=(3, X.shape[1]))
    features = fit_model("joint", X, Y, pool_X, pool_Y, indices, alpha=0.5)
    gram = fit_model("joint", X @ X.T, Y, pool_X, pool_Y, indices, alpha=0.5, input_kernel="precomputed")
    np.testing.assert_allclose(gram.predict_features(X_test @ X.T, input_diag=np.sum(X_test**2, axis=1)),
                               features.predict_features(X_test), rtol=1e-9, atol=1e-11)
    with pytest.raises(ValueError, match="Precomputed"):
        fit_model("known", X @ X.T, Y, pool_X, pool_Y, indices, input_kernel="precomputed")


def test_sklearn_clone_and_params_round_trip():
    model = MPIOKR(alpha=0.2, approximation="separate", gamma=[0.1, 1.0], candidate_fraction=0.5, random_state=1)
    params = clone(model).get_params()
    assert params["gamma"] == [0.1, 1.0] and params["approximation"] == "separate"
    assert params["candidate_fraction"] == 0.5 and params["random_state"] == 1


def test_kernel_output_model_has_no_features():
    X, Y, pool_X, pool_Y, indices = make_problem(26)
    model = fit_model("joint", X, Y, pool_X, pool_Y, indices, output_kernel=IMPLICIT_LINEAR)
    with pytest.raises(ValueError, match="explicit features"):
        model.predict_features(X[:2])


# -- bad input --------------------------------------------------------------------------------------------------------
def test_bad_input_raises_clear_errors():
    X, Y, pool_X, pool_Y, indices = make_problem(22)
    sets = [pool_Y[idx] for idx in indices]
    inputs = [pool_X[idx] for idx in indices]
    with pytest.raises(ValueError, match="outside"):
        MPIOKR().fit(X, Y, CandidateSets(pool_Y, [idx + 100 for idx in indices]), pool_X)
    with pytest.raises(ValueError, match="one set per training example"):
        MPIOKR().fit(X, Y, sets[:-1], inputs[:-1])
    with pytest.raises(ValueError, match="one set per training example"):
        MPIOKR(approximation="joint").fit(X, Y, [])
    with pytest.raises(ValueError, match=r"'candidate_inputs\[0\]' has"):
        MPIOKR().fit(X, Y, sets, [inp[:-1] if i == 0 else inp for i, inp in enumerate(inputs)])
    with pytest.raises(ValueError, match="one row per pool candidate"):
        MPIOKR().fit(X, Y, CandidateSets(pool_Y, indices), pool_X[:-1])
    with pytest.raises(ValueError, match="needs 'candidate_inputs'"):
        MPIOKR().fit(X, Y, sets)
    with pytest.raises(ValueError, match="only used with approximation='known'"):
        MPIOKR(approximation="joint").fit(X, Y, sets, inputs)
    for gamma in (0.0, -1.0, [1.0, 0.0]):
        with pytest.raises(ValueError, match="'gamma' parameter of MPIOKR must be a float in the range"):
            MPIOKR(approximation="joint", gamma=gamma).fit(X, Y, sets)
    with pytest.raises(ValueError, match="one value per base kernel"):
        MPIOKR(approximation="separate", gamma=[1.0, 2.0, 3.0],
               input_kernel=WeightedSum([ColumnLinear([0]), ColumnLinear([1])])).fit(X, Y, sets)
    with pytest.raises(ValueError, match="WeightedSum"):
        MPIOKR(approximation="separate").fit(X, Y, sets)
    with pytest.raises(ValueError, match="'approximation' parameter"):
        MPIOKR(approximation="exact").fit(X, Y, sets, inputs)
    with pytest.raises(ValueError, match="'candidate_fraction' parameter"):
        MPIOKR(candidate_fraction=0.0).fit(X, Y, sets, inputs)
    with pytest.raises(ValueError, match=r"'candidate_sets\[0\]' must have shape"):
        MPIOKR(approximation="joint").fit(X, Y, [s[:, :2] for s in sets])
    with pytest.raises(ValueError, match="'alpha' parameter"):
        MPIOKR(alpha=0).fit(X, Y, sets, inputs)


def test_fit_does_not_mutate_inputs():
    X, Y, pool_X, pool_Y, indices = make_problem(23)
    copies = [a.copy() for a in (X, Y, pool_X, pool_Y)]
    fit_model("known", X, Y, pool_X, pool_Y, indices, alpha=0.5)
    fit_model("joint", X, Y, pool_X, pool_Y, indices, alpha=0.5)
    for a, b in zip((X, Y, pool_X, pool_Y), copies, strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("sizes", [(3,), (4, 2), (3, 5, 1)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_block_diagonal_product_matches_dense(sizes, dtype):
    """The separate approximation's block-row product ``D_K @ B`` equals the dense block-diagonal product."""
    rng = np.random.default_rng(0)
    blocks = [rng.normal(size=(s, s)).astype(dtype) for s in sizes]
    other = rng.normal(size=(sum(sizes), 7)).astype(dtype)
    got = _BlockDiagonal(blocks) @ other
    assert got.dtype == dtype
    np.testing.assert_allclose(got, block_diag(*blocks) @ other, rtol=1e-6 if dtype == np.float32 else 1e-13,
                               atol=1e-6 if dtype == np.float32 else 1e-13)

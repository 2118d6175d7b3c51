"""Properties of the pairwise (Kronecker) estimators KronRLS, ConditionalRankRLS and TwoStepRLS.

Invariants: finite scores, equivariance under permutations of the training objects of either domain (with the
labels permuted alike) and of the test objects, pair-mode scores equal to the full score matrix (chunked under a
shrunken budget), float32 ~ float64, precomputed Grams equal to kernel objects, no mutation.
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from prop_helpers import DEGENERACIES, assert_finite, make_matrix, scale, share, unchanged

from iokr import ConditionalRankRLS, KronRLS, TwoStepRLS, config_context
from iokr.kernels import Gaussian, Linear

MODELS = {
    "kron": lambda a, k1, k2: KronRLS(alpha=a, kernel1=k1, kernel2=k2),
    "conditional_rank": lambda a, k1, k2: ConditionalRankRLS(alpha=a, kernel1=k1, kernel2=k2),
    "two_step": lambda a, k1, k2: TwoStepRLS(alpha1=a, alpha2=2 * a, kernel1=k1, kernel2=k2),
}


@st.composite
def pairwise_problems(draw):
    return {"n1": draw(st.integers(1, 6)), "n2": draw(st.integers(1, 6)), "d": draw(st.integers(1, 3)),
            "dtype": draw(st.sampled_from([np.float64, np.float32])),
            "degeneracy": draw(st.sampled_from(DEGENERACIES)), "seed": draw(st.integers(0, 2**16)),
            "alpha": draw(st.sampled_from([0.1, 1.0, 10.0]))}


def _data(spec):
    rng = np.random.default_rng(spec["seed"])
    X1 = make_matrix(rng, spec["n1"], spec["d"], spec["degeneracy"], dtype=spec["dtype"])
    X2 = make_matrix(rng, spec["n2"], spec["d"] + 1, "none", dtype=spec["dtype"])
    Y = rng.normal(size=(spec["n1"], spec["n2"]))
    T1 = make_matrix(rng, 3, spec["d"], "none", dtype=spec["dtype"])
    T2 = make_matrix(rng, 2, spec["d"] + 1, "none", dtype=spec["dtype"])
    return rng, X1, X2, Y, T1, T2


def _tol(magnitude, dtype):
    return (2e-3 if np.dtype(dtype) == np.float32 else 1e-9) * magnitude


@pytest.mark.parametrize("name", sorted(MODELS))
@share(0.8)
@given(spec=pairwise_problems(), gaussian=st.booleans())
def test_pairwise_properties(name, spec, gaussian):
    rng, X1, X2, Y, T1, T2 = _data(spec)
    k1 = Gaussian(0.5) if gaussian else Linear()
    make = MODELS[name]
    with unchanged(X1, X2, Y, T1, T2):
        model = make(spec["alpha"], k1, Linear()).fit(X1, X2, Y)
        P = model.predict(T1, T2)
    assert P.shape == (T1.shape[0], T2.shape[0])
    assert_finite(P, "scores")
    tol = _tol(scale(P, Y), spec["dtype"])

    # training objects of both domains permuted (labels alike): the same model
    p1, p2 = rng.permutation(X1.shape[0]), rng.permutation(X2.shape[0])
    again = make(spec["alpha"], k1, Linear()).fit(X1[p1], X2[p2], Y[np.ix_(p1, p2)]).predict(T1, T2)
    if name == "conditional_rank":  # scores are defined up to a shift per conditioning (row) object
        again, P_cmp = again - again.mean(axis=1, keepdims=True), P - P.mean(axis=1, keepdims=True)
    else:
        P_cmp = P
    np.testing.assert_allclose(again, P_cmp, rtol=0, atol=tol)

    # test objects permuted: scores permute alike
    q1, q2 = rng.permutation(T1.shape[0]), rng.permutation(T2.shape[0])
    np.testing.assert_allclose(model.predict(T1[q1], T2[q2]), P[np.ix_(q1, q2)], rtol=0, atol=tol)

    # precomputed Grams give the same model as kernel objects
    # (in float64: a float32 Gaussian Gram is symmetric only to float32 rounding, which the float64 check refuses)
    X1d, X2d, T1d, T2d = (a.astype(np.float64) for a in (X1, X2, T1, T2))
    pre = make(spec["alpha"], "precomputed", "precomputed").fit(k1(X1d), Linear()(X2d), Y)
    P_pre = pre.predict(k1(T1d, X1d), Linear()(T2d, X2d))
    np.testing.assert_allclose(P_pre, P, rtol=0, atol=tol)

    if spec["dtype"] == np.float32:
        P64 = make(spec["alpha"], k1, Linear()).fit(X1.astype(np.float64), X2.astype(np.float64), Y).predict(
            T1.astype(np.float64), T2.astype(np.float64))
        np.testing.assert_allclose(P, P64, rtol=0, atol=_tol(scale(P64, Y), np.float32))


@pytest.mark.parametrize("name", ["kron", "conditional_rank"])
@share(0.8)
@given(spec=pairwise_problems(), n_pairs=st.integers(0, 12), symmetry=st.sampled_from([None, "symmetric",
                                                                                       "reciprocal"]))
def test_pair_mode_equals_full_matrix_under_a_tiny_budget(name, spec, n_pairs, symmetry):
    rng, X1, _, _, T1, _ = _data(spec)
    n1 = X1.shape[0]
    Y_sq = rng.normal(size=(n1, n1))
    model_class = KronRLS if name == "kron" else ConditionalRankRLS
    model = model_class(alpha=spec["alpha"], kernel1=Linear(), kernel2=Linear(), symmetry=symmetry)
    if symmetry is None:
        model.fit(X1, X1, Y_sq)
    else:
        model.fit(X1, None, Y_sq)
    full = model.predict(T1, T1)
    assert_finite(full, "scores")
    rows, cols = rng.integers(0, T1.shape[0], size=n_pairs), rng.integers(0, T1.shape[0], size=n_pairs)
    # 16 bytes per training row per pair: a budget of a few pairs splits the pairs into many chunks
    with config_context(working_memory=48 * n1 / 2**20):
        pairs = model.predict(T1, T1, pairs=(rows, cols))
    np.testing.assert_allclose(pairs, full[rows, cols], rtol=0, atol=_tol(scale(full), spec["dtype"]))


@share(0.8)
@given(spec=pairwise_problems(), symmetry=st.sampled_from(["symmetric", "reciprocal"]))
def test_kron_symmetric_models_are_symmetric(spec, symmetry):
    rng, X1, _, _, T1, _ = _data(spec)
    Y = rng.normal(size=(X1.shape[0], X1.shape[0]))
    P = KronRLS(alpha=spec["alpha"], kernel1=Gaussian(0.5), symmetry=symmetry).fit(X1, None, Y).predict(T1)
    sign = 1.0 if symmetry == "symmetric" else -1.0
    np.testing.assert_allclose(P, sign * P.T, rtol=0, atol=_tol(scale(P), spec["dtype"]))

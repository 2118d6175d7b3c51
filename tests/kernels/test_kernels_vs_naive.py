"""Every kernel against a naive per-pair double loop; diagonals, chunking, dtypes, PSD-ness and bad input."""

import numpy as np
import pytest
from reference import (
    gaussian_pair,
    gaussian_tanimoto_pair,
    linear_pair,
    naive_gram,
    naive_normalized,
    polynomial_pair,
    tanimoto_inner_pair,
    tanimoto_minmax_pair,
)
from sklearn.base import clone

from iokr import config_context
from iokr.kernels import (
    Gaussian,
    GaussianTanimoto,
    Kernel,
    Linear,
    Normalized,
    Polynomial,
    Precomputed,
    Tanimoto,
    WeightedSum,
    make_kernel,
)


def _weighted(pairs_weights):
    def pair(a, b):
        return sum(w * p(a, b) for p, w in pairs_weights)

    return pair


def _normalized_pair(pair):
    def normalized(a, b):
        return naive_normalized(np.array([[pair(a, b)]]), [pair(a, a)], [pair(b, b)])[0, 0]

    return normalized


# (id, kernel factory, naive pair function, data kind): "real" = signed reals, "counts" = non-negative integers
# with all-zero rows, "binary" = 0/1 fingerprints with all-zero rows.
CASES = [
    ("linear", Linear, linear_pair, "real"),
    ("poly3", lambda: Polynomial(degree=3, gamma=0.5, coef0=1.0), lambda a, b: polynomial_pair(a, b, 3, 0.5, 1.0),
     "real"),
    ("poly2-nocoef", lambda: Polynomial(degree=2, gamma=2.0, coef0=0.0),
     lambda a, b: polynomial_pair(a, b, 2, 2.0, 0.0), "real"),
    ("gaussian", lambda: Gaussian(gamma=0.3), lambda a, b: gaussian_pair(a, b, 0.3), "real"),
    ("tanimoto-binary", Tanimoto, tanimoto_inner_pair, "binary"),
    ("tanimoto-real", Tanimoto, tanimoto_inner_pair, "real"),
    ("tanimoto-counts", Tanimoto, tanimoto_inner_pair, "counts"),
    ("minmax-counts", lambda: Tanimoto(form="minmax"), tanimoto_minmax_pair, "counts"),
    ("minmax-binary", lambda: Tanimoto(form="minmax"), tanimoto_minmax_pair, "binary"),
    ("gauss-tanimoto", lambda: GaussianTanimoto(gamma=0.7), lambda a, b: gaussian_tanimoto_pair(a, b, 0.7),
     "binary"),
    ("gauss-minmax", lambda: GaussianTanimoto(gamma=1.5, form="minmax"),
     lambda a, b: gaussian_tanimoto_pair(a, b, 1.5, "minmax"), "counts"),
    ("normalized-linear", lambda: Normalized(Linear()), _normalized_pair(linear_pair), "counts"),
    ("normalized-poly", lambda: Normalized(Polynomial(degree=2, coef0=0.5)),
     _normalized_pair(lambda a, b: polynomial_pair(a, b, 2, 1.0, 0.5)), "real"),
    ("normalized-tanimoto", lambda: Normalized(Tanimoto()), _normalized_pair(tanimoto_inner_pair), "binary"),
    ("sum-weighted", lambda: WeightedSum([Gaussian(0.2), Linear(), Tanimoto()], [0.3, 2.0, 1.0]),
     _weighted([(lambda a, b: gaussian_pair(a, b, 0.2), 0.3), (linear_pair, 2.0), (tanimoto_inner_pair, 1.0)]),
     "counts"),
    ("sum-uniform", lambda: WeightedSum([Gaussian(1.0), Polynomial(2)]),
     _weighted([(gaussian_pair, 0.5), (polynomial_pair, 0.5)]), "real"),
]
IDS = [c[0] for c in CASES]


def _data(kind, n, d, seed, dtype=np.float64):
    rng = np.random.default_rng(seed)
    if kind == "real":
        X = rng.normal(size=(n, d))
    elif kind == "counts":
        X = rng.integers(0, 4, size=(n, d)).astype(float)
        X[::4] = 0.0  # all-zero rows: T(0, 0) = 1, T(0, b) = 0
    else:
        X = (rng.random((n, d)) < 0.35).astype(float)
        X[::4] = 0.0
    return X.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name, factory, pair, kind", CASES, ids=IDS)
def test_block_and_diag_match_naive_loop(name, factory, pair, kind, dtype):
    A, B = _data(kind, 9, 6, 1, dtype), _data(kind, 7, 6, 2, dtype)
    A_copy, B_copy = A.copy(), B.copy()
    kernel = factory()
    expected = naive_gram(pair, A, B)
    K = kernel(A, B)
    assert K.shape == (9, 7) and K.dtype == dtype
    rtol, atol = (1e-12, 1e-12) if dtype == np.float64 else (2e-5, 2e-5)
    np.testing.assert_allclose(K, expected, rtol=rtol, atol=atol * max(1.0, np.abs(expected).max()))
    # B defaults to A; the diagonal is computed without the block and equals its diagonal.
    np.testing.assert_allclose(kernel(A), naive_gram(pair, A), rtol=rtol, atol=atol * np.abs(expected).max())
    diag = kernel.diag(A)
    assert diag.shape == (9,)
    np.testing.assert_allclose(diag, np.diag(naive_gram(pair, A)), rtol=rtol, atol=atol)
    np.testing.assert_allclose(diag, np.diag(kernel(A)), rtol=rtol, atol=atol)
    np.testing.assert_array_equal(A, A_copy)
    np.testing.assert_array_equal(B, B_copy)


def test_tanimoto_zero_rows_and_binary_jaccard():
    a = np.array([[0, 0, 0], [1, 1, 0], [0, 0, 0]], dtype=float)
    b = np.array([[0, 0, 0], [1, 0, 1]], dtype=float)
    for form in ("inner", "minmax"):
        K = Tanimoto(form=form)(a, b)
        np.testing.assert_array_equal(K, [[1.0, 0.0], [0.0, 1.0 / 3.0], [1.0, 0.0]])


def test_mixed_dtypes_give_float64():
    A = _data("real", 5, 3, 0, np.float32)
    B = _data("real", 4, 3, 1, np.float64)
    assert Gaussian()(A, B).dtype == np.float64
    assert Linear()(A.astype(np.int64)).dtype == np.float64


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name, factory, pair, kind", CASES, ids=IDS)
def test_chunked_equals_unchunked(name, factory, pair, kind, dtype):
    A, B = _data(kind, 37, 5, 3, dtype), _data(kind, 11, 5, 4, dtype)
    kernel = factory()
    full = kernel(A, B)
    bytes_per_row = 11 * np.dtype(dtype).itemsize * (1 + kernel.temporaries_per_entry)
    budget_mib = 3 * bytes_per_row / 2**20  # three rows per chunk
    with config_context(working_memory=budget_mib):
        chunked_global = kernel(A, B)
    chunked_call = kernel(A, B, working_memory=2 * bytes_per_row / 2**20)
    # Elementwise kernels are bit-identical; BLAS-based ones may round the last bit differently when the number of
    # rows changes (OpenBLAS picks other micro-kernels for small row counts), so they get a few-ulp tolerance.
    if name.startswith("minmax"):
        np.testing.assert_array_equal(chunked_global, full)
        np.testing.assert_array_equal(chunked_call, full)
    else:
        eps = np.finfo(dtype).eps
        scale = np.abs(full).max()
        np.testing.assert_allclose(chunked_global, full, rtol=64 * eps, atol=64 * eps * scale)
        np.testing.assert_allclose(chunked_call, full, rtol=64 * eps, atol=64 * eps * scale)
    with pytest.raises(MemoryError, match="working-memory budget"):
        kernel(A, B, working_memory=bytes_per_row / 2 / 2**20)


@pytest.mark.parametrize("name, factory, pair, kind", CASES, ids=IDS)
def test_gram_is_positive_semidefinite(name, factory, pair, kind):
    X = _data(kind, 30, 4, 5)
    K = factory()(X)
    np.testing.assert_allclose(K, K.T, rtol=0, atol=1e-13 * np.abs(K).max())
    eigenvalues = np.linalg.eigvalsh(K)
    assert eigenvalues.min() >= -1e-10 * max(1.0, eigenvalues.max())


def test_precomputed_kernel_gathers_gram_entries(rng):
    X = rng.normal(size=(8, 3))
    G = Gaussian(0.5)(X)
    kernel = Precomputed(G)
    rows, cols = np.array([[3], [0], [7]]), np.array([1, 3])
    np.testing.assert_array_equal(kernel(rows, cols), G[np.ix_([3, 0, 7], [1, 3])])
    np.testing.assert_array_equal(kernel(rows), G[np.ix_([3, 0, 7], [3, 0, 7])])
    np.testing.assert_array_equal(kernel.diag(rows), np.diag(G)[[3, 0, 7]])
    weighted = WeightedSum([Precomputed(G), Precomputed(np.eye(8))], [2.0, 1.0])
    block = np.ix_([3, 0, 7], [1, 3])
    np.testing.assert_allclose(weighted(rows, cols), 2.0 * G[block] + np.eye(8)[block], rtol=1e-15)
    np.testing.assert_allclose(weighted.diag(rows), 2.0 * np.diag(G)[[3, 0, 7]] + 1.0)
    with pytest.raises(ValueError, match=r"'A' indices must lie in \[0, 8\)"):
        kernel(np.array([[8]]))
    with pytest.raises(ValueError, match="'B' must be integer indices"):
        kernel(rows, np.array([[0.5]]))
    with pytest.raises(ValueError, match="'gram' must be symmetric"):
        Precomputed(G + np.triu(np.ones((8, 8)), 1))(rows)


def test_make_kernel_names_and_objects():
    assert isinstance(make_kernel("linear"), Linear)
    assert isinstance(make_kernel("rbf"), Gaussian)
    assert isinstance(make_kernel("gaussian_tanimoto"), GaussianTanimoto)
    kernel = Tanimoto()
    assert make_kernel(kernel) is kernel
    assert make_kernel("precomputed") == "precomputed"
    with pytest.raises(ValueError, match=r"Unknown input_kernel 'cosine'.*'gaussian'"):
        make_kernel("cosine", "input_kernel")
    with pytest.raises(TypeError, match="'output_kernel' parameter must be a Kernel object"):
        make_kernel(3.0, "output_kernel")


@pytest.mark.parametrize("factory", [Linear, Gaussian, Tanimoto, lambda: Normalized(Polynomial())])
def test_kernels_reject_bad_input(factory):
    kernel = factory()
    good = np.ones((3, 4))
    for bad_value in (np.nan, np.inf):
        bad = good.copy()
        bad[1, 2] = bad_value
        with pytest.raises(ValueError, match="'A' contains NaN or infinity"):
            kernel(bad, good)
        with pytest.raises(ValueError, match="'B' contains NaN or infinity"):
            kernel(good, bad)
    with pytest.raises(ValueError, match="'A' has 4 features but 'B' has 5"):
        kernel(good, np.ones((2, 5)))
    with pytest.raises(ValueError, match="'A' must be a 2-D array"):
        kernel(np.ones(4))


@pytest.mark.parametrize(
    "kernel, match",
    [
        (Gaussian(gamma=0.0), r"'gamma' parameter of Gaussian must be a float in the range \(0, inf\). Got 0.0"),
        (Gaussian(gamma=-1), "'gamma' parameter of Gaussian"),
        (GaussianTanimoto(gamma=-2.0), "'gamma' parameter of GaussianTanimoto"),
        (Polynomial(degree=0), "'degree' parameter of Polynomial must be an int >= 1. Got 0"),
        (Polynomial(degree=2.5), "'degree' parameter of Polynomial"),
        (Polynomial(gamma=np.nan), "'gamma' parameter of Polynomial"),
        (Tanimoto(form="jaccard"), "'form' parameter of Tanimoto must be one of"),
        (WeightedSum([Linear(), Gaussian()], [1.0]), "'weights' parameter of WeightedSum must hold 2"),
        (WeightedSum([Linear(), Gaussian()], [1.0, -1.0]), "'weights' parameter of WeightedSum"),
        (WeightedSum([]), "'kernels' parameter of WeightedSum must hold at least one kernel"),
    ],
)
def test_kernel_parameter_errors(kernel, match):
    X = np.abs(np.random.default_rng(0).normal(size=(4, 3)))
    with pytest.raises(ValueError, match=match):
        kernel(X)
    with pytest.raises(ValueError, match=match):
        kernel.diag(X)


def test_minmax_rejects_negative_features():
    with pytest.raises(ValueError, match="non-negative features; 'A' has -1"):
        Tanimoto(form="minmax")(np.array([[1.0, -1.0]]))


def test_kernels_are_cloneable_estimators():
    kernel = WeightedSum([Gaussian(0.3), Normalized(Polynomial(3))], [1.0, 2.0])
    copy = clone(kernel)
    assert copy is not kernel and copy.get_params()["kernels"][0].gamma == 0.3
    assert isinstance(kernel, Kernel)


@pytest.mark.parametrize("inner", [Linear(), Gaussian(), Tanimoto(), Polynomial(), Precomputed(np.eye(2))])
def test_wrappers_declare_at_least_the_temporaries_of_what_they_wrap(inner):
    # Chunk sizes are solved from these declarations; a wrapper under-declaring would overrun the budget.
    assert Normalized(inner).temporaries_per_entry >= inner.temporaries_per_entry
    assert WeightedSum([inner, Linear()]).temporaries_per_entry >= 1 + inner.temporaries_per_entry

"""Exact Tanimoto of count fingerprints by float32 BLAS: bit for bit the float64 kernel, and refused where not exact."""

import numpy as np
import pytest

from iokr import IOKR
from iokr.decoding import CandidateSets, CountTanimotoIndex, _count_tanimoto
from iokr.decoding._count_tanimoto import MAX_EXACT_SQUARED_NORM, exact_count_norms
from iokr.kernels import GaussianTanimoto, Tanimoto


def _counts(rng, n, p, high=6, density=0.1):
    return (rng.random((n, p)) < density) * rng.integers(1, high, size=(n, p))


def test_similarities_equal_the_float64_kernel_bit_for_bit():
    rng = np.random.default_rng(0)
    Y = _counts(rng, 37, 300).astype(np.float64)
    Y[3] = 0  # an empty fingerprint: T(0, 0) = 1, T(0, b) = 0
    C = _counts(rng, 50, 300).astype(np.float32)
    C[7] = 0
    index = CountTanimotoIndex.build(Y)
    assert index is not None
    for budget in (None, 0.01):  # one block, and blocks of a few rows
        T = index.similarities(C, working_memory=budget)
        np.testing.assert_array_equal(T, Tanimoto().compute(C, Y))
    assert T[7, 3] == 1.0 and T[7, 0] == 0.0


@pytest.mark.parametrize("case", ["fraction", "negative", "nan", "inf", "large"])
def test_rows_that_are_not_exact_in_float32_are_refused(case):
    rng = np.random.default_rng(1)
    A = _counts(rng, 5, 20).astype(np.float64)
    if case == "fraction":
        A[0, 0] = 0.5
    elif case == "negative":
        A[0, 0] = -1
    elif case == "nan":
        A[0, 0] = np.nan
    elif case == "inf":
        A[0, 0] = np.inf
    else:  # one row whose squared norm reaches 2**24: partial sums could lose integers
        A[0, 0] = np.sqrt(MAX_EXACT_SQUARED_NORM)
    assert exact_count_norms(A) is None
    assert CountTanimotoIndex.build(A) is None
    index = CountTanimotoIndex.build(_counts(rng, 5, 20))
    assert index.similarities(A) is None


def test_the_largest_exact_norm_is_still_exact():
    # two rows of squared norm 2**24 - 1 spread over many features: float64 and the float32 product agree exactly
    p = 4096
    a = np.zeros((1, p))
    a[0, :4095] = 64.0  # 4095 * 64**2 = 2**24 - 4096
    index = CountTanimotoIndex.build(a)
    assert index is not None
    np.testing.assert_array_equal(index.similarities(a.astype(np.float32)), Tanimoto().compute(a, a))


@pytest.mark.parametrize("kernel", [Tanimoto(), GaussianTanimoto(gamma=0.7)])
def test_iokr_on_counts_scores_like_the_general_kernel(kernel):
    """The output side takes the count path for count outputs and gives the general kernel's scores exactly."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(30, 4))
    Y = _counts(rng, 30, 120).astype(np.float64)
    pool = _counts(rng, 200, 120).astype(np.float32)
    model = IOKR(alpha=0.3, input_kernel="gaussian", output_kernel=kernel).fit(X, Y)
    assert isinstance(model.output_.binary, CountTanimotoIndex)
    # the training output Gram through the index equals the general kernel's
    np.testing.assert_array_equal(model.output_.train_gram,
                                  model.output_.kernel_transform.fit_transform(kernel(Y)))
    sets = CandidateSets(pool, [np.arange(0, 200, 3), np.arange(5, 90), np.arange(150, 200)])
    fast = [r.scores for r in model.rank(X[:3], sets)]
    model.output_.binary = None  # brute force: the general float kernel on the same candidates
    slow = [r.scores for r in model.rank(X[:3], sets)]
    for a, b in zip(fast, slow, strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("density", [0.02, 0.3])
def test_sparse_and_dense_inner_products_are_the_same_integers(density, monkeypatch):
    """Sparse rows take the CSR product, dense ones the sgemm: both the exact integers of a float64 product."""
    rng = np.random.default_rng(2)
    Y = _counts(rng, 41, 400, high=9, density=density).astype(np.float64)
    C = _counts(rng, 63, 400, high=9, density=density).astype(np.float32)
    C[5] = 0
    index = CountTanimotoIndex.build(Y)
    exact = C.astype(np.float64) @ Y.T
    for limit in (0.0, 1.0):  # every block dense, every block sparse
        monkeypatch.setattr(_count_tanimoto, "SPARSE_MAX_DENSITY", limit)
        np.testing.assert_array_equal(index.inner_products(C), exact)
        np.testing.assert_array_equal(index.similarities(C), Tanimoto().compute(C, Y))


@pytest.mark.parametrize("share", [0.0, 0.2, 2.0])
def test_frequent_columns_by_sgemm_and_the_rest_by_csr_are_the_same_integers(share, monkeypatch):
    """The sparse product splits columns by how many rows hold them (every column dense, some, none): the exact
    integers of a float64 product whatever the split, -0.0 entries included."""
    rng = np.random.default_rng(3)
    p = 1000
    frequency = np.where(np.arange(p) < 40, 0.6, 0.01)  # a few columns in most rows, most in few: a fingerprint
    Y = ((rng.random((57, p)) < frequency) * rng.integers(1, 12, size=(57, p))).astype(np.float64)
    C = ((rng.random((90, p)) < frequency) * rng.integers(1, 12, size=(90, p))).astype(np.float32)
    C[4] = 0
    C[6, :3] = -0.0
    index = CountTanimotoIndex.build(Y)
    monkeypatch.setattr(_count_tanimoto, "DENSE_COLUMN_SHARE", share)
    exact = C.astype(np.float64) @ Y.T
    for block in (C, np.asfortranarray(C), C.astype(np.float64), C.astype(np.uint8)):
        assert np.count_nonzero(block) <= _count_tanimoto.SPARSE_MAX_DENSITY * block.size  # the sparse branch
        np.testing.assert_array_equal(index.inner_products(block), exact)
    np.testing.assert_array_equal(index.similarities(C), Tanimoto().compute(C, Y))


@pytest.mark.parametrize("case", ["fraction", "negative", "nan", "inf", "large"])
def test_sparse_rows_that_are_not_exact_are_refused_from_their_entries(case):
    """A sparse block is qualified from its nonzero entries: the same refusals as the dense check."""
    rng = np.random.default_rng(4)
    A = _counts(rng, 30, 400, density=0.01).astype(np.float64)
    A[2, 7] = {"fraction": 0.5, "negative": -1, "nan": np.nan, "inf": np.inf,
               "large": np.sqrt(MAX_EXACT_SQUARED_NORM)}[case]
    assert np.count_nonzero(A) <= _count_tanimoto.SPARSE_MAX_DENSITY * A.size  # the sparse branch
    index = CountTanimotoIndex.build(_counts(rng, 5, 400))
    for block in (A, A.astype(np.float32)):
        assert index.similarities(block) is None
    if case == "negative":
        assert index.similarities(A.astype(np.int16)) is None


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.uint8, np.int16])
def test_sparse_blocks_qualify_with_the_norms_of_the_dense_check(dtype):
    rng = np.random.default_rng(5)
    C = _counts(rng, 40, 600, high=30, density=0.02).astype(dtype)
    C[3] = 0
    entries = _count_tanimoto._sparse_entries(C)
    assert entries is not None
    np.testing.assert_array_equal(_count_tanimoto._entry_norms(C, *entries), exact_count_norms(C))
    Y = _counts(rng, 25, 600, high=30, density=0.02).astype(np.float64)
    exact = Tanimoto().compute(C.astype(np.float64), Y)  # (the general kernel would square uint8 counts in uint8)
    np.testing.assert_array_equal(CountTanimotoIndex.build(Y).similarities(C), exact)

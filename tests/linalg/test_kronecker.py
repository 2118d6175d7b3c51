"""Kronecker operators against dense ``np.kron`` references, through one shared mixin."""

import numpy as np
import pytest

from iokr.linalg import (
    EigenPath,
    KroneckerOperator,
    SampledKroneckerOperator,
    SymmetricKroneckerOperator,
    WeightedKroneckerSum,
    block_cg,
    kron_leverages,
    kron_ridge_symmetric_dual,
)
from iokr.linalg.developer import commutation_matrix


def _psd(rng, n, rank=None):
    F = rng.normal(size=(n, rank or n + 2))
    return F @ F.T / F.shape[1]


class OperatorMixin:
    """Each subclass builds ``(operator, dense)``; every structured method is checked against ``dense``."""

    rtol = 1e-12

    def make(self, rng):  # pragma: no cover - abstract
        raise NotImplementedError

    @pytest.mark.parametrize("k", [1, 3])
    def test_matmat_matches_dense(self, rng, k):
        op, dense = self.make(rng)
        V = rng.normal(size=(op.shape[1], k))
        np.testing.assert_allclose(op.matmat(V), dense @ V, rtol=self.rtol, atol=1e-12 * np.abs(dense).max())

    def test_matvec_and_matmul(self, rng):
        op, dense = self.make(rng)
        v = rng.normal(size=op.shape[1])
        np.testing.assert_allclose(op @ v, dense @ v, rtol=self.rtol, atol=1e-12 * np.abs(dense).max())
        assert (op @ v).shape == (op.shape[0],)

    def test_toarray_and_linear_operator(self, rng):
        op, dense = self.make(rng)
        np.testing.assert_allclose(op.toarray(), dense, rtol=self.rtol, atol=1e-13)
        v = rng.normal(size=op.shape[1])
        np.testing.assert_allclose(op.aslinearoperator() @ v, dense @ v, rtol=1e-12, atol=1e-12)

    def test_wrong_shape_raises(self, rng):
        op, _ = self.make(rng)
        with pytest.raises(ValueError, match="must have shape"):
            op.matmat(np.ones((op.shape[1] + 1, 2)))


class TestKroneckerRectangular(OperatorMixin):
    def make(self, rng):
        a, b = rng.normal(size=(3, 4)), rng.normal(size=(5, 2))
        return KroneckerOperator(a, b), np.kron(a, b)

    def test_transpose(self, rng):
        op, dense = self.make(rng)
        np.testing.assert_allclose(op.T.toarray(), dense.T, rtol=1e-12)


class TestKroneckerPSD(OperatorMixin):
    def make(self, rng):
        a, b = _psd(rng, 4), _psd(rng, 3)
        return KroneckerOperator(a, b), np.kron(a, b)

    @pytest.mark.parametrize("alpha", [1e-3, 0.5, 10.0])
    def test_shifted_solve(self, rng, alpha):
        op, dense = self.make(rng)
        rhs = rng.normal(size=(op.shape[0], 2))
        expected = np.linalg.solve(dense + alpha * np.eye(op.shape[0]), rhs)
        np.testing.assert_allclose(op.solve_shifted(rhs, alpha), expected, rtol=1e-9, atol=1e-10)

    def test_kronecker_diagonal_solve(self, rng):
        op, dense = self.make(rng)
        d_a, d_b = rng.uniform(0.5, 2.0, size=4), rng.uniform(0.5, 2.0, size=3)
        rhs = rng.normal(size=op.shape[0])
        expected = np.linalg.solve(dense + np.diag(np.kron(d_a, d_b)), rhs)
        np.testing.assert_allclose(op.solve_shifted(rhs, diagonal=(d_a, d_b)), expected, rtol=1e-9, atol=1e-11)

    def test_eigh_and_hat_diagonal(self, rng):
        op, dense = self.make(rng)
        eig = op.eigh()
        np.testing.assert_allclose(np.sort(eig.eigenvalues.ravel()), np.linalg.eigvalsh(dense), atol=1e-12)
        alpha = 0.3
        hat = dense @ np.linalg.solve(dense + alpha * np.eye(dense.shape[0]), np.eye(dense.shape[0]))
        # The hat diagonal has one implementation, kron_leverages (with its complement 1 - h).
        a, b = eig.eig_a, eig.eig_b
        h, c = kron_leverages(a.eigenvectors, a.eigenvalues, b.eigenvectors, b.eigenvalues, alpha)
        np.testing.assert_allclose(h.ravel(), np.diag(hat), rtol=1e-10)
        np.testing.assert_allclose(c.ravel(), 1.0 - np.diag(hat), rtol=1e-10)
        np.testing.assert_allclose(op.diagonal(), np.diag(dense), rtol=1e-12)

    def test_solve_argument_errors(self, rng):
        op, _ = self.make(rng)
        with pytest.raises(ValueError, match="exactly one"):
            op.solve_shifted(np.ones(op.shape[0]))
        with pytest.raises(ValueError, match="> 0"):
            op.solve_shifted(np.ones(op.shape[0]), diagonal=(-np.ones(4), np.ones(3)))


@pytest.mark.parametrize("sign", [1, -1])
class TestSymmetricKronecker(OperatorMixin):
    @pytest.fixture(autouse=True)
    def _sign(self, sign):
        self.sign = sign

    def make(self, rng):
        k = _psd(rng, 4)
        n = k.shape[0]
        dense = 0.5 * np.kron(k, k) @ (np.eye(n * n) + self.sign * commutation_matrix(n))
        # The explicit kernel of eq. 8-9 entry by entry: (k(a,c)k(b,d) +/- k(a,d)k(b,c)) / 2.
        explicit = np.empty((n * n, n * n))
        for a in range(n):
            for b in range(n):
                for c in range(n):
                    for d in range(n):
                        explicit[a * n + b, c * n + d] = 0.5 * (k[a, c] * k[b, d] + self.sign * k[a, d] * k[b, c])
        np.testing.assert_allclose(dense, explicit, atol=1e-14)
        return SymmetricKroneckerOperator(k, self.sign), dense

    def test_shifted_solve(self, rng):
        # The symmetric/reciprocal "+ alpha I" solve has one implementation, kron_ridge_symmetric_dual (C order).
        op, dense = self.make(rng)
        rhs = rng.normal(size=op.shape[0])
        expected = np.linalg.solve(dense + 0.2 * np.eye(op.shape[0]), rhs)
        eig, n = EigenPath(op.k), op.k.shape[0]
        got = kron_ridge_symmetric_dual(eig.eigenvectors, eig.eigenvalues, rhs.reshape(n, n), 0.2, self.sign)
        np.testing.assert_allclose(got.ravel(), expected, rtol=1e-9, atol=1e-11)


class TestWeightedSum(OperatorMixin):
    def make(self, rng):
        a1, b1, a2, b2 = _psd(rng, 3), _psd(rng, 4), _psd(rng, 3), _psd(rng, 4)
        op = WeightedKroneckerSum([KroneckerOperator(a1, b1), KroneckerOperator(a2, b2)], [0.3, 1.7])
        return op, 0.3 * np.kron(a1, b1) + 1.7 * np.kron(a2, b2)

    def test_cg_on_sum(self, rng):
        op, dense = self.make(rng)
        rhs = rng.normal(size=op.shape[0])
        x, _info = block_cg(lambda V: op.matmat(V) + 0.1 * V, rhs, rtol=1e-12)
        np.testing.assert_allclose(x, np.linalg.solve(dense + 0.1 * np.eye(op.shape[0]), rhs), rtol=1e-8)

    def test_mismatched_shapes(self, rng):
        with pytest.raises(ValueError, match="same shape"):
            WeightedKroneckerSum([KroneckerOperator(np.eye(2), np.eye(3)), KroneckerOperator(np.eye(3), np.eye(3))])


def _sampled_dense(K1, K2, r_out, c_out, r_in, c_in, sign=None):
    if sign is None:
        return K1[np.ix_(r_out, r_in)] * K2[np.ix_(c_out, c_in)]
    return 0.5 * (K1[np.ix_(r_out, r_in)] * K1[np.ix_(c_out, c_in)]
                  + sign * K1[np.ix_(r_out, c_in)] * K1[np.ix_(c_out, r_in)])


# Every sampled operator is checked on both product routes (dense GEMMs; sparse first product), each against the
# explicit pair kernel.
@pytest.mark.parametrize("product", ["dense", "sparse"])
class _SampledRoutes(OperatorMixin):
    @pytest.fixture(autouse=True)
    def _product(self, product):
        self.product = product


class TestSampledTraining(_SampledRoutes):
    def make(self, rng):
        K1, K2 = _psd(rng, 6), _psd(rng, 5)
        r, c = rng.integers(0, 6, size=20), rng.integers(0, 5, size=20)
        r[1], c[1] = r[0], c[0]  # a repeated pair
        return SampledKroneckerOperator(K1, K2, r, c, product=self.product), _sampled_dense(K1, K2, r, c, r, c)


@pytest.mark.parametrize("shapes", [((4, 6), (7, 5)), ((9, 6), (3, 5))], ids=["sparse-left", "sparse-right"])
class TestSampledTestBlock(_SampledRoutes):
    @pytest.fixture(autouse=True)
    def _shapes(self, shapes):
        self.shapes = shapes

    def make(self, rng):
        (m1, n1), (m2, n2) = self.shapes
        K1, K2 = rng.normal(size=(m1, n1)), rng.normal(size=(m2, n2))  # not symmetric: the transposes matter
        r, c = rng.integers(0, n1, size=15), rng.integers(0, n2, size=15)
        ro, co = rng.integers(0, m1, size=9), rng.integers(0, m2, size=9)
        op = SampledKroneckerOperator(K1, K2, r, c, ro, co, product=self.product)
        return op, _sampled_dense(K1, K2, ro, co, r, c)


@pytest.mark.parametrize("sign", [1, -1])
class TestSampledSymmetric(_SampledRoutes):
    @pytest.fixture(autouse=True)
    def _sign(self, sign):
        self.sign = sign

    def make(self, rng):
        K = _psd(rng, 6)
        r, c = rng.integers(0, 6, size=18), rng.integers(0, 6, size=18)
        op = SampledKroneckerOperator(K, K, r, c, sign=self.sign, product=self.product)
        return op, _sampled_dense(K, K, r, c, r, c, self.sign)


def test_sampled_sparse_route_both_sides_taken():
    # The cost model sends the sparse product to the side with the smaller output (m1 < m2: left, else right).
    rng = np.random.default_rng(0)
    r, c = rng.integers(0, 6, size=15), rng.integers(0, 5, size=15)
    left = SampledKroneckerOperator(rng.normal(size=(2, 6)), rng.normal(size=(40, 5)), r, c, [0], [0],
                                    product="sparse")
    right = SampledKroneckerOperator(rng.normal(size=(40, 6)), rng.normal(size=(2, 5)), r, c, [0], [0],
                                     product="sparse")
    assert left._sparse_left and not right._sparse_left


@pytest.mark.parametrize("q, sparse", [(2_000, True), (180_000, False)])
def test_sampled_auto_route_follows_density(q, sparse):
    # 1000 x 1000 grid: 0.2% labelled goes sparse, 18% stays on dense GEMMs (the SPARSE_COST break-even is 1/6).
    K = np.eye(1000)
    flat = np.random.default_rng(0).choice(1_000_000, size=q, replace=False)
    assert SampledKroneckerOperator(K, K, flat // 1000, flat % 1000).sparse is sparse


def test_sampled_bad_product():
    with pytest.raises(ValueError, match="'product'"):
        SampledKroneckerOperator(np.eye(2), np.eye(2), [0], [1], product="gemm")


def test_sampled_complete_equals_kron(rng):
    K1, K2 = _psd(rng, 3), _psd(rng, 4)
    r, c = (a.ravel() for a in np.indices((3, 4)))
    np.testing.assert_allclose(SampledKroneckerOperator(K1, K2, r, c).toarray(), np.kron(K1, K2), rtol=1e-12)


def test_symmetric_needs_square():
    with pytest.raises(ValueError, match="square"):
        SymmetricKroneckerOperator(np.ones((2, 3)))
    with pytest.raises(ValueError, match="sign"):
        SymmetricKroneckerOperator(np.eye(2), sign=0)

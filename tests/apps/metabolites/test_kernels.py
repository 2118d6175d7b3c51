import numpy as np
import pytest
import scipy.sparse as sp
from metab_helpers import random_spectra

from iokr import config_context
from iokr.apps.metabolites import BinnedKernel, PeakProductKernel, normalized_gram
from iokr.apps.metabolites.kernels._kernels import sparse_gram, sparse_sq_norms, weighted_sum


def _naive_ppk(S, T, sigma_mz, sigma_int, neutral_loss):
    K = np.zeros((len(S), len(T)))
    for i in range(len(S)):
        for j in range(len(T)):
            a_mz, a_int = S.peaks(i)
            b_mz, b_int = T.peaks(j)
            if neutral_loss:
                a_keep, b_keep = S.precursor_mz[i] - a_mz > 0.5, T.precursor_mz[j] - b_mz > 0.5
                a_mz, a_int = (S.precursor_mz[i] - a_mz)[a_keep], a_int[a_keep]
                b_mz, b_int = (T.precursor_mz[j] - b_mz)[b_keep], b_int[b_keep]
            d = (a_mz[:, None] - b_mz[None, :]) ** 2 / (4 * sigma_mz**2)
            if sigma_int is None:
                K[i, j] = (np.exp(-d) * a_int[:, None] * b_int[None, :]).sum()
            else:
                K[i, j] = np.exp(-d - (a_int[:, None] - b_int[None, :]) ** 2 / (4 * sigma_int**2)).sum()
    return K


@pytest.mark.parametrize("sigma_int", [0.25, None])
@pytest.mark.parametrize("neutral_loss", [False, True])
@pytest.mark.parametrize("sigma_mz", [0.01, 0.3])
def test_ppk_matches_brute_force(sigma_int, neutral_loss, sigma_mz):
    rng = np.random.default_rng(0)
    S = random_spectra(rng, 17, grid=0.5, empty_every=6)
    T = random_spectra(rng, 11, grid=0.5)
    k = PeakProductKernel(sigma_mz=sigma_mz, sigma_intensity=sigma_int, neutral_loss=neutral_loss, truncate=40.0)
    np.testing.assert_allclose(k(S, T), _naive_ppk(S, T, sigma_mz, sigma_int, neutral_loss), rtol=1e-12,
                               atol=1e-12)
    np.testing.assert_allclose(k.compute_diag(S), np.diag(_naive_ppk(S, S, sigma_mz, sigma_int, neutral_loss)),
                               rtol=1e-12, atol=1e-12)


def test_ppk_truncation_error_is_bounded():
    rng = np.random.default_rng(1)
    S = random_spectra(rng, 20, grid=0.02)
    exact = _naive_ppk(S, S, 0.01, 0.25, False)
    approx = PeakProductKernel(0.01, 0.25)(S)
    n_pairs = np.outer(S.n_peaks, S.n_peaks)
    assert np.all(np.abs(approx - exact) <= n_pairs * np.exp(-9.0**2 / 4) + 1e-12)


def test_ppk_chunked_equals_unchunked():
    rng = np.random.default_rng(2)
    S = random_spectra(rng, 60, grid=0.5)
    k = PeakProductKernel(0.05)
    full = k(S)
    with config_context(working_memory=0.002):  # forces one-row blocks and tiny pair batches
        chunked = k(S)
    np.testing.assert_allclose(chunked, full, rtol=1e-13, atol=1e-13)
    assert np.all(np.linalg.eigvalsh(normalized_gram(k, S)[0]) > -1e-10)


@pytest.mark.parametrize("neutral_loss", [False, True])
def test_binned_matches_dense_features(neutral_loss):
    rng = np.random.default_rng(3)
    S = random_spectra(rng, 15, grid=0.5)
    k = BinnedKernel(bin_width=0.1, power=0.5, neutral_loss=neutral_loss)
    F = np.zeros((len(S), 60000))
    for i in range(len(S)):
        mz, inten = S.peaks(i)
        pos = S.precursor_mz[i] - mz if neutral_loss else mz
        keep = pos > 0.5 if neutral_loss else np.ones(pos.size, bool)
        np.add.at(F[i], np.floor(pos[keep] / 0.1).astype(int), inten[keep] ** 0.5)
    np.testing.assert_allclose(k(S, S[:4]), F @ F[:4].T, rtol=1e-12)
    np.testing.assert_allclose(k.compute_diag(S), (F * F).sum(1), rtol=1e-12)


def test_normalized_gram_unit_diagonal_and_empty_spectra():
    rng = np.random.default_rng(4)
    S = random_spectra(rng, 12, empty_every=5)
    K, diag, _ = normalized_gram(PeakProductKernel(0.05), S)
    empty = S.n_peaks == 0
    np.testing.assert_allclose(np.diag(K)[~empty], 1.0, rtol=1e-12)
    assert np.all(K[empty] == 0) and np.all(diag[empty] == 0)


def test_kernels_reject_arrays():
    with pytest.raises(TypeError, match="Spectra"):
        PeakProductKernel()(np.zeros((3, 2)))


def test_sparse_gram_blocks_match_the_dense_product():
    # The row-blocked product of the sparse feature kernels (binned, formula tokens) against one dense product.
    rng = np.random.default_rng(0)
    FA = sp.random(7, 40, density=0.2, random_state=rng, format="csr")
    FB = sp.random(5, 40, density=0.2, random_state=rng, format="csr")
    expected = FA.toarray() @ FB.toarray().T
    blocked = sparse_gram(FA, FB, working_memory=2 * 5 * 16 / 2**20)  # two rows of 5 entries a block
    np.testing.assert_allclose(blocked, expected, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(sparse_gram(FA, FB), expected, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(sparse_sq_norms(FA), (FA.toarray() ** 2).sum(axis=1), rtol=1e-12)


def test_weighted_sum_is_the_written_out_sum_bit_for_bit():
    rng = np.random.default_rng(0)
    blocks, weights = [rng.normal(size=(5, 4)) for _ in range(3)], [0.3, 1.7, 0.25]
    expected = weights[0] * blocks[0] + weights[1] * blocks[1] + weights[2] * blocks[2]
    np.testing.assert_array_equal(weighted_sum(zip(weights, [b.copy() for b in blocks], strict=True)), expected)
    assert weighted_sum([]) is None

"""Kernels on MS/MS spectra: the probability product kernel on peaks (PPK), its neutral-loss variant, and a
binned (cosine) kernel.

All three evaluate whole blocks ``K(A, B)`` of :class:`~iokr.apps.metabolites.Spectra` without a Python loop over
spectra: the PPK sorts the peaks of ``B`` by m/z once, finds for every peak of ``A`` the peaks of ``B`` within the
kernel's truncation window with ``searchsorted``, evaluates the Gaussian on all those pairs at once and accumulates
them per spectrum pair with ``bincount``. The binned kernel is a sparse matrix product.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ...._config import working_memory_bytes
from ...._validation import check_positive_scalar
from ....kernels import Kernel
from ....linalg.developer import row_slices
from ..spectra._spectra import Spectra, _ranges


def _peak_view(spectra, neutral_loss):
    """``(positions, intensities, spectrum index)`` of all peaks; neutral losses ``precursor - m/z`` if asked."""
    spec = spectra.spectrum_index()
    if not neutral_loss:
        return spectra.mz, spectra.intensity, spec
    loss = spectra.precursor_mz[spec] - spectra.mz
    keep = np.isfinite(loss) & (loss > 0.5)  # spectra without precursor have no losses
    return loss[keep], spectra.intensity[keep], spec[keep]


class _SortedPeaks:
    """Peaks of one side sorted by position, built once per kernel call."""

    def __init__(self, spectra, neutral_loss):
        pos, inten, spec = _peak_view(spectra, neutral_loss)
        order = np.argsort(pos, kind="stable")
        self.pos, self.intensity, self.spec = pos[order], inten[order], spec[order]
        self.n = len(spectra)


def _pair_sum(A_pos, A_int, A_spec, n_a, B, half_width, sigma_mz, sigma_intensity, max_pairs):
    """``sum_{i in a, j in b} exp(-(dmz)^2 / (4 s_mz^2) - (dint)^2 / (4 s_int^2))`` for all spectrum pairs.

    Pairs farther apart than ``half_width`` in m/z are skipped (their term is below the truncation threshold).
    """
    out = np.zeros(n_a * B.n, dtype=np.float64)
    if A_pos.size == 0 or B.pos.size == 0:
        return out.reshape(n_a, B.n)
    lo = np.searchsorted(B.pos, A_pos - half_width, side="left")
    hi = np.searchsorted(B.pos, A_pos + half_width, side="right")
    counts = hi - lo
    cum = np.cumsum(counts)
    start = 0
    inv_mz = 1.0 / (4.0 * sigma_mz**2)
    inv_int = None if sigma_intensity is None else 1.0 / (4.0 * sigma_intensity**2)
    while start < A_pos.size:
        # as many A peaks as keep the pair count under max_pairs (at least one)
        base = cum[start - 1] if start else 0
        stop = max(int(np.searchsorted(cum, base + max_pairs, side="right")), start + 1)
        # End chunks at a spectrum boundary: each spectrum's sums then never depend on the other spectra of the
        # batch (the same floating-point summation order whatever the batch holds).
        stop = int(np.searchsorted(A_spec, A_spec[stop - 1], side="right"))
        c = counts[start:stop]
        ia = np.repeat(np.arange(start, stop), c)
        jb = _ranges(lo[start:stop], c)
        start = stop
        if ia.size == 0:
            continue
        d = A_pos[ia] - B.pos[jb]
        expo = d * d * inv_mz
        if inv_int is None:
            val = np.exp(-expo) * (A_int[ia] * B.intensity[jb])
        else:
            di = A_int[ia] - B.intensity[jb]
            expo += di * di * inv_int
            val = np.exp(-expo)
        out += np.bincount(A_spec[ia] * B.n + B.spec[jb], weights=val, minlength=out.size)
    return out.reshape(n_a, B.n)


class SpectrumKernel(Kernel):
    """Base of kernels on :class:`Spectra` (not on 2-D arrays): the input checks of every spectrum kernel."""

    def validate(self, X, name):
        """Check that one side's inputs are a :class:`Spectra` object; spectra are passed on unchanged.

        Parameters
        ----------
        X : Spectra
            Inputs as the user passes them.
        name : str
            Parameter name used in the error message.

        Returns
        -------
        X : Spectra
            The same object.

        Raises
        ------
        TypeError
            When ``X`` is not a :class:`Spectra` object.
        """
        if not isinstance(X, Spectra):
            raise TypeError(f"{type(self).__name__} works on Spectra objects; '{name}' is {type(X).__name__}.")
        return X

    def check_compatible(self, A, B):
        """Accept any two :class:`Spectra`: spectra of any number of peaks and any m/z range are comparable.

        Parameters
        ----------
        A : Spectra
            Validated first side.
        B : Spectra
            Validated second side.
        """
        pass


class PeakProductKernel(SpectrumKernel):
    """Probability product kernel on peaks (Heinonen et al. 2012), on fragments or on neutral losses.

    Each peak ``(m, i)`` is a Gaussian with standard deviations ``sigma_mz`` (m/z) and ``sigma_intensity``
    (intensity); the probability product of two such mixtures is, up to a constant,

    ``k(a, b) = sum_{p in a, q in b} exp(-(m_p - m_q)^2 / (4 sigma_mz^2) - (i_p - i_q)^2 / (4 sigma_intensity^2))``.

    Parameters
    ----------
    sigma_mz : float, default=0.005
        Standard deviation of each peak's Gaussian along m/z (Da).
    sigma_intensity : float or None, default=0.25
        Intensity width (intensities are relative, in [0, 1]). ``None`` replaces the intensity Gaussian by the
        product of intensities ``i_p i_q`` (also positive semidefinite).
    neutral_loss : bool, default=False
        Compare neutral losses ``precursor_mz - m`` instead of fragment m/z (spectra without precursor have none).
    truncate : float, default=9.0
        Pairs farther apart than ``truncate * sigma_mz`` in m/z are skipped: their term is below
        ``exp(-truncate^2 / 4)`` (2e-9 at 9), far under float32 resolution of a normalized kernel.

    Notes
    -----
    Positive semidefinite: a sum of products of Gaussian kernels between peaks. Cost is linear in the number of
    peak pairs within the window; memory is bounded by the working-memory budget. Normalize before use
    (``k / sqrt(k(a,a) k(b,b))``), which also removes the dependence on the number of peaks.

    References
    ----------
    Heinonen, Shen, Zamboni, Rousu, Metabolite identification and molecular fingerprint prediction through
    machine learning, Bioinformatics 28(18), 2012.
    """

    temporaries_per_entry = 2

    def __init__(self, sigma_mz=0.005, sigma_intensity=0.25, neutral_loss=False, truncate=9.0):
        self.sigma_mz = sigma_mz
        self.sigma_intensity = sigma_intensity
        self.neutral_loss = neutral_loss
        self.truncate = truncate

    def _params(self):
        owner = type(self).__name__
        sigma_mz = check_positive_scalar(self.sigma_mz, "sigma_mz", owner)
        sigma_int = None if self.sigma_intensity is None else check_positive_scalar(
            self.sigma_intensity, "sigma_intensity", owner)
        truncate = check_positive_scalar(self.truncate, "truncate", owner)
        return sigma_mz, sigma_int, truncate * sigma_mz

    def __call__(self, A, B=None, *, working_memory=None):
        A = self.validate(A, "A")
        B = A if B is None else self.validate(B, "B")
        sigma_mz, sigma_int, half = self._params()
        sorted_b = _SortedPeaks(B, self.neutral_loss)
        out = np.empty((len(A), len(B)), dtype=np.float64)
        bytes_per_row = max(len(B), 1) * 8 * (1 + self.temporaries_per_entry)
        max_pairs = max(working_memory_bytes(working_memory) // 64, 16)
        for rows in row_slices(len(A), bytes_per_row, working_memory):
            block = A[rows]
            pos, inten, spec = _peak_view(block, self.neutral_loss)
            out[rows] = _pair_sum(pos, inten, spec, len(block), sorted_b, half, sigma_mz, sigma_int, max_pairs)
        return out

    def compute(self, A, B):
        """Compute the block ``K(A, B)``, the same as calling the kernel (which checks both sides again).

        Parameters
        ----------
        A : Spectra
            First side, n_a spectra: their peaks (or neutral losses), in row blocks under the memory budget.
        B : Spectra
            Second side, n_b spectra: their peaks sorted once by position.

        Returns
        -------
        K : ndarray of shape (n_a, n_b)
            Unnormalized kernel values, float64.
        """
        return self(A, B)

    def compute_diag(self, A):
        """Compute the self-similarities ``k(a, a)`` from the peak pairs within each spectrum only.

        Parameters
        ----------
        A : Spectra
            Validated spectra, n_a of them.

        Returns
        -------
        diag : ndarray of shape (n_a,)
            Unnormalized ``k(a, a)``, float64; 0 for a spectrum without peaks (or without neutral losses when
            ``neutral_loss=True``).
        """
        sigma_mz, sigma_int, half = self._params()
        pos, inten, spec = _peak_view(A, self.neutral_loss)
        if pos.size == 0:
            return np.zeros(len(A))
        # Separate spectra on one axis so the window never crosses two spectra. The shifted axis only proposes
        # pairs (with a margin for its rounding); which pairs count and their terms come from the unshifted
        # positions, so a spectrum's self-similarity never depends on the other spectra of the batch.
        span = float(np.max(np.abs(pos))) + 4 * half + 1.0
        shifted = pos + spec * span
        slack = 4.0 * np.spacing(float(np.max(np.abs(shifted)))) + half
        order = np.argsort(shifted, kind="stable")
        sorted_pos, sorted_int, sorted_spec = shifted[order], inten[order], spec[order]
        lo = np.searchsorted(sorted_pos, shifted - slack, side="left")
        hi = np.searchsorted(sorted_pos, shifted + slack, side="right")
        counts = hi - lo
        ia = np.repeat(np.arange(pos.size), counts)
        jb = _ranges(lo, counts)
        d = pos[ia] - pos[order][jb]
        near = (sorted_spec[jb] == spec[ia]) & (np.abs(d) <= half)
        ia, jb, d = ia[near], jb[near], d[near]
        sorted_self = _SortedPeaks.__new__(_SortedPeaks)
        sorted_self.intensity = sorted_int
        expo = d * d / (4.0 * sigma_mz**2)
        if sigma_int is None:
            val = np.exp(-expo) * inten[ia] * sorted_self.intensity[jb]
        else:
            di = inten[ia] - sorted_self.intensity[jb]
            val = np.exp(-(expo + di * di / (4.0 * sigma_int**2)))
        return np.bincount(spec[ia], weights=val, minlength=len(A))


class BinnedKernel(SpectrumKernel):
    """Inner product of binned spectra: ``k(a, b) = sum_bins v_a(bin) v_b(bin)``; normalized, the cosine score.

    Parameters
    ----------
    bin_width : float, default=0.01
        Width of the m/z bins (Da); peaks falling into one bin are summed.
    power : float, default=0.5
        Intensity exponent (0.5: square-root intensities, damping the dominant peaks).
    neutral_loss : bool, default=False
        Bin neutral losses instead of fragments.

    Notes
    -----
    The feature map is an explicit sparse matrix (:meth:`sparse_features`), so the Gram is one sparse product.
    """

    temporaries_per_entry = 1

    def __init__(self, bin_width=0.01, power=0.5, neutral_loss=False):
        self.bin_width = bin_width
        self.power = power
        self.neutral_loss = neutral_loss

    def sparse_features(self, spectra):
        """Bin the spectra into a sparse feature matrix of intensities ``intensity ** power``.

        Parameters
        ----------
        spectra : Spectra
            Spectra to bin (fragment m/z, or neutral losses when ``neutral_loss=True``).

        Returns
        -------
        M : scipy.sparse.csr_matrix of shape (n_spectra, n_bins)
            Summed ``intensity ** power`` per spectrum and bin, with ``n_bins = ceil(5000 / bin_width) + 1``;
            positions beyond the last bin are counted in the last bin.
        """
        width = check_positive_scalar(self.bin_width, "bin_width", type(self).__name__)
        power = check_positive_scalar(self.power, "power", type(self).__name__)
        pos, inten, spec = _peak_view(spectra, self.neutral_loss)
        n_bins = int(np.ceil(5000.0 / width)) + 1
        # Clipped before the integer cast: an absurd m/z (1e17) would overflow int64.
        bins = np.floor(np.clip(pos / width, 0, n_bins - 1)).astype(np.int64)
        M = sp.csr_matrix((inten**power, (spec, bins)), shape=(len(spectra), n_bins))
        M.sum_duplicates()
        return M

    def __call__(self, A, B=None, *, working_memory=None):
        A = self.validate(A, "A")
        B = A if B is None else self.validate(B, "B")
        FA = self.sparse_features(A)
        return sparse_gram(FA, FA if B is A else self.sparse_features(B), working_memory)

    def compute(self, A, B):
        """Compute the block ``K(A, B)``, the same as calling the kernel (which checks both sides again).

        Parameters
        ----------
        A : Spectra
            First side, n_a spectra, binned by :meth:`sparse_features`.
        B : Spectra
            Second side, n_b spectra, binned the same way (once only when ``B`` is ``A``).

        Returns
        -------
        K : ndarray of shape (n_a, n_b)
            Unnormalized inner products of the binned spectra, float64.
        """
        return self(A, B)

    def compute_diag(self, A):
        """Compute the squared norms ``k(a, a)`` of the binned spectra.

        Parameters
        ----------
        A : Spectra
            Spectra, n_a of them, binned by :meth:`sparse_features`.

        Returns
        -------
        diag : ndarray of shape (n_a,)
            Unnormalized ``k(a, a)``; 0 for a spectrum without peaks.
        """
        return sparse_sq_norms(self.sparse_features(self.validate(A, "A")))


def sparse_gram(FA, FB, working_memory=None):
    """Dense ``FA @ FB.T`` of two sparse feature matrices (rows: spectra), in row blocks under the memory budget.

    Only one block of the sparse product is dense at a time (16 bytes per entry: the product and its dense copy).
    """
    out = np.empty((FA.shape[0], FB.shape[0]))
    FBt = FB.T.tocsc()
    for rows in row_slices(FA.shape[0], max(FB.shape[0], 1) * 16, working_memory):
        out[rows] = (FA[rows] @ FBt).toarray()
    return out


def sparse_sq_norms(F):
    """Squared norm of every row of a sparse feature matrix: the kernel diagonal ``k(a, a)``."""
    return np.asarray(F.multiply(F).sum(axis=1)).ravel()


def weighted_sum(terms):
    """``sum_k w_k G_k`` of ``(w_k, G_k)`` pairs, accumulated in place into the first block.

    Each block is scaled in place (``G *= w``) and added to the running sum, so a producer that computes one block
    at a time and drops it after yielding keeps at most the sum and one block in memory. Every entry is computed by
    the same operations in the same order as ``w_0 G_0 + w_1 G_1 + ...`` written out.

    Parameters
    ----------
    terms : iterable of (float, ndarray of shape (m, n))
        Weights and blocks (the blocks are modified).

    Returns
    -------
    K : ndarray of shape (m, n), or None when ``terms`` is empty
    """
    K = None
    for w, G in terms:
        G *= w
        if K is None:
            K = G
        else:
            K += G
        del G
    return K


def normalized_gram(kernel, A, B=None, diag_a=None, diag_b=None, working_memory=None):
    """Cosine-normalized block ``k(a, b) / sqrt(k(a, a) k(b, b))`` (0 where a spectrum has no peaks).

    Returns
    -------
    K : ndarray of shape (n_a, n_b)
    diag_a, diag_b : ndarray
        The raw self-similarities, for reuse.
    """
    K = kernel(A, B, working_memory=working_memory)
    diag_a = kernel.compute_diag(A) if diag_a is None else diag_a
    if B is None:
        diag_b = diag_a
    elif diag_b is None:
        diag_b = kernel.compute_diag(B)
    inv_a = np.divide(1.0, np.sqrt(diag_a), out=np.zeros_like(diag_a), where=diag_a > 0)
    inv_b = np.divide(1.0, np.sqrt(diag_b), out=np.zeros_like(diag_b), where=diag_b > 0)
    K *= inv_a[:, None]
    K *= inv_b[None, :]
    return K, diag_a, diag_b

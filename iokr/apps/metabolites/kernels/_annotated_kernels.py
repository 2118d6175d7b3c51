"""Kernels on chemically annotated spectra: shared fragment-ion formulas, neutral-loss formulas, and losses between
nested fragments.

Every peak explained by :func:`~._annotation.annotate` becomes a token, its fragment formula (``"fragments"``) or
the precursor ion minus that formula (``"losses"``), weighted by ``intensity ** power``; ``"pair_losses"`` tokens
are the differences between two nested explained fragments of one spectrum (fragmentation-tree edges). A spectrum's feature vector
counts its tokens (weights of equal tokens added); the kernel is the inner product of those sparse vectors, so it is
positive semidefinite by construction (``K = F_A F_B^T``). Normalized by the model (cosine), it is a weighted
Jaccard-like share of explained fragments or losses, independent of m/z tolerance once peaks are annotated.

Spectra the annotation cannot handle (no formula, unsupported elements or charges, low resolution, see
:mod:`._annotation`) have an empty feature vector: their normalized rows are 0 and the model relies on its
unannotated kernels for them; :meth:`FormulaTokenKernel.annotation_report` counts them. ``identify`` gives each
query the formula it knows, or annotates it under each formula of its candidates (:mod:`._hypotheses`).
"""

from __future__ import annotations

import weakref

import numpy as np
import scipy.sparse as sp

from ...._validation import check_positive_scalar
from ..chemistry._annotation import AnnotationSettings, annotate, decode
from ..spectra._spectra import _ranges
from ._kernels import SpectrumKernel, sparse_gram, sparse_sq_norms

TOKENS = ("fragments", "losses", "pair_losses")
#: Peak pairs handled at once by the ``"pair_losses"`` tokens (bounds the temporaries).
_PAIR_CHUNK = 1 << 19
EXPLANATIONS = ("best", "all")

# Annotations (per settings) and token weights (per settings and token kind) of the Spectra objects a kernel has
# seen: the training spectra are annotated once however many blocks, diagonals and fits use them (weak keys:
# nothing outlives its Spectra).
_CACHE = weakref.WeakKeyDictionary()


def cached_annotation(spectra, settings):
    """:func:`~._annotation.annotate` of ``spectra``, computed once per (object, settings)."""
    per_object = _CACHE.setdefault(spectra, {})
    if settings not in per_object:
        per_object[settings] = annotate(spectra, settings)
    return per_object[settings]


def _pair_losses(spec, peak, keys, weight):
    """Tokens of explained peak pairs of one spectrum whose fragments nest (one a subformula of the other): the
    difference formula (a fragmentation-tree edge), weighted ``sqrt(w_a w_b)``.

    ``spec`` is non-decreasing (entries grouped by spectrum)."""
    end = np.searchsorted(spec, spec, side="right")
    counts = end - np.arange(spec.size) - 1  # partners: the later entries of the same spectrum
    first = np.repeat(np.arange(spec.size), counts)
    second = _ranges(np.arange(1, spec.size + 1), counts)
    out_spec, out_key, out_weight = [], [], []
    for start in range(0, first.size, _PAIR_CHUNK):
        a, b = first[start:start + _PAIR_CHUNK], second[start:start + _PAIR_CHUNK]
        diff = decode(keys[a]) - decode(keys[b])
        a_over_b, b_over_a = np.all(diff >= 0, axis=1), np.all(diff <= 0, axis=1)
        key = np.where(a_over_b, keys[a] - keys[b], keys[b] - keys[a])
        keep = (a_over_b | b_over_a) & (key != 0) & (peak[a] != peak[b])
        out_spec.append(spec[a[keep]])
        out_key.append(key[keep])
        out_weight.append(np.sqrt(weight[a[keep]] * weight[b[keep]]))
    if not out_spec:
        return spec[:0], keys[:0], weight[:0]
    return np.concatenate(out_spec), np.concatenate(out_key), np.concatenate(out_weight)


class FormulaTokenKernel(SpectrumKernel):
    """Inner product of annotated spectra's formula tokens: shared fragment formulas or shared loss formulas.

    ``k(a, b) = sum_t w_a(t) w_b(t)`` with ``w_s(t) = sum_{peaks p of s explained by t} c_p i_p ** power``, where
    ``c_p`` is 1 for the best explanation of peak ``p`` (smallest m/z error; ``explanations="best"``) or ``1/n_p``
    for each of its ``n_p`` explanations (``explanations="all"``).

    Parameters
    ----------
    tokens : {"fragments", "losses", "pair_losses"}, default="fragments"
        Fragment-ion formulas, neutral losses (precursor ion minus fragment; the precursor itself has none), or
        the losses between two explained peaks of a spectrum whose fragments nest (larger minus smaller: the
        edges of a fragmentation tree, a second-order term weighted ``sqrt(w_a w_b)``).
    power : float, default=0.5
        Intensity exponent (0.5 damps dominant peaks, as the binned kernel does).
    explanations : {"best", "all"}, default="best"
        How a peak's weight goes to its explanations: all to the best one, or shared equally (``c_p`` above).
    ppm, abs_tolerance : float, default=10.0, 0.002
        Annotation tolerances (:class:`~._annotation.AnnotationSettings`).

    Notes
    -----
    Positive semidefinite: ``K(A, B) = F_A F_B^T`` with the explicit sparse feature map :meth:`sparse_features`
    over the union of both sides' tokens.
    """

    temporaries_per_entry = 1

    def __init__(self, tokens="fragments", power=0.5, explanations="best", ppm=10.0, abs_tolerance=0.002):
        self.tokens = tokens
        self.power = power
        self.explanations = explanations
        self.ppm = ppm
        self.abs_tolerance = abs_tolerance

    def _settings(self):
        owner = type(self).__name__
        for name, value, allowed in (("tokens", self.tokens, TOKENS),
                                     ("explanations", self.explanations, EXPLANATIONS)):
            if value not in allowed:
                raise ValueError(f"The '{name}' parameter of {owner} must be one of {allowed}. Got {value!r} instead.")
        check_positive_scalar(self.power, "power", owner)
        return AnnotationSettings(ppm=check_positive_scalar(self.ppm, "ppm", owner),
                                  abs_tolerance=check_positive_scalar(self.abs_tolerance, "abs_tolerance", owner))

    def annotation(self, spectra):
        """Annotate ``spectra`` under this kernel's tolerances, once per Spectra object and settings.

        Parameters
        ----------
        spectra : Spectra
            Spectra to annotate (metadata ``inchi`` / ``formula`` and ``adduct``, see :func:`annotate`).

        Returns
        -------
        annotation : Annotation
            The explanations of every peak, shared through a cache with every later call on the same object.
        """
        return cached_annotation(self.validate(spectra, "spectra"), self._settings())

    def annotation_report(self, spectra):
        """Report what the annotation of ``spectra`` under this kernel's tolerances did.

        Parameters
        ----------
        spectra : Spectra
            Spectra to annotate (cached as in :meth:`annotation`).

        Returns
        -------
        report : AnnotationReport
            Counts of annotated spectra, fallbacks and explained peaks.
        """
        return self.annotation(spectra).report

    def token_weights(self, spectra):
        """Compute every token occurrence of ``spectra`` with its weight (equal tokens not yet added).

        Computed once per Spectra object and token setting (read-only arrays): the training side of every test
        block reuses them.

        Parameters
        ----------
        spectra : Spectra
            Spectra to tokenize (annotated first, see :meth:`annotation`).

        Returns
        -------
        spec : ndarray of int, shape (n_tokens,)
            Spectrum index of each occurrence, non-decreasing.
        keys : ndarray of int64, shape (n_tokens,)
            Formula key of each token (fragment, loss or pair-loss formula).
        weight : ndarray of shape (n_tokens,)
            Its weight ``c_p i_p ** power`` (``sqrt(w_a w_b)`` for ``"pair_losses"``).
        """
        settings = self._settings()
        per_object = _CACHE.setdefault(spectra, {})
        key = (settings, self.tokens, float(self.power), self.explanations)
        if key not in per_object:
            out = self._token_weights(spectra, settings)
            for a in out:
                a.flags.writeable = False
            per_object[key] = out
        return per_object[key]

    def _token_weights(self, spectra, settings):
        ann = cached_annotation(spectra, settings)
        n_expl = np.diff(ann.offsets)
        peak = np.repeat(np.arange(n_expl.size), n_expl)
        weight = (spectra.intensity ** self.power)[peak]
        if self.explanations == "best":
            # per peak, the explanation with the smallest |error| (the first of equal ones)
            order = np.lexsort((np.abs(ann.error_ppm), peak))
            first = np.ones(order.size, dtype=bool)
            first[1:] = peak[order][1:] != peak[order][:-1]
            pick = order[first]
        else:
            weight = weight / n_expl[peak]
            pick = np.arange(peak.size)
        keys = (ann.loss if self.tokens == "losses" else ann.fragment)[pick]
        spec, weight = spectra.spectrum_index()[peak[pick]], weight[pick]
        if self.tokens == "pair_losses":
            return _pair_losses(spec, peak[pick], keys, weight)
        keep = keys != 0  # the precursor ion itself is no loss
        return spec[keep], keys[keep], weight[keep]

    def sparse_features(self, spectra, vocabulary):
        """Count the token weights of ``spectra`` over a fixed vocabulary of tokens.

        Parameters
        ----------
        spectra : Spectra
            Spectra to tokenize (see :meth:`token_weights`).
        vocabulary : ndarray of int64, shape (n_vocabulary,)
            Sorted, distinct formula keys: the columns. Tokens outside it are dropped.

        Returns
        -------
        F : scipy.sparse.csr_matrix of shape (n_spectra, n_vocabulary)
            Summed weights of each spectrum's tokens per column.
        """
        spec, keys, weight = self.token_weights(spectra)
        col = np.searchsorted(vocabulary, keys)
        col = np.minimum(col, max(vocabulary.size - 1, 0))
        known = vocabulary[col] == keys if vocabulary.size else np.zeros(keys.size, dtype=bool)
        F = sp.csr_matrix((weight[known], (spec[known], col[known])), shape=(len(spectra), vocabulary.size))
        F.sum_duplicates()
        return F

    def __call__(self, A, B=None, *, working_memory=None):
        A = self.validate(A, "A")
        B = A if B is None else self.validate(B, "B")
        _, keys_a, _ = self.token_weights(A)
        # tokens absent from A contribute nothing to K(A, B): A's vocabulary is enough
        vocabulary = np.unique(keys_a)
        FA = self.sparse_features(A, vocabulary)
        return sparse_gram(FA, FA if B is A else self.sparse_features(B, vocabulary), working_memory)

    def compute(self, A, B):
        """Compute the block ``K(A, B)``, the same as calling the kernel (which checks both sides again).

        Parameters
        ----------
        A : Spectra
            First side, n_a spectra; its tokens are the vocabulary (tokens absent from ``A`` add nothing).
        B : Spectra
            Second side, n_b spectra, annotated and tokenized like ``A``.

        Returns
        -------
        K : ndarray of shape (n_a, n_b)
            Unnormalized inner products of the token weight vectors, float64.
        """
        return self(A, B)

    def compute_diag(self, A):
        """Compute the squared norms ``k(a, a)`` of the token weight vectors.

        Parameters
        ----------
        A : Spectra
            Spectra, n_a of them, annotated under this kernel's tolerances.

        Returns
        -------
        diag : ndarray of shape (n_a,)
            Unnormalized ``k(a, a)``; 0 for a spectrum without tokens (a fallback of the annotation).
        """
        A = self.validate(A, "A")
        return sparse_sq_norms(self.sparse_features(A, np.unique(self.token_weights(A)[1])))

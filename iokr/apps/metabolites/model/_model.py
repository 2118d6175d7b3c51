"""The metabolite-identification model: spectrum kernels combined by multiple kernel learning, IOKR into a
fingerprint kernel space, candidate scoring.

The input kernel is ``K = sum_k w_k Kn_k`` over cosine-normalized base kernels (PPK on fragments, PPK on neutral
losses, binned spectra), optionally passed through a Gaussian, ``exp(-gamma (K(a,a) + K(b,b) - 2 K(a,b)))``. The
weights ``w`` are either uniform or ALIGNF (Cortes et al. 2012): the non-negative combination of centered base
kernels best aligned with the centered output kernel.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from ...._config import config_context, get_config, working_memory_bytes
from ...._validation import check_nonnegative_scalar, check_positive_scalar
from ....decoding import CandidateSets, neighbour_similarity, top_mean
from ....estimators import IOKR
from ....kernels._training_grams import GRAM_STORAGES, FileGram, TrainingGrams, compact_gram, input_gaussian
from ....model_selection import alignf_gram_weights
from ..kernels._factories import OUTPUT_KERNELS, SPECTRUM_KERNELS, make_output_kernel, make_spectrum_kernel
from ..kernels._kernels import normalized_gram, weighted_sum
from ..spectra._spectra import Spectra

#: Largest scoring budget (MiB) used when the model's ``working_memory`` is not set: the global budget is a cap, and
#: blocks beyond this do not pay. On the demo (66,000 candidates, 2,025 queries, one thread) scoring took 26.7 s of
#: CPU at 1024 MiB, 24.1 s at 256 and 25.3 s at 64, with 916, 415 and 279 MiB above the resident baseline.
SCORING_WORKING_MEMORY = 256

#: Budget (MiB) of the row blocks of spectrum-kernel Grams (and their peak-pair temporaries) when the model's
#: ``working_memory`` is not set; the global budget is a cap. The results do not depend on it (blocks end at
#: spectrum boundaries). On the 4,485 MassBank training structures the PPK Gram took 2.6 s of CPU and 1,182 MiB
#: above its start at 1024 MiB, 1.1 s and 264 MiB at 128, 1.0 s and 159 MiB (the Gram itself) at 64.
GRAM_WORKING_MEMORY = 64


class MetaboliteIdentifier(BaseEstimator):
    """IOKR from MS/MS spectra to molecular fingerprints, decoded over candidate structures.

    Parameters
    ----------
    kernels : tuple of str, default=("ppk", "ppk_nl")
        Base spectrum kernels (see :func:`make_spectrum_kernel`), each cosine-normalized.
    weights : "alignf", "uniform" or sequence of float, default="alignf"
        Weights of the base kernels: ALIGNF fitted to the training fingerprints, equal, or given (one non-negative
        float per kernel with a positive sum, rescaled to sum to 1).
    alpha : float, default=0.1
        IOKR regularization.
    input_gamma : float or None, default=None
        Gaussian on the combined kernel's distance; ``None`` keeps the combined kernel itself.
    sigma_mz, sigma_intensity, bin_width : float
        Parameters of the base kernels.
    output_kernel : {"gaussian_tanimoto", "tanimoto", "linear"}, default="gaussian_tanimoto"
        Kernel on fingerprints (see :func:`make_output_kernel`).
    output_gamma : float, default=1.0
        Width of the ``"gaussian_tanimoto"`` output kernel (unused by the others).
    prior_weight : float, default=0.0
        Weight of the structure prior added to every candidate's score: ``prior_weight`` times the mean output-kernel
        similarity of the candidate to its ``prior_neighbors`` most similar training structures (candidates that
        resemble known compounds rank higher; see :func:`iokr.decoding.neighbour_similarity`). 0 scores by the
        spectrum alone.
    prior_neighbors : int, default=1
        Training structures the prior averages over (all of them when there are fewer); 1, the nearest one, is the
        cross-validated choice of ``reports/metabolites.md``.
    working_memory : float, optional
        Budget (MiB) of chunked computations; ``None``: the global budget, and for candidate scoring (also the
        cross-validation's hold-out rankings) at most :data:`SCORING_WORKING_MEMORY`.

    Attributes
    ----------
    weights_ : ndarray of shape (n_kernels,)
    base_kernels_ : list of Kernel
    train_spectra_ : Spectra
    train_gram_ : ndarray of shape (n_train, n_train) or None
        The combined input Gram the model was fitted on (before IOKR's centering and normalization); None for a
        model restored from a file with its fitted IOKR state (:mod:`._persist`), which scoring is made of.
    train_raw_diags_ : list of n_kernels ndarrays of shape (n_train,)
        Raw diagonals ``k(x, x)`` of the base kernels on the training spectra (their cosine normalization).
    iokr_ : IOKR
    """

    def __init__(self, kernels=("ppk", "ppk_nl"), weights="alignf", alpha=0.1, input_gamma=None, sigma_mz=0.005,
                 sigma_intensity=0.25, bin_width=0.01, output_kernel="gaussian_tanimoto", output_gamma=1.0,
                 prior_weight=0.0, prior_neighbors=1, working_memory=None):
        self.kernels = kernels
        self.weights = weights
        self.alpha = alpha
        self.input_gamma = input_gamma
        self.sigma_mz = sigma_mz
        self.sigma_intensity = sigma_intensity
        self.bin_width = bin_width
        self.output_kernel = output_kernel
        self.output_gamma = output_gamma
        self.prior_weight = prior_weight
        self.prior_neighbors = prior_neighbors
        self.working_memory = working_memory

    def _base_kernels(self):
        if isinstance(self.kernels, str) or not len(self.kernels):
            raise ValueError(f"The 'kernels' parameter of MetaboliteIdentifier must be a non-empty tuple of names "
                             f"from {SPECTRUM_KERNELS}. Got {self.kernels!r} instead.")
        return [make_spectrum_kernel(k, self.sigma_mz, self.sigma_intensity, self.bin_width) for k in self.kernels]

    def _gram_memory(self):
        """Budget (MiB) of spectrum-kernel Gram blocks: the model's own, else :data:`GRAM_WORKING_MEMORY` (capped
        by the global budget)."""
        if self.working_memory is not None:
            return self.working_memory
        return min(working_memory_bytes(None) / 2**20, GRAM_WORKING_MEMORY)

    def base_grams(self, spectra, progress=None, *, storage="dense"):
        """Compute the normalized training Grams of the base kernels and their raw diagonals (reusable across fits).

        ``storage="dense"`` returns the pair ``(grams, diags)`` of dense Grams; ``"csr"`` and ``"file"`` return a
        :class:`TrainingGrams` holding each Gram's exact nonzero values in memory (CSR) or in a temporary file
        (see :mod:`._grams`), converted as soon as it is computed.

        Parameters
        ----------
        spectra : Spectra of length n
            Training spectra.
        progress : callable, optional
            Called without arguments after each base kernel.
        storage : {"dense", "csr", "file"}, default="dense"
            How the Grams are held.

        Returns
        -------
        grams_and_diags : tuple (grams, diags) or TrainingGrams
            Per base kernel, the normalized Gram (n, n) and the raw self-similarities ``k(x, x)`` (n,).
        """
        if storage not in GRAM_STORAGES:
            raise ValueError(f"The 'storage' parameter of base_grams must be one of {GRAM_STORAGES}. "
                             f"Got {storage!r} instead.")
        grams, diags = [], []
        for kernel in self._base_kernels():
            K, d, _ = normalized_gram(kernel, spectra, working_memory=self._gram_memory())
            if storage != "dense":
                K = compact_gram(K)
                K = FileGram(K) if storage == "file" else K
            grams.append(K)
            del K
            diags.append(d)
            if progress is not None:
                progress()
        return (grams, diags) if storage == "dense" else TrainingGrams(grams, diags)

    def fit(self, spectra, Y, *, base_grams=None, training_gram=None, fitted_state=None):
        """Fit on training spectra (one per structure, typically merged) and their fingerprints.

        Parameters
        ----------
        spectra : Spectra of length n
            Training spectra.
        Y : ndarray of shape (n, p)
            Output fingerprints.
        base_grams : tuple (grams, diags) or TrainingGrams, optional
            Output of :meth:`base_grams` on ``spectra`` (or a :meth:`TrainingGrams.subset` of larger Grams), to
            avoid recomputing them (cross-validation).
        training_gram : tuple (K, weights, diags), optional
            :meth:`combined_training_gram`'s ``(K, weights)`` on ``spectra`` and the base kernels' raw diagonals,
            already computed (the caller may then free the base Grams before the IOKR fit). ``K`` may be None with
            ``fitted_state``: scoring never reads the training Gram once the IOKR is restored.
        fitted_state : dict of str to ndarray, optional
            With ``training_gram``: :meth:`iokr.IOKR.fitted_state` of the IOKR fitted on that Gram (a saved model,
            :mod:`._persist`); the IOKR is then restored from it (no factorization, no output Gram) instead of
            fitted again, with the same scores.

        Returns
        -------
        self : MetaboliteIdentifier
            The fitted model.
        """
        if not isinstance(spectra, Spectra):
            raise TypeError(f"'spectra' must be a Spectra object, got {type(spectra).__name__}.")
        Y = np.asarray(Y, dtype=np.float64)
        if Y.ndim != 2 or Y.shape[0] != len(spectra):
            raise ValueError(f"'Y' must have shape ({len(spectra)}, n_features), got {Y.shape}.")
        self._check_params()
        self.base_kernels_ = self._base_kernels()
        if training_gram is None:
            grams = TrainingGrams.of(self.base_grams(spectra) if base_grams is None else base_grams)
            K, self.weights_ = self.combined_training_gram(grams, None, Y)
            diags = grams.diags
            del grams
        else:
            K, self.weights_, diags = training_gram
            if K is None and fitted_state is None:
                raise ValueError("'training_gram' without its Gram (None) needs 'fitted_state': the IOKR is then "
                                 "restored, not fitted.")
            if K is not None and np.shape(K) != (len(spectra), len(spectra)):
                raise ValueError(f"'training_gram' must be a ({len(spectra)}, {len(spectra)}) Gram, got "
                                 f"{np.shape(K)}.")
        self.train_raw_diags_ = diags
        self.train_gram_ = K
        output = make_output_kernel(self.output_kernel, self.output_gamma)
        iokr = IOKR(alpha=self.alpha, input_kernel="precomputed", output_kernel=output,
                    working_memory=self.working_memory)
        if fitted_state is not None and training_gram is None:
            raise ValueError("'fitted_state' restores the IOKR fitted on 'training_gram'; pass both.")
        self.iokr_ = iokr.fit(K, Y) if fitted_state is None else iokr.restore(Y, fitted_state)
        self.train_spectra_ = spectra
        self.train_outputs_ = Y
        self.n_output_features_ = Y.shape[1]
        return self

    def combined_training_gram(self, grams, diags, Y, *, weights_from=None):
        """The combined input Gram this model trains on, and its kernel weights (ALIGNF fitted to ``Y``).

        Shared by :meth:`fit` and the closed-form cross-validation, which factors this Gram once for a whole grid
        of regularization values. Built block by block into one ``n x n`` array (:meth:`TrainingGrams.combined`).

        Parameters
        ----------
        grams, diags : lists, or TrainingGrams and None
            Output of :meth:`base_grams` on the training spectra (``n x n`` normalized Grams, raw diagonals).
        Y : ndarray of shape (n, p)
            Training fingerprints (ALIGNF aligns the input kernels with their output Gram).
        weights_from : ndarray of int, optional
            Rows the kernel weights are fitted on (a cross-validation fold's training side), so the held-out rows
            take no part in choosing them; all rows by default. The Gram is combined over all rows either way.

        Returns
        -------
        K : ndarray of shape (n, n)
            The combined input Gram (through the input Gaussian when ``input_gamma`` is set).
        weights : ndarray of shape (n_kernels,)
            Kernel weights, summing to 1.
        """
        self._check_params()
        grams = grams if isinstance(grams, TrainingGrams) else TrainingGrams(grams, diags)
        output = make_output_kernel(self.output_kernel, self.output_gamma)
        Y = np.asarray(Y, dtype=np.float64)
        if weights_from is None:
            weights = self._fit_weights(grams, output, Y)
        else:
            rows = np.asarray(weights_from)
            weights = self._fit_weights(grams.subset(rows), output, Y[rows])
        return self.combined_block(grams, weights), weights

    def combined_block(self, grams, weights, rows=None, cols=None):
        """Combine the normalized base Grams into ``sum_k w_k Kn_k`` (input Gaussian with ``input_gamma``).

        Parameters
        ----------
        grams : TrainingGrams
            Normalized base Grams and raw diagonals of the training spectra.
        weights : ndarray of shape (n_kernels,)
            Kernel weights.
        rows, cols : ndarray of int or slice, optional
            Positions in ``grams`` (all by default).

        Returns
        -------
        K : ndarray of shape (n_rows, n_cols)
            The combined block on ``rows x cols``.
        """
        gamma, diags = self.input_gamma, None
        if gamma is not None:
            da = self._combined_unit_diag(grams.diags, weights)
            diags = (da if rows is None else da[rows], da if cols is None else da[cols])
        return grams.combined(weights, rows, cols, gamma=gamma, diags=diags)

    def _check_params(self):
        owner = type(self).__name__
        check_positive_scalar(self.alpha, "alpha", owner)
        if self.input_gamma is not None:
            check_positive_scalar(self.input_gamma, "input_gamma", owner)
        if self.output_kernel not in OUTPUT_KERNELS:
            raise ValueError(f"The 'output_kernel' parameter of {owner} must be one of {OUTPUT_KERNELS}. "
                             f"Got {self.output_kernel!r} instead.")
        self._check_prior_params()

    def _check_prior_params(self):
        # also where scoring reads them: set_params after fit (as ``identify --prior-weight`` does) skips fit's check
        owner = type(self).__name__
        check_nonnegative_scalar(self.prior_weight, "prior_weight", owner)
        if isinstance(self.prior_neighbors, bool) or not isinstance(self.prior_neighbors, (int, np.integer)) \
                or self.prior_neighbors < 1:
            raise ValueError(f"The 'prior_neighbors' parameter of {owner} must be a positive int. "
                             f"Got {self.prior_neighbors!r} instead.")

    def _fit_weights(self, grams, output, Y):
        m = grams.n_kernels
        if isinstance(self.weights, str):
            if self.weights == "uniform" or m == 1:
                return np.full(m, 1.0 / m)
            if self.weights == "alignf":
                return alignf_gram_weights(grams, output(Y, working_memory=self.working_memory))
            raise ValueError(f"The 'weights' parameter of MetaboliteIdentifier must be 'alignf', 'uniform' or "
                             f"{m} non-negative floats. Got {self.weights!r} instead.")
        w = np.asarray(self.weights, dtype=np.float64)
        if w.shape != (m,) or np.any(w < 0) or not w.sum() > 0:
            raise ValueError(f"The 'weights' parameter of MetaboliteIdentifier must be {m} non-negative floats "
                             f"with a positive sum. Got {self.weights!r} instead.")
        return w / w.sum()

    @staticmethod
    def _unit_diag(raw):
        return (raw > 0).astype(np.float64)

    def _combined_unit_diag(self, raw_diags, weights):
        """``sum_k w_k [raw_k > 0]``: the combined kernel's diagonal of normalized base kernels."""
        return sum(w * self._unit_diag(d) for w, d in zip(weights, raw_diags, strict=True))

    def test_kernel(self, spectra):
        """Compute the combined input kernel between query spectra and the training spectra, and its diagonal.

        The weighted base kernels are summed into one array as each is computed (bit-identical to summing the
        list of all of them), so one query-by-training block per kernel is never held at once.

        Parameters
        ----------
        spectra : Spectra of length m
            Query spectra.

        Returns
        -------
        K : ndarray of shape (m, n_train)
            The combined kernel between queries and training spectra.
        diag : ndarray of shape (m,)
            The combined kernel's ``k(x, x)`` of each query (see :meth:`finish_test_kernel`).
        """
        check_is_fitted(self, "iokr_")
        if not isinstance(spectra, Spectra):
            raise TypeError(f"'spectra' must be a Spectra object, got {type(spectra).__name__}.")
        test_diags = []

        def weighted_blocks():  # one base block computed at a time, dropped once added
            for k, w in enumerate(self.weights_):
                G, d = self.base_test_gram(k, spectra)
                test_diags.append(d)
                yield w, G
                del G

        K = weighted_sum(weighted_blocks())
        return self.finish_test_kernel(K, test_diags)

    def base_test_gram(self, k, spectra):
        """Compute the normalized Gram of one base kernel between query spectra and the training spectra.

        Parameters
        ----------
        k : int
            Position of the base kernel in ``base_kernels_``.
        spectra : Spectra of length m
            Query spectra.

        Returns
        -------
        K : ndarray of shape (m, n_train)
            Cosine-normalized kernel values (0 for a spectrum whose raw self-similarity is 0).
        unit_diag : ndarray of shape (m,)
            The queries' normalized self-similarities: 1.0, or 0.0 where the raw one is 0.
        """
        K, d, _ = normalized_gram(self.base_kernels_[k], spectra, self.train_spectra_,
                                  diag_b=self.train_raw_diags_[k], working_memory=self._gram_memory())
        return K, self._unit_diag(d)

    def finish_test_kernel(self, K, test_unit_diags):
        """Finish :meth:`test_kernel`'s ``(K, diag)`` from the weighted sum of the normalized base test Grams.

        Parameters
        ----------
        K : ndarray of shape (m, n_train)
            ``sum_k w_k Kn_k`` over the base kernels, with the fitted weights; replaced, not modified, under
            ``input_gamma``.
        test_unit_diags : list of ndarray of shape (m,)
            The queries' unit diagonals, one per base kernel (:meth:`base_test_gram`).

        Returns
        -------
        K : ndarray of shape (m, n_train)
            The combined test kernel: ``K`` itself, or its input Gaussian when ``input_gamma`` is set.
        diag : ndarray of shape (m,)
            The combined kernel's ``k(x, x)``: ``sum_k w_k d_k``, or ones under ``input_gamma``.
        """
        diag = sum(w * d for w, d in zip(self.weights_, test_unit_diags, strict=True))
        if self.input_gamma is not None:
            K = input_gaussian(K, diag, self._combined_unit_diag(self.train_raw_diags_, self.weights_),
                               self.input_gamma)
            diag = np.ones_like(diag)
        return K, diag

    def scoring_budget(self):
        """Return the working memory of candidate scoring, here and in the hold-out rankings of the cross-validation.

        Returns
        -------
        budget : int or float
            MiB: the model's ``working_memory`` when set, else the global budget capped at
            :data:`SCORING_WORKING_MEMORY`.
        """
        if self.working_memory is not None:
            return self.working_memory
        return min(get_config()["working_memory"], SCORING_WORKING_MEMORY)

    def score_sets(self, spectra, candidate_sets, *, test_kernel=None):
        """Score every candidate of every query (higher is better).

        Parameters
        ----------
        spectra : Spectra of length m
            Query spectra.
        candidate_sets : CandidateSets with m queries, or list of m arrays (n_q, p) of fingerprints
            The candidates of each query, in the order their scores are returned.
        test_kernel : tuple, optional
            Output of :meth:`test_kernel` (to reuse it).

        Returns
        -------
        scores : list of m ndarrays
            Per query, one score per candidate (shape (n_q,)), in the query's candidate order; with
            ``prior_weight > 0`` the structure prior term is included.
        """
        check_is_fitted(self, "iokr_")
        self._check_prior_params()
        K, diag = self.test_kernel(spectra) if test_kernel is None else test_kernel
        sets = candidate_sets if isinstance(candidate_sets, CandidateSets) else \
            CandidateSets.from_arrays(candidate_sets)
        # The prior is read from the candidates' output-kernel block against the training structures, which the
        # scoring computes anyway; a linear output kernel has no such block, so its prior is computed apart.
        in_scoring = self.prior_weight > 0 and self.output_kernel != "linear"
        term = self._prior_term if in_scoring else None
        with config_context(working_memory=self.scoring_budget()):
            rankings = self.iokr_.rank(K, sets, input_diag=diag, candidate_term=term)
        prior = self.structure_prior(sets.pool) if self.prior_weight > 0 and not in_scoring else None
        out = []
        for q, r in enumerate(rankings):
            s = np.full(r.n_candidates, -np.inf)
            s[r.order] = r.scores
            if prior is not None:
                s += self.prior_weight * prior[sets.indices[q]]
            out.append(s)
        return out

    def _prior_term(self, cross):
        """``prior_weight`` x the prior of candidates from their raw output-kernel block ``cross`` (n_c, n_train)."""
        return self.prior_weight * top_mean(cross, int(self.prior_neighbors))

    def structure_prior(self, fingerprints, n_neighbors=None, *, leave_self_out=None):
        """Compute each structure's mean output-kernel similarity to its ``prior_neighbors`` nearest training ones.

        This is the structure prior that ``prior_weight`` scales in :meth:`score_sets`.

        Parameters
        ----------
        fingerprints : ndarray, CountFeatures or PackedBinaryFeatures of shape (n, n_output_features)
            Fingerprints of the structures.
        n_neighbors : int or sequence of int, optional
            Instead of ``prior_neighbors`` (a sequence: one row per value, from one pass; for model selection).
        leave_self_out : array-like of bool, shape (n,), optional
            Rows that are training structures of this model: their own entry is left out of their neighbours (the
            prior they would have if they were not training structures; for calibration on training structures).
            An int ``n_neighbors`` only.

        Returns
        -------
        prior : ndarray of shape (n,), or (len(n_neighbors), n)
            The mean similarity per structure (one row per value of a sequence ``n_neighbors``).
        """
        check_is_fitted(self, "iokr_")
        if n_neighbors is None:
            self._check_prior_params()
        kernel = make_output_kernel(self.output_kernel, self.output_gamma)
        k = self.prior_neighbors if n_neighbors is None else n_neighbors
        prior = neighbour_similarity(kernel, fingerprints, self.train_outputs_, k,
                                     working_memory=self.scoring_budget())
        if leave_self_out is None:
            return prior
        mask = np.asarray(leave_self_out)
        if mask.dtype != bool or mask.shape != (prior.shape[-1],):
            raise ValueError(f"'leave_self_out' must be one bool per row ({prior.shape[-1]}), got an array of "
                             f"dtype {mask.dtype} and shape {mask.shape}.")
        if not mask.any():
            return prior
        if np.ndim(k) != 0:
            raise ValueError(f"'leave_self_out' needs an int 'n_neighbors'; got n_neighbors={k!r}.")
        # the mean of the m largest values includes the row's own similarity (the largest one a normalized kernel
        # gives), so the others' mean is (m * mean - own) / (m - 1)
        m = min(int(k) + 1, self.train_outputs_.shape[0])
        rows = np.flatnonzero(mask)
        own = kernel.diag(np.asarray(fingerprints[rows], dtype=np.float64))
        with_self = neighbour_similarity(kernel, fingerprints[rows], self.train_outputs_, m,
                                         working_memory=self.scoring_budget())
        prior[rows] = (m * with_self - own) / (m - 1) if m > 1 else 0.0
        return prior

"""Kernels on word-position matrices of contexts, computed on sparse data (Pahikkala et al. 2009).

Every kernel here is linear in a transformed word-position matrix: with a word transformation ``W`` and a positional
transformation ``P``, ``phi(X) = W X P`` and

    k(X, Z) = <W X P, W Z P>_F = tr(X^T W_hat Z P_hat),   W_hat = W^T W,  P_hat = P P^T.

In the flattened (word-major) layout of :class:`~iokr.text.ContextFeaturizer`, ``k(x, z) = x^T (W_hat kron P_hat) z``.
The kernels differ in ``P_hat`` (see :mod:`iokr.text._positional`) and in ``W_hat``: the identity, or
``(1 - mix) I + mix E E^T`` with word vectors ``E`` learned from unlabeled text (:class:`CooccurrenceLSA`).

Inputs are CSR matrices of shape (n_contexts, n_words * n_positions) (dense arrays are accepted and converted). The
identity-word part is ``A_s B^T`` with the sparse ``A_s = A (I kron P_hat)`` (``nnz(A) * n_positions`` entries); the
latent part projects each context to ``E^T X`` (n_positions x n_components, dense) first. Because the kernels are
linear, a model ``f = sum_i a_i k(., x_i)`` is the single input-space vector ``w = (W_hat kron P_hat) X^T a`` and
``f(x) = x^T w`` costs ``nnz(x)`` operations (:meth:`ContextKernel.primal_weights`; thesis section 2.1.2).
"""

from __future__ import annotations

import numbers

import numpy as np
import scipy.sparse as sp

from .._validation import check_array_2d
from ..kernels import Kernel
from ._contexts import check_window, context_offsets
from ._positional import (
    bag_of_words_gram,
    contextual_weighting_gram,
    one_parameter_gram,
    psd_factor,
    word_position_gram,
)


def _spread(A, M, n_pos, n_words):
    """``A (I_{n_words} kron M)`` for CSR ``A`` (n, n_words * n_pos) and dense ``M`` (n_pos, m), as CSR (n, n_words * m)."""
    coo = A.tocoo()
    m = M.shape[1]
    word, pos = np.divmod(coo.col.astype(np.int64), n_pos)
    vals = coo.data[:, None] * M[pos]
    cols = word[:, None] * m + np.arange(m)[None, :]
    rows = np.broadcast_to(coo.row[:, None], vals.shape)
    keep = vals != 0
    out = sp.csr_matrix((vals[keep], (rows[keep], cols[keep])), shape=(A.shape[0], n_words * m))
    out.sum_duplicates()
    return out


def _embed(A, E, n_pos):
    """``E^T X_i`` of every context: (n, n_pos, n_components), from CSR ``A`` and word vectors ``E`` (n_words, r)."""
    coo = A.tocoo()
    word, pos = np.divmod(coo.col.astype(np.int64), n_pos)
    S = sp.csr_matrix((coo.data, (coo.row.astype(np.int64) * n_pos + pos, word)),
                      shape=(A.shape[0] * n_pos, E.shape[0]))
    return np.asarray(S @ E).reshape(A.shape[0], n_pos, E.shape[1])


class ContextKernel(Kernel):
    """Base class of the context kernels: ``k(X, Z) = tr(X^T W_hat Z P_hat)`` on sparse word-position matrices.

    Subclasses set ``window`` and implement :meth:`position_gram`; :class:`TransformedContextKernel` also sets a word
    transformation. All blocks, diagonals, explicit features and primal weights are computed from the sparse inputs.
    The kernel's ``window`` must be the featurizer's: a mismatch is reported when the column count is not a multiple
    of ``2 * window``, but cannot be detected when it happens to be one.
    """

    has_explicit_features = True
    # A sparse product block plus the dense copy of it.
    temporaries_per_entry = 2

    def position_gram(self):  # pragma: no cover - abstract
        """``P_hat`` of shape (n_positions, n_positions), symmetric PSD."""
        raise NotImplementedError

    def _word_terms(self):
        """Word vectors ``E`` (or None) and their weight ``mix`` in ``W_hat = (1 - mix) I + mix E E^T``."""
        return None, 0.0

    @property
    def n_positions(self):
        return 2 * check_window(self.window, type(self).__name__)

    @property
    def offsets(self):
        return context_offsets(check_window(self.window, type(self).__name__))

    # -- validation ----------------------------------------------------------------------------------------
    def validate(self, X, name):
        owner = type(self).__name__
        n_pos = self.n_positions
        if sp.issparse(X):
            if X.ndim != 2:
                raise ValueError(f"'{name}' must be a 2-D sparse matrix, got {X.ndim} dimensions.")
            X = sp.csr_matrix(X, dtype=np.float64)
            if X.shape[0] == 0:
                raise ValueError(f"'{name}' must have at least one row (context), got shape {X.shape}.")
            if X.data.size and not np.isfinite(X.data).all():
                raise ValueError(f"'{name}' contains NaN or infinity.")
            if not X.has_canonical_format:
                X = X.copy()
                X.sum_duplicates()
        else:
            X = sp.csr_matrix(check_array_2d(X, name).astype(np.float64, copy=False))
        if X.shape[1] == 0 or X.shape[1] % n_pos:
            raise ValueError(
                f"{owner}: '{name}' has {X.shape[1]} columns, which is not n_words * n_positions with "
                f"n_positions = 2 * window = {n_pos}; featurize with ContextFeaturizer(window={self.window})."
            )
        E, _ = self._word_terms()
        if E is not None and E.shape[0] != X.shape[1] // n_pos:
            raise ValueError(f"{owner}: 'word_embedding' has {E.shape[0]} rows but '{name}' has "
                             f"{X.shape[1] // n_pos} words; learn it on the featurizer's vocabulary.")
        return X

    def _checked_gram(self):
        G = np.asarray(self.position_gram(), dtype=np.float64)
        n_pos = self.n_positions
        if G.shape != (n_pos, n_pos):
            raise ValueError(f"{type(self).__name__}: the positional gram must have shape ({n_pos}, {n_pos}), "
                             f"got {G.shape}.")
        return G

    # -- kernel ----------------------------------------------------------------------------------------------
    def compute(self, A, B):
        G = self._checked_gram()
        E, mix = self._word_terms()
        n_pos = self.n_positions
        n_words = A.shape[1] // n_pos
        K = np.zeros((A.shape[0], B.shape[0]))
        if mix < 1.0:
            K += (1.0 - mix) * (_spread(A, G, n_pos, n_words) @ B.T).toarray()
        if mix > 0.0:
            ZA, ZB = _embed(A, E, n_pos), _embed(B, E, n_pos)
            T = np.einsum("ipr,pq->iqr", ZA, G).reshape(A.shape[0], -1)
            K += mix * (T @ ZB.reshape(B.shape[0], -1).T)
        return K

    def compute_diag(self, A):
        G = self._checked_gram()
        E, mix = self._word_terms()
        n_pos = self.n_positions
        d = np.zeros(A.shape[0])
        if mix < 1.0:
            spread = _spread(A, G, n_pos, A.shape[1] // n_pos)
            d += (1.0 - mix) * np.asarray(spread.multiply(A).sum(axis=1)).ravel()
        if mix > 0.0:
            Z = _embed(A, E, n_pos)
            d += mix * np.einsum("iqr,iqr->i", np.einsum("ipr,pq->iqr", Z, G), Z)
        return d

    def compute_features(self, A):
        """Explicit features ``vec(W X P)`` as CSR (n, n_words * r_P [+ n_components * r_P])."""
        G = self._checked_gram()
        E, mix = self._word_terms()
        n_pos = self.n_positions
        P = psd_factor(G, f"{type(self).__name__}.position_gram()")
        parts = []
        if mix < 1.0:
            parts.append(np.sqrt(1.0 - mix) * _spread(A, P, n_pos, A.shape[1] // n_pos))
        if mix > 0.0:
            Z = _embed(A, E, n_pos)
            latent = np.einsum("ipr,pk->ikr", Z, P).reshape(A.shape[0], -1)
            parts.append(sp.csr_matrix(np.sqrt(mix) * latent))
        return sp.hstack(parts, format="csr")

    def primal_weights(self, X, dual_coef):
        """Input-space weights ``w = (W_hat kron P_hat) X^T a``, so that ``sum_i a_i k(x, x_i) = x^T w``.

        Parameters
        ----------
        X : sparse matrix of shape (n, n_words * n_positions)
            Training contexts.
        dual_coef : array-like of shape (n,) or (n, n_targets)

        Returns
        -------
        w : ndarray of shape (n_words * n_positions,) or (n_words * n_positions, n_targets)
            Predictions for new contexts ``X_new`` are ``X_new @ w``: a sparse dot product, O(nnz) per context.
        """
        X = self.validate(X, "X")
        a = np.asarray(dual_coef, dtype=np.float64)
        if a.ndim not in (1, 2) or a.shape[0] != X.shape[0]:
            raise ValueError(f"'dual_coef' must have shape ({X.shape[0]},) or ({X.shape[0]}, n_targets), "
                             f"got {a.shape}.")
        a2 = a.reshape(X.shape[0], -1)
        G = self._checked_gram()
        E, mix = self._word_terms()
        n_pos = self.n_positions
        U = np.asarray(X.T @ a2).reshape(-1, n_pos, a2.shape[1])
        w = (1.0 - mix) * np.einsum("vpk,pq->vqk", U, G) if mix < 1.0 else np.zeros_like(U)
        if mix > 0.0:
            latent = np.einsum("rpk,pq->rqk", np.einsum("vr,vpk->rpk", E, U), G)
            w += mix * (E @ latent.reshape(E.shape[1], -1)).reshape(w.shape)
        w = w.reshape(-1, a2.shape[1])
        return w.ravel() if a.ndim == 1 else w


def _check_mix(value, owner):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0.0 <= value <= 1.0:
        raise ValueError(f"The 'word_mix' parameter of {owner} must be a float in [0, 1]. Got {value!r} instead.")
    return float(value)


class BagOfWordsKernel(ContextKernel):
    """Bag of words of the window: ``k(X, Z) = sum_w c_w(X) c_w(Z)`` with ``c_w`` the count of word ``w``.

    Parameters
    ----------
    window : int, default=5
        Must match the featurizer's.
    """

    def __init__(self, window=5):
        self.window = window

    def position_gram(self):
        return bag_of_words_gram(self.offsets)


class ContextualWeightingKernel(ContextKernel):
    """Distance-weighted bag of words (Pahikkala et al. 2005a, paper I of the thesis).

    A word at distance ``d`` from the target counts ``v(d) = d^-decay + floor``;
    ``k(X, Z) = sum_w (sum_p X[w, p] v_p)(sum_q Z[w, q] v_q)``.

    Parameters
    ----------
    window : int, default=5
    decay : float, default=1.5
        Power of the decay with the distance (>= 0; 0 gives a constant weight).
    floor : float, default=0.025
        Weight added at every distance (>= 0).

    Notes
    -----
    The defaults are the best linear-kernel values (lambda = 1.5, beta = 0.025) shown in paper I, Fig. 6; the thesis
    does not spell out the weighting formula, so its exact form here (power decay plus floor) is our reading.
    """

    def __init__(self, window=5, decay=1.5, floor=0.025):
        self.window = window
        self.decay = decay
        self.floor = floor

    def position_gram(self):
        return contextual_weighting_gram(self.offsets, self.decay, self.floor)


class WordPositionKernel(ContextKernel):
    """Word-position kernel (Pahikkala et al. 2005b, paper II): distance weights and mutual positions.

    ``k(X, Z) = sum_{w, p, q} X[w, p] Z[w, q] v_p v_q exp(-theta (o_p - o_q)^2)``: a word shared by two contexts
    counts more when both occurrences are near the target (``v``) and near each other (``theta``).
    ``theta = 0`` is :class:`ContextualWeightingKernel`; ``theta = inf`` matches exact positions only.

    Parameters
    ----------
    window : int, default=5
    decay, floor : float, default=1.5, 0.025
        As in :class:`ContextualWeightingKernel`.
    theta : float, default=0.5
        Sharpness of the mutual-position match, in [0, inf].
    """

    def __init__(self, window=5, decay=1.5, floor=0.025, theta=0.5):
        self.window = window
        self.decay = decay
        self.floor = floor
        self.theta = theta

    def position_gram(self):
        return word_position_gram(self.offsets, self.decay, self.floor, self.theta)


class TransformedContextKernel(ContextKernel):
    """The general framework of paper III: ``k(X, Z) = <W X P, W Z P>_F`` with both transformations.

    Parameters
    ----------
    window : int, default=5
    theta : float, default=0.3
        The one parameter of the positional transformation
        ``P_hat[p, q] = exp(-theta (|o_p| + |o_q| + |o_p - o_q|))`` (used when ``positional`` is None).
    word_embedding : ndarray of shape (n_words, n_components), optional
        Unit-norm word vectors (e.g. :class:`CooccurrenceLSA` ``.embedding_``) on the featurizer's vocabulary.
    word_mix : float, default=0.0
        ``W_hat = (1 - word_mix) I + word_mix E E^T``; 0 ignores ``word_embedding``.
    positional : ndarray of shape (n_positions, n_positions), optional
        Any symmetric PSD ``P_hat`` instead of the one-parameter family.
    """

    def __init__(self, window=5, theta=0.3, word_embedding=None, word_mix=0.0, positional=None):
        self.window = window
        self.theta = theta
        self.word_embedding = word_embedding
        self.word_mix = word_mix
        self.positional = positional

    def position_gram(self):
        if self.positional is None:
            return one_parameter_gram(self.offsets, self.theta)
        G = np.asarray(self.positional, dtype=np.float64)
        psd_factor(G, "positional")  # validates symmetry and PSD
        return G

    def _word_terms(self):
        owner = type(self).__name__
        mix = _check_mix(self.word_mix, owner)
        if mix == 0.0:
            return None, 0.0
        if self.word_embedding is None:
            raise ValueError(f"{owner}: 'word_mix' = {mix} > 0 needs 'word_embedding' (n_words, n_components).")
        E = np.asarray(self.word_embedding, dtype=np.float64)
        if E.ndim != 2 or not np.isfinite(E).all():
            raise ValueError(f"{owner}: 'word_embedding' must be a finite 2-D array, got shape {E.shape}.")
        return E, mix

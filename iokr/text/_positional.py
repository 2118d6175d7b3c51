"""Positional transformations: positive semidefinite similarities ``P_hat`` between the positions of a context.

A positional transformation ``P`` (n_positions x n_out) maps the word-position matrix ``X`` to ``X P``; the kernels
only need ``P_hat = P P^T`` (n_positions x n_positions), so each transformation is given here by ``P_hat`` as a
function of the offsets ``-window .. -1, 1 .. window`` (Pahikkala et al. 2009; thesis section 2.1.2):

- bag of words: ``P_hat = 1 1^T`` (every position is the same);
- contextual weighting (paper I): ``P_hat = v v^T`` with ``v(d) = d^-decay + floor`` at distance ``d = |offset|``;
- word-position kernel (paper II): ``P_hat[p, q] = v(p) v(q) exp(-theta (offset_p - offset_q)^2)``: besides the
  distance weighting, a word seen at nearby mutual positions in two contexts counts, more the closer they are;
- one-parameter transformation (the paper III framework): ``P_hat[p, q] = exp(-theta (|o_p| + |o_q| + |o_p - o_q|))``.

The one-parameter form is ours, written for the framework of paper III (the thesis gives its aim, not its formula):
one ``theta`` both decays the weight with the distance and sharpens the positional match. It is PSD as the Schur
product of the rank-one ``exp(-theta|o_p|) exp(-theta|o_q|)`` and the Laplacian kernel ``exp(-theta|o_p - o_q|)``;
on one side of the target it equals ``exp(-2 theta max(|o_p|, |o_q|))``, the feature map of nested windows
``|offset| <= r`` with geometric weights; ``theta = 0`` is the bag of words, large ``theta`` keeps the adjacent words.
"""

from __future__ import annotations

import numbers

import numpy as np


def _check_nonneg(value, name, owner, allow_inf=False):
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and value >= 0 and (
        allow_inf or np.isfinite(value)) and not np.isnan(value)
    if not ok:
        rng = "[0, inf]" if allow_inf else "[0, inf)"
        raise ValueError(f"The '{name}' parameter of {owner} must be a float in the range {rng}. Got {value!r} instead.")
    return float(value)


def distance_weights(offsets, decay, floor, owner="ContextualWeightingKernel"):
    """Weights ``|offset|^-decay + floor`` of the positions, shape (n_positions,)."""
    decay = _check_nonneg(decay, "decay", owner)
    floor = _check_nonneg(floor, "floor", owner)
    return np.abs(np.asarray(offsets, dtype=np.float64)) ** -decay + floor


def bag_of_words_gram(offsets):
    """``P_hat = 1 1^T``: every position counts the same."""
    n = len(offsets)
    return np.ones((n, n))


def contextual_weighting_gram(offsets, decay, floor):
    """``P_hat = v v^T`` with ``v = distance_weights(offsets, decay, floor)`` (paper I)."""
    v = distance_weights(offsets, decay, floor)
    return np.outer(v, v)


def word_position_gram(offsets, decay, floor, theta):
    """``P_hat[p, q] = v_p v_q exp(-theta (o_p - o_q)^2)`` (paper II); ``theta=inf`` matches exact positions only."""
    theta = _check_nonneg(theta, "theta", "WordPositionKernel", allow_inf=True)
    v = distance_weights(offsets, decay, floor, "WordPositionKernel")
    o = np.asarray(offsets, dtype=np.float64)
    diff2 = (o[:, None] - o[None, :]) ** 2
    mutual = (diff2 == 0).astype(np.float64) if np.isinf(theta) else np.exp(-theta * diff2)
    return v[:, None] * mutual * v[None, :]


def one_parameter_gram(offsets, theta):
    """``P_hat[p, q] = exp(-theta (|o_p| + |o_q| + |o_p - o_q|))`` (paper III framework, see module notes)."""
    theta = _check_nonneg(theta, "theta", "TransformedContextKernel")
    o = np.asarray(offsets, dtype=np.float64)
    return np.exp(-theta * (np.abs(o)[:, None] + np.abs(o)[None, :] + np.abs(o[:, None] - o[None, :])))


def psd_factor(gram, name="positional gram", rtol=1e-12):
    """A factor ``P`` (n, r) with ``P P^T = gram``, from the eigendecomposition, dropping null directions.

    Raises ``ValueError`` when ``gram`` is not symmetric positive semidefinite (to a relative tolerance).
    """
    gram = np.asarray(gram, dtype=np.float64)
    if gram.ndim != 2 or gram.shape[0] != gram.shape[1]:
        raise ValueError(f"'{name}' must be a square matrix, got shape {gram.shape}.")
    if not np.isfinite(gram).all():
        raise ValueError(f"'{name}' contains NaN or infinity.")
    scale = max(float(np.abs(gram).max()), np.finfo(np.float64).tiny)
    if np.abs(gram - gram.T).max() > 1e-10 * scale:
        raise ValueError(f"'{name}' must be symmetric.")
    vals, vecs = np.linalg.eigh((gram + gram.T) / 2)
    if vals.min(initial=0.0) < -1e-8 * scale * gram.shape[0]:
        raise ValueError(f"'{name}' must be positive semidefinite; its smallest eigenvalue is {vals.min():.3g}.")
    keep = vals > rtol * max(vals.max(initial=0.0), np.finfo(np.float64).tiny)
    return vecs[:, keep] * np.sqrt(vals[keep])

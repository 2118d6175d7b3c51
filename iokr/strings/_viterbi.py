"""Viterbi decoding of per-position scores with an n-gram language model (perfect segmentation, sec. 6.2)."""

from __future__ import annotations

import numpy as np


def viterbi_decode(emissions, log_transitions, order, lm_weight=1.0):
    """Best symbol sequence for ``sum_i emissions[i, c_i] + lm_weight * log P_LM(c_1 .. c_L, stop)``.

    Parameters
    ----------
    emissions : ndarray of shape (L, A)
        Score of symbol ``c`` at position ``i`` (higher is better), e.g. the regression output for ``c``.
    log_transitions : ndarray of shape ((A + 1) ** (order - 1), A + 1)
        From :meth:`NgramLanguageModel.transition_table` over the same alphabet order.
    order : int
        Order of the language model.
    lm_weight : float
        Weight of the language model against the emissions.

    Returns
    -------
    path : ndarray of shape (L,)
        Symbol ids in ``0..A-1``.
    score : float
        Value of the objective at ``path``.
    """
    emissions = np.asarray(emissions, dtype=np.float64)
    L, A = emissions.shape
    A1 = A + 1
    k = order - 1
    T = lm_weight * np.asarray(log_transitions, dtype=np.float64)
    if T.shape != (A1**k, A1):
        raise ValueError(f"'log_transitions' must have shape {(A1**k, A1)} for A={A} and order={order}, got {T.shape}.")
    start_state = sum(A * A1**i for i in range(k))
    if L == 0:
        return np.zeros(0, dtype=np.int64), float(T[start_state, A])
    if k == 0:
        scores = emissions + T[0, :A]
        path = scores.argmax(axis=1)
        return path, float(scores.max(axis=1).sum() + T[0, A])
    S = A1**k
    rest = A1 ** (k - 1)
    score = np.full(S, -np.inf)
    score[start_state] = 0.0
    back = np.empty((L, rest, A), dtype=np.int64)
    for i in range(L):
        cand = (score[:, None] + T[:, :A]).reshape(A1, rest, A) + emissions[i]
        back[i] = cand.argmax(axis=0)
        best = np.take_along_axis(cand, back[i][None], axis=0)[0]
        score = np.full((rest, A1), -np.inf)
        score[:, :A] = best
        score = score.ravel()
    final = score + T[:, A]
    state = int(final.argmax())
    total = float(final[state])
    path = np.empty(L, dtype=np.int64)
    for i in range(L - 1, -1, -1):
        c = state % A1
        r = state // A1
        path[i] = c
        state = int(back[i, r, c]) * rest + r
    return path, total

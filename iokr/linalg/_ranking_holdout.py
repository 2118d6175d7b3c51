"""Closed-form hold-out of least-squares ranking (RankRLS): leave-query-out, grouped hold-out and leave-pair-out.

The pairwise squared loss within query ``q`` (``l_q`` examples) is ``(y - f)^T L_q (y - f)`` with ``L_q`` the
Laplacian of the complete preference graph, ``l_q I - 1 1^T = l_q C_q`` (or the centering matrix ``C_q`` when each
query's loss is normalized by ``l_q``). With the block square root ``W = L^{1/2} = blockdiag(s_q C_q)``
(:class:`BlockCentering`, ``s_q = sqrt(l_q)`` or 1) the model is kernel ridge regression on the weighted Gram
``G = W K W`` and targets ``z = W y`` (Pahikkala 2008, section 2.3.3).

Whole queries held out (leave-query-out, or grouped k-fold over queries). The other blocks of ``L`` are unchanged,
so the ridge hold-out formula of :mod:`iokr.linalg._holdout` on ``(G, z)`` gives ``W_SS f_S`` of the model trained
without the queries ``S``; per query ``W_qq f_q = s_q C_q f_q``, so dividing by ``s_q`` gives the predictions centered
within each query, all that a within-query ranking sees (:func:`query_holdout_predictions`).

Examples held out of one global query (k-fold, leave-pair-out). The complete-graph loss on ``m`` examples equals
``c_m min_b ||y - f - b 1||^2`` (``c_m = m``, or 1 when normalized): ridge regression with an unpenalized intercept at
regularization ``lambda / c_m``. The model trained on the ``m - h`` remaining examples is therefore the intercept-ridge
model at ``lambda / c_{m-h}``, whose hold-out values are the ridge formula with the intercept solver
``G_inf = lim_{t -> inf} (K + t 1 1^T + mu I)^{-1}`` (:class:`~iokr.linalg.developer.InterceptShift`; on the eigen route the
constant-deflated :class:`~iokr.linalg.EigenPath`). Only the regularization depends on the hold-out size ``h``: one
shift per distinct size, all from one decomposition (:func:`complete_graph_holdout`, :func:`complete_graph_pair_holdout`).
The predictions are those of the intercept model: equal to the retrained ranker's scores up to one offset per hold-out
set, which no ranking within the set sees.
"""

from __future__ import annotations

import numpy as np

from ._holdout import holdout_predictions, pair_holdout_predictions
from ._path import EigenShift


class BlockCentering:
    """``W = blockdiag(s_q C_q)``: per-group centering ``C_q = I - 1 1^T / l_q`` scaled by ``s_q``.

    ``W^2 = L`` is the block Laplacian of complete preference graphs (``s_q = sqrt(l_q)``) or the block centering
    matrix (``s_q = 1``).

    Parameters
    ----------
    groups : ndarray of int, shape (n,)
        Group (query) index of each example, ``0 .. n_groups - 1``, every index used.
    scales : ndarray of shape (n_groups,)
        ``s_q`` per group.

    Attributes
    ----------
    groups : ndarray of shape (n,)
    scales : ndarray of shape (n_groups,)
    counts : ndarray of shape (n_groups,)
        ``l_q``, examples per group.
    """

    def __init__(self, groups, scales):
        self.groups = np.asarray(groups, dtype=np.intp)
        self.scales = np.asarray(scales, dtype=np.float64)
        self.counts = np.bincount(self.groups, minlength=self.scales.size)
        if self.groups.ndim != 1 or self.counts.size != self.scales.size or not self.counts.all():
            raise ValueError(f"'groups' must index {self.scales.size} non-empty groups (one scale each), got "
                             f"{self.counts.size} groups with counts {self.counts.tolist()[:10]}.")

    @classmethod
    def complete_graphs(cls, groups, normalized=False):
        """``W = L^{1/2}`` for complete preference graphs per group (``s_q = sqrt(l_q)``, or 1 when normalized)."""
        counts = np.bincount(np.asarray(groups, dtype=np.intp)).astype(np.float64)
        return cls(groups, np.ones(counts.size) if normalized else np.sqrt(counts))

    @property
    def n_groups(self):
        return self.scales.size

    def apply(self, V):
        """``W V`` for ``V`` of shape (n,) or (n, ...): subtract group means, scale by ``s_q``."""
        V = np.asarray(V, dtype=np.float64)
        flat = V.reshape(V.shape[0], -1)
        means = np.zeros((self.n_groups, flat.shape[1]))
        np.add.at(means, self.groups, flat)
        means /= self.counts[:, None]
        return ((flat - means[self.groups]) * self.scales[self.groups][:, None]).reshape(V.shape)

    def sandwich(self, K):
        """``W K W`` (symmetric ``W``), shape (n, n)."""
        return self.apply(self.apply(K).T).T

    def whole_groups(self, rows):
        """True when the examples ``rows`` are a union of whole groups."""
        held = np.bincount(self.groups[rows], minlength=self.n_groups)
        return bool(np.all((held == 0) | (held == self.counts)))


def query_holdout_predictions(solver, centering, y, holdouts):
    """Hold-out predictions of a query-wise ranker for hold-out sets made of whole queries, centered per query.

    Parameters
    ----------
    solver : EigenShift or CholeskyShift
        Shifted solver of the weighted Gram ``G = W K W`` at ``lambda``.
    centering : BlockCentering
        ``W``.
    y : ndarray of shape (n,)
        Training scores.
    holdouts : list of ndarray of int
        Hold-out sets, each a union of whole queries (leave-query-out: one query each).

    Returns
    -------
    predictions : list of ndarray of shape (|H|,)
        Scores of the model trained without ``H``, centered within each query of ``H``.
    """
    for k, rows in enumerate(holdouts):
        if not centering.whole_groups(rows):
            raise ValueError(f"'holdouts[{k}]' splits a query: the query-wise closed form needs whole queries "
                             "held out.")
    z = centering.apply(y)
    return [g / centering.scales[centering.groups[rows]]
            for rows, g in zip(holdouts, holdout_predictions(solver, z, holdouts), strict=True)]


def _rest_shift(eigen, alpha, n_rest, normalized):
    """Solver of the intercept model trained on ``n_rest`` examples, on the decomposition of ``G = c_n C K C``."""
    if not eigen.deflate_constant:
        raise ValueError("The complete-graph hold-out needs the constant-deflated EigenPath "
                         "(EigenPath(G, deflate_constant=True)), got a plain one.")
    c_n, c_rest = (1.0, 1.0) if normalized else (float(eigen.n), float(n_rest))
    # Ridge with intercept on K at lambda / c_rest equals it on c_n K at lambda c_n / c_rest (same K / mu).
    return EigenShift(eigen, alpha * c_n / c_rest)


def complete_graph_holdout(eigen, y, holdouts, alpha, *, normalized=False):
    """Hold-out predictions of a global ranker (one complete preference graph) for any hold-out sets.

    Parameters
    ----------
    eigen : EigenPath
        ``EigenPath(G, deflate_constant=True)`` of the weighted Gram ``G = W K W = c_n C K C`` of all ``n`` examples.
    y : ndarray of shape (n,)
        Training scores.
    holdouts : list of ndarray of int
        Hold-out sets (validated with :func:`~iokr.linalg.developer.check_holdouts`).
    alpha : float
        Regularization ``lambda`` of the ranking loss.
    normalized : bool, default=False
        The loss is normalized by the number of examples (``c_m = 1``) instead of the Laplacian (``c_m = m``).

    Returns
    -------
    predictions : list of ndarray of shape (|H|,)
        Scores of the intercept model trained without ``H`` (the ranker's scores up to one offset per set).
    """
    out = [None] * len(holdouts)
    sizes = np.array([rows.size for rows in holdouts])
    for size in np.unique(sizes):
        index = np.flatnonzero(sizes == size)
        solver = _rest_shift(eigen, alpha, eigen.n - int(size), normalized)
        for k, pred in zip(index, holdout_predictions(solver, y, [holdouts[k] for k in index]), strict=True):
            out[k] = pred
    return out


def complete_graph_pair_holdout(eigen, y, first, second, alpha, *, normalized=False):
    """Leave-pair-out predictions of a global ranker: for every pair, the model trained without both examples.

    Parameters
    ----------
    eigen : EigenPath
        As in :func:`complete_graph_holdout`.
    y : ndarray of shape (n,)
    first, second : ndarray of int, shape (p,)
        Pairs of distinct examples (validated with :func:`~iokr.linalg.developer.check_pairs`).
    alpha : float
    normalized : bool, default=False

    Returns
    -------
    predictions : ndarray of shape (p, 2)
        Scores of ``first`` and ``second`` (one offset per pair; compare within a row only).
    """
    solver = _rest_shift(eigen, alpha, eigen.n - 2, normalized)
    return pair_holdout_predictions(solver, y, first, second)

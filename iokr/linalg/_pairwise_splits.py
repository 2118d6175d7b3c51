"""Train/test splits over labelled pairs for the four prediction settings of pairwise learning.

Labels live on pairs ``(rows[e], cols[e])``. The setting says what is new at prediction time: A the pair, B the row,
C the column, D both (Pahikkala et al. 2013; Stock et al. 2018). A split for a setting removes from training every
pair that shares the held-out unit with a test pair, so the model never saw what the setting declares new.

These explicit splits are what the closed-form hold-outs of :mod:`iokr.linalg._kron_holdout` and
:mod:`iokr.linalg._kron_ranking` stand for; they live here, below the estimators, because both the estimators'
``holdout_predictions`` (explicit retraining where no closed form applies) and the searches of
:mod:`iokr.model_selection` use them. They are index bookkeeping only: no kernels, no estimators.
"""

from __future__ import annotations

import numbers

import numpy as np

__all__ = ["SETTINGS", "check_setting", "count_pairwise_splits", "pairwise_splits", "scheme_name"]

#: The prediction settings: new pair (A), new row (B), new column (C), new row and column (D).
SETTINGS = ("A", "B", "C", "D")


def check_setting(setting, n_folds=None):
    """Validate ``setting`` (one of :data:`SETTINGS`) and ``n_folds`` (None or an int >= 2)."""
    if setting not in SETTINGS:
        raise ValueError(f"'setting' must be one of {SETTINGS}, got {setting!r}.")
    if n_folds is not None and (isinstance(n_folds, bool) or not isinstance(n_folds, numbers.Integral)
                                or n_folds < 2):
        raise ValueError(f"'n_folds' must be None (leave one group out) or an int >= 2, got {n_folds!r}.")


def _fold_assigner(n_folds, random_state):
    rng = np.random.default_rng(random_state)

    def fold_of(group_ids):
        """Fold of every entry and the number of folds: groups dealt round-robin after a seeded permutation."""
        _, inverse = np.unique(group_ids, return_inverse=True)
        n_groups = inverse.max() + 1
        k = n_groups if n_folds is None else min(n_folds, n_groups)
        fold = np.empty(n_groups, dtype=np.intp)
        fold[rng.permutation(n_groups)] = np.arange(n_groups) % k
        return fold[inverse.ravel()], k

    return fold_of


def _edge_ids(rows, cols, one_domain):
    """One id per pair (two domains) or per unordered edge ``{i, j}`` (one domain)."""
    lo, hi = (np.minimum(rows, cols), np.maximum(rows, cols)) if one_domain else (rows, cols)
    return lo * (max(rows.max(), cols.max()) + 1) + hi


def _one_domain_splits(setting, rows, cols, fold_of):
    nodes = np.unique(np.concatenate([rows, cols]))
    node_fold = np.full(max(rows.max(), cols.max()) + 1, -1)
    node_fold[nodes], k = fold_of(nodes)
    fr, fc = node_fold[rows], node_fold[cols]
    if setting in "BC":
        for f in range(k):
            out_r, out_c = fr == f, fc == f
            test = (out_r & ~out_c) if setting == "B" else (out_c & ~out_r)
            if test.any():
                yield ~(out_r | out_c), test
        return
    for f in range(k):
        for g in range(f, k):
            touched = (fr == f) | (fr == g) | (fc == f) | (fc == g)
            test = ((fr == f) & (fc == g)) | ((fr == g) & (fc == f))
            if test.any():
                yield ~touched, test


def pairwise_splits(setting, rows, cols, one_domain, n_folds=None, random_state=0):
    """Train/test masks over labelled pairs for a prediction setting, by explicit group splits.

    Parameters
    ----------
    setting : {"A", "B", "C", "D"}
        Held-out unit: pair, row, column, or row and column.
    rows, cols : int ndarray of shape (q,)
        Row and column index of every labelled pair (repeats allowed).
    one_domain : bool
        Rows and columns index the same nodes (symmetric or reciprocal relations).
    n_folds : int, optional
        None: leave one group out. An int: groups dealt round-robin into ``n_folds`` folds after a permutation
        seeded by ``random_state``.
    random_state : int, default=0

    Yields
    ------
    train, test : bool ndarray of shape (q,)
        Disjoint masks; ``train`` never contains a pair sharing the held-out unit with a ``test`` pair.

    Notes
    -----
    Two domains: A groups by pair (repeats together), B by row, C by column, D by (row group, column group): the
    model for a test pair saw neither its row nor its column. One domain (nodes x nodes): A groups by unordered
    edge ``{i, j}``; B / C predict ``(i, j)`` from a model without any pair touching node ``i`` / ``j`` (pairs whose
    other node is held out too are D pairs and left out of B / C); D removes both nodes.
    """
    fold_of = _fold_assigner(n_folds, random_state)
    if setting == "A":
        fold, k = fold_of(_edge_ids(rows, cols, one_domain))
        for f in range(k):
            test = fold == f
            yield ~test, test
        return
    if one_domain:
        yield from _one_domain_splits(setting, rows, cols, fold_of)
        return
    fr, kr = fold_of(rows) if setting in "BD" else (np.zeros(rows.size, np.intp), 1)
    fc, kc = fold_of(cols) if setting in "CD" else (np.zeros(cols.size, np.intp), 1)
    for f in range(kr):
        for g in range(kc):
            out_r = fr == f if setting in "BD" else np.zeros(rows.size, bool)
            out_c = fc == g if setting in "CD" else np.zeros(cols.size, bool)
            test = (fr == f) & (fc == g)
            if test.any():
                yield ~(out_r | out_c), test


def count_pairwise_splits(setting, rows, cols, one_domain, n_folds=None, random_state=0):
    """Number of splits :func:`pairwise_splits` yields, counted without building masks for leave-one-group-out.

    Arguments as :func:`pairwise_splits`. Leave-one-group-out has one split per group that owns a test pair: per
    distinct pair / edge (A), row or column (B / C, one domain: per node with a pair to another node), and per
    distinct pair (two domains) or unordered edge (one domain) in D.
    """
    if n_folds is not None:
        return sum(1 for _ in pairwise_splits(setting, rows, cols, one_domain, n_folds, random_state))
    if setting in "AD":
        return int(np.unique(_edge_ids(rows, cols, one_domain)).size)
    if not one_domain:
        return int(np.unique(rows if setting == "B" else cols).size)
    off = rows != cols
    return int(np.unique((rows if setting == "B" else cols)[off]).size)


def scheme_name(setting, n_folds=None):
    """Short description of a setting's splits, e.g. ``"setting B: leave one row out"``."""
    unit = {"A": "pair", "B": "row", "C": "column", "D": "row and column"}[setting]
    folds = f"{n_folds}-fold over each {unit}" if n_folds else f"leave one {unit} out"
    return f"setting {setting}: {folds}"

"""Seeded splits and tasks of the pairwise baselines beyond Davis (issue 19): KIBA settings B-D and Metz A and C.

- :func:`holdout_nodes`: settings B (new drugs), C (new targets), D (both new) as in Davis's tutorial split: a seeded
  set of drugs and/or targets is held out; training pairs join training drugs and training targets, test pairs join
  the held-out ones (in D the pairs joining a training and a held-out node are in neither).
- :func:`random_pair_parts`: setting A where no published folds exist (Metz): the observed pairs shuffled into six
  equal parts, one test, four for fitting and one for validation (the DeepDTA setting-1 layout used on Davis/KIBA).
- :func:`node_task` / :func:`pair_task`: :class:`experiments.baselines.pairwise.PairTask` from such splits, CV folds
  by :func:`experiments.baselines.pairwise.setting_folds` (the setting's unit held out).
- :func:`load_metz`: Metz pKi (1421 x 156, NaN where unobserved) and the target similarity scaled to unit diagonal.
"""

from __future__ import annotations

import numpy as np

from experiments.baselines.pairwise import EMBED_DIM, PairTask, nystrom_features, setting_folds

#: Fraction of drugs / targets held out in settings B-D (Davis's tutorial split holds out 28/68 and 142/442).
TEST_FRACTION = 1.0 / 3.0
SPLIT_SEED = 1

METZ_Y = "known_drug-target_interaction_affinities_pKi__Metz_et_al.2011.txt"
METZ_TARGET_SIM = "target-target_similarities_WS_normalized__Metz_et_al.2011.txt"


def holdout_nodes(n_drugs, n_targets, setting, test_fraction=TEST_FRACTION, seed=SPLIT_SEED):
    """Training and test drugs and targets of setting B, C or D.

    Returns
    -------
    train_drugs, train_targets, test_drugs, test_targets : ndarray of int
        Sorted node indices; the side a setting does not hold out is all nodes in both.
    """
    if setting not in ("B", "C", "D"):
        raise ValueError(f"'setting' must be one of 'B', 'C', 'D', got {setting!r}.")
    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"'test_fraction' must be in (0, 1), got {test_fraction!r}.")
    rng = np.random.default_rng(seed)
    drugs, targets = rng.permutation(n_drugs), rng.permutation(n_targets)
    n_te_d, n_te_t = max(1, round(test_fraction * n_drugs)), max(1, round(test_fraction * n_targets))
    tr_d, te_d = (np.sort(drugs[n_te_d:]), np.sort(drugs[:n_te_d])) if setting in "BD" else (
        np.arange(n_drugs), np.arange(n_drugs))
    tr_t, te_t = (np.sort(targets[n_te_t:]), np.sort(targets[:n_te_t])) if setting in "CD" else (
        np.arange(n_targets), np.arange(n_targets))
    return tr_d, tr_t, te_d, te_t


def random_pair_parts(n_pairs, n_parts=6, seed=SPLIT_SEED):
    """The pair indices ``0..n_pairs-1`` shuffled (seeded) into ``n_parts`` parts of equal size (+- 1)."""
    return [np.sort(p) for p in np.array_split(np.random.default_rng(seed).permutation(n_pairs), n_parts)]


def pair_task(kernels, features, rows, cols, y, seed=SPLIT_SEED):
    """Setting A from :func:`random_pair_parts`: part 0 is the test set, part 1 validates a fit on parts 2-5."""
    parts = random_pair_parts(rows.size, seed=seed)
    fit = np.sort(np.concatenate(parts[2:]))
    train = np.sort(np.concatenate(parts[1:]))
    return PairTask(kernels, features[0], features[1], rows, cols, y, train, parts[0], ((fit, parts[1]),), "A")


def node_task(kernels, features, rows, cols, y, split, setting, n_folds=3, seed=0):
    """Setting B, C or D on the node split ``split`` (from :func:`holdout_nodes`), ``n_folds``-fold CV holding out
    the setting's unit on the training pairs. ``features``: (drug features, target features) of all nodes."""
    tr_d, tr_t, te_d, te_t = split
    train = np.flatnonzero(np.isin(rows, tr_d) & np.isin(cols, tr_t))
    test = np.flatnonzero(np.isin(rows, te_d) & np.isin(cols, te_t))
    folds = setting_folds(rows, cols, train, setting, n_folds, seed)
    return PairTask(kernels, features[0], features[1], rows, cols, y, train, test, folds, setting)


def kiba_node_tasks(Kd, Kt, Y, settings=("B", "C", "D"), embed_dim=EMBED_DIM):
    """KIBA settings B-D. Tree features: each side's top-``embed_dim`` kernel-PCA coordinates computed from the
    training nodes only (Nystrom extension to the held-out ones)."""
    rows, cols = np.nonzero(~np.isnan(Y))
    tasks = {}
    for setting in settings:
        split = holdout_nodes(*Y.shape, setting)
        features = (nystrom_features(Kd, embed_dim, split[0]), nystrom_features(Kt, embed_dim, split[1]))
        tasks[setting] = node_task((("tanimoto x target-sim", Kd, Kt),), features, rows, cols, Y[rows, cols],
                                   split, setting)
    return tasks


def load_metz(folder):
    """Metz pKi (1421 x 156, NaN unobserved) and the target similarity (percent identity scores) divided by 100,
    symmetrized and clipped to PSD."""
    Y = np.loadtxt(folder / METZ_Y)
    S = np.loadtxt(folder / METZ_TARGET_SIM) / 100.0
    S = 0.5 * (S + S.T)
    vals, vecs = np.linalg.eigh(S)
    return Y, (vecs * np.clip(vals, 0, None)) @ vecs.T


def metz_tasks(Y, Kt, settings=("A", "C"), embed_dim=EMBED_DIM):
    """Metz settings A and C with the identity drug kernel (no drug information exists). Tree features: one-hot drug
    indicators (the identity kernel's feature map; float32, as the trees use) and the target kernel's top-
    ``embed_dim`` kernel-PCA coordinates (training targets only in C)."""
    rows, cols = np.nonzero(~np.isnan(Y))
    y = Y[rows, cols]
    kernels = (("identity x target-sim", np.eye(Y.shape[0]), Kt),)
    onehot = np.eye(Y.shape[0], dtype=np.float32)
    tasks = {}
    for setting in settings:
        if setting == "A":
            tasks["A"] = pair_task(kernels, (onehot, nystrom_features(Kt, embed_dim).astype(np.float32)), rows, cols,
                                   y)
        elif setting == "C":
            split = holdout_nodes(*Y.shape, "C")
            features = (onehot, nystrom_features(Kt, embed_dim, split[1]).astype(np.float32))
            tasks["C"] = node_task(kernels, features, rows, cols, y, split, "C")
        else:
            raise ValueError(f"'settings' of Metz must be 'A' or 'C' (no drug information for B, D), got {setting!r}.")
    return tasks

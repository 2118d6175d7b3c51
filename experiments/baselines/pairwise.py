"""Standard baselines beside KronRLS on drug-target affinities (issue 19), same splits, same CV folds.

Methods (each chooses its hyperparameters by the same folds of the training pairs, by mean validation concordance
index; the test pairs are used once):

- ``kronrls``: :class:`iokr.estimators.kron.KronRLS` on the training pairs (closed form when they fill a complete
  drug x target grid, conjugate gradient otherwise), labels centered on their training mean (no intercept in the
  model); grid: base kernel pair x alpha.
- ``kernel_ridge``: scikit-learn ``KernelRidge(kernel="precomputed")`` on the explicit pair Gram matrix
  ``Kd[r, r'] * Kt[c, c']`` (the Kronecker product kernel restricted to the training pairs), same grid, same centering.
  It is the same model as KronRLS (the unit tests check equal predictions); the Gram matrix of ``q`` pairs takes
  ``8 q^2`` bytes and ``q^3 / 3`` flops to factor, so training pairs are subsampled to ``KRR_MAX_PAIRS`` (seeded).
- ``random_forest`` / ``hist_gradient_boosting``: ``RandomForestRegressor`` / ``HistGradientBoostingRegressor`` on
  the concatenated drug and target feature vectors of each pair (``n_jobs=1``): each side's top-``EMBED_DIM``
  kernel-PCA coordinates (see the task builders); training pairs subsampled to ``TREE_MAX_PAIRS`` (seeded) where
  there are more.

Verdict: KronRLS against the best baseline by test concordance index; a tie is a difference under two bootstrap
standard errors, resampling the setting's held-out unit (pairs in A, test drugs in B, test targets in C, drugs and
targets in D: test pairs that share a drug or target are not independent).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

import numpy as np
from sklearn.ensemble import HistGradientBoostingRegressor, RandomForestRegressor
from sklearn.kernel_ridge import KernelRidge
from sklearn.model_selection import KFold

from iokr.estimators import KronRLS
from iokr.kernels import Gaussian
from iokr.metrics import concordance_index

METHODS = ("kronrls", "kernel_ridge", "random_forest", "hist_gradient_boosting")
NAMES = {"kronrls": "KronRLS", "kernel_ridge": "KernelRidge (pair Gram)", "random_forest": "RandomForest",
         "hist_gradient_boosting": "HistGradientBoosting"}
ALPHAS = tuple(2.0 ** np.arange(-8, 5, 2))
#: KIBA: the runner's KIBA grid (0.1, 1, 10) widened down by one decade (0.1 was chosen at its edge).
KIBA_ALPHAS = (0.01, 0.1, 1.0, 10.0)
# Small grids: the machine is 2 shared cores (a RandomForest with max_features=0.3 on 510 similarity columns took
# 200 s per fit there, HistGradientBoosting with 300 iterations 500 s), hence embedded features and these sizes.
TREE_GRIDS = {
    "random_forest": tuple({"max_features": "sqrt", "min_samples_leaf": leaf} for leaf in (1, 5)),
    "hist_gradient_boosting": tuple({"learning_rate": lr, "max_leaf_nodes": 31} for lr in (0.03, 0.1, 0.3)),
}
RF_TREES = 100
HGB_ITER = 200
#: Dimension of each side's kernel-PCA embedding given to the trees.
EMBED_DIM = 32
KRR_MAX_PAIRS = 3000
TREE_MAX_PAIRS = 20000
#: Conjugate-gradient cap and tolerance of KronRLS on incomplete training pairs (the runner's KIBA settings).
KRON_MAX_ITER = 100
KRON_TOL = 1e-6
N_BOOT = 200


@dataclass(frozen=True)
class PairTask:
    """One prediction setting of one data set.

    Attributes
    ----------
    kernels : tuple of (str, ndarray of shape (n_drugs, n_drugs), ndarray of shape (n_targets, n_targets))
        Candidate base-kernel pairs on all nodes (methods read only training columns).
    drug_features : ndarray of shape (n_drugs, f_d)
    target_features : ndarray of shape (n_targets, f_t)
    rows, cols : ndarray of int, shape (q,)
        Drug and target of every labelled pair.
    y : ndarray of shape (q,)
    train, test : ndarray of int
        Indices of the training and test pairs.
    folds : tuple of (ndarray, ndarray)
        CV folds of the training pairs: (fit, validation) indices into the pairs.
    unit : {"A", "B", "C", "D"}
        The prediction setting (which nodes the test pairs hold out; sets the bootstrap unit).
    """

    kernels: tuple
    drug_features: np.ndarray
    target_features: np.ndarray
    rows: np.ndarray
    cols: np.ndarray
    y: np.ndarray
    train: np.ndarray
    test: np.ndarray
    folds: tuple
    unit: str


def setting_folds(rows, cols, train, setting, n_folds=3, seed=0):
    """CV folds of the training pairs that hold out what ``setting`` holds out.

    A: pairs; B: drugs (all their pairs); C: targets; D: a drug group x target group block as validation, trained on
    the pairs sharing neither a drug nor a target with it (the pairs of other blocks are left out of that fold).
    """
    train = np.asarray(train)
    if setting == "A":
        return tuple((train[f], train[v]) for f, v in KFold(n_folds, shuffle=True, random_state=seed).split(train))
    rng = np.random.default_rng(seed)
    drugs, targets = np.unique(rows[train]), np.unique(cols[train])
    drug_fold = dict(zip(rng.permutation(drugs), np.arange(drugs.size) % n_folds, strict=True))
    target_fold = dict(zip(rng.permutation(targets), np.arange(targets.size) % n_folds, strict=True))
    fd = np.array([drug_fold[d] for d in rows[train]])
    ft = np.array([target_fold[t] for t in cols[train]])
    folds = []
    for k in range(n_folds):
        if setting == "B":
            valid, fit = fd == k, fd != k
        elif setting == "C":
            valid, fit = ft == k, ft != k
        elif setting == "D":
            valid, fit = (fd == k) & (ft == k), (fd != k) & (ft != k)
        else:
            raise ValueError(f"'setting' must be one of 'A', 'B', 'C', 'D', got {setting!r}.")
        folds.append((train[fit], train[valid]))
    return tuple(folds)


def _subsample(index, max_size, seed):
    if max_size is None or index.size <= max_size:
        return index
    return np.sort(np.random.default_rng(seed).choice(index, max_size, replace=False))


def kron_predict(task, params, fit, pred):
    """KronRLS fitted on pairs ``fit`` (labels centered), scores of pairs ``pred``."""
    name, alpha = params
    Kd, Kt = next((kd, kt) for n, kd, kt in task.kernels if n == name)
    r, c, y = task.rows[fit], task.cols[fit], task.y[fit]
    drugs, r_local = np.unique(r, return_inverse=True)
    targets, c_local = np.unique(c, return_inverse=True)
    offset = y.mean()
    K1, K2 = Kd[np.ix_(drugs, drugs)], Kt[np.ix_(targets, targets)]
    if r.size == drugs.size * targets.size:  # a complete grid: closed form
        Y = np.zeros((drugs.size, targets.size))
        Y[r_local, c_local] = y - offset
        model = KronRLS(alpha=alpha).fit(K1, K2, Y)
    else:
        model = KronRLS(alpha=alpha, max_iter=KRON_MAX_ITER, tol=KRON_TOL, solver="cg").fit(
            K1, K2, (r_local, c_local, y - offset))
    test_drugs, pr = np.unique(task.rows[pred], return_inverse=True)
    test_targets, pc = np.unique(task.cols[pred], return_inverse=True)
    return model.predict(Kd[np.ix_(test_drugs, drugs)], Kt[np.ix_(test_targets, targets)], pairs=(pr, pc)) + offset


def pair_gram(Kd, Kt, rows_a, cols_a, rows_b, cols_b):
    """Kronecker pair kernel between pair lists a and b: ``Kd[r_a, r_b] * Kt[c_a, c_b]``."""
    return Kd[np.ix_(rows_a, rows_b)] * Kt[np.ix_(cols_a, cols_b)]


def krr_predict(task, params, fit, pred, max_pairs=KRR_MAX_PAIRS, seed=0, chunk=2000):
    """scikit-learn KernelRidge on the explicit pair Gram matrix of (a subsample of) ``fit``; scores of ``pred``."""
    name, alpha = params
    Kd, Kt = next((kd, kt) for n, kd, kt in task.kernels if n == name)
    fit = _subsample(np.asarray(fit), max_pairs, seed)
    r, c = task.rows[fit], task.cols[fit]
    offset = task.y[fit].mean()
    model = KernelRidge(alpha=alpha, kernel="precomputed").fit(pair_gram(Kd, Kt, r, c, r, c), task.y[fit] - offset)
    pred = np.asarray(pred)
    out = np.empty(pred.size)
    for start in range(0, pred.size, chunk):  # test-by-train Gram in row blocks (bounded memory)
        block = pred[start:start + chunk]
        out[start:start + chunk] = model.predict(pair_gram(Kd, Kt, task.rows[block], task.cols[block], r, c))
    return out + offset


def pair_features(task, index):
    """Concatenated drug and target feature vectors of the pairs ``index``."""
    return np.hstack([task.drug_features[task.rows[index]], task.target_features[task.cols[index]]])


def tree_predict(task, params, fit, pred, kind="random_forest", max_pairs=TREE_MAX_PAIRS, seed=0):
    """Random forest or histogram gradient boosting on pair features of (a subsample of) ``fit``."""
    fit = _subsample(np.asarray(fit), max_pairs, seed)
    if kind == "random_forest":
        model = RandomForestRegressor(n_estimators=RF_TREES, n_jobs=1, random_state=seed, **params)
    elif kind == "hist_gradient_boosting":
        model = HistGradientBoostingRegressor(max_iter=HGB_ITER, early_stopping=False, random_state=seed, **params)
    else:
        raise ValueError(f"'kind' must be 'random_forest' or 'hist_gradient_boosting', got {kind!r}.")
    model.fit(pair_features(task, fit), task.y[fit])
    return model.predict(pair_features(task, pred))


def method_grid(task, method, alphas=ALPHAS):
    """Hyperparameter grid of ``method`` on ``task`` (kernel methods: kernel pair x alpha)."""
    if method in ("kronrls", "kernel_ridge"):
        return tuple((name, float(a)) for name, _, _ in task.kernels for a in alphas)
    return TREE_GRIDS[method]


def method_predictor(method, max_pairs=None, seed=0):
    """``predict(task, params, fit, pred)`` of ``method``; ``max_pairs`` overrides the subsample cap."""
    if method == "kronrls":
        return kron_predict
    if method == "kernel_ridge":
        cap = KRR_MAX_PAIRS if max_pairs is None else max_pairs
        return lambda task, p, f, v: krr_predict(task, p, f, v, max_pairs=cap, seed=seed)
    cap = TREE_MAX_PAIRS if max_pairs is None else max_pairs
    return lambda task, p, f, v: tree_predict(task, p, f, v, kind=method, max_pairs=cap, seed=seed)


def run_method(task, method, *, grid=None, max_pairs=None, seed=0):
    """Choose ``method``'s hyperparameters by the task's folds (mean validation cindex), refit, score the test pairs.

    Returns
    -------
    predicted : ndarray of shape (len(task.test),)
    record : dict
        ``grid``, ``cv_cindex`` (per grid value), ``chosen``, ``cindex`` and ``mse`` (test), ``n_train_pairs``
        (after subsampling), ``seconds`` (selection + refit + prediction).
    """
    grid = method_grid(task, method) if grid is None else grid
    predict = method_predictor(method, max_pairs, seed)
    t0 = time.perf_counter()
    cv = [float(np.mean([concordance_index(task.y[v], predict(task, params, f, v)) for f, v in task.folds]))
          for params in grid]
    chosen = grid[int(np.argmax(cv))]
    predicted = predict(task, chosen, task.train, task.test)
    seconds = time.perf_counter() - t0
    y = task.y[task.test]
    cap = {"kernel_ridge": KRR_MAX_PAIRS}.get(method, TREE_MAX_PAIRS) if max_pairs is None else max_pairs
    n_used = task.train.size if method == "kronrls" else min(task.train.size, cap)
    return predicted, {"grid": [list(g) if isinstance(g, tuple) else g for g in grid], "cv_cindex": cv,
                       "chosen": list(chosen) if isinstance(chosen, tuple) else chosen,
                       "at_grid_edge": bool(len(grid) > 1 and method in ("kronrls", "kernel_ridge")
                                            and chosen[1] in (min(g[1] for g in grid), max(g[1] for g in grid))),
                       "cindex": concordance_index(y, predicted), "mse": float(np.mean((y - predicted) ** 2)),
                       "n_train_pairs": int(n_used), "seconds": seconds}


def bootstrap_cindex_se(y, p1, p2, rows, cols, unit, n_boot=N_BOOT, seed=0):
    """Bootstrap standard error of ``cindex(y, p1) - cindex(y, p2)``, resampling the setting's unit.

    A: pairs; B: drugs (``rows``); C: targets (``cols``); D: drugs and targets independently (a pair's weight is the
    product of its drug's and its target's multiplicity).
    """
    rng = np.random.default_rng(seed)
    diffs = []
    for _ in range(n_boot):
        if unit == "A":
            weight = np.bincount(rng.integers(0, y.size, y.size), minlength=y.size)
        else:
            weight = np.ones(y.size, dtype=np.int64)
            for ids, resampled in ((rows, unit in "BD"), (cols, unit in "CD")):
                if resampled:
                    nodes, local = np.unique(ids, return_inverse=True)
                    weight = weight * np.bincount(rng.integers(0, nodes.size, nodes.size), minlength=nodes.size)[local]
        take = np.repeat(np.arange(y.size), weight)
        diffs.append(concordance_index(y[take], p1[take]) - concordance_index(y[take], p2[take]))
    return float(np.std(diffs, ddof=1))


def pairwise_verdict(task, results, predictions, tie_se=2.0):
    """One line: KronRLS against the best baseline by test cindex (ties within ``tie_se`` bootstrap SEs)."""
    baselines = [m for m in METHODS[1:] if m in results]
    if "kronrls" not in results or not baselines:
        return "not run."
    best = max(baselines, key=lambda m: results[m]["cindex"])
    ours, theirs = results["kronrls"], results[best]
    diff = ours["cindex"] - theirs["cindex"]
    y = task.y[task.test]
    se = bootstrap_cindex_se(y, predictions["kronrls"], predictions[best], task.rows[task.test],
                             task.cols[task.test], task.unit)
    word = "ties with" if abs(diff) <= tie_se * se else ("wins over" if diff > 0 else "loses to")
    ratio = ours["seconds"] / max(theirs["seconds"], 1e-9)
    return (f"KronRLS {word} {NAMES[best]} (cindex {ours['cindex']:.4f} vs {theirs['cindex']:.4f}, {diff:+.4f} +- "
            f"{se:.4f} bootstrap SE; MSE {ours['mse']:.3f} vs {theirs['mse']:.3f}) at {ratio:.2g}x its time "
            f"({ours['seconds']:.1f} s vs {theirs['seconds']:.1f} s)")


# -- tasks ----------------------------------------------------------------------------------------------------------
def deepdta_folds(folder):
    """DeepDTA setting-1 folds: (five training folds, test fold), indices into ``np.nonzero(~isnan(Y))`` order."""
    folds = json.loads((folder / "folds" / "train_fold_setting1.txt").read_text())
    test = np.array(json.loads((folder / "folds" / "test_fold_setting1.txt").read_text()))
    return [np.asarray(f) for f in folds], test


def nystrom_features(K, dim, nodes=None):
    """``K[:, nodes] V diag(s)^-1/2``: the top-``dim`` kernel-PCA coordinates of the ``nodes`` (default: all)."""
    nodes = np.arange(K.shape[0]) if nodes is None else nodes
    s, V = np.linalg.eigh(K[np.ix_(nodes, nodes)])
    keep = np.argsort(s)[::-1][:dim]
    keep = keep[s[keep] > 1e-10 * s.max()]
    return K[:, nodes] @ (V[:, keep] / np.sqrt(s[keep]))


def _median_sqdist(X):
    sq = (X * X).sum(axis=1)
    D = sq[:, None] + sq[None, :] - 2 * X @ X.T
    return float(np.median(D[np.triu_indices(X.shape[0], 1)]))


def davis_kernels(XD, XT, train_drugs, train_targets):
    """Base-kernel candidates on the similarity rows: linear (scaled to unit mean diagonal) and two Gaussians,
    gamma = g / median squared distance between training rows, g in {1, 0.1} (the runner's selection chose these)."""
    Kd, Kt = XD @ XD.T, XT @ XT.T
    kernels = [("linear", Kd / np.mean(np.diag(Kd)), Kt / np.mean(np.diag(Kt)))]
    sd, st = _median_sqdist(XD[train_drugs]), _median_sqdist(XT[train_targets])
    for g in (1.0, 0.1):
        kernels.append((f"gaussian({g:g}/scale)", Gaussian(gamma=g / sd)(XD), Gaussian(gamma=g / st)(XT)))
    return tuple(kernels)


def davis_tasks(XD, XT, Y, splits, deepdta, settings=("A", "B", "C", "D"), n_folds=3, seed=0):
    """Tasks of the four settings on Davis (labels ``Y``, complete).

    A: DeepDTA setting-1 folds (random pairs), validated on the fifth training fold (trained on the other four);
    B-D: the runner's ``davis_splits`` (RLScore's tutorial split), ``n_folds``-fold CV holding out the setting's unit.
    Tree features: the top-``EMBED_DIM`` kernel-PCA coordinates of the linear kernel on each side's similarity rows
    (all nodes, as the similarity rows themselves span all drugs and targets in RLScore's tutorial features).
    """
    rows, cols = np.nonzero(~np.isnan(Y))
    y = Y[rows, cols]
    drug_features, target_features = nystrom_features(XD @ XD.T, EMBED_DIM), nystrom_features(XT @ XT.T, EMBED_DIM)
    tasks = {}
    for setting in settings:
        if setting == "A":
            folds, test = deepdta
            train = np.concatenate(folds)
            cv = ((np.concatenate(folds[:-1]), folds[-1]),)
            tr_d, tr_t = np.unique(rows[train]), np.unique(cols[train])
        else:
            tr_d, tr_t, te_d, te_t = splits[setting]
            train = np.flatnonzero(np.isin(rows, tr_d) & np.isin(cols, tr_t))
            test = np.flatnonzero(np.isin(rows, te_d) & np.isin(cols, te_t))
            cv = setting_folds(rows, cols, train, setting, n_folds, seed)
        tasks[setting] = PairTask(davis_kernels(XD, XT, tr_d, tr_t), drug_features, target_features, rows, cols, y,
                                  train, np.asarray(test), cv, setting)
    return tasks


def kiba_task(Kd, Kt, Y, deepdta, embed_dim=EMBED_DIM):
    """KIBA, setting A on the DeepDTA folds (as the runner's KIBA section): validation on the fifth training fold.
    Tree features: ``embed_dim``-dimensional kernel-PCA embeddings of the drug and target kernels."""
    rows, cols = np.nonzero(~np.isnan(Y))
    folds, test = deepdta
    cv = ((np.concatenate(folds[:-1]), folds[-1]),)
    return PairTask((("tanimoto x target-sim", Kd, Kt),), nystrom_features(Kd, embed_dim),
                    nystrom_features(Kt, embed_dim), rows, cols,
                    Y[rows, cols], np.concatenate(folds), np.asarray(test), cv, "A")


# -- running and reporting ------------------------------------------------------------------------------------------
def run_task(task, methods=METHODS, alphas=ALPHAS, log=print, tree_max_pairs=None):
    """Every method on one task; returns the JSON record (per-method results and the verdict line).

    ``tree_max_pairs`` overrides ``TREE_MAX_PAIRS`` for the tree methods (KernelRidge keeps ``KRR_MAX_PAIRS``).
    """
    results, predictions = {}, {}
    for method in methods:
        cap = tree_max_pairs if method in TREE_GRIDS else None
        predictions[method], results[method] = run_method(task, method, grid=method_grid(task, method, alphas),
                                                          max_pairs=cap)
        r = results[method]
        log(f"  {method}: cindex {r['cindex']:.4f} mse {r['mse']:.4f} chosen {r['chosen']} ({r['seconds']:.1f} s)")
    return {"n_train": int(task.train.size), "n_test": int(task.test.size), "n_folds": len(task.folds),
            "results": results, "verdict": pairwise_verdict(task, results, predictions)}


def _chosen(value):
    if isinstance(value, dict):
        return ", ".join(f"{k} {v}" for k, v in value.items())
    return f"{value[0]}, log2(alpha) {np.log2(value[1]):g}"


def baseline_markdown(section):
    """Markdown lines of the runner's ``baselines`` section (tables, then one verdict line per data set/setting)."""
    lines = ["", ("## Baselines beside KronRLS (issue 19): same splits, same CV folds, pKd (Davis) / KIBA scores / "
              "pKi (Metz)"), "",
             section["protocol"], "",
             ("| data | setting | train / test pairs | method | chosen | CV cindex | test cindex | test MSE | "
              "pairs fitted | seconds |"), "|---|---|---|---|---|---|---|---|---|---|"]
    verdicts = []
    for data, settings in section["datasets"].items():
        for setting, entry in settings.items():
            for method, r in entry["results"].items():
                edge = " (grid edge)" if r["at_grid_edge"] else ""
                lines.append(f"| {data} | {setting} | {entry['n_train']} / {entry['n_test']} | {NAMES[method]} | "
                             f"{_chosen(r['chosen'])}{edge} | {max(r['cv_cindex']):.4f} | {r['cindex']:.4f} | "
                             f"{r['mse']:.4f} | {r['n_train_pairs']} | {r['seconds']:.1f} |")
            verdicts.append(f"- **{data} {setting}**: {entry['verdict']}")
    lines += ["", "Verdicts (KronRLS against the best baseline by test cindex):", "", *verdicts]
    if section.get("not_run"):
        lines += ["", section["not_run"]]
    return lines

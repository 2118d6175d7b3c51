"""Real-data checks of the pairwise and ranking estimators:
``python -m benchmarks.realdata_pairwise --data /work/shared/data [--output reports]``.

Writes ``reports/pairwise.json`` and ``reports/pairwise.md`` (``--update`` keeps the sections skipped in this run):

1. Davis (68 drugs x 442 kinases, complete Kd labels): RLScore's tutorial outputs ``kron_rls1..4.out`` (KronRLS with a
   linear kernel on the similarity rows, settings A-D) and ``two_step1..4.out`` (TwoStepRLS) reproduced regparam by
   regparam, then lambda and kernel chosen by the closed-form cross-validation of each setting on the training part.
   Conditional ranking of targets per drug (ConditionalRankRLS vs KronRLS), lambda by each setting's closed-form CV,
   with spot checks of the closed forms against explicit refits.
2. Boston housing: all of RLScore's RankRLS outputs: ``ranking1.out`` (GlobalRankRLS), ``ranking2.out`` (leave-pair-out
   selection), ``pairwise_ranking.out`` (PPRankRLS on 1000 sampled preferences: PreferenceRankRLS on the same pairs)
   and ``ranking3..5.out`` (RLScore's seeded 5-fold split, closed-form fold hold-outs).
3. Rock-paper-scissors tournaments (synthetic, section 6.1 of Pahikkala et al. 2013): ordinary vs reciprocal
   Kronecker kernel, regression vs ranking loss.
4. Yamanishi nr / gpcr / ic: AUC and AUPR of KronRLS under the four settings by closed-form cross-validation.
5. KIBA (incomplete labels): KronRLS by conjugate gradient, DeepDTA folds (needs RDKit).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import time
from collections import OrderedDict
from pathlib import Path

import numpy as np
from sklearn.metrics import average_precision_score
from threadpoolctl import threadpool_limits

from benchmarks import _pairwise_baselines as baselines
from benchmarks import _pairwise_splits as splits
from benchmarks._harness import write_json, write_keeping_section
from iokr.estimators import ConditionalRankRLS, KronRLS, TwoStepRLS
from iokr.estimators.rankrls import PreferenceRankRLS, RankRLS
from iokr.kernels import Gaussian, Linear, Tanimoto
from iokr.metrics import auc, concordance_index, pairwise_rank_loss

SETTINGS = ("A", "B", "C", "D")
#: Heading of the hand-written reading at the end of pairwise.md, kept when the report is regenerated.
READING = "## Reading of the baselines (issue 19)"


def _read_reference(path):
    """Parse lines ``regparam 2**k[ 2**l], <label> cindex v`` -> list of (exponents, label, value)."""
    rows = []
    for line in Path(path).read_text().splitlines():
        m = re.match(r"regparam ((?:2\*\*-?\d+ ?)+), (.*?)cindex ([0-9.]+)", line)
        if m:
            exps = tuple(int(e) for e in re.findall(r"2\*\*(-?\d+)", m.group(1)))
            rows.append((exps, m.group(2).strip(), float(m.group(3))))
    return rows


# ----------------------------------------------------------------------------------------------------- davis
def load_davis(folder):
    Y = np.loadtxt(folder / "drug-target_interaction_affinities_Kd__Davis_et_al.2011v1.txt")
    XD = np.loadtxt(folder / "drug-drug_similarities_2D.txt")
    XT = np.loadtxt(folder / "target-target_similarities_WS.txt")
    return XD, XT, Y


def davis_splits(n_drugs, n_targets):
    """Index splits of RLScore's ``davis_data.py`` (legacy ``np.random.seed(1)`` shuffles, reproduced exactly)."""
    splits = {"A": (np.arange(n_drugs), np.arange(n_targets), None, None)}
    np.random.seed(1)
    d = list(range(n_drugs))
    np.random.shuffle(d)
    splits["B"] = (np.array(d[:40]), np.arange(n_targets), np.array(d[40:]), np.arange(n_targets))
    np.random.seed(1)
    t = list(range(n_targets))
    np.random.shuffle(t)
    splits["C"] = (np.arange(n_drugs), np.array(t[:300]), np.arange(n_drugs), np.array(t[300:]))
    np.random.seed(1)
    d, t = list(range(n_drugs)), list(range(n_targets))
    np.random.shuffle(d)
    np.random.shuffle(t)
    splits["D"] = (np.array(d[:40]), np.array(t[:300]), np.array(d[40:]), np.array(t[300:]))
    return splits


def davis_reproduction(folder, ref_folder):
    XD, XT, Y = load_davis(folder)
    splits = davis_splits(*Y.shape)
    out = {"kron_rls": {}, "two_step": {}}
    for k, setting in enumerate(SETTINGS, start=1):
        ref = _read_reference(ref_folder / f"kron_rls{k}.out")
        tr_d, tr_t, te_d, te_t = splits[setting]
        t0 = time.perf_counter()
        model = KronRLS(alpha=1.0, kernel1=Linear(), kernel2=Linear()).fit(XD[tr_d], XT[tr_t], Y[np.ix_(tr_d, tr_t)])
        rows = []
        for (e,), _, expected in ref:
            alpha = 2.0 ** e
            if setting == "A":
                got = concordance_index(Y.ravel(), model.holdout_predictions("A", alpha=alpha).ravel())
            else:
                refit = KronRLS(alpha=alpha, kernel1=Linear(), kernel2=Linear()).fit(
                    XD[tr_d], XT[tr_t], Y[np.ix_(tr_d, tr_t)])
                got = concordance_index(Y[np.ix_(te_d, te_t)].ravel(), refit.predict(XD[te_d], XT[te_t]).ravel())
            rows.append({"log2_alpha": e, "rlscore": expected, "iokr": round(got, 6)})
        diffs = [abs(r["rlscore"] - r["iokr"]) for r in rows]
        best = max(rows, key=lambda r: r["iokr"])
        out["kron_rls"][setting] = {
            "reference_file": f"kron_rls{k}.out", "rows": rows, "max_abs_diff": max(diffs),
            "best_log2_alpha": best["log2_alpha"], "best_cindex": best["iokr"],
            "seconds": time.perf_counter() - t0,
        }
    # TwoStepRLS: two_step1 (A, in-sample LOO), 2 (B, test + leave-row-out), 3 (C, leave-column-out), 4 (D).
    cv_label = {"A": None, "B": "leave-row-out", "C": "leave-column-out", "D": "out-of-sample loo"}
    for k, setting in enumerate(SETTINGS, start=1):
        ref = _read_reference(ref_folder / f"two_step{k}.out")
        tr_d, tr_t, te_d, te_t = splits[setting]
        model = None
        rows = []
        for (e1, e2), label, expected in ref:
            model = TwoStepRLS(alpha1=2.0 ** e1, alpha2=2.0 ** e2, kernel1=Linear(), kernel2=Linear()).fit(
                XD[tr_d], XT[tr_t], Y[np.ix_(tr_d, tr_t)])
            if setting == "A" or label.startswith(cv_label[setting] or "@"):
                P = model.holdout_predictions(setting)
                got = concordance_index(Y[np.ix_(tr_d, tr_t)].ravel(), P.ravel())
            else:
                got = concordance_index(Y[np.ix_(te_d, te_t)].ravel(), model.predict(XD[te_d], XT[te_t]).ravel())
            rows.append({"log2_alpha1": e1, "log2_alpha2": e2, "what": label or "in-sample loo", "rlscore": expected,
                         "iokr": round(got, 6)})
        out["two_step"][setting] = {
            "reference_file": f"two_step{k}.out", "n_rows": len(rows),
            "max_abs_diff": max(abs(r["rlscore"] - r["iokr"]) for r in rows), "rows": rows,
        }
    return out


def davis_selection(folder):
    """Choose label transform, kernel and lambda by each setting's own closed-form CV on the training part."""
    XD, XT, Y_kd = load_davis(folder)
    splits = davis_splits(*Y_kd.shape)
    labels = {"Kd": Y_kd, "pKd": -np.log10(Y_kd / 1e9)}
    alphas = 2.0 ** np.arange(-20, 36, 1.0)
    kernels = {"linear": (Linear(), Linear())}
    for g in (1e-2, 1e-1, 1.0, 10.0):
        kernels[f"gaussian(gamma={g:g}/feature-scale)"] = g
    results = {}
    for setting in SETTINGS:
        tr_d, tr_t, te_d, te_t = splits[setting]
        cv_setting = "A" if setting == "A" else setting
        candidates = []
        for label_name, Y in labels.items():
            Ytr = Y[np.ix_(tr_d, tr_t)]
            for kname, spec in kernels.items():
                if kname == "linear":
                    k1, k2 = spec
                else:
                    # gamma relative to the median squared distance of the training rows
                    k1 = Gaussian(gamma=spec / np.median(_sqdist(XD[tr_d])))
                    k2 = Gaussian(gamma=spec / np.median(_sqdist(XT[tr_t])))
                model = KronRLS(alpha=1.0, kernel1=k1, kernel2=k2).fit(XD[tr_d], XT[tr_t], Ytr)
                # Setting D's CV retrains per row; use a coarser alpha grid there.
                grid = alphas[::3] if cv_setting == "D" else alphas
                scores = model.cv_path(grid, cv_setting)
                i = int(np.nanargmax(scores))
                candidates.append((scores[i], label_name, kname, grid[i], k1, k2))
        score, label_name, kname, alpha, k1, k2 = max(candidates, key=lambda c: c[0])
        Y = labels[label_name]
        if setting == "A":
            test = score
        else:
            model = KronRLS(alpha=alpha, kernel1=k1, kernel2=k2).fit(XD[tr_d], XT[tr_t], Y[np.ix_(tr_d, tr_t)])
            test = concordance_index(Y[np.ix_(te_d, te_t)].ravel(), model.predict(XD[te_d], XT[te_t]).ravel())
        results[setting] = {"cv_scheme": cv_setting, "labels": label_name, "kernel": kname,
                            "log2_alpha": float(np.log2(alpha)), "cv_cindex": float(score),
                            "test_cindex": float(test)}
    return results


def davis_conditional_ranking(folder):
    """Conditional ranking of targets per drug (pKd) with ConditionalRankRLS, lambda chosen by the closed-form CV
    of each setting (A, C, D closed forms new; B leave-row-out), against KronRLS selected the same way; spot checks
    of the closed forms against explicit refits on the Davis training part."""
    XD, XT, Y_kd = load_davis(folder)
    Y = -np.log10(Y_kd / 1e9)
    splits = davis_splits(*Y.shape)
    alphas = 2.0 ** np.arange(0, 41, 2.0)
    out = {}
    for setting in SETTINGS:
        tr_d, tr_t, te_d, te_t = splits[setting]
        Ytr = Y[np.ix_(tr_d, tr_t)]
        res = {}
        for name, cls in (("ConditionalRankRLS", ConditionalRankRLS), ("KronRLS", KronRLS)):
            t0 = time.perf_counter()
            model = cls(alpha=1.0, kernel1=Linear(), kernel2=Linear()).fit(XD[tr_d], XT[tr_t], Ytr)
            grid = alphas[::2] if setting == "D" else alphas
            # both scored by the ranking measure: mean over drugs of the per-drug concordance of targets
            scores = model.cv_path(grid, setting, scoring=_per_row_concordance(Ytr.shape))
            best = float(grid[int(np.argmax(scores))])
            cv_seconds = time.perf_counter() - t0
            if setting == "A":
                test = float(scores.max())
            else:
                refit = cls(alpha=best, kernel1=Linear(), kernel2=Linear()).fit(XD[tr_d], XT[tr_t], Ytr)
                P = refit.predict(XD[te_d], XT[te_t])
                rows = np.repeat(np.arange(te_d.size), te_t.size)
                test = 1.0 - pairwise_rank_loss(Y[np.ix_(te_d, te_t)].ravel(), P.ravel(), rows)
            res[name] = {"log2_alpha": float(np.log2(best)), "cv": float(scores.max()), "test": test,
                         "cv_seconds": cv_seconds}
        res["spot_check_max_rel_diff"] = _ranking_spot_check(XD[tr_d], XT[tr_t], Ytr, setting)
        out[setting] = res
    out["note"] = ("pKd labels, linear kernels on the similarity rows (as RLScore's tutorial); score = mean over drugs "
                   "of the concordance index of their targets (1 - pairwise rank loss per drug). Setting A's test "
                   "column is its CV score (no held-out pairs in the tutorial split).")
    return out


def _per_row_concordance(shape):
    rows = np.repeat(np.arange(shape[0]), shape[1])

    def score(y, p):
        return 1.0 - pairwise_rank_loss(y, p, rows)

    return score


def _ranking_spot_check(X1, X2, Y, setting, alpha=2.0 ** 32):
    """Closed-form hold-out of ConditionalRankRLS vs explicit refits (closed form on the remaining grid; setting A by
    conjugate gradient on the remaining pairs) for three training pairs; returns the max relative difference."""
    model = ConditionalRankRLS(alpha=alpha, kernel1=Linear(), kernel2=Linear()).fit(X1, X2, Y)
    P = model.holdout_predictions(setting)
    n1, n2 = Y.shape
    K1, K2 = Linear()(X1), Linear()(X2)
    diffs = []
    for i, j in ((0, 0), (n1 // 2, n2 // 3), (n1 - 1, n2 - 1)):
        R = np.delete(np.arange(n1), i) if setting in "BD" else np.arange(n1)
        C = np.delete(np.arange(n2), j) if setting in "CD" else np.arange(n2)
        if setting == "A":
            keep = np.ones(Y.shape, bool)
            keep[i, j] = False
            r, c = np.nonzero(keep)
            refit = ConditionalRankRLS(alpha=alpha, tol=1e-12).fit(K1, K2, (r, c, Y[keep]))
            fitted = refit.predict(K1[[i]], K2, pairs=(np.zeros(c[r == i].size, int), c[r == i]))
            pred = refit.predict(K1[[i]], K2[[j]])[0, 0] + np.mean(Y[i, c[r == i]] - fitted)
        else:
            refit = ConditionalRankRLS(alpha=alpha).fit(K1[np.ix_(R, R)], K2[np.ix_(C, C)], Y[np.ix_(R, C)])
            pred = refit.predict(K1[np.ix_([i], R)], K2[np.ix_([j], C)])[0, 0]
            if setting == "C":  # the row keeps labels: add its least-squares intercept
                pred += np.mean(Y[i, C] - refit.predict(K1[np.ix_([i], R)], K2[np.ix_(C, C)])[0])
            if setting == "B":  # row-centered output: compare centered rows
                row = refit.predict(K1[np.ix_([i], R)], K2)[0]
                pred, P_ij = row[j] - row.mean(), P[i, j] - P[i].mean()
                diffs.append(abs(pred - P_ij) / np.abs(row - row.mean()).max())
                continue
        diffs.append(abs(pred - P[i, j]) / max(abs(pred), 1e-300))
    return float(max(diffs))


def _sqdist(X):
    sq = (X * X).sum(axis=1)
    D = sq[:, None] + sq[None, :] - 2 * X @ X.T
    return D[np.triu_indices(X.shape[0], 1)]


# --------------------------------------------------------------------------------------------------- ranking
def _preference_pairs(y, n_pairs=1000, seed=33):
    """RLScore's ``pairwise_ranking.py`` sampling, call for call: ``random.seed(33)``, then two ``random.choice``
    draws per attempt, keeping pairs with different labels oriented from the larger label to the smaller."""
    random.seed(seed)
    start, end = [], []
    candidates = range(len(y))
    while len(start) < n_pairs:
        i0, i1 = random.choice(candidates), random.choice(candidates)
        if y[i0] > y[i1]:
            start.append(i0)
            end.append(i1)
        elif y[i0] < y[i1]:
            start.append(i1)
            end.append(i0)
    return np.array(start), np.array(end)


def _random_folds(n, k, seed):
    """RLScore's ``random_folds(n, k, seed)`` fold assignment, reproduced exactly.

    RLScore calls ``random.Random(seed).sample(indices, size)`` on a *set*; Python < 3.11 converted a set population
    with ``tuple(population)`` (deprecated in 3.9, a TypeError since 3.11, which is why RLScore's k-fold examples
    crash on 3.11). Doing that conversion here gives the same folds; a set of small ints iterates in the same order.
    """
    rng = random.Random(seed)
    folds, indices = [], set(range(n))
    size, leftover = n // k, n % k
    for _ in range(k):
        extra = 1 if leftover > 0 else 0
        leftover -= extra
        fold = rng.sample(tuple(indices), size + extra)
        indices = indices.difference(fold)
        folds.append(np.array(fold))
    return folds


def _ref_value(text, pattern):
    return float(re.search(pattern, text).group(1))


def housing(folder):
    D = np.loadtxt(folder / "housing.data")
    np.random.seed(1)
    np.random.shuffle(D)
    X, y = D[:, :-1], D[:, -1]
    Xtr, ytr, Xte, yte = X[:250], y[:250], X[250:], y[250:]
    ref = folder / "rlscore_reference_outputs"
    r1 = float(re.search(r"cindex ([0-9.]+)", (ref / "ranking1.out").read_text()).group(1))
    text2 = (ref / "ranking2.out").read_text()
    perf_ref = np.array([float(v) for v in re.search(r"\[(.*?)\]", text2, re.S).group(1).split()])
    chosen_ref = float(re.search(r"chosen regparam ([0-9.]+)", text2).group(1))
    test_ref = float(re.search(r"test set cindex ([0-9.]+)", text2).group(1))
    t0 = time.perf_counter()
    got1 = concordance_index(yte, RankRLS(alpha=1.0).fit(Xtr, ytr).predict(Xte))
    alphas = [2.0 ** i for i in range(-10, 10)]
    perf = RankRLS(alpha=1.0).fit(Xtr, ytr).cv_path(alphas, cv="lpo")
    chosen = alphas[int(np.argmax(perf))]
    got2 = concordance_index(yte, RankRLS(alpha=chosen).fit(Xtr, ytr).predict(Xte))
    out = {
        "ranking1": {"rlscore": r1, "iokr": round(got1, 6)},
        "ranking2": {"rlscore_lpo": perf_ref.tolist(), "iokr_lpo": np.round(perf, 8).tolist(),
                     "max_abs_diff_lpo": float(np.abs(perf - perf_ref).max()),
                     "rlscore_chosen": chosen_ref, "iokr_chosen": chosen,
                     "rlscore_test": test_ref, "iokr_test": round(got2, 6)},
    }
    # pairwise_ranking.py: RankRLS from 1000 sampled preference pairs (RLScore's PPRankRLS), linear kernel.
    first, second = _preference_pairs(ytr)
    got_pp = concordance_index(yte, PreferenceRankRLS(alpha=1.0).fit(Xtr, (first, second)).predict(Xte))
    out["pairwise_ranking"] = {
        "rlscore": _ref_value((ref / "pairwise_ranking.out").read_text(), r"test cindex ([0-9.]+)"),
        "iokr": round(got_pp, 6), "n_pairs": int(first.size), "distinct_pairs": int(np.unique(
            np.column_stack([first, second]), axis=0).shape[0])}
    # ranking3-5.py: RLScore's random_folds(250, 5, 10); 5-fold hold-out in closed form (RankRLS.holdout).
    folds = _random_folds(ytr.size, 5, 10)
    text3 = (ref / "ranking3.out").read_text()
    model = RankRLS(alpha=1.0).fit(Xtr, ytr)
    out["ranking3"] = {
        "rlscore_cv": _ref_value(text3, r"cross-validation cindex ([0-9.]+)"),
        "iokr_cv": round(float(model.cv_path([1.0], cv=folds)[0]), 6),
        "rlscore_test": _ref_value(text3, r"test cindex ([0-9.]+)"),
        "iokr_test": round(concordance_index(yte, model.predict(Xte)), 6)}
    text4 = (ref / "ranking4.out").read_text()
    perf4_ref = np.array([float(v) for v in re.search(r"\[(.*?)\]", text4, re.DOTALL).group(1).split()])
    perf4 = model.cv_path(alphas, cv=folds)
    chosen4 = alphas[int(np.argmax(perf4))]
    out["ranking4"] = {
        "rlscore_kfold": perf4_ref.tolist(), "iokr_kfold": np.round(perf4, 8).tolist(),
        "max_abs_diff_kfold": float(np.abs(perf4 - perf4_ref).max()),
        "rlscore_chosen": _ref_value(text4, r"chosen regparam ([0-9.]+)"), "iokr_chosen": chosen4,
        "rlscore_test": _ref_value(text4, r"test set cindex ([0-9.]+)"),
        "iokr_test": round(concordance_index(yte, RankRLS(alpha=chosen4).fit(Xtr, ytr).predict(Xte)), 6)}
    # ranking5.py: Gaussian gamma x lambda over 2^-15..2^15 by the same folds; RLScore keeps the first strict best.
    t5 = time.perf_counter()
    grid = [2.0 ** i for i in range(-15, 16)]
    best_perf, best_gamma, best_alpha = 0.0, None, None
    for gamma in grid:
        perf5 = RankRLS(alpha=1.0, kernel=Gaussian(gamma=gamma)).fit(Xtr, ytr).cv_path(grid, cv=folds)
        if perf5.max() > best_perf:
            best_perf, best_gamma, best_alpha = float(perf5.max()), gamma, grid[int(np.argmax(perf5))]
    best = RankRLS(alpha=best_alpha, kernel=Gaussian(gamma=best_gamma)).fit(Xtr, ytr)
    text5 = (ref / "ranking5.out").read_text()
    out["ranking5"] = {
        "rlscore_gamma": _ref_value(text5, r"gamma ([0-9.]+)"), "iokr_gamma": round(best_gamma, 6),
        "rlscore_regparam": _ref_value(text5, r"regparam ([0-9.]+)"), "iokr_regparam": round(best_alpha, 6),
        "rlscore_cv": _ref_value(text5, r"kfoldcv cindex ([0-9.]+)"), "iokr_cv": round(best_perf, 6),
        "rlscore_test": _ref_value(text5, r"test cindex ([0-9.]+)"),
        "iokr_test": round(concordance_index(yte, best.predict(Xte)), 6),
        "grid": "31 gammas x 31 lambdas, 5 folds: 31 eigendecompositions, 4805 closed-form fold hold-outs",
        "seconds": time.perf_counter() - t5}
    out["seconds"] = time.perf_counter() - t0
    return out


# ------------------------------------------------------------------------------------- rock-paper-scissors
def rps_tournament(rng, w, n_players=100, n_games=1000):
    """Players with mixed strategies over (rock, paper, scissors); ``w`` sets how strongly each favours one move.

    p ~ u o (1 + (w - 1) e_f), u ~ U(0.5, 1.5)^3, f a random favourite move, normalized. Each game is replayed until
    not a draw; P(i beats j) = sum over winning move pairs / (1 - P(draw)).
    """
    u = rng.uniform(0.5, 1.5, size=(n_players, 3))
    fav = rng.integers(0, 3, size=n_players)
    u[np.arange(n_players), fav] *= w
    p = u / u.sum(axis=1, keepdims=True)
    # move m beats move (m + 2) % 3: rock(0) beats scissors(2), paper(1) beats rock(0), scissors(2) beats paper(1)
    beats = np.zeros((3, 3))
    beats[0, 2] = beats[1, 0] = beats[2, 1] = 1.0
    win = p @ beats @ p.T
    prob = win / (win + win.T)
    np.fill_diagonal(prob, 0.5)
    return p, prob


def rock_paper_scissors(seed=0, repeats=10):
    rng = np.random.default_rng(seed)
    alpha = 2.0 ** -30
    results = {}
    for w in (1, 10, 100):
        losses = {key: [] for key in ("c.reg", "c.reg(r)", "c.rank", "c.rank(r)")}
        for _ in range(repeats):
            p_train, prob_train = rps_tournament(rng, w)
            p_test, prob_test = rps_tournament(rng, w)
            i, j = rng.integers(0, 100, size=(2, 3000))
            keep = i != j
            i, j = i[keep][:1000], j[keep][:1000]
            first_wins = rng.uniform(size=i.size) < prob_train[i, j]
            winner, loser = np.where(first_wins, i, j), np.where(first_wins, j, i)
            rows = np.concatenate([winner, loser])
            cols = np.concatenate([loser, winner])
            y = np.concatenate([np.ones(i.size), -np.ones(i.size)])
            K, Kt = p_train @ p_train.T, p_test @ p_train.T
            off = ~np.eye(100, dtype=bool)
            groups = np.repeat(np.arange(100), 100).reshape(100, 100)[off]
            methods = (("c.reg", KronRLS, None), ("c.reg(r)", KronRLS, "reciprocal"),
                       ("c.rank", ConditionalRankRLS, None), ("c.rank(r)", ConditionalRankRLS, "reciprocal"))
            for key, cls, sym in methods:
                model = cls(alpha=alpha, symmetry=sym, max_iter=200, tol=1e-8)
                if sym is None:
                    model.fit(K, K, (rows, cols, y))
                    P = model.predict(Kt, Kt)
                else:
                    model.fit(K, None, (rows, cols, y))
                    P = model.predict(Kt)
                losses[key].append(pairwise_rank_loss(prob_test[off], P[off], groups))
        results[f"w{w}"] = {k: float(np.mean(v)) for k, v in losses.items()}
    return {"repeats": repeats, "alpha": alpha, "mean_rank_loss": results,
            "note": "own generator (see rps_tournament docstring); the exact generator of Pahikkala et al. 2010b is "
                    "not available, so numbers are comparable to Table 1 only in trend."}


# ------------------------------------------------------------------------------------------------- yamanishi
def _read_matrix(path):
    lines = Path(path).read_text().splitlines()
    header = lines[0].split("\t")
    rows = [line.split("\t") for line in lines[1:] if line.strip()]
    return np.array([[float(v) for v in r[1:]] for r in rows]), [r[0] for r in rows], header[1:] if header[0] == "" \
        else header


def _psd_kernel(S):
    S = 0.5 * (S + S.T)
    vals, vecs = np.linalg.eigh(S)
    return (vecs * np.clip(vals, 0, None)) @ vecs.T


def yamanishi(folder):
    out = {}
    alphas = 2.0 ** np.arange(-5, 6, 1.0)
    for name in ("nr", "gpcr", "ic"):
        Y, targets, drugs = _read_matrix(folder / f"{name}_admat_dgc.txt")
        Kd, _, _ = _read_matrix(folder / f"{name}_simmat_dc.txt")
        Kt, _, _ = _read_matrix(folder / f"{name}_simmat_dg.txt")
        Kd, Kt = _psd_kernel(Kd), _psd_kernel(Kt)
        model = KronRLS(alpha=1.0).fit(Kt, Kd, Y)
        res = {"shape": list(Y.shape), "interactions": int(Y.sum())}
        for setting in SETTINGS:
            best = None
            for a in alphas:
                P = model.holdout_predictions(setting, alpha=a)
                score = (auc(Y.ravel(), P.ravel()), float(average_precision_score(Y.ravel(), P.ravel())))
                if best is None or score[0] > best[1][0]:
                    best = (a, score)
            res[setting] = {"log2_alpha": float(np.log2(best[0])), "auc": best[1][0], "aupr": best[1][1]}
        out[name] = res
    out["note"] = ("Kernels: the SIMCOMP / normalized Smith-Waterman similarities, symmetrized and clipped to PSD. "
                   "Alpha is chosen on the same closed-form CV that is reported (optimistic by the choice among "
                   f"{alphas.size} values; no nested CV). Rows are targets, columns drugs (the files' orientation).")
    return out


# ------------------------------------------------------------------------------------------------------ kiba
def kiba_inputs(folder):
    """KIBA labels (2111 x 229, NaN where unobserved), the drug kernel (Tanimoto on 2048-bit Morgan fingerprints,
    radius 2, from the canonical SMILES: the original drug similarity file is missing) and the shipped target
    similarity, symmetrized and PSD-clipped. Needs RDKit."""
    from rdkit import Chem, RDLogger  # noqa: PLC0415 - optional chem extra, for this section only
    from rdkit.Chem import rdFingerprintGenerator  # noqa: PLC0415 - optional chem extra

    RDLogger.DisableLog("rdApp.*")
    Y = np.loadtxt(folder / "kiba_binding_affinity_v2.txt")
    smiles = json.loads((folder / "ligands_can.txt").read_text(), object_pairs_hook=OrderedDict)
    gen = rdFingerprintGenerator.GetMorganGenerator(radius=2, fpSize=2048)
    fps = np.array([gen.GetFingerprintAsNumPy(Chem.MolFromSmiles(s)) for s in smiles.values()], dtype=np.float64)
    return Y, Tanimoto()(fps), _psd_kernel(np.loadtxt(folder / "kiba_target_sim.txt"))


def kiba(folder, alphas=(0.1, 1.0, 10.0), max_iter=100):
    """KIBA (2111 drugs x 229 kinases, 118,254 observed scores), DeepDTA setting-1 folds: KronRLS by CG on the
    observed pairs. Kernels: :func:`kiba_inputs`.
    Alpha chosen on the fifth training fold (trained on the other four), then refit on all five; test = DeepDTA's
    test fold. Needs RDKit."""
    t0 = time.perf_counter()
    Y, Kd, Kt = kiba_inputs(folder)
    rows, cols = np.nonzero(~np.isnan(Y))
    values = Y[rows, cols]
    folds = json.loads((folder / "folds" / "train_fold_setting1.txt").read_text())
    test = np.array(json.loads((folder / "folds" / "test_fold_setting1.txt").read_text()))
    inner_train, inner_val = np.concatenate(folds[:4]), np.array(folds[4])

    def fit_eval(train, evaluate, alpha):
        # The Kronecker model has no intercept: fit the labels centred on the training mean.
        offset = values[train].mean()
        model = KronRLS(alpha=alpha, max_iter=max_iter, tol=1e-6, solver="cg").fit(
            Kd, Kt, (rows[train], cols[train], values[train] - offset))
        pred = model.predict(Kd, Kt, pairs=(rows[evaluate], cols[evaluate])) + offset
        return concordance_index(values[evaluate], pred), float(np.mean((values[evaluate] - pred) ** 2)), model

    val = {}
    for a in alphas:
        ci, mse, _ = fit_eval(inner_train, inner_val, a)
        val[a] = (ci, mse)
    best = max(val, key=lambda a: val[a][0])
    ci, mse, model = fit_eval(np.concatenate(folds), test, best)
    return {"shape": list(Y.shape), "observed": int(rows.size), "validation": {f"{a:g}": v for a, v in val.items()},
            "alpha": best, "max_iter": max_iter, "cg_iterations": int(model.n_iter_), "test_cindex": ci,
            "test_mse": mse, "seconds": time.perf_counter() - t0,
            "literature": "DeepDTA (Ozturk et al. 2018) reports KronRLS CI 0.782 / MSE 0.411 on these folds, "
                          "with the original drug similarity (value recalled in the data README)."}


# ------------------------------------------------------------------------------------------------- baselines
BASELINE_PROTOCOL = (
    "Every method chooses its hyperparameters on the training pairs only, by the same CV folds (mean validation "
    "concordance index); the test pairs are used once. Labels: pKd = -log10(Kd / 1e9) on Davis, the KIBA scores as "
    "above, pKi on Metz. Setting A: the DeepDTA setting-1 folds (random pairs; validation = the fifth training fold, trained on "
    "the other four; the Davis section above scores setting A by in-sample leave-pair-out instead, which has no "
    "test pairs). Davis B-D: RLScore's tutorial split (as above), 3-fold CV holding out the setting's unit (drugs, "
    "targets, or a drug-group x target-group block trained on the pairs sharing neither). KIBA B-D: a seeded "
    "split of the same kind (numpy default_rng({split_seed}) permutation; {test_fraction:.2g} of the drugs (B), of the "
    "targets (C) or of both (D) held out; training pairs join training drugs and targets, test pairs held-out ones; "
    "in D the mixed pairs are in neither), the same 3-fold CV. Metz (pKi; no drug kernel exists): the identity "
    "drug kernel x the target similarity (divided by 100, PSD-clipped), alpha in 0.01, 0.1, 1, 10 as KIBA; setting "
    "A: the observed pairs shuffled (same seed) into six parts, one test, one validation, four fitted (the DeepDTA "
    "layout); setting C: the KIBA-style target split. KronRLS and KernelRidge: "
    "base kernels {{linear (unit mean diagonal), Gaussian at 1 and 0.1 / median squared distance}} on the similarity "
    "rows (Davis) or the Morgan-Tanimoto and target-similarity kernels (KIBA) x alpha in 2^-8..2^4 (step 2^2; KIBA: "
    "0.01, 0.1, 1, 10), labels centered on the training mean; KronRLS by closed form on complete "
    "training grids, by CG (<= {kron_iter} iterations, tol {kron_tol:g}) otherwise. KernelRidge: scikit-learn "
    "`KernelRidge(kernel='precomputed')` on the explicit Kronecker pair Gram `Kd[r, r'] * Kt[c, c']`, beyond this shared "
    "machine's budget: on Davis (up to {davis_max} training pairs) it would take {davis_gb:.1f} GB and {davis_flops:.0e} flops per "
    "factorization, on KIBA ({kiba_n} pairs) {kiba_gb:.0f} GB and {kiba_flops:.0e} flops, on Metz ({metz_n} pairs) "
    "{metz_gb:.0f} GB and {metz_flops:.0e} flops, per grid point and fold; so "
    "it fits a seeded subsample of {krr_cap} training pairs (in every CV fold as well). RandomForest ({rf_trees} trees, "
    "max_features sqrt, min_samples_leaf in {{1, 5}}) and HistGradientBoosting ({hgb_iter} iterations, 31 leaves, "
    "learning rate in {{0.03, 0.1, 0.3}}) on the concatenated drug and target features: each side's top-{embed} kernel-PCA "
    "coordinates (the linear kernel on the similarity rows for Davis; the two kernels for KIBA), on at most "
    "{tree_cap} seeded training pairs on Davis and Metz (Davis A and C, Metz A and C are subsampled), on all training "
    "pairs on KIBA (a forest fit on KIBA's 98,545 pairs takes about a minute of one core, within the budget; on "
    "Metz's 1,453 columns fits took several minutes each, a setting over 20 minutes); KIBA B-D and Metz C "
    "compute the kernel-PCA from the training nodes only (Nystrom extension to held-out ones); Metz's drug features "
    "are one-hot indicators (the identity kernel's feature map). All n_jobs=1, one BLAS thread. Verdict: KronRLS vs "
    "the best baseline by test cindex; a tie is a difference under 2 bootstrap standard errors ({n_boot} resamples "
    "of the setting's held-out unit: pairs in A, test drugs in B, test targets in C, both in D). Seconds: selection "
    "+ refit + test prediction on the shared 2-core machine (loaded by other jobs: ratios are indicative).")


def pairwise_baselines(data, datasets=("davis", "kiba", "metz"), log=print, previous=None, settings=SETTINGS):
    """KronRLS beside KernelRidge, RandomForest and HistGradientBoosting (``benchmarks/_pairwise_baselines.py``).

    ``previous``: an earlier section whose data sets and settings not run now are kept (``--update``);
    ``settings``: the settings to run (Metz has only A and C).
    """
    section = {"datasets": {name: dict(entry) for name, entry in previous["datasets"].items()} if previous else {}}
    runners = {"davis": ("Davis", _davis_baseline_tasks), "kiba": ("KIBA", _kiba_baseline_tasks),
               "metz": ("Metz", _metz_baseline_tasks)}
    for key in datasets:
        name, build = runners[key]
        for setting, (task, options) in build(data / "pairwise" / key, settings).items():
            log(f"{name} {setting}: {task.train.size} training / {task.test.size} test pairs")
            section["datasets"].setdefault(name, {})[setting] = baselines.run_task(task, log=log, **options)
        section["datasets"][name] = dict(sorted(section["datasets"][name].items()))
    section["protocol"] = _baseline_protocol(section["datasets"])
    section["not_run"] = _baseline_not_run(section["datasets"])
    return section


def _baseline_not_run(datasets):
    """The report's "Not run:" line: Metz B and D (impossible), then any runnable setting absent from the JSON."""
    line = ("Not run: Metz settings B and D (new drugs): Metz has no drug information at all (the drug similarity "
            "file is missing and there are no compound identifiers, see the data README), so a held-out drug is "
            "indistinguishable from any other unseen drug: its identity-kernel row and its one-hot features are "
            "zero, and no method can rank new drugs against each other.")
    runnable = {"Davis": SETTINGS, "KIBA": SETTINGS, "Metz": ("A", "C")}
    missing = [f"{name} {s}" for name, settings in runnable.items() for s in settings
               if s not in datasets.get(name, {})]
    if missing:
        line += " Runnable but absent from this report (see the reading below): " + ", ".join(missing) + "."
    return line


def _davis_baseline_tasks(folder, settings):
    XD, XT, Y_kd = load_davis(folder)
    Y = -np.log10(Y_kd / 1e9)
    tasks = baselines.davis_tasks(XD, XT, Y, davis_splits(*Y.shape), baselines.deepdta_folds(folder),
                                  settings=settings)
    return {s: (task, {}) for s, task in tasks.items()}


def _kiba_baseline_tasks(folder, settings):
    """KIBA A on the DeepDTA folds, B-D on :func:`benchmarks._pairwise_splits.holdout_nodes`; trees on all pairs."""
    Y, Kd, Kt = kiba_inputs(folder)
    tasks = {}
    if "A" in settings:
        tasks["A"] = baselines.kiba_task(Kd, Kt, Y, baselines.deepdta_folds(folder))
    tasks.update(splits.kiba_node_tasks(Kd, Kt, Y, [s for s in settings if s != "A"]))
    return {s: (task, {"alphas": baselines.KIBA_ALPHAS, "tree_max_pairs": task.train.size})
            for s, task in tasks.items()}


def _metz_baseline_tasks(folder, settings):
    """Metz A (random pairs) and C (new targets), identity drug kernel. Trees on at most ``TREE_MAX_PAIRS`` training
    pairs as on Davis: on the 1,453 one-hot + kernel-PCA columns a forest fit on ~62k pairs took 170 s and the
    gradient boosting over 200 s on the shared machine, more than 20 minutes per setting."""
    Y, Kt = splits.load_metz(folder)
    tasks = splits.metz_tasks(Y, Kt, [s for s in settings if s in ("A", "C")])
    return {s: (task, {"alphas": baselines.KIBA_ALPHAS}) for s, task in tasks.items()}


def _baseline_protocol(datasets):
    sizes = {name.lower(): max(entry["n_train"] for entry in settings.values())
             for name, settings in datasets.items()}
    sizes = {"davis": 0, "kiba": 0, "metz": 0, **sizes}
    return BASELINE_PROTOCOL.format(
        kron_iter=baselines.KRON_MAX_ITER, kron_tol=baselines.KRON_TOL, davis_max=sizes["davis"],
        davis_gb=8 * sizes["davis"] ** 2 / 1e9, davis_flops=sizes["davis"] ** 3 / 3, kiba_n=sizes["kiba"],
        kiba_gb=8 * sizes["kiba"] ** 2 / 1e9, kiba_flops=sizes["kiba"] ** 3 / 3, metz_n=sizes["metz"],
        metz_gb=8 * sizes["metz"] ** 2 / 1e9, metz_flops=sizes["metz"] ** 3 / 3, krr_cap=baselines.KRR_MAX_PAIRS,
        rf_trees=baselines.RF_TREES, hgb_iter=baselines.HGB_ITER, embed=baselines.EMBED_DIM,
        tree_cap=baselines.TREE_MAX_PAIRS, n_boot=baselines.N_BOOT, test_fraction=splits.TEST_FRACTION,
        split_seed=splits.SPLIT_SEED)


# ----------------------------------------------------------------------------------------------------- report
def _markdown(report):
    lines = ["# Pairwise learning and ranking on real data", "",
             "Timings were taken on a shared 2-core machine (other jobs running); they are indicative only.", ""]
    if report.get("davis"):
        lines += _md_davis(report)
    if report.get("davis_conditional_ranking"):
        lines += _md_conditional_ranking(report["davis_conditional_ranking"])
    if report.get("housing"):
        lines += _md_housing(report["housing"])
    if report.get("rock_paper_scissors"):
        lines += _md_rock_paper_scissors(report["rock_paper_scissors"])
    if report.get("yamanishi"):
        lines += _md_yamanishi(report["yamanishi"])
    lines += _md_kiba(report.get("kiba"))
    if report.get("baselines"):
        lines += baselines.baseline_markdown(report["baselines"])
    lines += _md_speed()
    return "\n".join(lines) + "\n"


def _md_davis(report):
    dv = report["davis"]
    lines = []
    lines += ["## Davis: RLScore tutorial outputs (KronRLS, linear kernel on similarity rows)", "",
              "| setting | reference | best log2(lambda) | best cindex (iokr) | RLScore best "
              "| max abs diff over grid |",
              "|---|---|---|---|---|---|"]
    for s, r in dv["kron_rls"].items():
        ref_best = max(x["rlscore"] for x in r["rows"])
        lines.append(f"| {s} | {r['reference_file']} | {r['best_log2_alpha']} | {r['best_cindex']:.6f} | "
                     f"{ref_best:.6f} | {r['max_abs_diff']:.1e} |")
    lines += ["", "TwoStepRLS (`two_step1..4.out`): every (lambda1, lambda2) line, test-set and CV cindex.", "",
              "| setting | reference | lines | max abs diff |", "|---|---|---|---|"]
    for s, r in dv["two_step"].items():
        lines.append(f"| {s} | {r['reference_file']} | {r['n_rows']} | {r['max_abs_diff']:.1e} |")
    sel = report.get("davis_selection")
    if sel:
        lines += ["", "## Davis: built-in selection (closed-form CV of each setting on the training part)", "",
                  "| setting | CV scheme | labels | kernel | log2(lambda) | CV cindex | test cindex "
                  "| RLScore tutorial |",
                  "|---|---|---|---|---|---|---|---|"]
        for s, r in sel.items():
            tut = dv["kron_rls"][s]["best_cindex"]
            test = "(= CV)" if s == "A" else f"{r['test_cindex']:.4f}"
            lines.append(f"| {s} | {r['cv_scheme']} | {r['labels']} | {r['kernel']} | {r['log2_alpha']:g} | "
                         f"{r['cv_cindex']:.4f} | {test} | {tut:.4f} (best on test) |")
        lines += ["", "The tutorial's numbers are the best over the grid evaluated on the test set itself; "
                  "ours pick every choice on the training part only. Test cindex is on the chosen label scale "
                  "(pKd = -log10(Kd / 1e9) reverses the order of Kd, so both are scored consistently)."]
    return lines


def _md_conditional_ranking(cr):
    lines = []
    lines += ["", "## Davis: conditional ranking of targets per drug, lambda by each setting's own CV", "",
              "| setting | model | log2(lambda) | CV (per-drug cindex) | test (per-drug cindex) | CV seconds |",
              "|---|---|---|---|---|---|"]
    for s in SETTINGS:
        for name in ("ConditionalRankRLS", "KronRLS"):
            r = cr[s][name]
            test = "(= CV)" if s == "A" else f"{r['test']:.4f}"
            lines.append(f"| {s} | {name} | {r['log2_alpha']:g} | {r['cv']:.4f} | {test} | "
                         f"{r['cv_seconds']:.1f} |")
    checks = ", ".join(f"{s} {cr[s]['spot_check_max_rel_diff']:.1e}" for s in SETTINGS)
    lines += ["", cr["note"], "",
              "ConditionalRankRLS hold-outs are closed forms (A: leave-pair-out, B: leave-drug-out, C: "
              "leave-target-out, D: both, the last with one eigendecomposition per drug); checked against "
              f"explicit refits on three training pairs per setting, max relative difference: {checks}."]
    return lines


def _md_housing(hs):
    lines = []
    r2 = hs["ranking2"]
    lines += ["", "## Boston housing: RLScore RankRLS tutorial (all seven outputs)", "",
              "| output | quantity | RLScore | iokr |", "|---|---|---|---|",
              f"| ranking1 | test cindex | {hs['ranking1']['rlscore']:.6f} | {hs['ranking1']['iokr']:.6f} |",
              f"| ranking2 | chosen lambda (leave-pair-out) | {r2['rlscore_chosen']:g} | {r2['iokr_chosen']:g} |",
              f"| ranking2 | test cindex | {r2['rlscore_test']:.6f} | {r2['iokr_test']:.6f} |",
              f"| ranking2 | LPO performances, max abs diff (20 lambdas) | | {r2['max_abs_diff_lpo']:.1e} |"]
    pp = hs.get("pairwise_ranking")
    if pp:
        lines.append(f"| pairwise_ranking | test cindex ({pp['n_pairs']} sampled preferences, "
                     f"{pp['distinct_pairs']} distinct) | {pp['rlscore']:.6f} | {pp['iokr']:.6f} |")
    r3, r4, r5 = hs.get("ranking3"), hs.get("ranking4"), hs.get("ranking5")
    if r3:
        lines += [f"| ranking3 | 5-fold CV cindex (lambda 1) | {r3['rlscore_cv']:.6f} | {r3['iokr_cv']:.6f} |",
                  f"| ranking3 | test cindex | {r3['rlscore_test']:.6f} | {r3['iokr_test']:.6f} |"]
    if r4:
        lines += [f"| ranking4 | chosen lambda (5-fold) | {r4['rlscore_chosen']:g} | {r4['iokr_chosen']:g} |",
                  (f"| ranking4 | k-fold performances, max abs diff (20 lambdas) | | "
                   f"{r4['max_abs_diff_kfold']:.1e} |"),
                  f"| ranking4 | test cindex | {r4['rlscore_test']:.6f} | {r4['iokr_test']:.6f} |"]
    if r5:
        lines += [(f"| ranking5 | chosen gamma / lambda (Gaussian, 5-fold) | {r5['rlscore_gamma']:f} / "
                   f"{r5['rlscore_regparam']:f} | {r5['iokr_gamma']:f} / {r5['iokr_regparam']:f} |"),
                  f"| ranking5 | best k-fold CV cindex | {r5['rlscore_cv']:.6f} | {r5['iokr_cv']:.6f} |",
                  f"| ranking5 | test cindex | {r5['rlscore_test']:.6f} | {r5['iokr_test']:.6f} |"]
    lines += ["", "pairwise_ranking: `PreferenceRankRLS` on the same 1000 preference pairs as RLScore's script "
              "(the standard-library `random` draws replayed call for call). ranking3-5: RLScore's "
              "`random_folds(250, 5, 10)` replayed exactly (RLScore's own helper crashes on Python 3.11 because "
              "`random.sample` no longer accepts a set; Python <= 3.10 converted it with `tuple()`, which the "
              "script does explicitly); every fold hold-out is the closed form `RankRLS.holdout`, no "
              "retraining. " + (f"ranking5 grid: {r5['grid']}, {r5['seconds']:.0f} s." if r5 else "")]
    return lines


def _md_rock_paper_scissors(rps):
    lines = []
    lines += ["", f"## Rock-paper-scissors (mean test rank loss over {rps['repeats']} tournaments, "
              f"lambda = 2^-30, CG <= 200 iterations)", "",
              "| data | c.reg | c.reg(r) | c.rank | c.rank(r) |", "|---|---|---|---|---|"]
    for w, r in rps["mean_rank_loss"].items():
        lines.append(f"| {w} | {r['c.reg']:.4f} | {r['c.reg(r)']:.4f} | {r['c.rank']:.4f} | {r['c.rank(r)']:.4f} |")
    lines += ["", rps["note"]]
    return lines


def _md_yamanishi(ya):
    lines = []
    lines += ["", "## Yamanishi: KronRLS, closed-form CV in the four settings (AUC / AUPR)", "",
              "| set | shape | A | B (new targets) | C (new drugs) | D (both new) |", "|---|---|---|---|---|---|"]
    for name in ("nr", "gpcr", "ic"):
        r = ya[name]
        cells = [f"{r[s]['auc']:.3f} / {r[s]['aupr']:.3f}" for s in SETTINGS]
        lines.append(f"| {name} | {r['shape'][0]}x{r['shape'][1]} | " + " | ".join(cells) + " |")
    lines += ["", ya["note"]]
    return lines


def _md_kiba(kb):
    if not kb:
        return ["", "KIBA: not run in this report (needs RDKit; `--skip kiba`)."]
    lines = []
    lines += ["", "## KIBA: KronRLS by conjugate gradient on the observed pairs (DeepDTA setting-1 folds)", "",
              f"{kb['shape'][0]} x {kb['shape'][1]}, {kb['observed']} observed; Morgan/Tanimoto drug kernel "
              f"(RDKit), alpha = {kb['alpha']:g} chosen on training fold 5 among "
              f"{', '.join(kb['validation'])}, CG {kb['cg_iterations']} iterations (cap {kb['max_iter']}).", "",
              f"Test: cindex {kb['test_cindex']:.4f}, MSE {kb['test_mse']:.4f} ({kb['seconds']:.0f} s). "
              f"{kb['literature']}"]
    return lines


def _md_speed():
    lines = []
    bench = Path(__file__).parent / "results" / "kron.md"
    if bench.exists():
        text = bench.read_text()
        lines += ["", "## Speed, side by side with RLScore HEAD (`python -m benchmarks.run --only kron`)", "",
                  "RLScore commit cc023e6 built from source in a scratch virtual environment (not in the repository) "
                  "and put on `PYTHONPATH`; one run, both libraries with one BLAS thread, on the shared 2-core machine "
                  "under heavy load from other jobs (absolute times are inflated; ratios are what the run measured). "
                  "Full record: `benchmarks/results/kron.json`.", "", text[text.index("| case"):].rstrip(), "",
                  "The CG row compares 50 iterations of iokr's conjugate gradient with 50 of RLScore's MINRES on the "
                  "same system (alpha = 1, Gaussian kernels); neither has converged, so their predictions differ by "
                  "the gap between two Krylov iterates. RankRLS predictions are compared after removing the constant "
                  "offset (rankings are shift invariant); iokr fits RankRLS with one Cholesky solve and builds the "
                  "eigendecomposition only when cross-validation asks for it."]
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="shared data folder (with pairwise/ and ranking/)")
    parser.add_argument("--output", default="reports")
    parser.add_argument("--skip", nargs="*", default=[],
                        help="sections to skip: davis selection ranking_cv housing rps yamanishi kiba baselines")
    parser.add_argument("--no-baselines", dest="baselines", action="store_false",
                        help="skip the baselines beside KronRLS (issue 19; run by default, same as --skip baselines)")
    parser.add_argument("--baseline-data", nargs="*", default=["davis", "kiba", "metz"],
                        choices=["davis", "kiba", "metz"], help="data sets of the baselines section")
    parser.add_argument("--baseline-settings", nargs="*", default=list(SETTINGS), choices=list(SETTINGS),
                        help="settings of the baselines section (with --update the others are kept)")
    parser.add_argument("--update", action="store_true",
                        help="keep the sections of an existing <output>/pairwise.json that are skipped in this run")
    parser.add_argument("--report-only", action="store_true",
                        help="rewrite <output>/pairwise.md from the existing pairwise.json (runs nothing)")
    parser.add_argument("--threads", type=int, default=1,
                        help="BLAS threads (1 by default: on a loaded shared machine more threads oversubscribe)")
    args = parser.parse_args(argv)
    with threadpool_limits(limits=args.threads):
        _run(args)


def _run(args):
    data = Path(args.data)
    report = {}
    previous = Path(args.output) / "pairwise.json"
    if args.report_only:
        write_keeping_section(Path(args.output) / "pairwise.md", _markdown(json.loads(previous.read_text())),
                              READING)
        return
    if args.update and previous.exists():
        report = json.loads(previous.read_text())
        report.pop("seconds_total", None)  # a total over the sections of an earlier run would mislead
    t0 = time.perf_counter()
    if "davis" not in args.skip:
        report["davis"] = davis_reproduction(data / "pairwise" / "davis",
                                             data / "pairwise" / "davis" / "rlscore_reference_outputs")
        print("davis done", time.perf_counter() - t0, flush=True)
    if "selection" not in args.skip:
        report["davis_selection"] = davis_selection(data / "pairwise" / "davis")
        print("selection done", time.perf_counter() - t0, flush=True)
    if "ranking_cv" not in args.skip:
        report["davis_conditional_ranking"] = davis_conditional_ranking(data / "pairwise" / "davis")
        print("davis conditional ranking done", time.perf_counter() - t0, flush=True)
    if "housing" not in args.skip:
        report["housing"] = housing(data / "ranking")
        print("housing done", time.perf_counter() - t0, flush=True)
    if "rps" not in args.skip:
        report["rock_paper_scissors"] = rock_paper_scissors()
        print("rps done", time.perf_counter() - t0, flush=True)
    if "yamanishi" not in args.skip:
        report["yamanishi"] = yamanishi(data / "pairwise" / "yamanishi")
    if "kiba" not in args.skip:
        report["kiba"] = kiba(data / "pairwise" / "kiba")
        print("kiba done", time.perf_counter() - t0, flush=True)
    if args.baselines and "baselines" not in args.skip:
        report["baselines"] = pairwise_baselines(data, args.baseline_data, log=lambda m: print(m, flush=True),
                                                 previous=report.get("baselines"), settings=args.baseline_settings)
        print("baselines done", time.perf_counter() - t0, flush=True)
    report["seconds_last_run"] = time.perf_counter() - t0
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "pairwise.json", report, indent=1)
    write_keeping_section(out / "pairwise.md", _markdown(report), READING)
    print(_markdown(report))


if __name__ == "__main__":
    main()

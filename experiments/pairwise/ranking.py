"""Boston housing against RLScore's RankRLS outputs; rock-paper-scissors tournaments (Pahikkala et al. 2013)."""

from __future__ import annotations

import random
import re
import time

import numpy as np

from iokr.estimators import ConditionalRankRLS, KronRLS, PreferenceRankRLS, RankRLS
from iokr.kernels import Gaussian
from iokr.metrics import concordance_index, pairwise_rank_loss


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

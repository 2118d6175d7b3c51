"""Hold-out ranks summarized: top-k and the app's fold score per model, alpha and type; the alphas chosen."""

from __future__ import annotations

import numpy as np

from experiments.ion_modes.rows import MAIN_TYPES


def topk(ranks, folds=None, formula=False):
    """Top-k (%) of finite-or-missed ranks and ``score`` = mean of top-1/10/20 (formula lists: of top-1/5/10, as
    the app's formula score); per fold then averaged when ``folds`` is given (the app's fold score), else pooled."""
    def row(r):
        r = np.where(np.isnan(r), np.inf, r)
        out = {f"top{k}": float(np.mean(r <= k) * 100) if r.size else float("nan") for k in (1, 5, 10, 20)}
        out["score"] = (out["top1"] + out["top5" if formula else "top10"] + out["top10" if formula else "top20"]) / 3
        return out
    if folds is None:
        return {**row(np.asarray(ranks)), "n": int(len(ranks))}
    per = [row(np.asarray(ranks)[folds == f]) for f in np.unique(folds)]
    if not per:  # no scored row of this type
        return {**row(np.asarray(ranks)), "n": 0}
    return {**{k: float(np.mean([p[k] for p in per])) for k in per[0]}, "n": int(len(ranks))}


def summarize_models(rows, results, scored=None):
    """Per model and alpha: the fold score of each polarity's main type, and pooled top-k of each rare type;
    with ``scored`` (formula lists), over the scored rows only and with the formula score."""
    formula = scored is not None
    scored = np.ones(len(rows.keys), dtype=bool) if scored is None else scored
    out = {}
    for model, per_alpha in results.items():
        out[model] = {}
        for alpha, ranks in per_alpha.items():
            entry = {}
            for pol, name in MAIN_TYPES.items():
                m = rows.main(pol) & scored
                entry[name] = topk(ranks[m], rows.folds[m], formula)
            for name in sorted(set(rows.types.tolist()) - set(MAIN_TYPES.values())):
                entry[name] = topk(ranks[(rows.types == name) & scored], formula=formula)
            out[model][str(alpha)] = entry
    return out


def chosen_alphas(summary):
    """Per model: the alpha of each polarity (``separate``: each sub-model its own; joint: one alpha, by the mean
    of the two polarities' fold scores)."""
    chosen = {}
    for model, per_alpha in summary.items():
        if model == "separate":
            chosen[model] = {name: max(per_alpha, key=lambda a, n=name: per_alpha[a][n]["score"])
                             for name in MAIN_TYPES.values()}
        else:
            best = max(per_alpha, key=lambda a: np.mean([per_alpha[a][n]["score"] for n in MAIN_TYPES.values()]))
            chosen[model] = dict.fromkeys(MAIN_TYPES.values(), best)
    return chosen


def summarize_curves(rows, curves, scored=None):
    """``{type: {n: {alpha: topk}}}`` of the own-model curves (over the scored rows with formula lists)."""
    formula = scored is not None
    scored = np.ones(len(rows.keys), dtype=bool) if scored is None else scored
    return {name: {str(n): {str(a): topk(r[(rows.types == name) & scored], formula=formula)
                            for a, r in per_alpha.items()}
                   for n, per_alpha in per_size.items()} for name, per_size in curves.items()}

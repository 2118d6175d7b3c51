"""Training-split CV curves of multi-label IOKR over a grid wider than the default: how the default grid was chosen.

    python -m experiments multilabel_grid --data /path/to/shared/data [--output reports] [--set only=flags,...]

For each data set (training split only, the same subsample and 5 shuffled folds as ``experiments.multilabel``) and
each arm (scaling x output normalization), the closed-form CV example-F1 of
:func:`iokr.apps.multilabel._selection.closed_form_search` over 21 alphas (1e-6..1e4) and the linear kernel plus
Gaussians at ``4^-6, ..., 4^3`` times ``1 / median squared distance`` (two steps beyond the default grid at each
end). No test example is read. Writes ``multilabel_grid.json`` (and a short ``multilabel_grid.md``); ``python -m experiments multilabel
--render-only`` turns it into the report's "Grid" section. The four large sets are left out by default (one full run costs minutes there); the
default selection's own edge check covers them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from sklearn.model_selection import KFold

from experiments._common.reports import Outputs
from experiments.multilabel import IOKR_MAX_TRAIN, SEED, load
from iokr.apps.multilabel import closed_form_search, default_kernels, make_scaler

ALPHAS = np.logspace(-6, 4, 21).tolist()
SCALES = [4.0 ** k for k in range(-6, 4)]
SMALL = ("flags", "emotions", "birds", "genbase", "medical", "foodtruck", "cal500", "enron", "scene")


@dataclass(frozen=True)
class Config:
    """Data sets (re)run (empty: :data:`SMALL`; others kept from the existing JSON when ``update``)."""

    only: tuple = ()
    update: bool = True


#: flags only (194 training examples).
QUICK = Config(only=("flags",), update=False)
OUTPUTS = Outputs(json="multilabel_grid.json", markdown="multilabel_grid.md", keep=None, json_indent=1)


def curves(data, name):
    """``{"scaling/normalize_output": F1 % of shape (1 + len(SCALES), len(ALPHAS))}`` on the training split."""
    X, Y, *_ = load(data, name)
    cap = IOKR_MAX_TRAIN.get(name)
    if cap is not None and X.shape[0] > cap:
        sub = np.sort(np.random.default_rng(SEED).choice(X.shape[0], cap, replace=False))
        X, Y = X[sub], Y[sub]
    Y = Y.astype(np.float64)
    folds = list(KFold(5, shuffle=True, random_state=SEED).split(X))
    out = {}
    for scaling in ("none", "standard"):
        scaler = make_scaler(scaling)
        Xs = X if scaler is None else scaler.fit_transform(X)
        kernels = default_kernels(Xs, SCALES)
        for normalize_output in (True, False):
            t0 = time.perf_counter()
            search = closed_form_search(Xs, Y, folds, alphas=ALPHAS, kernels=kernels,
                                        iokr_params={"normalize_output": normalize_output})
            # closed_form_search searches alphas from the largest down: back to increasing order
            f1 = 100 * search.cv_results_["mean_test_score"].reshape(len(kernels), len(ALPHAS))[:, ::-1]
            out[f"{scaling}/{normalize_output}"] = np.round(f1, 4).tolist()
            print(f"[{name}] {scaling}/{normalize_output}: best {f1.max():.2f} ({time.perf_counter() - t0:.0f} s)",
                  flush=True)
    return out


def run(config, data, previous=None, checkpoint=None):
    """Per data set, the CV curves of every arm, over ``previous`` when updating; ``checkpoint`` after each set."""
    report = dict(previous) if previous else {}
    report["curves"] = dict(report.get("curves", {}))
    report.update(alphas=ALPHAS, gamma_scales=SCALES, seed=SEED, folds=5)
    for name in config.only or SMALL:
        report["curves"][name] = curves(data, name)
        if checkpoint:
            checkpoint(report)
    return report


def render(report):
    """A short index of the curves (the multi-label report renders them in its "Grid" section)."""
    lines = ["# Multi-label IOKR: training-split CV curves", "",
             f"{len(report['alphas'])} alphas, {len(report['gamma_scales'])} Gaussian scales, {report['folds']} folds "
             f"(seed {report['seed']}); shown in `multilabel.md` (\"Grid\" section). Data sets: "
             + ", ".join(report["curves"]) + ".", ""]
    return "\n".join(lines)

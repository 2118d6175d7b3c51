"""Training-split CV curves of multi-label IOKR over a grid wider than the default: how the default grid was chosen.

    python -m benchmarks.realdata_multilabel_grid --data /path/to/shared/data [--output reports] [--only flags ...]

For each data set (training split only, the same subsample and 5 shuffled folds as ``realdata_multilabel``) and
each arm (scaling x output normalization), the closed-form CV example-F1 of
:func:`iokr.apps.multilabel._selection.closed_form_search` over 21 alphas (1e-6..1e4) and the linear kernel plus
Gaussians at ``4^-6, ..., 4^3`` times ``1 / median squared distance`` (two steps beyond the default grid at each
end). No test example is read. Writes ``multilabel_grid.json``; ``realdata_multilabel --report-only`` turns it into
the report's "Grid" section. The four large sets are left out by default (one full run costs minutes there); the
default selection's own edge check covers them.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from sklearn.model_selection import KFold

from benchmarks._harness import write_json
from benchmarks.realdata_multilabel import IOKR_MAX_TRAIN, SEED, load
from iokr.apps.multilabel._selection import closed_form_search, default_kernels, make_scaler

ALPHAS = np.logspace(-6, 4, 21).tolist()
SCALES = [4.0 ** k for k in range(-6, 4)]
SMALL = ("flags", "emotions", "birds", "genbase", "medical", "foodtruck", "cal500", "enron", "scene")


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


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", required=True, help="the shared data folder (with multilabel/)")
    parser.add_argument("--output", default="reports")
    parser.add_argument("--only", nargs="*", default=None, help="data sets to (re)run; others kept from the JSON")
    args = parser.parse_args(argv)
    Path(args.output).mkdir(parents=True, exist_ok=True)
    path = Path(args.output) / "multilabel_grid.json"
    report = json.loads(path.read_text()) if path.exists() else {"curves": {}}
    report.update(alphas=ALPHAS, gamma_scales=SCALES, seed=SEED, folds=5)
    for name in args.only or SMALL:
        report["curves"][name] = curves(args.data, name)
        write_json(path, report, indent=1, newline=True)


if __name__ == "__main__":
    main()

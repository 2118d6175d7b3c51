"""Metabolite identification, IOKR vs MP-IOKR (approximated candidate inputs), after Brouard et al. (ACML 2017, 3.2).

    OPENBLAS_NUM_THREADS=1 python -m experiments mpiokr_metabolites --data /path/to/shared/data
        [--output reports] [--set cache=/work/scratch/mp5] [--set store=STORE.sqlite] [--set size=500]
        [--set fraction=0.01]

Protocol: the metabolite app's (``reports/metabolites.md``). Structure-disjoint: the 60 dev lists' true structures
(first InChIKey block) are excluded from training; one merged spectrum per training structure
(:func:`~iokr.apps.metabolites.selection._pipeline.training_set`); the 60 lists are scored per structure (the merged spectrum
of the true structure's spectra) and per spectrum (each single spectrum) by
:func:`~iokr.apps.metabolites.selection._pipeline.evaluate_lists`, top-1/5/10/20 with ties averaged, beside the published
model's scores of the same lists. Every model sees the same kernels: the app's 4 cosine-normalized spectrum base
kernels (``ppk``, ``ppk_nl``, ``binned``, ``binned_nl``; the app's default widths, ``sigma_mz=0.001``) combined with
ALIGNF weights fitted on all training structures (as the app does), centered and normalized; Tanimoto output kernel
on Morgan-count + MACCS fingerprints (the app's cross-validated default), centered and normalized. The base Grams of
the training structures and of the queries are computed once and cached (``cache``).

**Stand-in training candidate sets.** The paper's training candidate sets (all PubChem structures with each training
structure's formula) are not in the shared data and there is no network. Stand-in: the candidate set of training
structure ``i`` is the other training structures with the same molecular formula, completed by the training
structures nearest in monoisotopic mass (``|dm|`` smallest, ties by index) to ``size`` candidates (500; a formula
with more isomers keeps all of them). Training structures that are candidates of any of the 60 dev lists are never
candidates (the lists' true structures are not in training at all). "All candidates" = the full stand-in set;
"1%" = MP-IOKR's seeded ``candidate_fraction=0.01`` subsample of each set (``ceil(0.01 * 500) = 5`` candidates per
set). Stand-in candidates are real structures with spectra in MassBank, mostly of other formulas: they are easier to
tell apart from the training structure than PubChem isomers, so this tests the method, not the paper's numbers.

Model selection (training structures only; the 60 lists are scored once per method, after choosing):

- the app's 3 random structure folds (``seed=0``);
- ``gamma`` (the reverse models ``g: Y -> F_x``): the paper selects the ``gamma_k`` first, then ``lambda``. Each
  ``gamma`` is chosen by the 3-fold hold-out error ``||phi(x) - g(y)||^2`` of the reverse kernel ridge regression
  (eq. 9-10) in the transformed feature space it approximates: per base kernel (``mu_k K'_k`` as MP-IOKR's
  separate approximation builds it) for ``"separate"``, the combined kernel for ``"joint"``; base kernels with the
  same selected ``gamma`` form one group (section 2.3.2). The transforms (centering, normalization) are those
  fitted on all training structures;
- ``alpha`` for each model: 3-fold hold-out; each held-out structure is ranked among held-out structures (its
  stand-in candidates built inside its own fold), score = mean of top-1/10/20. IOKR: refits per fold. MP-IOKR:
  ``MPIOKRCV`` with exact refits per fold (the approximated variants retrain the reverse models on each training
  side, for which no closed form is implemented): one fit per fold, whose product ``D_K B`` and candidate
  statistics serve every ``alpha``. The training candidate set of a structure is its stand-in set drawn from its
  own fold, so no held-out structure is ever a training candidate (before ``MPIOKRCV``, each fold drew the sets
  of its training structures from all of its training structures: a larger pool, so somewhat different sets).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from experiments._common.reports import Outputs
from experiments.mpiokr_metabolites.models import ALPHAS, GAMMAS, N_FOLDS, PARAMS, Recorder
from experiments.mpiokr_metabolites.report import render_report
from experiments.mpiokr_metabolites.stages import (
    build_kernels,
    build_report,
    final_fits,
    fold_standin_sets,
    gamma_stage,
    load_training,
    select_alphas,
)
from iokr.apps.metabolites import evaluate_lists, fold_ids

MODELS = ("IOKR", "joint-all", "joint-1%", "separate-all", "separate-1%")


@dataclass(frozen=True)
class Config:
    """The study's choices.

    Attributes
    ----------
    cache : str
        Where Grams and stage results are saved (and read back by later runs).
    store : str
        A fingerprint store (SQLite) to copy and warm-start from ("" for none).
    size : int
        Stand-in candidate set size ("all").
    fraction : float
        Candidate fraction of the "1%" variant.
    seed : int
    models : tuple of str
        Models run, among :data:`MODELS`.
    alphas : tuple of float
    alpha_from : str
        ``MODEL=SOURCE,...``: MODEL takes the alpha CV chose for SOURCE (an earlier model).
    cv_log : str
        ``MODEL=LOG,...``: MODEL's alpha CV scores are read from the log of a stopped run (the folds it completed).
    subsample : int
        Development only: a random subset of training structures (0: all).
    """

    cache: str = "/work/scratch/mp5"
    store: str = ""
    size: int = 500
    fraction: float = 0.01
    seed: int = 0
    models: tuple = MODELS
    alphas: tuple = ALPHAS
    alpha_from: str = ""
    cv_log: str = ""
    subsample: int = 0


#: 60 training structures, stand-in sets of 20, IOKR and joint MP-IOKR, two alphas; the cache under /tmp.
QUICK = Config(cache="/tmp/iokr_experiments_mpiokr_metabolites", size=20, fraction=0.1, models=("IOKR", "joint-all"),
               alphas=(0.1, 1.0), subsample=60)
OUTPUTS = Outputs(json="mpiokr_metabolites.json", markdown="mpiokr_metabolites.md", keep=None)


def render(report):
    """The Markdown report (its protocol paragraphs come from this module's docstring)."""
    return render_report(report, __doc__ or "")


def run(config, data, previous=None, checkpoint=None):
    """Gamma and alpha selection on training structures, final fits, one scoring of the 60 lists (stages cached in
    ``config.cache``; ``previous`` and ``checkpoint`` unused)."""
    unknown = set(config.models) - set(MODELS)
    if unknown:
        raise ValueError(f"models: expected names among {MODELS}, got {sorted(unknown)}")
    t_start = time.perf_counter()
    cache = Path(config.cache)
    cache.mkdir(parents=True, exist_ok=True)
    log_lines = []

    def log(msg):
        line = f"[{time.perf_counter() - t_start:7.0f} s] {msg}"
        print(line, flush=True)
        log_lines.append(line)

    d = load_training(config, data, cache, log)
    kern = build_kernels(d, cache, log)
    report = _select_and_fit(config, d, kern, cache, t_start, log, log_lines)
    log(f"done in {report['total_s']:.0f} s")
    return report


def _select_and_fit(config, d, kern, cache, t_start, log, log_lines):
    n = d.Y.shape[0]
    folds = fold_ids(n, N_FOLDS, config.seed)
    splits = [(np.flatnonzero(folds != f), np.flatnonzero(folds == f)) for f in range(N_FOLDS)]
    X = np.arange(n)[:, None]
    names = list(PARAMS["kernels"])

    gamma_cv = gamma_stage(kern, d.Y, X, splits, names, cache / f"gamma_cv_{n}_{config.seed}.json")
    errs = gamma_cv["errors"]
    gamma_joint = GAMMAS[int(np.argmin(errs["combined"]))]
    gamma_sep = [GAMMAS[int(np.argmin(errs[k]))] for k in names]
    log(f"gamma CV ({gamma_cv['seconds']:.0f} s): joint {gamma_joint}, separate "
        f"{dict(zip(names, gamma_sep, strict=True))} -> {len(set(gamma_sep))} group(s)")

    models = {
        "IOKR": ("IOKR", None, 1.0),
        "joint-all": ("joint", gamma_joint, 1.0), "joint-1%": ("joint", gamma_joint, config.fraction),
        "separate-all": ("separate", gamma_sep, 1.0), "separate-1%": ("separate", gamma_sep, config.fraction),
    }
    models = {k: v for k, v in models.items() if k in config.models}
    alphas = [float(a) for a in config.alphas]

    # alpha: 3-fold hold-out, ranking held-out structures among held-out stand-in lists drawn from their own fold
    train_sets, eval_sets = fold_standin_sets(d, folds, config.size)
    cv_args = (kern.kernel, kern.output, X, d.Y, splits, train_sets, eval_sets, config.seed)
    stage = cache / f"alpha_holdout_{n}_{config.seed}_{config.size}_{config.fraction}.json"
    results = select_alphas(models, alphas, config, stage, cv_args, log)

    # final fits on all training structures, each evaluated once on the 60 lists
    sizes = final_fits(results, config, d, kern, X, names, cache, log)
    summary = evaluate_lists(Recorder(), d.spectra, d.lists, d.store, d.cleaning)
    report = build_report(config, d, kern, sizes, gamma_cv, (gamma_joint, gamma_sep), alphas, results, summary,
                           t_start, log_lines)
    return report

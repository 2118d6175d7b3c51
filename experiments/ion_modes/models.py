"""The models compared: hold-out ranks of ``separate`` sub-models, the joint variants and the rare types' own
sub-models, by closed-form cross-validation (``IOKRCV``) over the study rows' Grams."""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

from experiments.ion_modes.rows import MAIN_TYPES, N_FOLDS, SEED
from iokr.apps.metabolites import DEFAULT_GRID, MetaboliteIdentifier, make_output_kernel
from iokr.decoding import CandidateSets

# No public name yet: generic weighted sums of training Grams (issue #29 moves them into iokr.kernels).
from iokr.kernels import TrainingGrams
from iokr.model_selection import IOKRCV, alignf_gram_weights

#: The app's cross-validated choice on the [M+H]+ training structures (reports/metabolites.md), prior off.
PARAMS = {"kernels": ("ppk", "ppk_nl", "binned", "binned_nl"), "weights": "alignf", "sigma_mz": 0.001,
          "sigma_intensity": 0.25, "output_kernel": "tanimoto"}
LOSS_KERNELS = (1, 3)  # positions of ppk_nl and binned_nl in PARAMS["kernels"]
ALPHAS = DEFAULT_GRID["alpha"]
#: Working memory (MiB) of the hold-out scoring.
WORKING_MEMORY = 256


def study_grams(rows):
    """``(grams4, grams6)``: Grams over all study rows of the 4 base kernels restricted to same-polarity pairs, and
    the same 4 followed by the 2 loss kernels on all pairs (CSR, shared)."""
    grams = MetaboliteIdentifier(**PARAMS).base_grams(rows.spectra, storage="csr")
    diags, masked, losses = grams.diags, [], []
    other = rows.polarity[:, None] != rows.polarity[None, :]
    for k in range(grams.n_kernels):
        dense = grams.block(k)
        if k in LOSS_KERNELS:
            losses.append(sp.csr_matrix(dense))
        dense[other] = 0.0
        masked.append(sp.csr_matrix(dense))
        del dense
    return (TrainingGrams(masked, diags),
            TrainingGrams(masked + losses, diags + [diags[k] for k in LOSS_KERNELS]))


def holdout_ranks(K, Y, n_train, sets, alphas):
    """``{alpha: ranks}`` of rows ``n_train:`` of ``K`` in their ``sets``, the model trained on rows ``:n_train``.

    One split of :class:`~iokr.model_selection.IOKRCV` (closed form, one eigendecomposition for every alpha); the
    ranks are read from the :class:`~iokr.model_selection.HoldoutResult` its scoring receives, once per alpha in
    ``cv_results_`` order (the score itself is not used).
    """
    received = []

    def scoring(result):
        ranks = np.full(len(Y), np.nan)
        ranks[np.asarray(result.indices)] = np.asarray(result.ranks, dtype=np.float64)
        received.append(ranks[n_train:])
        return 0.0

    split = [(np.arange(n_train), np.arange(n_train, len(Y)))]
    search = IOKRCV(alphas=list(alphas), input_kernel="precomputed", output_kernel=make_output_kernel(
        PARAMS["output_kernel"]), cv=split, scoring=scoring, path_method="eigen", working_memory=WORKING_MEMORY,
        refit=False).fit(K, Y, candidate_sets=sets)
    used = search.cv_results_["param_alpha"]
    if len(received) != len(used):
        raise RuntimeError(f"IOKRCV scored {len(received)} times for {len(used)} alphas.")
    return dict(zip(map(float, used), received, strict=True))


def fold_ranks(grams, Y, sets, eligible, folds, weigh, alphas=ALPHAS):
    """Hold-out ranks ``{alpha: ranks}`` over the rows of ``grams`` (a view), per fold in closed form.

    ``eligible`` marks the rows a fold may train on; every row of the held-out fold is ranked in its set.
    ``weigh(train)`` gives the kernel weights of one fold from its training rows (positions in the view). The
    closed form needs the training side to be the complement of the test side, so each fold's Gram covers its
    training and test rows only (rows in neither take no part).
    """
    out = {float(a): np.full(len(Y), np.nan) for a in alphas}
    for f in range(N_FOLDS):
        train, test = np.flatnonzero(eligible & (folds != f)), np.flatnonzero(folds == f)
        if not train.size or not test.size:
            continue
        both = np.concatenate([train, test])
        K = grams.combined(weigh(train), both, both)
        local = CandidateSets(sets.pool, [sets.indices[i] for i in both])
        for alpha, ranks in holdout_ranks(K, Y[both], train.size, local, alphas).items():
            out[alpha][test] = ranks
        del K
    return out


def alignf_on(view, Y):
    """``weigh(train)``: ALIGNF weights of ``view``'s Grams on the training rows."""
    output = make_output_kernel(PARAMS["output_kernel"])
    return lambda train: alignf_gram_weights(view.subset(train), output(Y[train]))


def cross_weighted(view4, Y, c):
    """``weigh(train)`` of ``joint-c``: ALIGNF on the 4 same-polarity kernels; the 2 all-pair loss kernels at
    ``c`` times the weight of their same-polarity versions."""
    fit = alignf_on(view4, Y)

    def weigh(train):
        w = fit(train)
        return np.concatenate([w, c * w[list(LOSS_KERNELS)]])
    return weigh


def run_models(rows, grams4, grams6, joint, log, lists):
    """Hold-out ranks of ``separate`` and the joint variants: ``{model: {alpha: ranks over all rows}}``."""
    Y, sets = rows.Y, CandidateSets(rows.Y, lists)
    separate = {float(a): np.full(len(Y), np.nan) for a in ALPHAS}
    for pol in (1, -1):
        t0 = time.perf_counter()
        R = np.flatnonzero(rows.polarity == pol)
        view = grams4.subset(R)
        ranks = fold_ranks(view, Y[R], CandidateSets(Y, [sets.indices[i] for i in R]), rows.main(pol)[R],
                           rows.folds[R], alignf_on(view, Y[R]))
        for a, r in ranks.items():
            separate[a][R] = r
        log(f"separate {MAIN_TYPES[pol]}: {time.perf_counter() - t0:.0f} s")
    results = {"separate": separate}
    eligible = rows.main(1) | rows.main(-1)
    for variant in joint:
        t0 = time.perf_counter()
        weigh = alignf_on(grams6, Y) if variant == "alignf" else cross_weighted(grams4, Y, float(variant))
        name = "joint-alignf" if variant == "alignf" else f"joint-c{variant}"
        results[name] = fold_ranks(grams6, Y, sets, eligible, rows.folds, weigh)
        log(f"{name}: {time.perf_counter() - t0:.0f} s")
    return results


def _own_model_ranks(view, Y, sub, folds, n, rows_total, R):
    """``{alpha: ranks over all rows}`` of one type's own sub-model trained on ``n`` structures per fold."""
    out = {float(a): np.full(rows_total, np.nan) for a in ALPHAS}
    rng = np.random.default_rng(SEED)
    for f in range(N_FOLDS):
        eligible = np.zeros(R.size, dtype=bool)
        eligible[rng.choice(np.flatnonzero(folds != f), n, replace=False)] = True
        held = np.where(folds == f, f, -1)  # fold_ranks then runs this fold only
        for a, r in fold_ranks(view, Y, sub, eligible, held, alignf_on(view, Y)).items():
            out[a][R[folds == f]] = r[folds == f]
    return out


def own_model_curve(rows, grams4, log, lists, sizes):
    """``{type: {n: {alpha: ranks over all rows}}}``: each rare type's own sub-model trained on ``n`` of its
    structures per fold (drawn from the other folds, seeded), for ``n`` in ``sizes`` below the type's training
    size, and at that size."""
    curves = {}
    for name in sorted(set(rows.types.tolist()) - set(MAIN_TYPES.values())):
        R = np.flatnonzero(rows.types == name)
        view, Y, folds = grams4.subset(R), rows.Y[R], rows.folds[R]
        sub = CandidateSets(rows.Y, [lists[i] for i in R])
        n_train = min(int(np.sum(folds != f)) for f in range(N_FOLDS))
        curves[name] = {n: _own_model_ranks(view, Y, sub, folds, n, len(rows.Y), R)
                        for n in [s for s in sizes if s < n_train] + [n_train]}
        log(f"own {name}: {R.size} rows, training sizes {list(curves[name])}")
    return curves

"""Model selection on training spectra: the training set, structure folds, surrogate candidate lists and the
cross-validated search of ``train`` and ``evaluate``.

Protocol of :func:`evaluate` (structure-disjoint): every structure that is the true answer of an evaluated list
(first InChIKey block) is removed from training; the model is trained on one merged spectrum per remaining
structure, with hyperparameters chosen by grouped cross-validation on those training structures only; queries are
the spectra of the lists' true structures.

- *per structure*: one query per list, the merged spectrum of all the true structure's spectra;
- *per spectrum*: every single spectrum of the true structure is a query against its list.

Ranks count ties at half-way (``ties="average"``) for this model and for the published scores alike; the
published figures with ties in the true structure's favour are reported as ``published_optimistic``.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np

from ....decoding import CandidateSets
from ....kernels import TrainingGrams
from ....metrics import true_candidate_rank
from ....model_selection import IOKRCV, fold_candidate_sets
from ..chemistry._formulas import FormulaError
from ..chemistry._structures import formula_mass
from ..defaults import DEFAULT_GRID, DEFAULT_SURROGATE, SURROGATES  # noqa: F401 - read here by callers
from ..evaluation._evaluation import TOP_K, evaluate_lists, query_spectra, topk_percentages  # noqa: F401
from ..kernels._factories import make_output_kernel
from ..model._model import MetaboliteIdentifier
from ..spectra._cleaning import Cleaning  # noqa: F401 - read here by callers


@dataclass
class TrainingSet:
    spectra: object
    keys: list
    Y: np.ndarray
    n_spectra: int
    n_excluded_structures: int
    n_unparsable: int
    licenses: dict = field(default_factory=dict)
    #: Molecular formula per training structure (RDKit), for the isomer-like CV lists; ``None`` if unknown.
    formulas: list | None = None


def training_set(spectra, store, cleaning, exclude_keys=(), merge=True):
    """Clean, drop excluded structures (first InChIKey block) and empty spectra, merge per structure, fingerprint.

    Structures RDKit rejects are dropped and counted (``n_unparsable``).
    """
    cleaned = cleaning.single(spectra)
    keys = np.array(cleaned.structure_keys())
    exclude = {k[:14] for k in exclude_keys if k}
    keep = (keys != "") & (cleaned.n_peaks > 0)
    excluded = np.isin(keys, list(exclude))
    n_excluded = len(set(keys[excluded & keep].tolist()))
    keep &= ~excluded
    if not keep.any():
        raise ValueError("No training spectrum left after cleaning and excluding the evaluated structures.")
    kept = cleaned[np.flatnonzero(keep)]
    if merge:
        train, labels = cleaning.merged(kept)
    else:
        train, labels = kept, kept.structure_keys()
    structures = [m.get("inchi") or m.get("smiles") for m in train.metadata]
    Y = store.fingerprints(structures)
    _, ok = store.keys_for(structures)
    n_bad = int((~ok).sum())
    if n_bad:
        train, Y = train[np.flatnonzero(ok)], Y[ok]
        labels = [k for k, good in zip(labels, ok, strict=True) if good]
    licenses = {}
    for lic in kept.field("license"):
        licenses[lic] = licenses.get(lic, 0) + 1
    formulas = store.formulas_for([m.get("inchi") or m.get("smiles") for m in train.metadata])
    return TrainingSet(train, list(labels), Y, int(keep.sum()), n_excluded, n_bad, licenses, formulas)


# -- model selection ---------------------------------------------------------------------------------------------

def fold_ids(n, n_folds, seed):
    """The cross-validation fold (0 .. n_folds - 1) of each of ``n`` training structures, balanced and seeded."""
    rng = np.random.default_rng(seed)
    return rng.permutation(np.arange(n) % n_folds)




def _grid_points(grid, base_params):
    """Grid points as dicts; ``output_gamma`` only varies for the Gaussian-Tanimoto output kernel."""
    grid = dict(grid)
    names = sorted(grid)
    points, seen = [], set()
    for values in itertools.product(*(grid[n] for n in names)):
        point = dict(zip(names, values, strict=True))
        kernel = point.get("output_kernel", base_params.get("output_kernel", "gaussian_tanimoto"))
        if kernel != "gaussian_tanimoto" and "output_gamma" in point:
            point["output_gamma"] = None  # unused by this output kernel: one row instead of one per width
        key = tuple(point[n] for n in names)
        if key not in seen:
            seen.add(key)
            points.append(point)
    return points, names


#: Parameters of the spectrum kernels themselves (and the kernel set): changing them means recomputing the base Grams.
WIDTH_PARAMS = ("sigma_mz", "sigma_intensity", "bin_width", "kernels")


def _width_key(setting):
    values = dict(setting)
    return tuple(str(values.get(k)) for k in WIDTH_PARAMS)


def _chosen(base_params, point):
    """Model parameters of a grid point (an unused ``output_gamma`` keeps the base value)."""
    return {**base_params, **{k: v for k, v in point.items() if not (k == "output_gamma" and v is None)}}


def _topk_row(ranks):
    """Top-k accuracies on fold lists; score = mean of top-1, top-10 and top-20."""
    row = topk_percentages(ranks)
    return row, float((row["top1"] + row["top10"] + row["top20"]) / 3.0)


#: Minimum length of an isomer-like CV list (same-formula structures, filled up by the nearest masses).
FORMULA_LIST_SIZE = 20


def _mass_or_nan(formula):
    """The neutral-equivalent mass of a formula; NaN for text that is no formula (its lists get no mass neighbours)."""
    try:
        return formula_mass(formula)
    except FormulaError:
        return np.nan


def formula_candidate_sets(Y, formulas, min_size=FORMULA_LIST_SIZE):
    """Isomer-like surrogate lists: each structure among all structures of its molecular formula.

    A structure whose formula is shared by at least one other structure (``scored``) gets all structures of its
    formula, filled up to ``min_size`` with the other structures nearest in monoisotopic mass (ties by index);
    every other structure gets a list of itself alone (not scored).

    Parameters
    ----------
    Y : ndarray of shape (n, p)
        Fingerprints (the candidate pool).
    formulas : list of n str or None
    min_size : int

    Returns
    -------
    sets : CandidateSets
        ``n`` lists over the pool ``Y``; list ``i`` contains ``i``.
    scored : ndarray of bool, shape (n,)
    """
    n = len(formulas)
    if np.shape(Y)[0] != n:
        raise ValueError(f"'formulas' has {n} entries for {np.shape(Y)[0]} fingerprints.")
    groups = {}
    for i, f in enumerate(formulas):
        if f:
            groups.setdefault(f, []).append(i)
    mass_of = {f: _mass_or_nan(f) for f in groups}
    masses = np.array([mass_of.get(f, np.nan) if f else np.nan for f in formulas])
    far = np.where(np.isnan(masses), np.inf, masses)
    scored = np.zeros(n, dtype=bool)
    lists = []
    for i, f in enumerate(formulas):
        members = np.asarray(groups.get(f, [i]) if f else [i], dtype=np.intp)
        if members.size < 2:
            lists.append(np.array([i], dtype=np.intp))
            continue
        scored[i] = True
        if members.size < min_size and np.isfinite(far[i]):
            order = np.argsort(np.abs(far - far[i]), kind="stable")
            order = order[np.isfinite(far[order])]
            fill = order[~np.isin(order, members)][:min_size - members.size]
            members = np.concatenate([members, fill])
        lists.append(members)
    return CandidateSets(Y, lists), scored




def usable_surrogate(train, surrogate, n_folds=3, seed=0):
    """``surrogate``, or ``"fold"`` when the formula lists cannot score every fold (no formulas known, or a fold
    without a structure whose formula another training structure shares: small training sets)."""
    if surrogate == "fold" or train.formulas is None or len(train.formulas) != len(train.spectra):
        return "fold"
    _, scored = formula_candidate_sets(np.zeros((len(train.formulas), 1)), train.formulas, min_size=1)
    folds = fold_ids(len(train.formulas), n_folds, seed)
    return surrogate if all(scored[folds == f].any() for f in range(n_folds)) else "fold"


def _formula_row(ranks):
    """Top-k accuracies on isomer-like lists; score = mean of top-1, top-5 and top-10 (lists have >= 20 entries)."""
    row = topk_percentages(ranks)
    return row, float((row["top1"] + row["top5"] + row["top10"]) / 3.0)


def _holdout_ranks(K, Y, alphas, splits, sets, output_kernel, working_memory, fold_score):
    """Exact hold-out ranks of every structure in its list, per alpha, from one IOKRCV eigendecomposition.

    ``fold_score(indices, ranks)`` is IOKRCV's per-split score. The ranks are read from the
    :class:`~iokr.model_selection.HoldoutResult` each split's scoring receives (called once per split, alpha by
    alpha in ``cv_results_`` order), not stored with ``store_cv_results``, which would also keep every alpha's
    hold-out predictions (an ``n x n`` array per alpha at the end of the search).
    """
    received = []

    def scoring(result):
        indices, ranks = np.asarray(result.indices), np.asarray(result.ranks, dtype=np.float64)
        received.append((indices, ranks))
        return fold_score(indices, ranks)

    search = IOKRCV(alphas=list(alphas), input_kernel="precomputed", output_kernel=output_kernel, cv=splits,
                    scoring=scoring, path_method="eigen", working_memory=working_memory, refit=False)
    search.fit(K, Y, candidate_sets=sets)
    used = search.cv_results_["param_alpha"]
    if len(received) != len(used) * len(splits):
        raise RuntimeError(f"IOKRCV scored {len(received)} splits for {len(used)} alphas x {len(splits)} splits.")
    scores, out = search.cv_results_["split_test_scores"], []
    for j, alpha in enumerate(used):
        ranks = np.full(np.shape(K)[0], np.nan)
        for s, (indices, split_ranks) in enumerate(received[j * len(splits):(j + 1) * len(splits)]):
            if not (np.array_equal(indices, splits[s][1])
                    and np.array_equal(fold_score(indices, split_ranks), scores[j, s], equal_nan=True)):
                raise RuntimeError("IOKRCV's scoring calls are not in split and alpha order.")
            ranks[indices] = split_ranks
        out.append((float(alpha), ranks))
    return out


def _surrogate_lists(train, Y, folds, splits, surrogate):
    """``({name: (candidate sets, IOKRCV's per-split score)}, scored)`` of the surrogate CV lists (see
    :func:`cross_validate`); ``scored`` marks the structures with same-formula lists (None without them)."""
    surrogates, scored = {}, None
    if surrogate in ("fold", "both"):
        surrogates["fold"] = (fold_candidate_sets(Y, folds), lambda idx, r: _topk_row(r)[1])
    if surrogate in ("formula", "both"):
        if train.formulas is None or len(train.formulas) != len(train.spectra):
            raise ValueError(f"cross_validate(surrogate={surrogate!r}) needs the molecular formula of every "
                             "training structure (TrainingSet.formulas).")
        formula_sets, scored = formula_candidate_sets(Y, train.formulas)
        if any(not scored[te].any() for _, te in splits):
            raise ValueError(f"cross_validate(surrogate={surrogate!r}): a fold has no structure whose molecular "
                             "formula is shared by another training structure; use surrogate='fold'.")
        surrogates["formula"] = (formula_sets, lambda idx, r: _formula_row(r[scored[idx]])[1])
    return surrogates, scored


def _surrogate_scores(ranks_by_surrogate, splits, scored, surrogate):
    """A table row's fold-averaged top-k and scores from the hold-out ranks of each surrogate at one alpha."""
    row, scores = {}, {}
    for name, ranks in ranks_by_surrogate.items():
        if name == "fold":
            fold_rows = [_topk_row(ranks[te]) for _, te in splits]
        else:
            fold_rows = [_formula_row(ranks[te][scored[te]]) for _, te in splits]
        prefix = "" if (name == "fold" or surrogate == "formula") else "formula_"
        for k in TOP_K:
            row[f"{prefix}top{k}"] = float(np.mean([r[f"top{k}"] for r, _ in fold_rows]))
        scores[name] = float(np.mean([sc for _, sc in fold_rows]))
    if surrogate == "both":
        row["fold_score"], row["formula_score"] = scores["fold"], scores["formula"]
    row["score"] = float(np.mean(list(scores.values())))
    return row


def _fold_holdout_ranks(model, grams, Y, alphas, splits, surrogates):
    """Hold-out ranks per surrogate and alpha, with the kernel weights fitted on each fold's training side.

    ``grams`` (:class:`TrainingGrams` on all training structures) are combined in place per fold; one fold's
    combined Gram is freed before the next one is built. Returns ``({surrogate: [(alpha, ranks over all
    structures)]}, mean weights over folds)``.
    """
    output = make_output_kernel(model.output_kernel, model.output_gamma)
    merged, fold_weights = {}, []
    for train_rows, test_rows in splits:
        K, weights = model.combined_training_gram(grams, None, Y, weights_from=train_rows)
        fold_weights.append(weights)
        for name, (sets, split_score) in surrogates.items():
            results = _holdout_ranks(K, Y, alphas, [(train_rows, test_rows)], sets, output, model.scoring_budget(),
                                     split_score)
            if name not in merged:
                merged[name] = [(alpha, np.full(Y.shape[0], np.nan)) for alpha, _ in results]
            for (_, ranks), (_, fold_ranks) in zip(merged[name], results, strict=True):
                ranks[test_rows] = fold_ranks[test_rows]
        del K
    return merged, np.mean(fold_weights, axis=0)


def cross_validate(train, base_params, grid=None, n_folds=3, seed=0, progress=None, base_grams=None,
                   surrogate="fold", gram_cache=None, gram_storage="csr"):
    """Grouped k-fold cross-validation over training structures, in closed form (no refitting).

    Surrogate candidate lists and scores (``surrogate``):

    - ``"fold"``: each held-out structure is ranked among the fingerprints of all held-out structures of its fold
      (a list of similar size to PubChem formula lists, but of mostly dissimilar structures); score = mean of
      top-1, top-10 and top-20 accuracy (``fold_score``).
    - ``"formula"``: each held-out structure whose molecular formula is shared by another training structure is
      ranked among all training structures of its formula (any fold), filled up to :data:`FORMULA_LIST_SIZE` by
      the nearest monoisotopic masses (:func:`formula_candidate_sets`): isomer lists like PubChem's, only shorter;
      score = mean of top-1, top-5 and top-10 accuracy over those structures (``formula_score``).
    - ``"both"``: score = mean of the two scores (one more eigendecomposition per kernel setting).

    Scores are computed per fold and averaged over folds. For every setting of the kernels (output kernel and
    width, input Gaussian width) the combined input Gram is built once and :class:`iokr.model_selection.IOKRCV`
    gives the exact hold-out rankings of the whole alpha grid from one eigendecomposition (centering as refitted
    on each training side; normalization statistics of all training structures).

    The ALIGNF kernel weights are fitted inside each fold, on its training side only (the held-out structures take
    no part in choosing them, as in :func:`cross_validate_refit`): every fold has its own combined Gram, hence one
    eigendecomposition per fold and kernel setting. The table's ``weights`` are the folds' mean.

    Parameters
    ----------
    train : TrainingSet
    base_params : dict
        :class:`MetaboliteIdentifier` parameters; the grid's keys override them.
    grid : dict, optional
        Keys among ``alpha``, ``input_gamma``, ``output_kernel``, ``output_gamma`` and the spectrum-kernel widths
        ``sigma_mz``, ``sigma_intensity``, ``bin_width``, and ``kernels`` (kernel sets) (tuples of values; each
        width setting or kernel set costs its base Grams); default :data:`DEFAULT_GRID`.
    n_folds, seed : int
        The random structure folds (the same as :func:`cross_validate_refit`).
    progress : callable, optional
        Called ``n_folds`` times per grid point.
    base_grams : tuple, optional
        ``MetaboliteIdentifier(**base_params).base_grams(train.spectra)`` (a pair or :class:`TrainingGrams`), if
        already computed (used for the grid points with the base widths).
    surrogate : {"fold", "formula", "both"}, default="fold"
        The surrogate candidate lists and score (above); ``"formula"`` and ``"both"`` need ``train.formulas``.
    gram_cache : dict, optional
        Filled with ``{width key: TrainingGrams}`` of the last spectrum-kernel setting searched, for the caller to
        reuse (:func:`grams_for`: the calibration and the final fit of ``fit_with_cv``).
    gram_storage : {"csr", "file", "dense"}, default="csr"
        Storage of the base Grams computed here (``storage`` of :meth:`MetaboliteIdentifier.base_grams`).

    Returns
    -------
    best : dict
        The chosen parameters (merged into ``base_params``).
    table : list of dict
        Every grid point with its fold-averaged top-k accuracies and ``score``: ``top<k>`` are those of the fold
        lists (``"fold"``, ``"both"``) or of the formula lists (``"formula"``); ``"both"`` also records
        ``formula_top<k>``, ``fold_score`` and ``formula_score``.
    """
    if surrogate not in SURROGATES:
        raise ValueError(f"The 'surrogate' parameter of cross_validate must be one of {SURROGATES}. "
                         f"Got {surrogate!r} instead.")
    points, names = _grid_points(DEFAULT_GRID if grid is None else grid, base_params)
    spectra, Y = train.spectra, np.asarray(train.Y, dtype=np.float64)
    folds = fold_ids(len(spectra), n_folds, seed)
    splits = [(np.flatnonzero(folds != f), np.flatnonzero(folds == f)) for f in range(n_folds)]
    surrogates, scored = _surrogate_lists(train, Y, folds, splits, surrogate)
    kernel_settings = {}
    for point in points:
        key = tuple((k, point[k]) for k in names if k != "alpha")
        kernel_settings.setdefault(key, []).append(point["alpha"])
    widths = {} if gram_cache is None else gram_cache  # base Grams per spectrum-kernel setting (computed once each)

    def grams_for(params):
        width = _width_key(params.items())
        if width not in widths:
            widths.clear()  # one setting's Grams in memory at a time (settings are grouped below)
            if base_grams is not None and width == _width_key(base_params.items()):
                widths[width] = TrainingGrams.of(base_grams)
            else:
                widths[width] = TrainingGrams.of(MetaboliteIdentifier(**params).base_grams(spectra, storage=gram_storage))
        return widths[width]

    table = []
    for key, alphas in sorted(kernel_settings.items(), key=lambda item: _width_key(item[0])):
        params = _chosen(base_params, dict(key))
        per_surrogate, weights = _fold_holdout_ranks(MetaboliteIdentifier(**params), grams_for(params), Y, alphas,
                                                     splits, surrogates)
        for j, alpha in enumerate(a for a, _ in next(iter(per_surrogate.values()))):
            row = {**dict(key), "alpha": float(alpha)}
            row.update(_surrogate_scores({name: results[j][1] for name, results in per_surrogate.items()}, splits,
                                         scored, surrogate))
            row["weights"] = [round(float(w), 4) for w in weights]
            table.append(row)
            if progress is not None:
                for _ in range(n_folds):
                    progress()
    best = max(table, key=lambda r: r["score"])
    return _chosen(base_params, {k: best[k] for k in names}), table


def cross_validate_refit(train, base_params, grid=None, n_folds=3, seed=0, progress=None, base_grams=None):
    """Grouped k-fold cross-validation by refitting the model in every fold (reference for :func:`cross_validate`).

    Each held-out structure is ranked among the fingerprints of all held-out structures of its fold (a surrogate
    candidate list of similar size to PubChem formula lists); the score is the mean of top-1, top-10 and top-20
    accuracy. Base Grams are computed once; MKL weights are refitted inside every fold.

    Returns
    -------
    best : dict
        The chosen parameters (merged into ``base_params``).
    table : list of dict
        Every grid point with its fold-averaged top-k accuracies.
    """
    points, names = _grid_points(DEFAULT_GRID if grid is None else grid, base_params)
    if set(names) & set(WIDTH_PARAMS):
        raise ValueError(f"cross_validate_refit searches no spectrum-kernel widths {WIDTH_PARAMS}; got grid keys "
                         f"{names} (use cross_validate).")
    spectra, Y = train.spectra, train.Y
    grams = TrainingGrams.of(MetaboliteIdentifier(**base_params).base_grams(spectra) if base_grams is None
                             else base_grams)
    folds = fold_ids(len(spectra), n_folds, seed)
    results = {i: [] for i in range(len(points))}
    for f in range(n_folds):
        tr, te = np.flatnonzero(folds != f), np.flatnonzero(folds == f)
        cands = CandidateSets(Y[te], [np.arange(te.size)] * te.size)
        for i, point in enumerate(points):
            model = MetaboliteIdentifier(**_chosen(base_params, point)).fit(spectra[tr], Y[tr],
                                                                             base_grams=grams.subset(tr))
            test_kernel = _sliced_test_kernel(model, grams, te, tr)
            scores = model.score_sets(spectra[te], cands, test_kernel=test_kernel)
            ranks = np.array([true_candidate_rank(s, j) for j, s in enumerate(scores)])
            results[i].append(list(topk_percentages(ranks).values()))
            if progress is not None:
                progress()
    table = []
    for i, point in enumerate(points):
        acc = np.mean(results[i], axis=0)
        row = {**{k: v for k, v in point.items()}, **{f"top{k}": float(a) for k, a in zip(TOP_K, acc, strict=True)}}
        row["score"] = float((acc[0] + acc[2] + acc[3]) / 3.0)
        table.append(row)
    best = max(table, key=lambda r: r["score"])
    return _chosen(base_params, {k: best[k] for k in names}), table


def grams_for(gram_cache, params):
    """The cached :class:`TrainingGrams` of ``params``' spectrum-kernel setting (see :func:`cross_validate`), or
    None."""
    return (gram_cache or {}).get(_width_key(params.items()))


def _sliced_test_kernel(model, grams, te, tr):
    """The fitted model's test kernel from :class:`TrainingGrams` on all structures (identical to
    ``model.test_kernel`` of the held-out spectra)."""
    K = model.combined_block(grams, model.weights_, te, tr)
    unit = [model._unit_diag(d) for d in grams.subset(te).diags]
    diag = sum(w * d for w, d in zip(model.weights_, unit, strict=True))
    if model.input_gamma is not None:
        diag = np.ones_like(diag)
    return K, diag

"""Kernels, stand-in candidate sets, cached Grams and the model fits of the MP-IOKR metabolite study."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import shutil
import time
from pathlib import Path

import numpy as np

from iokr.apps.metabolites import (
    CandidateStore,
    Cleaning,
    Fingerprinter,
    MetaboliteIdentifier,
    concatenate,
    evaluate_lists,
    normalized_gram,
    parse_structure,
    read_candidate_lists,
    read_spectra,
    topk_percentages,
    training_set,
)
from iokr.decoding import CandidateSets
from iokr.estimators import IOKR, MPIOKR
from iokr.kernels import Kernel, WeightedSum
from iokr.linalg import cholesky_shifted
from iokr.metrics import true_candidate_rank
from iokr.model_selection import MPIOKRCV

#: The app's model settings at its cross-validated defaults (reports/metabolites.md), pinned here so that the cached
#: Grams and results stay valid if the app's defaults move.
#: (``bin_width`` and ``output_gamma`` keep MetaboliteIdentifier's defaults, 0.01 and unused.)
PARAMS = {"kernels": ("ppk", "ppk_nl", "binned", "binned_nl"), "weights": "alignf", "sigma_mz": 0.001,
          "sigma_intensity": 0.25, "output_kernel": "tanimoto"}
ALPHAS = (0.01, 0.03, 0.1, 0.3, 1.0)
GAMMAS = tuple(float(f"{10.0 ** (k / 2):.4g}") for k in range(-4, 7))  # 0.01 ... 1000, half decades
N_FOLDS = 3
#: Brouard et al. (2017), Table 3 (GNPS, 10-fold CV over 3,868 spectra, 24 kernels, PubChem training candidates):
#: top-1 / top-10 / top-20; MP-IOKR as (all candidates, 1%).
PAPER_TABLE3 = {"IOKR": (30.7, 66.3, 73.9), "MP-IOKR (j)": ((30.7, 30.8), (67.0, 67.2), (74.6, 74.6)),
                "MP-IOKR (s)": ((31.2, 31.2), (67.9, 67.8), (75.3, 75.3))}


def fold_row(ranks):
    """Top-k percentages of fold lists and the app's fold score (mean of top-1, top-10 and top-20)."""
    row = topk_percentages(ranks)
    return row, (row["top1"] + row["top10"] + row["top20"]) / 3.0


# -- kernels on precomputed Grams ----------------------------------------------------------------------------------

class SplitGram(Kernel):
    """A base kernel given by its training Gram and its query-by-training block; inputs are integer indices.

    Index ``i < n_train`` is training structure ``i``; ``n_train + j`` is query ``j``. Only the blocks IOKR and
    MP-IOKR ask for exist: training by training, and queries by training (with the queries' diagonal).
    """

    temporaries_per_entry = 0

    def __init__(self, train=None, test=None, test_diag=None):
        self.train = train
        self.test = test
        self.test_diag = test_diag

    def _n(self):
        return self.train.shape[0] + (0 if self.test is None else self.test.shape[0])

    def validate(self, X, name):
        idx = np.asarray(X)
        idx = idx[:, None] if idx.ndim == 1 else idx
        if idx.ndim != 2 or idx.shape[1] != 1 or not np.issubdtype(idx.dtype, np.integer):
            raise ValueError(f"SplitGram: '{name}' must be integer indices of shape (n, 1); got {idx.shape}.")
        if idx.size and (idx.min() < 0 or idx.max() >= self._n()):
            raise ValueError(f"SplitGram: '{name}' indices must lie in [0, {self._n()}).")
        return idx.astype(np.intp)

    def compute(self, A, B):
        a, b = A[:, 0], B[:, 0]
        n = self.train.shape[0]
        if (b >= n).any():
            if (a >= n).any():
                raise ValueError("SplitGram: no query-by-query block is stored.")
            return self.compute(B, A).T
        out = np.empty((a.size, b.size))
        train = a < n
        out[train] = self.train[np.ix_(a[train], b)]
        if (~train).any():
            out[~train] = self.test[np.ix_(a[~train] - n, b)]
        return out

    def compute_diag(self, A):
        a = A[:, 0]
        n = self.train.shape[0]
        out = np.empty(a.size)
        train = a < n
        out[train] = self.train[a[train], a[train]]
        if (~train).any():
            out[~train] = self.test_diag[a[~train] - n]
        return out


def spectra_key(spectra):
    h = hashlib.blake2b(digest_size=12)
    for arr in (spectra.mz, spectra.intensity, spectra.offsets):
        h.update(np.ascontiguousarray(arr).tobytes())
    return h.hexdigest()


class Recorder:
    """Stands in for a model in a first pass of ``evaluate_lists``: records the query spectra it is given."""

    def __init__(self):
        self.calls = []

    def score_sets(self, spectra, candidate_sets):
        self.calls.append(spectra)
        return [np.zeros(len(idx)) for idx in candidate_sets.indices]


class IndexedModel:
    """``score_sets`` for ``evaluate_lists``: a fitted IOKR / MP-IOKR on :class:`SplitGram` kernels, queries by index."""

    def __init__(self, estimator, offsets, n_train):
        self.estimator, self.offsets, self.n_train = estimator, offsets, n_train

    def score_sets(self, spectra, candidate_sets):
        start = self.offsets[spectra_key(spectra)]
        X = (self.n_train + start + np.arange(len(spectra)))[:, None]
        out = []
        for r in self.estimator.rank(X, candidate_sets):
            s = np.full(r.n_candidates, -np.inf)
            s[r.order] = r.scores
            out.append(s)
        return out


# -- stand-in candidate sets ---------------------------------------------------------------------------------------

def standin_sets(masses, formulas, queries, allowed, size):
    """For each query, the allowed structures with its formula, then the nearest allowed ones in mass (not itself).

    Parameters
    ----------
    masses : ndarray of shape (l,)
    formulas : ndarray of str, shape (l,)
    queries : ndarray of int
    allowed : ndarray of bool, shape (l,)
    size : int

    Returns
    -------
    list of ndarray of int (rows of the training structures), one per query
    """
    pool = np.flatnonzero(allowed)
    order = pool[np.argsort(masses[pool], kind="stable")]
    sorted_mass = masses[order]
    by_formula = {}
    for i in pool:
        by_formula.setdefault(formulas[i], []).append(i)
    out = []
    for q in queries:
        pos = np.searchsorted(sorted_mass, masses[q])
        window = order[max(0, pos - size - 2):pos + size + 2]
        window = window[window != q]
        dm = np.abs(masses[window] - masses[q])
        nearest = window[np.lexsort((window, dm))][:size]
        same = [i for i in by_formula.get(formulas[q], []) if i != q]
        out.append(np.unique(np.concatenate([nearest, np.asarray(same, dtype=np.intp)])).astype(np.intp))
    return out


# -- data and Grams ------------------------------------------------------------------------------------------------

def load(data, store_path, cache):
    fingerprinter = Fingerprinter("morgan_counts+maccs")
    if store_path:
        local = cache / "store.sqlite"  # a copy: the given store is never written to
        if not local.exists():
            shutil.copyfile(store_path, local)
        store = CandidateStore(local, fingerprinter)
    else:
        store = CandidateStore(":memory:", fingerprinter)
        bundled = Path(__file__).resolve().parents[1] / "iokr/datasets/data/metabolites/candidate_fingerprints.npz"
        if bundled.exists():
            store.attach_cache(bundled)

    spectra, _ = read_spectra(data / "massbank_ms2_posMH_permissive.jsonl.gz", require_structure=True)
    lists = read_candidate_lists(data / "pubchem_candidate_sets_dev.tar.gz", store)
    cleaning = Cleaning()
    train = training_set(spectra, store, cleaning, [lst.true_key for lst in lists if lst.true_key])
    return spectra, lists, store, cleaning, train


def structure_info(train, store):
    """Monoisotopic mass and molecular formula of each training structure (RDKit)."""
    from rdkit.Chem.Descriptors import ExactMolWt  # noqa: PLC0415 - optional chem extra
    from rdkit.Chem.rdMolDescriptors import CalcMolFormula  # noqa: PLC0415 - optional chem extra

    masses, formulas = [], []
    for m in train.spectra.metadata:
        mol = parse_structure(m.get("inchi") or m.get("smiles"))
        masses.append(ExactMolWt(mol))
        formulas.append(CalcMolFormula(mol))
    return np.asarray(masses), np.asarray(formulas)


def cached_grams(train, queries, cache, log):
    """Normalized base Grams (training x training, queries x training) and unit diagonals; np.save'd in ``cache``."""
    model = MetaboliteIdentifier(**PARAMS)
    key = hashlib.blake2b(("|".join(train.keys) + repr(sorted(PARAMS.items()))
                           + "|".join(spectra_key(q) for q in queries)).encode(), digest_size=8).hexdigest()
    folder = cache / f"grams_{key}"
    names = list(PARAMS["kernels"])
    if (folder / "done").exists():
        log(f"base Grams: cached in {folder}")
        times = json.loads((folder / "done").read_text())
        return ([np.load(folder / f"train_{k}.npy") for k in names], [np.load(folder / f"diag_{k}.npy") for k in names],
                [np.load(folder / f"test_{k}.npy") for k in names],
                [np.load(folder / f"test_diag_{k}.npy") for k in names],
                {"train_grams_s": times["train_s"], "with_queries_s": times["total_s"], "cached": True})
    folder.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    grams, diags = model.base_grams(train.spectra)
    t_train = time.perf_counter() - t0
    all_queries = queries[0]

    all_queries = concatenate(list(queries))
    tests, test_diags = [], []
    for kernel, d in zip(model._base_kernels(), diags, strict=True):
        K, dq, _ = normalized_gram(kernel, all_queries, train.spectra, diag_b=d)
        tests.append(K)
        test_diags.append(MetaboliteIdentifier._unit_diag(dq))
    t_all = time.perf_counter() - t0
    for k, G, d, T, td in zip(names, grams, diags, tests, test_diags, strict=True):
        np.save(folder / f"train_{k}.npy", G)
        np.save(folder / f"diag_{k}.npy", d)
        np.save(folder / f"test_{k}.npy", T)
        np.save(folder / f"test_diag_{k}.npy", td)
    (folder / "done").write_text(json.dumps({"train_s": t_train, "total_s": t_all}))
    log(f"base Grams: {t_train:.0f} s training, {t_all:.0f} s with queries; saved in {folder}")
    return grams, diags, tests, test_diags, {"train_grams_s": t_train, "with_queries_s": t_all}


# -- model selection -----------------------------------------------------------------------------------------------

def reverse_cv(grams, K_y, splits, gammas):
    """3-fold hold-out error of the reverse model ``g`` per transformed input Gram and ``gamma``.

    ``err = sum_j ||phi(x_j) - g(y_j)||^2 / l`` with ``g(y) = Phi_tr (gamma I + K_y,tr)^{-1} k_y(tr, y)``.
    """
    errors = {name: np.zeros(len(gammas)) for name in grams}
    n = K_y.shape[0]
    for tr, te in splits:
        Kyy, Kyt = K_y[np.ix_(tr, tr)], K_y[np.ix_(tr, te)]
        parts = {name: (K[np.ix_(tr, tr)], K[np.ix_(te, tr)], np.diag(K)[te]) for name, K in grams.items()}
        for gi, g in enumerate(gammas):
            B = cholesky_shifted(Kyy, g, name="output kernel").solve(Kyt)
            for name, (Ktt, Kte, dte) in parts.items():
                err = dte - 2.0 * np.einsum("ij,ji->i", Kte, B) + np.einsum("ij,ij->j", B, Ktt @ B)
                errors[name][gi] += err.sum() / n
    return {name: e.tolist() for name, e in errors.items()}


def make_estimator(kind, alpha, kernel, output, gamma, fraction, seed):
    if kind == "IOKR":
        return IOKR(alpha=alpha, input_kernel=kernel, output_kernel=output)
    approximation = "joint" if kind.startswith("joint") else "separate"
    return MPIOKR(alpha=alpha, input_kernel=kernel, output_kernel=output, approximation=approximation, gamma=gamma,
                  candidate_fraction=fraction, random_state=seed)


def _fold_score(result):
    """MPIOKRCV split score: mean of top-1/10/20 (%) of the held-out structures' ranks."""
    return fold_row(result.ranks)[1]


def iokr_refit_ranks(alphas, kernel, output, X, Y, splits, eval_sets):
    """IOKR hold-out ranks by refitting per fold and alpha (transforms refitted on each training side)."""
    out = [np.full(Y.shape[0], np.nan) for _ in alphas]
    for tr, te in splits:
        sets = CandidateSets(Y, [eval_sets.indices[i] for i in te])
        for j, alpha in enumerate(alphas):
            model = IOKR(alpha=alpha, input_kernel=kernel, output_kernel=output).fit(X[tr], Y[tr])
            for i, r in zip(te, model.rank(X[te], sets), strict=True):
                s = np.full(r.n_candidates, -np.inf)
                s[r.order] = r.scores
                out[j][i] = true_candidate_rank(s, 0)  # the structure itself is first in its list
    return out


def alpha_cv_search(kind, gamma, fraction, alphas, kernel, output, X, Y, splits, train_sets, eval_sets, seed):
    """Hold-out ranks of every structure over the alpha grid: IOKR refits per fold, or MPIOKRCV (one MP-IOKR fit
    per fold, its ``D_K B`` serving every alpha, candidate statistics computed once per fold).

    Returns the hold-out ranks per alpha and, per alpha, the fold-averaged top-k row with ``score`` and the per-fold
    scores.
    """
    if kind == "IOKR":
        ranks_per_alpha = iokr_refit_ranks(alphas, kernel, output, X, Y, splits, eval_sets)
    else:
        search = MPIOKRCV(alphas=alphas, gammas=[gamma], cv=splits, scoring=_fold_score, store_cv_results=True,
                          input_kernel=kernel, output_kernel=output,
                          approximation="joint" if kind.startswith("joint") else "separate",
                          candidate_fraction=fraction, random_state=seed)
        search.fit(X, Y, CandidateSets(Y, train_sets), scoring_sets=eval_sets)
        ranks_per_alpha = search.cv_results_["holdout_ranks"]
    rows = []
    for alpha, ranks in zip(alphas, ranks_per_alpha, strict=True):
        per_fold = [fold_row(ranks[te]) for _, te in splits]
        rows.append({"alpha": float(alpha), "score": float(np.mean([sc for _, sc in per_fold])),
                     **{k: float(np.mean([r[k] for r, _ in per_fold])) for k in per_fold[0][0]},
                     "fold_scores": [float(sc) for _, sc in per_fold]})
    return ranks_per_alpha, rows


def fit_estimator(est, X, Y, sets, stats):
    t0 = time.perf_counter()
    if isinstance(est, MPIOKR):
        est.fit(X, Y, CandidateSets(Y, sets), candidate_stats=stats)
    else:
        est.fit(X, Y)
    return time.perf_counter() - t0


def cv_rows_from_log(path, name):
    """Per-alpha CV scores of ``name`` read back from a run log (the folds it completed before it was stopped)."""
    pattern = re.compile(rf"\s{re.escape(name)} fold (\d+) alpha ([0-9.eE+-]+): score ([0-9.]+)")
    scores = {}
    for line in Path(path).read_text().splitlines():
        m = pattern.search(line)
        if m:
            scores.setdefault(float(m.group(2)), {})[int(m.group(1))] = float(m.group(3))
    folds = set.intersection(*(set(v) for v in scores.values()))
    return [{"alpha": a, "score": float(np.mean([v[f] for f in sorted(folds)])), "folds": sorted(folds)}
            for a, v in sorted(scores.items())]


def final_fit(res, kernel, output, X, Y, sets, names, offsets, spectra, lists, store, cleaning, seed):
    """Fit one model on all training structures and score the 60 lists once."""
    est = make_estimator(res["kind"], res["alpha"], kernel, output, res["gamma"], res["fraction"], seed)
    out = {"fit_s": fit_estimator(est, X, Y, sets, None)}
    if isinstance(est, MPIOKR):
        st = est.candidate_stats_
        out["candidate_stats_s"] = st.seconds
        out["n_candidates_used"] = est.n_candidates_used_
        out["n_groups"] = len(est.gamma_groups_)
        out["groups"] = [[names[k] for k in g] for g in est.gamma_groups_] if res["kind"] == "separate" else None
        # model estimation = everything but the streamed statistics pass (which hyperparameter search reuses)
        out["model_estimation_s"] = out["fit_s"] - st.seconds
    t0 = time.perf_counter()
    summary = evaluate_lists(IndexedModel(est, offsets, X.shape[0]), spectra, lists, store, cleaning)
    out["scoring_s"] = time.perf_counter() - t0
    out["per_structure"], out["per_spectrum"] = summary["per_structure"], summary["per_spectrum"]
    out["ranks"] = [d.get("rank") for d in summary["lists"]]
    out["spectrum_ranks"] = [d.get("spectrum_ranks") for d in summary["lists"]]
    return out


# -- main ----------------------------------------------------------------------------------------------------------

@dataclasses.dataclass
class TrainingData:
    """The training structures, the 60 lists and what the stand-in candidate sets are drawn from."""

    spectra: object
    lists: list
    store: CandidateStore
    cleaning: Cleaning
    train: object
    Y: np.ndarray
    masses: np.ndarray
    formulas: np.ndarray
    is_list_candidate: np.ndarray


@dataclasses.dataclass
class Kernels:
    """The combined input kernel on cached Grams, the output kernel, and where each query batch starts."""

    base: list
    weights: np.ndarray
    kernel: WeightedSum
    output: Kernel
    offsets: dict
    gram_times: dict

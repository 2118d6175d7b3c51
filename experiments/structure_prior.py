"""Structure prior of candidate scoring, chosen by cross-validation on training structures with decoy lists.

::

    python -m experiments structure_prior --data ../shared/data \\
        --set decoys=moses/dataset/data/train.csv.gz --set store=STORE.sqlite

The score of a candidate is the IOKR score plus ``prior_weight`` times its mean output-kernel similarity to its
``prior_neighbors`` most similar training structures (:meth:`MetaboliteIdentifier.structure_prior`). Choosing the
two values needs candidates that are *not* library compounds, as PubChem candidates are; training-structure lists
(the app's CV) hold only library compounds, so they cannot show the prior's effect. The decoy lists here are
label-free:

- ``moses``: isomers from the MOSES benchmark set (1.6 M ZINC compounds, MIT licence; ``pip download molsets
  --no-deps`` and unzip ``moses/dataset/data/train.csv.gz``) of each training structure's formula (at least 5, at
  most 300 sampled), for the 883 structures that have them;
- ``pubchem``: for every training structure, up to 150 candidates (the structure itself removed) of the candidate
  list whose formula is nearest in mass, from the lists given with ``--data`` (their candidates only: which
  candidate is a list's true structure is never read).

Training set as in ``iokr metabolites evaluate`` (the lists' true structures excluded, one merged spectrum per
structure), the app's CV choice on it (``PARAMS``), the app's 3 structure folds (seed 0): each fold's model is
refitted on the other folds (kernel weights refitted) and ranks each held-out structure in its decoy lists; the
prior is computed against that fold's training structures only. Criterion (fixed before the PubChem-decoy numbers
were seen): per surrogate the mean of top-1/5/10/20, averaged over the two surrogates; argmax over the grid.
Writes ``reports/structure_prior.json`` and ``reports/structure_prior.md`` (the table).
"""

from __future__ import annotations

import gzip
import time
from dataclasses import dataclass

import numpy as np

from experiments._common.reports import Outputs
from iokr.apps.metabolites import (
    CandidateStore,
    Cleaning,
    Fingerprinter,
    MetaboliteIdentifier,
    fold_ids,
    molecular_formula,
    monoisotopic_mass,
    parse_structure,
    read_candidate_lists,
    read_spectra,
    training_set,
)
from iokr.metrics import true_candidate_rank

#: The app's cross-validated choice on this training set (reports/metabolites.md), the prior switched off.
PARAMS = {"kernels": ("ppk", "ppk_nl", "binned", "binned_nl"), "weights": "alignf", "sigma_mz": 0.001,
          "sigma_intensity": 0.25, "output_kernel": "tanimoto", "alpha": 0.1}
NEIGHBORS = (1, 3, 10, 30)
WEIGHTS = (0.0, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0, 1.5, 2.0, 3.0)
TOP = (1, 5, 10, 20)


@dataclass(frozen=True)
class Config:
    """Spectra and candidate lists (relative to the data folder), the MOSES decoy file ("" to skip that surrogate),
    the SQLite fingerprint cache ("" for none) and the number of structure folds (the app's 3)."""

    spectra: str = "metabolites/massbank_ms2_posMH_permissive.jsonl.gz"
    candidates: str = "metabolites/pubchem_candidate_sets_dev.tar.gz"
    decoys: str = ""
    store: str = ""
    folds: int = 3


#: Two structure folds.
QUICK = Config(folds=2)
OUTPUTS = Outputs(json="structure_prior.json", markdown="structure_prior.md", keep=None, json_indent=1,
                  json_newline=False)


def _moses_decoys(path, train, store, rng, min_isomers=5, max_isomers=300):
    """``{structure index: fingerprints}`` of MOSES isomers of the training formulas."""
    wanted, by_formula = set(train.formulas), {}
    with gzip.open(path, "rt") as handle:
        next(handle)
        for line in handle:
            smiles = line.split(",")[0].strip()
            mol = parse_structure(smiles)
            formula = molecular_formula(mol) if mol is not None else None
            if formula in wanted:
                by_formula.setdefault(formula, []).append(smiles)
    decoys = {}
    for i, formula in enumerate(train.formulas):
        isomers = by_formula.get(formula, [])
        if len(isomers) >= min_isomers:
            pick = rng.choice(len(isomers), min(len(isomers), max_isomers), replace=False)
            decoys[i] = sorted(isomers[j] for j in pick)
    texts = sorted({s for v in decoys.values() for s in v})
    fps = store.fingerprints(texts)
    row = {s: r for r, s in enumerate(texts)}
    out = {}
    for i, smiles in decoys.items():
        F = fps[[row[s] for s in smiles]]
        F = F[F.any(axis=1)]  # structures the fingerprinter rejected
        if len(F) >= min_isomers:
            out[i] = F
    return out


def _pubchem_decoys(lists, store, train, rng, size=150):
    """``{structure index: fingerprints}``: candidates of the list whose formula is nearest in mass."""
    masses = np.array([monoisotopic_mass(lst.formula) for lst in lists])
    fps = [store.fingerprints(lst.structures).astype(np.uint8) for lst in lists]
    out = {}
    for i, (formula, key) in enumerate(zip(train.formulas, train.keys, strict=True)):
        if not formula:
            continue
        j = int(np.argmin(np.abs(masses - monoisotopic_mass(formula))))
        keep = [c for c, k in enumerate(lists[j].keys) if k[:14] != key[:14]]
        if len(keep) > size:
            keep = np.sort(rng.choice(keep, size, replace=False))
        out[i] = fps[j][keep]
    return out


def _fold_ranks(train, decoys, folds, log):
    """``{surrogate: ranks of shape (len(NEIGHBORS), len(WEIGHTS), n_queries)}`` from refitted fold models."""
    Y = np.asarray(train.Y, dtype=np.float64)
    ranks = {name: [] for name in decoys}
    for f in range(int(folds.max()) + 1):
        t0 = time.perf_counter()
        tr = np.flatnonzero(folds != f)
        model = MetaboliteIdentifier(**PARAMS).fit(train.spectra[tr], Y[tr])
        held = set(np.flatnonzero(folds == f).tolist())
        for name, lists in decoys.items():
            queries = [i for i in sorted(lists) if i in held]
            sets = [np.vstack([Y[i][None], lists[i]]).astype(np.float32) for i in queries]
            scores = model.score_sets(train.spectra[np.array(queries)], sets)
            for s, C in zip(scores, sets, strict=True):
                similarity = model.structure_prior(C, n_neighbors=NEIGHBORS)  # (len(NEIGHBORS), len(C))
                ranks[name].append([[true_candidate_rank(s + w * p, 0) for w in WEIGHTS] for p in similarity])
        log(f"fold {f}: {time.perf_counter() - t0:.0f} s")
    return {name: np.transpose(np.array(r, dtype=np.float64), (1, 2, 0)) for name, r in ranks.items()}


def _table(ranks):
    """Rows per (neighbours, weight): top-k per surrogate, the criterion, and the argmax."""
    rows = []
    for a, k in enumerate(NEIGHBORS):
        for b, w in enumerate(WEIGHTS):
            row = {"prior_neighbors": k, "prior_weight": w}
            per = []
            for name, r in ranks.items():
                top = {f"top{t}": float(np.mean(r[a, b] <= t) * 100) for t in TOP}
                row[name] = top
                per.append(np.mean(list(top.values())))
            row["score"] = float(np.mean(per))
            rows.append(row)
    best = max(rows, key=lambda r: r["score"])
    return rows, best


def render(report):
    """The grid's table (top-1/5/10/20 per surrogate and the criterion), the chosen row in bold."""
    names, counts = list(report["decoy_lists"]), report["decoy_lists"]
    head = " | ".join(f"{n} (n={counts[n]}) top-1/5/10/20" for n in names)
    lines = ["# Structure prior chosen by cross-validation with decoy lists", "",
             f"{report['n_training_structures']} training structures; chosen: {report['chosen']}.", "",
             f"| neighbours | weight | {head} | score |", "|---|---|" + "---|" * len(names) + "---|"]
    chosen = tuple(report["chosen"].values())
    for r in report["rows"]:
        cells = " | ".join(" / ".join(f"{r[n][f'top{t}']:.1f}" for t in TOP) for n in names)
        mark = "**" if (r["prior_neighbors"], r["prior_weight"]) == chosen else ""
        lines.append(f"| {mark}{r['prior_neighbors']}{mark} | {mark}{r['prior_weight']}{mark} | {cells} | "
                     f"{mark}{r['score']:.2f}{mark} |")
    return "\n".join(lines) + "\n"


def run(config, data, previous=None, checkpoint=None):
    """Decoy lists, fold models' ranks over the grid, the table and the choice (``previous``, ``checkpoint``
    unused)."""
    t0, rng = time.perf_counter(), np.random.default_rng(0)
    store = CandidateStore(config.store, Fingerprinter())
    spectra, _ = read_spectra(data / config.spectra, require_structure=True)
    lists = read_candidate_lists(data / config.candidates, store)
    train = training_set(spectra, store, Cleaning(), [lst.true_key for lst in lists])
    del spectra
    decoys = {"pubchem": _pubchem_decoys(lists, store, train, rng)}
    if config.decoys:
        decoys["moses"] = _moses_decoys(config.decoys, train, store, rng)
    counts = {name: len(v) for name, v in decoys.items()}
    print(f"{len(train.Y)} training structures; decoy lists: {counts}", flush=True)
    ranks = _fold_ranks(train, decoys, fold_ids(len(train.Y), config.folds, 0), lambda m: print(m, flush=True))
    rows, best = _table(ranks)
    return {"params": {**PARAMS, "kernels": list(PARAMS["kernels"])}, "n_training_structures": len(train.Y),
            "decoy_lists": counts, "rows": rows, "chosen": {k: best[k] for k in ("prior_neighbors", "prior_weight")},
            "wall_s": time.perf_counter() - t0}

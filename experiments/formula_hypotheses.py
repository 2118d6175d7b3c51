"""How to compare candidates of different formulas for queries without a formula (annotated kernels, issue #20).

::

    python -m experiments formula_hypotheses --data ../shared/data [--set window=0.05]

Training data only (no candidate list of the evaluation): the structures of the spectra file are split 2:1 by a
hash of their first InChIKey block. A model (app default kernels + ``fragments``, ``losses``; ALIGNF, then uniform
weights; alpha 0.1) is fitted on the merged spectra of the first part. Queries: up to 2 cleaned single spectra of
each held-out structure; candidates: every structure of the file (either part) whose formula's monoisotopic mass is
within ``--window`` Da of the true one, kept when they hold at least two formulas (a mass window with several
formulas). Variants: (A) the query without formula (every annotated row 0: ``identify`` before formula hypotheses);
(B) hypotheses, pre-image distances (``across="preimage"``); (C) hypotheses, the model's own scores
(``across="inner"``, the default); (D) the true formula for every candidate (an oracle ``identify`` cannot have);
(E) hypotheses, cosine of prediction and candidate. Ranks count ties half-way. Writes
``reports/formula_hypotheses.json`` and ``reports/formula_hypotheses.md`` (a table per weighting).
"""

from __future__ import annotations

import hashlib
import time
from collections import Counter
from dataclasses import dataclass

import numpy as np

from experiments._common.reports import Outputs
from iokr.apps.metabolites import (
    Cleaning,
    Fingerprinter,
    MetaboliteIdentifier,
    canonical_formula,
    hypothesis_spectra,
    monoisotopic_mass,
    prediction_sq_norms,
    read_spectra,
    score_hypotheses,
)


@dataclass(frozen=True)
class Config:
    """The study's choices: the spectra file (relative to the data folder), the mass window of candidates (Da) and
    the kernel weightings compared."""

    spectra: str = "metabolites/massbank_ms2_posMH_permissive.jsonl.gz"
    window: float = 0.05
    weightings: tuple = ("alignf", "uniform")


#: Uniform kernel weights only (no ALIGNF fit).
QUICK = Config(weightings=("uniform",))
OUTPUTS = Outputs(json="formula_hypotheses.json", markdown="formula_hypotheses.md", keep=None, json_indent=1,
                  json_newline=False)
KERNELS = ("ppk", "ppk_nl", "binned", "binned_nl", "fragments", "losses")
VARIANTS = ("A no formula", "B hypotheses, pre-image", "C hypotheses, model scores (default)",
            "D true formula (oracle)", "E hypotheses, cosine")


def _data(path, window, seed=0):
    spectra, _ = read_spectra(path, require_structure=True)
    cleaning = Cleaning()
    single = cleaning.single(spectra)
    merged, labels = cleaning.merged(single, groups=[m["inchikey"][:14] for m in spectra.metadata])
    position = {g: j for j, g in enumerate(labels)}
    group = np.array([position[m["inchikey"][:14]] for m in spectra.metadata])
    Y, ok = Fingerprinter().transform([m["inchi"] for m in merged.metadata])
    formulas = [canonical_formula(m["formula"]) if m.get("formula") else "" for m in merged.metadata]
    held = np.array([int(hashlib.sha1(g.encode()).hexdigest(), 16) % 3 == 0 for g in labels]) & ok
    mass = np.array([monoisotopic_mass(f) if f else np.nan for f in formulas])
    rng = np.random.default_rng(seed)
    rows, truth, cand = [], [], []
    for s in np.flatnonzero(held):
        lst = np.flatnonzero((np.abs(mass - mass[s]) <= window) & ok)
        if len({formulas[c] for c in lst}) < 2:
            continue
        members = np.flatnonzero(group == s)
        for m in rng.permutation(members[single.n_peaks[members] > 0])[:2]:
            rows.append(m), cand.append(lst), truth.append(int(np.flatnonzero(lst == s)[0]))
    queries = single[np.asarray(rows, dtype=np.int64)]
    for m in queries.metadata:
        m.pop("inchi", None)
        m["formula"] = None
    true_formula = [formulas[c[t]] for c, t in zip(cand, truth, strict=True)]
    return merged[np.flatnonzero(ok & ~held)], Y[ok & ~held], Y, formulas, queries, cand, truth, true_formula


def _topk(scores, truth):
    ranks = np.array([1 + np.sum(s > s[t]) + 0.5 * (np.sum(s == s[t]) - 1) for s, t in zip(scores, truth,
                                                                                             strict=True)])
    return {f"top{k}": round(100 * float(np.mean(ranks <= k)), 1) for k in (1, 5, 10)}


def run(config, data, previous=None, checkpoint=None):
    """Top-k of the five variants for ALIGNF and uniform kernel weights (``previous``, ``checkpoint`` unused)."""
    path, window = data / config.spectra, config.window
    t0 = time.perf_counter()
    train, Y_train, Y, formulas, queries, cand, truth, true_formula = _data(path, window)
    n = len(queries)
    adducts = [m.get("adduct") or "[M+H]+" for m in queries.metadata]
    cand_formulas = [np.array([formulas[c] for c in lst], dtype=object) for lst in cand]
    out = {"spectra": str(path), "window_da": window, "n_train_structures": len(train), "n_queries": n,
           "mean_formulas_per_list": float(np.mean([len(set(f)) for f in cand_formulas])),
           "median_list_size": float(np.median([len(c) for c in cand])), "runs": {}}
    print(f"{len(train)} training structures, {n} queries, {out['mean_formulas_per_list']:.2f} formulas per list "
          f"(median size {out['median_list_size']:.0f})", flush=True)
    for weights in config.weightings:
        model = MetaboliteIdentifier(kernels=KERNELS, weights=weights, alpha=0.1).fit(train, Y_train)
        sets = [Y[c] for c in cand]
        plain = hypothesis_spectra(queries, np.arange(n), [None] * n, adducts)
        t = time.perf_counter()
        none = model.score_sets(plain, sets)
        t_none = time.perf_counter() - t
        t = time.perf_counter()
        inner, info = score_hypotheses(model, queries, adducts, Y, cand, cand_formulas)
        t_inner = time.perf_counter() - t
        preimage, info_pre = score_hypotheses(model, queries, adducts, Y, cand, cand_formulas, across="preimage")
        oracle = model.score_sets(hypothesis_spectra(queries, np.arange(n), true_formula, adducts), sets)
        sq0 = prediction_sq_norms(model, *model.test_kernel(plain))
        cosine = []
        for s, h, f, q0 in zip(inner, info_pre, cand_formulas, sq0, strict=True):
            sq = q0 + np.array(h.shift)[np.searchsorted(np.array(h.formulas), f.astype(str))]
            cosine.append((s + 1.0) / (2.0 * np.sqrt(sq)))  # ||psi|| = 1: s = 2 <h, psi> - 1
        table = {v: _topk(s, truth) for v, s in zip(VARIANTS, (none, preimage, inner, oracle, cosine), strict=True)}
        falls = Counter(r for h in info for r in h.fallback if r)
        out["runs"][weights] = {"weights": model.weights_.round(3).tolist(), "topk": table,
                                "scoring_s": {"no_formula": round(t_none, 1), "hypotheses": round(t_inner, 1)},
                                "hypotheses": sum(len(h.formulas) for h in info),
                                "annotated": sum(h.n_annotated for h in info), "fallbacks": dict(falls)}
        print(f"\nweights {weights} {out['runs'][weights]['weights']}; scoring {t_none:.1f} s without formula, "
              f"{t_inner:.1f} s with hypotheses; {out['runs'][weights]['annotated']}/"
              f"{out['runs'][weights]['hypotheses']} hypotheses annotated, fallbacks {dict(falls)}")
        print(_table(table), flush=True)
    out["total_s"] = round(time.perf_counter() - t0, 1)
    return out


def _table(topk):
    rows = [f"| {v} | {row['top1']} | {row['top5']} | {row['top10']} |" for v, row in topk.items()]
    return "\n".join(["| variant | top-1 | top-5 | top-10 |", "|---|---|---|---|", *rows])


def render(report):
    """One top-k table per kernel weighting, after the data's sizes."""
    lines = ["# Candidates of different formulas for queries without a formula", "",
             f"Spectra `{report['spectra']}`, mass window {report['window_da']} Da: {report['n_train_structures']} "
             f"training structures, {report['n_queries']} queries, {report['mean_formulas_per_list']:.2f} formulas "
             f"per list (median size {report['median_list_size']:.0f}); {report['total_s']} s.", ""]
    for weights, r in report["runs"].items():
        lines += [f"## Weights {weights} {r['weights']}", "",
                  f"Scoring {r['scoring_s']['no_formula']} s without formula, {r['scoring_s']['hypotheses']} s with "
                  f"hypotheses; {r['annotated']}/{r['hypotheses']} hypotheses annotated, fallbacks {r['fallbacks']}.",
                  "", _table(r["topk"]), ""]
    return "\n".join(lines)

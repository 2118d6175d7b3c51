"""Evaluation on candidate lists: every list's true structure ranked by the model, per structure (merged spectra)
and per spectrum, beside the published list scores; with a calibration, the reliability of the confidence.

Ranks count ties at half-way (``ties="average"``) for this model and for the published scores alike; the
published figures with ties in the true structure's favour are reported as ``published_optimistic``.
"""

from __future__ import annotations

import numpy as np

from ....decoding import CandidateSets, CountFeatures, PackedBinaryFeatures
from ....metrics import top_k_accuracy, true_candidate_rank
from ..model._confidence import calibration_report
from ..spectra._spectra import clean_spectra, concatenate

TOP_K = (1, 5, 10, 20)


def topk_percentages(ranks, n=None):
    """``{"top1": %, "top5": %, ...}`` over :data:`TOP_K` (NaN ranks are misses; NaN percentages when ``n`` is 0).

    ``n`` is the denominator (default ``len(ranks)``); see :func:`iokr.metrics.top_k_accuracy`.
    """
    n = len(ranks) if n is None else int(n)
    if n == 0:
        return {f"top{k}": float("nan") for k in TOP_K}
    return {f"top{k}": value for k, value in top_k_accuracy(ranks, TOP_K, n).items()}


def _published_rank(scores, true_index, ties):
    """Rank of the true structure by a list's published scores: None when its own score is missing (NaN), else
    among the candidates that have a score (a missing score is no evidence either way)."""
    scores = np.asarray(scores, dtype=np.float64)
    if np.isnan(scores[true_index]):
        return None
    scored = ~np.isnan(scores)
    return true_candidate_rank(scores[scored], int(np.count_nonzero(scored[:true_index])), ties=ties)


def _concatenate_compact(pieces):
    """One compact pool from the lists' compact fingerprints (all :class:`CountFeatures` or all packed)."""
    if isinstance(pieces[0], CountFeatures):
        return CountFeatures(np.concatenate([p.counts for p in pieces]))
    return PackedBinaryFeatures(np.concatenate([p.packed for p in pieces]), pieces[0].n_features)


def query_spectra(spectra, true_keys):
    """The spectra whose structure (first InChIKey block) is one of ``true_keys``: all :func:`evaluate_lists`
    reads of the spectra of the lists' true structures (its results are the same on them as on all spectra)."""
    wanted = {k[:14] for k in true_keys if k}
    keys = spectra.structure_keys()
    return spectra[np.array([i for i, k in enumerate(keys) if k and k[:14] in wanted], dtype=np.intp)]


def evaluate_lists(model, spectra, lists, store, cleaning, progress=None, calibration=None):
    """Rank every list's candidates for the spectra of its true structure.

    Parameters
    ----------
    model : MetaboliteIdentifier (fitted)
    spectra : Spectra
        All available spectra (queries are those of the lists' true structures).
    lists : list of CandidateList
    store : CandidateStore

    Returns
    -------
    summary : dict
        ``per_structure``, ``per_spectrum`` (top-k percentages), ``published`` (when lists have scores),
        ``lists`` (per-list details), counts; with a ``calibration``, ``confidence`` (its reliability per
        structure and per spectrum, with the ECE a perfectly calibrated confidence would show on the same queries,
        :func:`~._confidence.calibration_report`).
    """
    cleaned = cleaning.single(spectra)
    keys = np.array(cleaned.structure_keys())
    details, pool, struct_idx, spec_rows, spec_idx = [], [], [], [], []
    offset = 0
    structure_queries = []
    for li, lst in enumerate(lists):
        true_key = (lst.true_key or "")[:14]
        rows = np.flatnonzero((keys == true_key) & (cleaned.n_peaks > 0)) if true_key else np.zeros(0, int)
        info = {"list": lst.name, "formula": lst.formula, "true_inchikey": lst.true_key, "n_rows": lst.n_rows,
                "n_candidates": len(lst), "n_unparsable": lst.n_unparsable, "n_duplicates": lst.n_duplicates,
                "true_in_list": lst.true_index is not None, "n_query_spectra": int(rows.size)}
        if lst.scores is not None and lst.true_index is not None and len(lst):
            info["published_rank"] = _published_rank(lst.scores, lst.true_index, "average")
            info["published_rank_optimistic"] = _published_rank(lst.scores, lst.true_index, "optimistic")
        details.append(info)
        if rows.size == 0 or len(lst) == 0:
            continue
        idx = np.arange(offset, offset + len(lst))
        pool.append(store.fingerprints(lst.structures, compact=True))
        offset += len(lst)
        structure_queries.append((li, rows))
        struct_idx.append(idx)
        spec_rows.extend(rows.tolist())
        spec_idx.extend([idx] * rows.size)
    n_lists = len(lists)
    evaluable = [i for i, _ in structure_queries]
    out = {"n_lists": n_lists, "n_lists_with_spectra": len(evaluable),
           "n_lists_without_true_structure": sum(not d["true_in_list"] for d in details),
           "n_query_spectra": len(spec_rows), "lists": details}
    if not evaluable:
        raise ValueError("No candidate list has a spectrum of its true structure among the given spectra.")
    pool = _concatenate_compact(pool)
    merged_queries = []
    for _, rows in structure_queries:
        m, _ = cleaning.merged(cleaned[rows], groups=[0] * rows.size)
        merged_queries.append(m)
    # per-spectrum queries: the cleaned single spectra, peaks capped as for merged ones
    single = clean_spectra(cleaned[np.asarray(spec_rows)], min_relative_intensity=0.0,
                           max_peaks=cleaning.max_peaks_merged, remove_precursor=False)
    # One scoring pass for both kinds of queries: each block of the shared pool is turned into its kernel
    # representation once (the expensive part), not once per kind.
    n_structures = len(merged_queries)
    all_scores = model.score_sets(concatenate([*merged_queries, single]), CandidateSets(pool, struct_idx + spec_idx))
    scores, spec_scores = all_scores[:n_structures], all_scores[n_structures:]
    if progress is not None:
        progress(2)
    for (li, _), s in zip(structure_queries, scores, strict=True):
        ti = lists[li].true_index
        details[li]["rank"] = true_candidate_rank(s, ti) if ti is not None else None
    spec_ranks, pos = [], 0
    for li, rows in structure_queries:
        ti = lists[li].true_index
        r = [true_candidate_rank(s, ti) if ti is not None else np.nan for s in spec_scores[pos:pos + rows.size]]
        pos += rows.size
        details[li]["spectrum_ranks"] = r
        details[li]["spectrum_accessions"] = [cleaned.metadata[i].get("accession") for i in rows]
        spec_ranks.extend(r)
    if calibration is not None:
        truth = [lists[li].true_index for li, _ in structure_queries]
        spec_truth = [lists[li].true_index for li, rows in structure_queries for _ in range(rows.size)]
        # the spectra of one structure share its list: the noise floor also with one outcome per structure
        spec_structure = [li for li, rows in structure_queries for _ in range(rows.size)]
        out["confidence"] = {"per_structure": calibration_report(calibration, scores, truth),
                             "per_spectrum": calibration_report(calibration, spec_scores, spec_truth,
                                                                groups=spec_structure)}
    struct_ranks = [details[i]["rank"] if details[i]["rank"] is not None else np.nan for i in evaluable]
    out["per_structure"] = topk_percentages(struct_ranks, len(evaluable))
    out["per_spectrum"] = topk_percentages(spec_ranks, len(spec_ranks))
    if all(d.get("published_rank") is not None or not d["true_in_list"] for d in details) and \
            any(d.get("published_rank") is not None for d in details):
        pub_all = [d.get("published_rank", np.nan) for d in details]
        pub_eval = [details[i].get("published_rank", np.nan) for i in evaluable]
        out["published"] = topk_percentages(pub_all, n_lists)
        # ties counted in the true structure's favour, as in the lists' published figures (25.0 / 58.3 / 71.7)
        out["published_optimistic"] = topk_percentages([d.get("published_rank_optimistic", np.nan) for d in details], n_lists)
        out["published_on_evaluated_lists"] = topk_percentages(pub_eval, len(evaluable))
    return out

"""Formula hypotheses: a query scored under the molecular formula of each of its candidates, for models with
annotated kernels.

A model with annotated kernels (``"fragments"``, ``"losses"``, ``"pair_losses"``; :mod:`._annotated_kernels`) sees
a spectrum through its structure's formula. ``identify`` knows it when the query gives one; otherwise the query's
candidates (selected by mass) have several formulas. Hypothesis ``(x, f)`` is the query spectrum ``x`` with the
formula ``f`` and the query's precursor type; every candidate is scored under the hypothesis of its own formula:

1. The input row ``k((x, f), .)`` is computed as for a training spectrum of formula ``f``. The unannotated base
   kernels do not depend on ``f`` (computed once per query). The annotated ones are cosine-normalized per
   hypothesis: unit self-similarity in each when ``f`` gives the spectrum tokens, a zero row otherwise (like the
   training spectra the annotation cannot handle). The model's kernel weights combine them.
2. IOKR predicts ``h_f(x)``; a candidate ``y`` of formula ``f`` gets the model's score under that hypothesis,
   ``score_f(y) = 2 <h_f(x), psi(y)> - ||psi(y)||^2`` (:meth:`MetaboliteIdentifier.score_sets`, distance decoding).

Why scores of different formulas are comparable: the model centers and normalizes its output features, so every
candidate has ``||psi(y)|| = 1`` and ``score_f(y) = 2 <h_f(x), psi(y)> - 1``: an inner product between the candidate
and the prediction under the candidate's own formula. All predictions are points of one output space, made from
input rows normalized alike (the same normalized base kernels, the same weights, the same fitted IOKR), so their
inner products with candidates compare directly; a hypothesis whose row finds more support among the training
spectra gives a longer prediction and counts for more. A hypothesis that gives the spectrum no token (no peak
explained, or an annotation fallback) is scored with the unannotated row itself, so its scores are the
unannotated scores. A candidate's score does not depend on whether the query gave its formula or on which other
formulas share the mass window (up to rounding: other windows are other BLAS block shapes; ``docs/iokr.md``,
"Reproducibility").

``across="preimage"`` instead ranks by the pre-image distance under each candidate's formula,
``-||h_f(x) - psi(y)||^2 + ||h_0(x)||^2 = score_f(y) - (||h_f(x)||^2 - ||h_0(x)||^2)`` (``h_0``: the query without
formula), the joint pre-image over formulas and candidates. It penalizes long predictions, and on a structure
hold-out of the training data it ranked worse than the inner product (reports/metabolites.md), so it is not the
default.

Models without annotated kernels do not depend on the formula and never come here.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from ....decoding import CandidateSets
from ..kernels._annotated_kernels import FormulaTokenKernel
from ..spectra._spectra import Spectra

#: How scores compare across formula hypotheses (see the module notes); the first is the default.
ACROSS = ("inner", "preimage")
#: Hypothesis rows whose input rows are formed at once (whole queries; one query with more stays whole).
HYPOTHESIS_BLOCK = 256
#: Why a hypothesis uses the unannotated row although its annotation ran: no peak explained, so no token (the
#: rarer ``"no_tokens"``: explained peaks that make no token of the model's annotated kernels).
NO_TOKENS = "no_peak_explained"


def annotated_kernels(model):
    """Positions of a fitted model's annotated base kernels (empty: its scores do not depend on formulas)."""
    return [i for i, k in enumerate(getattr(model, "base_kernels_", ())) if isinstance(k, FormulaTokenKernel)]


def hypothesis_spectra(spectra, rows, formulas, adducts):
    """Spectra ``rows`` of ``spectra`` carrying formula hypotheses in their metadata.

    Copy ``j`` has ``formula = formulas[j]`` (``None`` or ``""``: no formula), ``adduct = adducts[j]`` and no
    ``inchi`` (the annotation would take the structure's formula from it first).
    """
    sub = spectra[np.asarray(rows, dtype=np.int64)]
    meta = []
    for m, formula, adduct in zip(sub.metadata, formulas, adducts, strict=True):
        m = {k: v for k, v in m.items() if k != "inchi"}
        m["formula"] = formula or None
        if adduct:
            m["adduct"] = adduct
        meta.append(m)
    return Spectra(sub.mz, sub.intensity, sub.offsets, sub.precursor_mz, meta)


def query_grams(model, queries):
    """Normalized test Grams and unit diagonals of the model's unannotated base kernels on ``queries``
    (``{position: (K, unit_diag)}``): they are the same under every formula hypothesis."""
    skip = set(annotated_kernels(model))
    return {i: model.base_test_gram(i, queries) for i in range(len(model.base_kernels_)) if i not in skip}


def hypothesis_test_kernel(model, hypotheses, of_query, grams_of_queries):
    """The model's combined test kernel of hypothesis rows, as :meth:`MetaboliteIdentifier.test_kernel` on
    ``hypotheses`` but with the unannotated rows taken from their queries.

    Parameters
    ----------
    model : fitted MetaboliteIdentifier
    hypotheses : Spectra of length n_h
        From :func:`hypothesis_spectra`.
    of_query : ndarray of int, shape (n_h,)
        Query of each hypothesis (a row of the Grams of ``grams_of_queries``).
    grams_of_queries : dict
        :func:`query_grams` of the queries.

    Returns
    -------
    K : ndarray of shape (n_h, n_train)
    diag : ndarray of shape (n_h,)
    tokens : ndarray of bool, shape (n_h,)
        Hypotheses with tokens in some annotated kernel (a positive self-similarity); the others have exactly the
        row and diagonal of their query without formula.
    """
    grams, test_diags, tokens = [], [], np.zeros(len(hypotheses), dtype=bool)
    for i in range(len(model.base_kernels_)):
        if i in grams_of_queries:
            K, d = grams_of_queries[i]
            K, d = K[of_query], d[of_query]
        else:
            K, d = model.base_test_gram(i, hypotheses)
            tokens |= d > 0
        grams.append(K)
        test_diags.append(d)
    # Summed in test_kernel's order (bit-identical rows), then through the same input Gaussian.
    K = sum(w * G for w, G in zip(model.weights_, grams, strict=True))
    K, diag = model.finish_test_kernel(K, test_diags)
    return K, diag, tokens


def prediction_sq_norms(model, K, diag):
    """``||h(x)||^2`` of the IOKR predictions of test rows ``(K, diag)`` in the output space, or ``None`` when the
    model's decoding needs no shift (not ``"distance"``)."""
    if model.iokr_.decoding != "distance":
        return None
    return model.iokr_.prediction_norms(K, input_diag=diag) ** 2


@dataclass(frozen=True)
class QueryHypotheses:
    """How one query was annotated: per distinct candidate formula (sorted), the fallback reason (``""`` when
    annotated), the peaks explained and above the precursor, and the shift subtracted from the model's scores
    (0 unless ``across="preimage"``). ``n_dropped_above``: peaks of the raw query heavier than its precursor, which
    the query cleaning drops before any annotation (set by ``identify``)."""

    formulas: tuple
    fallback: tuple
    n_explained: tuple
    n_above: tuple
    shift: tuple
    n_peaks: int
    given: bool
    n_dropped_above: int = 0

    @property
    def n_annotated(self):
        return sum(not r for r in self.fallback)

    def _peaks(self, k):
        above = f", {self.n_above[k]} above the precursor" if self.n_above[k] else ""
        return f"{self.n_explained[k]}/{self.n_peaks} peaks explained{above}"

    def summary(self, top_formula=None):
        """One line for the query's ``annotation`` column."""
        if not self.formulas:
            return ""
        n = self.n_dropped_above
        dropped = f"; {n} peak{'s' * (n != 1)} above the precursor dropped by cleaning" if n else ""
        return self._summary(top_formula) + dropped

    def _summary(self, top_formula):
        if self.given and len(self.formulas) == 1:
            f, reason = self.formulas[0], self.fallback[0]
            return f"{f}: {self._peaks(0)}" if not reason else \
                f"{f}: fallback to the unannotated kernels ({reason})"
        n = len(self.formulas)
        falls = Counter(r for r in self.fallback if r)
        text = f"{self.n_annotated}/{n} candidate formulas annotated"
        if falls:
            text += "; fallback to the unannotated kernels: " + ", ".join(f"{k}={v}" for k, v in sorted(falls.items()))
        if top_formula in self.formulas:
            k = self.formulas.index(top_formula)
            text += f"; top hit {top_formula}: " + (self._peaks(k) if not self.fallback[k] else
                                                     f"fallback ({self.fallback[k]})")
        return text


def _plan(formulas):
    """Per query: distinct formulas (sorted) and the formula index of each candidate."""
    out = []
    for f in formulas:
        uniq, inverse = np.unique(np.asarray(f, dtype=str), return_inverse=True)
        out.append((uniq, inverse.ravel()))
    return out


def _blocks(sizes):
    """Consecutive groups of queries with at most :data:`HYPOTHESIS_BLOCK` hypothesis rows (one query at least)."""
    start, rows = 0, 0
    for j, n in enumerate(sizes):
        if rows and rows + n > HYPOTHESIS_BLOCK:
            yield start, j
            start, rows = j, 0
        rows += n
    if start < len(sizes):
        yield start, len(sizes)


def score_hypotheses(model, queries, adducts, pool, sets, formulas, given=None, across="inner"):
    """Scores of every query's candidates, each under the hypothesis of its formula (see the module notes).

    Parameters
    ----------
    model : fitted MetaboliteIdentifier with annotated kernels
    queries : Spectra of length m
        Cleaned query spectra.
    adducts : sequence of m str
        Precursor type of each query (``""``: the annotation's default).
    pool : array-like of shape (n_pool, p)
        Candidate fingerprints.
    sets : sequence of m ndarrays of int
        Pool rows of each query's candidates.
    formulas : sequence of m sequences of str
        Canonical formula of each candidate (``""``: unknown; scored without annotation).
    given : sequence of m bool, optional
        Queries that gave their formula (for the summaries).
    across : {"inner", "preimage"}, default="inner"
        The model's scores under each hypothesis as they are, or shifted to pre-image distances (module notes).

    Returns
    -------
    scores : list of m ndarrays
        In each query's candidate order.
    hypotheses : list of m QueryHypotheses
    """
    if across not in ACROSS:
        raise ValueError(f"The 'across' parameter of score_hypotheses must be one of {ACROSS}. Got {across!r}.")
    given = [False] * len(queries) if given is None else list(given)
    plans = _plan(formulas)
    grams = query_grams(model, queries)
    first = annotated_kernels(model)
    kernel = model.base_kernels_[first[0]] if first else None
    scores, out = [None] * len(queries), [None] * len(queries)
    for lo, hi in _blocks([1 + uniq.size for uniq, _ in plans]):
        of_query, hyp_formulas, starts = [], [], []
        for j in range(lo, hi):
            starts.append(len(of_query))
            uniq = plans[j][0].tolist()
            of_query += [j] * (1 + len(uniq))
            hyp_formulas += [None, *uniq]  # row 0 of each query: no formula (every annotated row 0)
        of_query = np.asarray(of_query, dtype=np.int64)
        hyps = hypothesis_spectra(queries, of_query, hyp_formulas, [adducts[j] for j in of_query])
        K, diag, tokens = hypothesis_test_kernel(model, hyps, of_query, grams)
        sq = prediction_sq_norms(model, K, diag) if across == "preimage" else None
        ann = kernel.annotation(hyps)
        n_explained, n_above = ann.per_spectrum(hyps)
        rows, row_sets, row_shift, row_pos = [], [], [], []
        for j, start in zip(range(lo, hi), starts, strict=True):
            uniq, inverse = plans[j]
            reasons, shifts = [], []
            fallback_mask = np.zeros(uniq.size, dtype=bool)
            for k in range(uniq.size):
                r = start + 1 + k
                if tokens[r]:
                    reasons.append("")
                    shift = 0.0 if sq is None else float(sq[r] - sq[start])
                    shifts.append(shift)
                    pos = np.flatnonzero(inverse == k)
                    rows.append(r), row_sets.append(sets[j][pos]), row_shift.append(shift), row_pos.append((j, pos))
                else:
                    reasons.append(ann.fallback[r] or ("no_formula" if not uniq[k] else
                                                       NO_TOKENS if n_explained[r] == 0 else "no_tokens"))
                    shifts.append(0.0)
                    fallback_mask[k] = True
            pos = np.flatnonzero(fallback_mask[inverse])
            if pos.size:
                rows.append(start), row_sets.append(sets[j][pos]), row_shift.append(0.0), row_pos.append((j, pos))
            k_rows = [start + 1 + k for k in range(uniq.size)]
            out[j] = QueryHypotheses(tuple(uniq.tolist()), tuple(reasons), tuple(int(n_explained[r]) for r in k_rows),
                                     tuple(int(n_above[r]) for r in k_rows), tuple(shifts),
                                     int(queries.n_peaks[j]), bool(given[j]))
            scores[j] = np.empty(inverse.size)
        rows = np.asarray(rows, dtype=np.int64)
        # the block's own candidates only: the candidate side is computed once per block, not for the whole pool
        used = np.unique(np.concatenate(row_sets))
        block_sets = CandidateSets(pool[used], [np.searchsorted(used, r) for r in row_sets])
        block_scores = model.score_sets(hyps[rows], block_sets, test_kernel=(K[rows], diag[rows]))
        for s, shift, (j, pos) in zip(block_scores, row_shift, row_pos, strict=True):
            scores[j][pos] = s - shift if shift else s
    return scores, out


def annotation_totals(hypotheses):
    """Counts over the queries of a run (``None`` entries: queries not scored) for the run's parameters."""
    done = [h for h in hypotheses if h is not None]
    falls = Counter(r for h in done for r in h.fallback if r)
    return {"queries": len(done), "queries_annotated": sum(h.n_annotated > 0 for h in done),
            "queries_with_given_formula": sum(h.given for h in done),
            "formula_hypotheses": sum(len(h.formulas) for h in done),
            "hypotheses_annotated": sum(h.n_annotated for h in done),
            "fallbacks": dict(sorted(falls.items())),
            "peaks_above_precursor": sum(sum(h.n_above) for h in done),
            "peaks_above_precursor_dropped_by_cleaning": sum(h.n_dropped_above for h in done)}

"""``identify``: rank candidate structures for query spectra, with a status for every query.

For each query, in order: usable peaks, a precursor m/z, a precursor ion type the model was trained on, then its
candidates: by canonical molecular formula when the query gives one, else by neutral mass (from the precursor m/z
and the adduct) within ``ppm``. Queries that pass are scored in batches (each batch's candidates fingerprinted once,
shared between its queries); every other query keeps a row with the reason. Results are two tables in the style of
SIRIUS: one row per query (the top hit, its score and confidence) and the top-k candidates per query.

A model with annotated kernels (``"fragments"``, ``"losses"``, ``"pair_losses"``) needs each query's formula: the
query's own, canonical, when it gives one; else each candidate is scored under the hypothesis of its own formula
(:mod:`._hypotheses`, which says why those scores are comparable). A query or hypothesis the annotation cannot
handle (no peak explained, unsupported elements or charge, low resolution, precursor m/z off the formula) falls
back to the unannotated kernels; the ``annotation`` column says which, and why. Models without annotated kernels
score as they always did.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field, replace

import numpy as np

from ...._validation import check_nonnegative_scalar, is_count
from ....decoding import CandidateSets
from ..chemistry._adducts import read_precursor_ion
from ..chemistry._formulas import FormulaError, canonical_formula
from ..chemistry._precursor_precision import check_formula
from ..defaults import (
    ADDUCT_POLICIES,
    DEFAULT_ADDUCT_POLICY,
    DEFAULT_BATCH_SIZE,
    DEFAULT_PPM,
    DEFAULT_TOP_K,
    ION_MODES,
)
from ..exporting._schema import QUERY_COLUMNS, RESERVED_COLUMNS, RESULT_COLUMNS  # noqa: F401 - read here by callers
from ..importing._query_ids import QUERY_ID_FIELDS, QueryIds, query_ids  # noqa: F401 - QUERY_ID_FIELDS, QueryIds: public here
from ..model._hypotheses import annotated_kernels, score_hypotheses
from ..model._routing import route_query
from ._score_batches import ScoredQuery, chunk_queries, merge_chunks, plan_batches, pool_row_limit

#: A query's FORMULA is taken only when it agrees with the precursor m/z (given the adduct) within
#: max(ppm, FORMULA_MIN_PPM) ppm: the formula is the better lookup within the mass window (by definition), and
#: exports often compute FORMULA from a measured m/z a few ppm off; a wrong formula (another adduct, another
#: compound) is off by hundreds of ppm (one H at m/z 200: 5,000 ppm). Or within the precision the record states
#: (the precursor's written decimals, a unit-resolution record's nominal mass; see :mod:`._precursor_precision`),
#: with a note in ``detail``.
FORMULA_MIN_PPM = 20.0
#: Precursor m/z above this are refused as implausible for small molecules (and would break m/z arithmetic).
MAX_PRECURSOR_MZ = 5000.0
#: A raw peak this far (Da) above the precursor m/z is heavier than the precursor (counted; cleaning drops it).
ABOVE_PRECURSOR = 0.5



@dataclass(frozen=True)
class IdentifySettings:
    """Options of :func:`identify` (the command line's ``identify`` flags).

    Parameters
    ----------
    top_k : int
        Candidates written per query.
    ppm : float
        Mass window (parts per million of the neutral mass) when a query has no formula.
    query_id_field : str or None
        Field naming each query, in any case or alias (``"FEATURE_ID"``, ``"feature_id"``, ``"DB#"``); ``None``:
        the first of :data:`QUERY_ID_FIELDS` present; a field that repeats or is missing from some records falls
        back to a unique one, else to 1-based positions (see :func:`~._query_ids.query_ids`).
    adduct_policy : {"refuse", "assume"}
        A query whose adduct the model was not trained on: status ``unsupported adduct`` (or ``unsupported charge``)
        (``"refuse"``), or ranked by the sub-model :data:`~._routing.ASSUME_MAPPING` names, with a warning in
        ``detail`` (``"assume"``); see :mod:`._routing`.
    batch_size : int
        Queries scored together (memory grows with the batch's distinct candidates).
    prior_weight : float or None
        Weight of the structure prior instead of the model's own (0: the spectrum alone; see
        :class:`~._model.MetaboliteIdentifier`); the model's confidence calibration holds for its own weight only,
        so another weight leaves the ``confidence`` column empty.
    ion_mode : {"positive", "negative"} or None
        Ion mode of the queries whose file states none (no adduct, ion-mode field or signed charge: MZmine's
        SIRIUS export writes ``CHARGE=1``); said in ``detail``. ``None``: such a query is ranked only by a model
        of one polarity, else its status is ``unknown ion mode``. What a file states always wins.
    """

    top_k: int = DEFAULT_TOP_K
    ppm: float = DEFAULT_PPM
    query_id_field: str | None = None
    adduct_policy: str = DEFAULT_ADDUCT_POLICY
    batch_size: int = DEFAULT_BATCH_SIZE
    prior_weight: float | None = None
    ion_mode: str | None = None

    def __post_init__(self):
        # numpy scalars are numbers (a notebook's np.arange, a DataFrame cell): kept as Python int / float
        for name in ("top_k", "batch_size"):
            value = getattr(self, name)
            if not is_count(value):
                raise ValueError(f"The '{name}' parameter of IdentifySettings must be an int >= 1. Got {value!r}.")
            object.__setattr__(self, name, int(value))
        if isinstance(self.ppm, (bool, np.bool_)) or not isinstance(self.ppm, numbers.Real) or not 0 < self.ppm < 1e6:
            raise ValueError(f"The 'ppm' parameter of IdentifySettings must be a number in (0, 1e6). "
                             f"Got {self.ppm!r}.")
        object.__setattr__(self, "ppm", float(self.ppm))  # parameters.json: 10.0 as from the command line
        if self.query_id_field is not None and not (isinstance(self.query_id_field, str) and self.query_id_field):
            raise ValueError("The 'query_id_field' parameter of IdentifySettings must be a field name (a non-empty "
                             f"str) or None. Got {self.query_id_field!r}.")
        if self.adduct_policy not in ADDUCT_POLICIES:
            raise ValueError(f"The 'adduct_policy' parameter of IdentifySettings must be one of {ADDUCT_POLICIES}. "
                             f"Got {self.adduct_policy!r}.")
        if self.ion_mode not in (None, *ION_MODES):
            raise ValueError(f"The 'ion_mode' parameter of IdentifySettings must be None or one of {ION_MODES}. "
                             f"Got {self.ion_mode!r}.")
        if self.prior_weight is not None:  # 0.0 for -0.0, as the command line writes it
            object.__setattr__(self, "prior_weight",
                               check_nonnegative_scalar(self.prior_weight, "prior_weight", "IdentifySettings") + 0.0)


@dataclass
class Query:
    """One query's identity, the lookup it gets, and its outcome."""

    row: int
    query_id: str
    precursor_mz: float
    adduct: str = ""
    formula: str = ""
    lookup: str = ""
    status: str = "ok"
    detail: str = ""
    candidates: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    annotation: str = ""
    hypotheses: object = None
    n_above_precursor: int = 0
    #: Precursor type of the sub-model that ranks the query (see :mod:`._routing`).
    submodel: str = ""
    #: Neutral mass from the precursor m/z and the adduct (NaN until known): scoring batches queries by it.
    mass: float = math.nan


def _resolve_adduct(meta, model, policy, ion_mode=None):
    """The :class:`~._routing.Route` of a query: ``model`` is a :class:`~._submodels.MetaboliteModel` or the
    canonical precursor types of a model's sub-models; ``ion_mode`` that of a query whose file states none."""
    ion = read_precursor_ion(meta, ion_mode)
    if hasattr(model, "route"):
        return model.route(ion, policy, meta.get("adduct"))
    return route_query(ion, model, policy, meta.get("adduct"))


def plan_queries(spectra, cleaned_peaks, model_adducts, source, settings, ids=None):
    """Every query's id, adduct, lookup and status (``ok`` for those to score) and candidate row ids.

    Parameters
    ----------
    spectra : Spectra
        The queries as read (``keep_empty=True``).
    cleaned_peaks : ndarray of int, shape (m,)
        Peaks left per query after cleaning.
    model_adducts : MetaboliteModel or set of str
        The model (its sub-models' precursor types route each query, see :mod:`._routing`), or those types.
    source : candidate source
        ``select(formula, low, high) -> ids`` (see :mod:`._candidate_sources`).
    settings : IdentifySettings
    ids : QueryIds, optional
        The queries' ids (default: :func:`~._query_ids.query_ids` of ``settings.query_id_field``).

    Returns
    -------
    queries : list of Query
    """
    queries = []
    ids = query_ids(spectra.metadata, settings.query_id_field) if ids is None else ids
    for i, meta in enumerate(spectra.metadata):
        precursor = float(spectra.precursor_mz[i])
        q = Query(row=i, query_id=ids.ids[i], precursor_mz=precursor)
        queries.append(q)
        raw_formula = meta.get("formula")
        if meta.get("peak_problem"):
            q.status, q.detail = "invalid peaks", f"{meta['peak_problem']}: the record's peaks were not used"
            continue
        if spectra.n_peaks[i] == 0:
            q.status, q.detail = "no peaks", "the record has no peak with positive intensity"
            continue
        if cleaned_peaks[i] == 0:
            q.status, q.detail = "no peaks after cleaning", "every peak is below 1 % of the base peak or is the precursor"
            continue
        if not math.isfinite(precursor):
            q.status, q.detail = "no precursor m/z", "PEPMASS / precursor m/z missing or not a number"
            continue
        if precursor > MAX_PRECURSOR_MZ:
            q.status, q.detail = "implausible precursor m/z", f"{precursor:g} > {MAX_PRECURSOR_MZ:g}"
            continue
        q.n_above_precursor = int(np.count_nonzero(spectra.peaks(i)[0] > precursor + ABOVE_PRECURSOR))
        route = _resolve_adduct(meta, model_adducts, settings.adduct_policy, settings.ion_mode)
        q.status, q.detail = route.status, route.detail
        if route.status != "ok":
            # the type the file names, else the one assumed for it (said in 'detail'), stays visible (and
            # filterable) in the adduct column of a refused query, unless the file contradicts itself (then only
            # 'detail' names it, with the contradiction)
            q.adduct = route.adduct.name if route.adduct is not None else ""
            continue
        adduct, q.submodel = route.adduct, route.submodel
        q.adduct = adduct.name
        q.mass = adduct.neutral_mass(precursor)
        if raw_formula:
            try:
                q.formula = canonical_formula(raw_formula)
            except FormulaError as exc:
                q.status, q.detail = "invalid formula", str(exc)
                continue
            check = check_formula(q.formula, adduct, precursor, spectra.peaks(i)[0],
                                  max(settings.ppm, FORMULA_MIN_PPM))
            q.detail = "; ".join(d for d in (q.detail, check.note) if d)
            q.formula = q.formula if check.use else ""
        if getattr(source, "per_query", False):  # the query's own list, no lookup (see ._query_lists)
            q.candidates, q.lookup, q.status, note = source.plan(q.query_id, q.mass,
                                                                 settings.ppm)
            q.detail = "; ".join(d for d in (q.detail, note) if d) if q.status == "ok" else note
            continue
        if q.formula:
            q.lookup = f"formula {q.formula}"
            q.candidates = source.select(q.formula, None, None)
        else:
            mass = q.mass
            width = mass * settings.ppm * 1e-6
            q.lookup = f"mass {mass:.5f} +- {settings.ppm:g} ppm"
            q.candidates = source.select(None, mass - width, mass + width) if mass > 0 else q.candidates
        if q.candidates.size == 0:
            q.status = "no candidates"
            q.detail = "; ".join(d for d in (q.detail, f"none for {q.lookup}") if d)
    return queries


def candidate_formulas(source, ids):
    """Canonical formula of candidates ``ids`` (``""`` where the source knows none, or has no ``formulas_of``)."""
    lookup = getattr(source, "formulas_of", None)
    return np.array([""] * len(ids) if lookup is None else [f or "" for f in lookup(ids)], dtype=object)


def score_queries(model, cleaned, queries, source, fingerprinter, settings, progress=None):
    """Scores of every ``ok`` query's candidates, in batches; yields a :class:`ScoredQuery` per query.

    Queries are scored in order of neutral mass (each batch holds neighbouring masses), not in file order.
    Each batch fingerprints the distinct candidates of its queries once (queries sharing a formula share them).
    Scores of one query do not depend on the other queries of its batch up to rounding: the spectrum kernels sum
    each spectrum's terms in an order of its own, but the products with the model's coefficients are BLAS products
    whose last bits depend on the batch's shape (``docs/iokr.md``, "Reproducibility"). ``model`` is a
    :class:`~._submodels.MetaboliteModel` (each query is scored by the sub-model of ``query.submodel``; batches
    never mix sub-models) or one fitted model scoring every query. With annotated kernels, each query is scored
    under its formula or its
    candidates' formulas (:func:`~._hypotheses.score_hypotheses`), and ``query.annotation`` /
    ``query.hypotheses`` say how it was annotated.
    """
    # Batches of neighbouring masses: their candidate windows overlap, so each batch's pool of distinct candidates is
    # small and most candidates are fingerprinted and scored against the training structures in one batch only
    # (queries in file order put every mass in every batch: 1,000 mixed queries on the 70k store fingerprinted
    # 51,519 pool rows in 4 batches).
    ok = sorted((q for q in queries if q.status == "ok"),
                key=lambda q: (math.inf if math.isnan(q.mass) else q.mass, q.row))
    groups = {}
    for q in ok:
        groups.setdefault(q.submodel if hasattr(model, "submodel") else "", []).append(q)
    done = 0
    max_rows = pool_row_limit(_n_features(model, fingerprinter))
    for key, group in groups.items():
        sub = model.submodel(key) if hasattr(model, "submodel") else model
        for batch, chunked in plan_batches(group, settings.batch_size, max_rows):
            if not chunked:
                yield from _score_batch(sub, cleaned, batch, source, fingerprinter, settings.top_k)
            else:  # one query whose window exceeds a pool: its candidates in chunks, merged
                q = batch[0]
                parts = [next(_score_batch(sub, cleaned, [part], source, fingerprinter, settings.top_k))
                         for part in chunk_queries(q, max_rows)]
                scored = merge_chunks(q, parts, settings.top_k)
                if q.hypotheses is not None:
                    best = q.candidates[scored.top[:1]]
                    q.annotation = q.hypotheses.summary(q.formula or candidate_formulas(source, best)[0])
                yield scored
            done += len(batch)
            if progress is not None:
                progress(done)


def _n_features(model, fingerprinter):
    """Fingerprint length, for the pool budget (the fingerprinter's, else the model's outputs')."""
    if fingerprinter is not None:
        return fingerprinter.n_features
    sub = model.submodel(model.precursor_types[0]) if hasattr(model, "submodel") else model
    return sub.n_output_features_


def _score_batch(model, cleaned, batch, source, fingerprinter, top_k):
    """:class:`ScoredQuery` of each query of one batch, all scored by ``model``."""
    by_formula = bool(annotated_kernels(model))
    ids = np.unique(np.concatenate([q.candidates for q in batch]))
    pool = source.fingerprints(ids, fingerprinter, compact=True)  # float32 row blocks of the stored bytes
    sets = [np.searchsorted(ids, q.candidates) for q in batch]
    spectra = cleaned[np.array([q.row for q in batch])]
    if not by_formula:  # the formula changes nothing: the model's own scores
        scores = model.score_sets(spectra, CandidateSets(pool, sets))
    else:
        known = candidate_formulas(source, ids) if any(not q.formula for q in batch) else None
        formulas = [np.full(q.candidates.size, q.formula, dtype=object) if q.formula else known[idx]
                    for q, idx in zip(batch, sets, strict=True)]
        scores, hypotheses = score_hypotheses(model, spectra, [q.adduct for q in batch], pool, sets, formulas,
                                              given=[bool(q.formula) for q in batch])
        for q, s, h, f in zip(batch, scores, hypotheses, formulas, strict=True):
            q.hypotheses = h = replace(h, n_dropped_above=q.n_above_precursor)
            q.annotation = h.summary(f[int(np.argmax(s))])
    # the prior of the written candidates, for all queries of the batch in one pass over the training structures
    tops = [np.argsort(-s, kind="stable")[:top_k] for s in scores]
    rows = [idx[t] for idx, t in zip(sets, tops, strict=True)]
    written, back = np.unique(np.concatenate(rows), return_inverse=True)
    prior = model.structure_prior(pool[written])[back]
    bounds = np.cumsum([0, *map(len, rows)])
    for i, (q, s, t) in enumerate(zip(batch, scores, tops, strict=True)):
        yield ScoredQuery(q, s, t, prior[bounds[i]:bounds[i + 1]])

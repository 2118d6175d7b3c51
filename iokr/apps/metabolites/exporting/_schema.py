"""The output schema of ``identify``: the files of its folder, their columns, and how each typed value is written.

``structure_identifications.tsv`` has one row per query: :data:`QUERY_COLUMNS`, the top candidate's own columns
(those of the candidate source), then :data:`RESULT_COLUMNS`. ``structure_candidates.tsv`` has the top-k candidates
of every query: ``query_id``, ``rank``, the candidate's columns, ``score`` and ``structure_prior``. A candidate
source's column that takes one of :data:`RESERVED_COLUMNS` is renamed ``candidate_<name>``.

Values are typed in Python (:class:`~iokr.apps.metabolites.IdentifyResults`: floats, ``None`` for missing) and
written as text by :func:`format_identification` and :func:`format_candidate` only, so the command line and Python
users write the same bytes.
"""

from __future__ import annotations

import math

#: Columns of ``structure_identifications.tsv`` before the candidate's own columns.
QUERY_COLUMNS = ("query_id", "precursor_mz", "adduct", "query_formula", "lookup", "n_candidates")
#: Columns of ``structure_identifications.tsv`` after the candidate's own columns.
RESULT_COLUMNS = ("score", "confidence", "status", "detail", "annotation")
#: Columns of ``structure_candidates.tsv`` before and after the candidate's own columns.
CANDIDATE_KEY_COLUMNS = ("query_id", "rank")
CANDIDATE_SCORE_COLUMNS = ("score", "structure_prior")
#: Output names a candidate table's own columns must not take (prefixed ``candidate_`` when they clash).
RESERVED_COLUMNS = (*QUERY_COLUMNS, *RESULT_COLUMNS, "rank", "structure_prior")

IDENTIFICATIONS_FILE = "structure_identifications.tsv"
CANDIDATES_FILE = "structure_candidates.tsv"
PARAMETERS_FILE = "parameters.json"
REPORT_FILE = "report.html"
#: What ``identify`` writes into its output folder (``--overwrite`` replaces only a folder holding nothing else).
IDENTIFY_FILES = (IDENTIFICATIONS_FILE, CANDIDATES_FILE, PARAMETERS_FILE, REPORT_FILE)


def identification_columns(candidate_columns):
    """Columns of ``structure_identifications.tsv`` for a candidate source with ``candidate_columns``."""
    return [*QUERY_COLUMNS, *candidate_columns, *RESULT_COLUMNS]


def candidate_columns_of(candidate_columns):
    """Columns of ``structure_candidates.tsv`` for a candidate source with ``candidate_columns``."""
    return [*CANDIDATE_KEY_COLUMNS, *candidate_columns, *CANDIDATE_SCORE_COLUMNS]


def _number(value, spec):
    """``value`` written with ``spec``; empty for a missing (``None``) or non-finite value."""
    return "" if value is None or not math.isfinite(value) else format(value, spec)


def format_identification(row):
    """One row of ``structure_identifications.tsv`` as text (a typed row of ``IdentifyResults.identifications``)."""
    out = dict(row)
    out["precursor_mz"] = _number(row.get("precursor_mz"), ".5f")
    if "score" in row:  # a ranked query; a query with no ranking has no score and no confidence column
        out["score"] = format(row["score"], ".6g")
        out["confidence"] = _number(row.get("confidence"), ".3f")
    return out


def format_candidate(row):
    """One row of ``structure_candidates.tsv`` as text (a typed row of ``IdentifyResults.candidates``)."""
    return {**row, "score": format(row["score"], ".6g"), "structure_prior": format(row["structure_prior"], ".4f")}

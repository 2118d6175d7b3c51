"""Typed results of the workflows: what :func:`identify`, :func:`train` and :func:`evaluate` return."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..exporting._schema import candidate_columns_of, identification_columns
from ..exporting._writers import write_identify_folder


def _frame(rows, columns):
    try:
        import pandas as pd  # noqa: PLC0415 - optional: a notebook convenience, not a dependency
    except ImportError:
        raise ImportError("a DataFrame of the results needs pandas (pip install pandas); the rows are plain dicts "
                          "in the meantime.") from None
    return pd.DataFrame.from_records(list(rows), columns=list(columns))


@dataclass
class IdentifyResults:
    """What :func:`identify` returns: one typed row per query and the top-k candidates of each.

    Parameters
    ----------
    identifications : list of dict, length n_queries
        In the input's order: :data:`~..exporting.QUERY_COLUMNS` (``precursor_mz`` a float, None when missing;
        ``n_candidates`` an int), the top candidate's own columns, then ``score`` (float), ``confidence`` (float in
        [0, 1], None when the model is not calibrated), ``status``, ``detail``, ``annotation``. A query that was not
        ranked (``status`` other than ``"ok"``) has no candidate columns, score or confidence.
    candidates : list of dict
        The top-k candidates of every ranked query: ``query_id``, ``rank`` (1-based), the candidate's columns,
        ``score`` and ``structure_prior`` (floats). Empty when they were streamed to a ``candidate_sink``.
    candidate_columns : tuple of str
        The candidate source's columns (renamed ``candidate_<name>`` where they clash with an output column).
    statuses : dict of {str: int}
        Queries per status.
    parameters : dict
        The run's settings, sources and sub-models (``parameters.json``).
    spectra : Spectra
        The queries as read, row ``i`` that of ``identifications[i]``.
    candidates_streamed : bool
        Whether the candidates went to a ``candidate_sink`` instead of :attr:`candidates`.
    """

    identifications: list
    candidates: list
    candidate_columns: tuple
    statuses: dict
    parameters: dict
    spectra: object = field(repr=False)
    candidates_streamed: bool = False

    def __repr__(self):
        counts = ", ".join(f"{n} {status}" for status, n in sorted(self.statuses.items(), key=lambda x: (-x[1], x[0])))
        return f"IdentifyResults({len(self.identifications)} queries: {counts}; {len(self.candidates)} candidate rows)"

    def identifications_frame(self):
        """Return :attr:`identifications` as a pandas DataFrame (needs pandas).

        Returns
        -------
        frame : pandas.DataFrame of shape (n_queries, n_columns)
            The columns of ``structure_identifications.tsv``, the values as typed (scores float, missing NaN).
        """
        return _frame(self.identifications, identification_columns(self.candidate_columns))

    def candidates_frame(self):
        """Return :attr:`candidates` as a pandas DataFrame (needs pandas).

        Returns
        -------
        frame : pandas.DataFrame of shape (n_candidate_rows, n_columns)
            The columns of ``structure_candidates.tsv`` (no rows, the columns still, when nothing was ranked).

        Raises
        ------
        ValueError
            The candidates were streamed to a ``candidate_sink`` (not kept here).
        """
        if self.candidates_streamed:
            raise ValueError("IdentifyResults.candidates_frame: these results streamed their candidates to a "
                             "candidate_sink; read them from there, or run identify without one.")
        return _frame(self.candidates, candidate_columns_of(self.candidate_columns))

    def write(self, folder, *, report=False, overwrite=False):
        """Write the command line's output folder, byte for byte (see :func:`~..exporting.write_identify_folder`).

        Parameters
        ----------
        folder : str or Path
            The folder to write: ``structure_identifications.tsv``, ``structure_candidates.tsv``,
            ``parameters.json`` and, with ``report``, ``report.html``; complete or not at all.
        report : bool, default=False
            Also write ``report.html``.
        overwrite : bool, default=False
            Replace a previous identify folder (never one holding other files).

        Returns
        -------
        folder : Path
            The folder written.
        """
        return write_identify_folder(self, folder, report=report, overwrite=overwrite)

"""Writing identify's output folder, for the command line and for Python users alike (see :mod:`._schema`).

Two ways in, one set of bytes:

- :func:`write_identify_folder` writes a finished :class:`~iokr.apps.metabolites.IdentifyResults` (its candidates
  held in memory) into a folder, complete or not at all;
- :class:`CandidateTableWriter` streams ``structure_candidates.tsv`` while the queries are ranked (memory stays that
  of one batch; what ``iokr metabolites identify`` does), and :func:`write_identify_files` then writes the other
  files.
"""

from __future__ import annotations

import io
import os
from pathlib import Path

from ....io._atomic import atomic_folder, atomic_open, sweep_target, write_atomic, write_json
from ....io._ownership import claim, held, release
from ._cells import SafeDictWriter
from ._report_page import ReportCandidates, report_html
from ._schema import (
    CANDIDATES_FILE,
    IDENTIFICATIONS_FILE,
    IDENTIFY_FILES,
    PARAMETERS_FILE,
    REPORT_FILE,
    candidate_columns_of,
    format_candidate,
    format_identification,
    identification_columns,
)


def table_writer(handle, columns):
    """A TSV writer with Unix line endings; values holding tabs or newlines are quoted, text a spreadsheet would run
    as a formula gets a leading ``'`` (see :mod:`._cells`); keys outside ``columns`` are ignored."""
    return SafeDictWriter(handle, fieldnames=columns, delimiter="\t", extrasaction="ignore", lineterminator="\n")


class CandidateTableWriter:
    """``structure_candidates.tsv`` written row by row as queries are ranked.

    Pass it as ``candidate_sink`` to :func:`~iokr.apps.metabolites.identify`: called with the candidate source's
    columns it writes the header and returns the function that writes one typed row.

    Parameters
    ----------
    handle : text file
        Opened with ``newline=""``.
    keep_for_report : bool, default=False
        Keep the few fields ``report.html`` needs of each row (:attr:`report`).

    Attributes
    ----------
    report : ReportCandidates or None
        The rows kept for the report.
    """

    def __init__(self, handle, *, keep_for_report=False):
        self.handle = handle
        self.report = ReportCandidates() if keep_for_report else None
        self._writer = None

    def __call__(self, candidate_columns):
        self._writer = table_writer(self.handle, candidate_columns_of(candidate_columns))
        self._writer.writeheader()
        return self.write

    def write(self, row):
        """Write one typed candidate row.

        Parameters
        ----------
        row : dict
            ``query_id``, ``rank``, the candidate's columns, ``score`` and ``structure_prior`` (floats).
        """
        text = format_candidate(row)
        self._writer.writerow(text)
        if self.report is not None:
            self.report.add(text)


def _identifications_text(rows, candidate_columns):
    """``structure_identifications.tsv`` of rows already written as text (:func:`format_identification`)."""
    buffer = io.StringIO()
    writer = table_writer(buffer, identification_columns(candidate_columns))
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


def write_identify_files(results, folder, *, report=None):
    """Write ``structure_identifications.tsv``, ``parameters.json`` and (when asked) ``report.html`` into ``folder``.

    Parameters
    ----------
    results : IdentifyResults
        The run's identifications, parameters and spectra (and candidates, for ``report=True``).
    folder : Path
        An existing folder (``structure_candidates.tsv`` is written by :class:`CandidateTableWriter` or
        :func:`write_identify_folder`).
    report : ReportCandidates or bool, optional
        The candidates the report shows (True: ``results.candidates``, so not for results whose candidates were
        streamed to a ``candidate_sink``); None or False: no report.

    Returns
    -------
    written : list of Path
        The files written, in that order.

    Raises
    ------
    ValueError
        ``report`` is True and the candidates were streamed (the report would show none).
    """
    folder = Path(folder)
    if report is True and results.candidates_streamed:
        # results.candidates is empty then: the report would say "no candidate" for every ranked query
        raise ValueError("write_identify_files: these results streamed their candidates to a candidate_sink; pass "
                         "report=<the .report of a CandidateTableWriter made with keep_for_report=True>.")
    rows = [format_identification(row) for row in results.identifications]  # one text form for table and report
    write_atomic(folder / IDENTIFICATIONS_FILE, _identifications_text(rows, results.candidate_columns))
    write_json(folder / PARAMETERS_FILE, results.parameters)
    written = [folder / IDENTIFICATIONS_FILE, folder / PARAMETERS_FILE]
    if report is not None and report is not False:
        kept = ReportCandidates.of(format_candidate(r) for r in results.candidates) if report is True else report
        write_atomic(folder / REPORT_FILE, report_html(rows, kept, results.spectra, results.parameters))
        written.append(folder / REPORT_FILE)
    return written


def write_identify_folder(results, folder, *, report=False, overwrite=False):
    """Write an identify run's output folder, as the command line does, complete or not at all.

    Parameters
    ----------
    results : IdentifyResults
        With its candidates in memory (not streamed to a ``candidate_sink``).
    folder : str or Path
        The output folder; it is replaced as a whole only when it exists and ``overwrite`` is True.
    report : bool, default=False
        Also write ``report.html``.
    overwrite : bool, default=False
        Replace an existing folder that holds only files identify writes.

    Returns
    -------
    folder : Path
        The folder written.

    Raises
    ------
    FileExistsError
        ``folder`` is a file, holds files identify does not write, or is a previous identify folder and
        ``overwrite`` is False.
    OutputInUseError
        Another iokr run (a command or another process's ``write``) is writing ``folder``.
    """
    if not isinstance(folder, (str, os.PathLike)):
        raise TypeError(f"The 'folder' parameter of write_identify_folder must be a path (str or os.PathLike). Got "
                        f"{type(folder).__name__} {folder!r:.80} instead.")
    for name, value in (("report", report), ("overwrite", overwrite)):
        # a truthy string such as "no" must not write or replace anything
        if not isinstance(value, bool):
            raise TypeError(f"The '{name}' parameter of write_identify_folder must be True or False. Got "
                            f"{type(value).__name__} {value!r:.80} instead.")
    folder = Path(folder)
    if results.candidates_streamed:
        raise ValueError("write_identify_folder: these results streamed their candidates to a candidate_sink; "
                         "run identify without one to write the folder from Python.")
    # The folder is claimed for the write, as the command line claims its --output: another writer (a notebook, a
    # command) cannot replace it between the checks below and the final rename.
    held_before = set(held())
    real = claim(folder)  # OutputInUseError (an OSError) names the folder and the other run
    try:
        _check_folder(folder, overwrite)
        sweep_target(real)  # temporaries of a killed earlier write of this folder
        with atomic_folder(folder) as tmp:
            with atomic_open(tmp / CANDIDATES_FILE, "w", encoding="utf-8", newline="") as handle:
                # the report keeps the rows as they are written (each candidate formatted once, as on the CLI)
                table = CandidateTableWriter(handle, keep_for_report=bool(report))
                write = table(results.candidate_columns)
                for row in results.candidates:
                    write(row)
            write_identify_files(results, tmp, report=table.report)
    finally:
        if real not in held_before:
            release(real)
    return folder


def _check_folder(folder, overwrite):
    """Refuse a file, a folder holding other files, or a previous identify folder without ``overwrite``."""
    if folder.exists():
        if not folder.is_dir():
            raise FileExistsError(f"write_identify_folder: {folder} is a file; identify writes a folder.")
        foreign = sorted(p.name for p in folder.iterdir() if p.name not in IDENTIFY_FILES)
        if foreign or (any(folder.iterdir()) and not overwrite):
            raise FileExistsError(f"write_identify_folder: {folder} is not empty ("
                                  + (f"it holds files identify did not write: {', '.join(foreign[:3])}" if foreign
                                     else "pass overwrite=True to replace a previous identify folder") + ").")

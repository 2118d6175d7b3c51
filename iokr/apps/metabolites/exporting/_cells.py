"""Tables safe to open in a spreadsheet: text cells that a spreadsheet would run as a formula are neutralized.

Candidate tables, spectra and their metadata come from files iokr does not control; their text reaches the output
TSVs (identifiers, names, every column of a candidate table, query ids). A spreadsheet opening a TSV runs a cell that
starts with ``=``, ``+``, ``-`` or ``@`` as a formula (``=HYPERLINK(...)``, DDE payloads such as
``-2+3+cmd|' /C calc'!A0``), and tab or carriage return at the start of a cell are used to smuggle one past filters.

Policy (OWASP, "CSV Injection"): a **text** cell starting with one of those characters gets a leading single quote
``'``, which spreadsheets read as "this is text" and which a program can strip. Never changed:

- numbers (Python ``int``/``float`` values, and text that reads as a number, such as ``-1.5`` or ``-1e-3``): a
  negative score or mass stays as it is;
- text starting with any other character, e.g. the adduct ``[M-H]-`` or the formula ``C6H12O6``;
- a cell that is only ``-`` or ``+`` (common placeholders for "none"; no formula fits in one character).

Header cells (column names taken from a candidate table) follow the same rule.
"""

from __future__ import annotations

import csv

#: Leading characters that make a spreadsheet evaluate a cell.
FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")
_PLACEHOLDERS = ("-", "+")


def _is_number(text):
    try:
        float(text)
    except ValueError:
        return False
    return True


def spreadsheet_safe(value):
    """``value`` unchanged, or with a leading ``'`` when it is text a spreadsheet would run as a formula.

    Parameters
    ----------
    value : object
        A cell value; only ``str`` values can change.

    Returns
    -------
    cell : object
        ``"'" + value`` for text starting with one of :data:`FORMULA_TRIGGERS` that is neither a number nor a lone
        ``-`` / ``+``; ``value`` otherwise.

    Examples
    --------
    >>> spreadsheet_safe("=HYPERLINK(\\"http://x\\")")
    '\\'=HYPERLINK("http://x")'
    >>> spreadsheet_safe("-1.5"), spreadsheet_safe("[M-H]-"), spreadsheet_safe(-2.0)
    ('-1.5', '[M-H]-', -2.0)
    """
    if (isinstance(value, str) and value.startswith(FORMULA_TRIGGERS) and value not in _PLACEHOLDERS
            and not _is_number(value)):
        return "'" + value
    return value


class SafeDictWriter(csv.DictWriter):
    """A :class:`csv.DictWriter` whose cells (header included) pass through :func:`spreadsheet_safe`."""

    def writerow(self, rowdict):
        return super().writerow({key: spreadsheet_safe(value) for key, value in rowdict.items()})

    def writerows(self, rowdicts):
        for row in rowdicts:
            self.writerow(row)

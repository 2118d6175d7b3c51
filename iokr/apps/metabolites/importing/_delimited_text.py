"""Delimited text (CSV, TSV, pipe-separated) as editors and systems save it: any line end, no row lost to a quote.

- Line ends: LF, CRLF and a lone CR (classic Mac OS, Excel's 'CSV (Macintosh)') all end a line; a quoted field
  keeps its own line breaks (as the csv module reads a file opened with ``newline=""``).
- An unclosed quote: the csv module (non-strict) reads everything from an opening quote to the end of the file into
  one field, silently, so every later row is lost. Here a row that the reader completes only because its input ran
  out (a row read with every line ending in a terminator can only end early inside a quote) is an error naming the
  file and the line where the quote opened.

Other malformed quoting (``"abc"d``) is read as the csv module reads it (``abcd``).
"""

from __future__ import annotations

import csv

from ....exceptions import IOKRDataError


class _Lines:
    """The reader's input: each text line split at lone CRs, every piece ending in its terminator; notes when it
    runs out."""

    def __init__(self, lines):
        self._pieces = (piece for line in lines for piece in self._split(line))
        self.exhausted = False

    @staticmethod
    def _split(line):
        parts = line.split("\r")
        return [part + "\r" for part in parts[:-1]] + [parts[-1] + "\n"]

    def __iter__(self):
        return self

    def __next__(self):
        try:
            return next(self._pieces)
        except StopIteration:
            self.exhausted = True
            raise


def delimited_rows(lines, delimiter, where, max_field_bytes):
    """``(columns, rows)`` of delimited text, the first line its header.

    Parameters
    ----------
    lines : iterable of str
        The file's lines without their LF / CRLF terminators (a lone CR inside a line ends a line too).
    delimiter : str
    where : str
        The file, for messages.
    max_field_bytes : int
        Longest field accepted.

    Returns
    -------
    columns : list of str
        Header names, stripped.
    rows : iterator of dict
        One ``{column: value}`` per non-empty row (``None`` for a column the row lacks; values beyond the header
        dropped), streamed.

    Raises
    ------
    IOKRDataError
        One line naming the file and the line: unparsable CSV, or a quote not closed by the end of the file.
    """
    csv.field_size_limit(max_field_bytes)
    source = _Lines(lines)
    reader = csv.reader(source, delimiter=delimiter)

    def read(start):
        try:
            values = next(reader)
        except StopIteration:
            return None
        except csv.Error as exc:
            raise IOKRDataError(f"{where}, line {reader.line_num}: {exc}.") from None
        if source.exhausted and values:
            # the reader ran out of input inside a quoted field: its last field holds one terminator per line
            opened = reader.line_num - sum(values[-1].count(end) for end in "\r\n") + 1
            raise IOKRDataError(f"{where}, line {max(opened, start)}: a quote opened here is not closed by the end "
                                f"of the file (line {reader.line_num}), so every later row would be lost in one "
                                "field; close or remove it.")
        return values

    header = read(1) or []
    columns = [c.strip() for c in header]

    def rows():
        while True:
            start = reader.line_num + 1
            values = read(start)
            if values is None:
                return
            if values:
                yield {c: values[i] if i < len(values) else None for i, c in enumerate(columns)}
    return columns, rows()

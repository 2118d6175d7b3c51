"""Parsing untrusted JSON: every way a hostile document fails becomes one :class:`JSONDataError` line.

Python's :func:`json.loads` fails on hostile input in ways its callers do not expect: ``[`` repeated 100,000 times
raises :class:`RecursionError` (a traceback, not a data error), and an integer of more than 4300 digits raises a
plain :class:`ValueError` (Python's limit on int-string conversion) that names neither the file nor the line.
:func:`loads_json` maps both, and malformed JSON, to :class:`JSONDataError` with a short ``reason``, and refuses
documents nested deeper than ``max_depth`` (:data:`MAX_JSON_DEPTH`, 100; no file of the library nests beyond 5), so
the code consuming a document never walks an arbitrarily deep structure. The depth check costs two ``str.count``
calls, plus a non-recursive walk only when the document has at least ``max_depth`` brackets.
"""

from __future__ import annotations

import json
import sys

from ..exceptions import IOKRDataError
from ._lines import read_capped

#: Deepest accepted nesting of arrays and objects.
MAX_JSON_DEPTH = 100
#: Largest JSON file read whole by :func:`load_json_file` (manifests, metadata), in bytes.
MAX_JSON_FILE_BYTES = 64 * 2**20

_DECODER = json.JSONDecoder()


class JSONDataError(IOKRDataError):
    """A JSON document is malformed, too deeply nested, or holds an integer too long to convert.

    Attributes
    ----------
    reason : str
        The cause without the location (e.g. ``"invalid JSON"``, ``"JSON nested deeper than 100 levels"``),
        for readers that skip a bad record and count it by reason.
    """

    def __init__(self, message, reason):
        super().__init__(message)
        self.reason = reason


def _depth_exceeds(value, max_depth):
    """Whether ``value`` nests lists/dicts deeper than ``max_depth`` (iterative: no recursion on hostile input)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > max_depth:
            return True
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, depth + 1) for child in children if isinstance(child, (list, dict)))
    return False


def loads_json(text, *, what, where="", max_depth=MAX_JSON_DEPTH):
    """Parse one JSON document from untrusted input.

    Parameters
    ----------
    text : str or bytes
        The document (bytes are decoded as UTF-8).
    what : str
        The file (or object) the document comes from, for messages, e.g. ``"Spectra file data.jsonl"``.
    where : str, default=""
        Location inside it, e.g. ``"line 12"``.
    max_depth : int, default=MAX_JSON_DEPTH
        Deepest accepted nesting of arrays and objects.

    Returns
    -------
    value : object
        As :func:`json.loads` returns it (``NaN`` and ``Infinity`` literals are accepted, as there).

    Raises
    ------
    JSONDataError
        One line, ``"<what>: <where>: <reason>."``; ``exc.reason`` is one of ``"not UTF-8"``, ``"invalid JSON"``
        (with the parser's position), ``"JSON nested deeper than <max_depth> levels"`` or
        ``"integer with more than <n> digits"``.

    Examples
    --------
    >>> loads_json('{"a": [1, 2]}', what="Example")
    {'a': [1, 2]}
    >>> loads_json("[" * 1000, what="Example", where="line 3")
    Traceback (most recent call last):
    ...
    iokr.io._json.JSONDataError: Example: line 3: JSON nested deeper than 100 levels.
    """
    if isinstance(text, (bytes, bytearray, memoryview)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as exc:
            _fail(what, where, "not UTF-8", f" (byte {exc.start})")
    try:
        value = _DECODER.decode(text)
    except json.JSONDecodeError as exc:
        _fail(what, where, "invalid JSON", f" ({exc.msg} at character {exc.pos})")
    except RecursionError:
        _fail(what, where, f"JSON nested deeper than {max_depth} levels")
    except ValueError:  # the only other ValueError: an integer beyond Python's int-string conversion limit
        _fail(what, where, f"integer with more than {sys.get_int_max_str_digits() or 'the allowed'} digits")
    if (isinstance(value, (list, dict)) and text.count("[") + text.count("{") >= max_depth
            and _depth_exceeds(value, max_depth)):
        _fail(what, where, f"JSON nested deeper than {max_depth} levels")
    return value


def _fail(what, where, reason, detail=""):
    location = f"{what}: {where}" if where else what
    raise JSONDataError(f"{location}: {reason}{detail}.", reason)


def load_json_file(path, *, what, max_bytes=MAX_JSON_FILE_BYTES, max_depth=MAX_JSON_DEPTH):
    """Read and parse a whole JSON file (a manifest or metadata), refusing files above ``max_bytes``.

    Parameters
    ----------
    path : str or Path
    what : str
        What the file is, for messages (e.g. ``"Candidate-file manifest"``).
    max_bytes : int, default=MAX_JSON_FILE_BYTES
    max_depth : int, default=MAX_JSON_DEPTH

    Returns
    -------
    value : object

    Raises
    ------
    IOKRDataError
        The file cannot be read or is too large (:class:`~iokr.exceptions.IOKRDataError`), or its content is not
        acceptable JSON (:class:`JSONDataError`).
    """
    data = read_capped(path, what=what, max_bytes=max_bytes)
    return loads_json(data, what=f"{what} {path}", max_depth=max_depth)

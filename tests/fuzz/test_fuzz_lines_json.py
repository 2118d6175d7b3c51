"""Fuzz the shared readers of untrusted files: the capped line reader and the safe JSON loader (``iokr.io``).

Invariants of an accepted input: ``iter_lines`` yields consecutive line numbers and lines within the cap, whose
concatenation (with the terminators) is the (decompressed) file; ``loads_json`` returns what :func:`json.loads`
returns. Rejections must be :class:`~iokr.exceptions.IOKRDataError` naming the file (or the document) and, for a
line error, the line.
"""

import gzip
import json

import pytest
from fuzz_helpers import COUNTS, fuzz_settings, gzip_bytes, json_values, mutated, run_reader
from hypothesis import given
from hypothesis import strategies as st

from iokr.exceptions import IOKRDataError
from iokr.io import JSONDataError, iter_lines, loads_json

FMT = "lines_json"
TEXT = ('{"a": [1, 2.5, "x"]}\n\n  spaced line  \r\nnon-ASCII \u00e9\u00f1 \U0001f600\nlast line without newline'
        .encode())
JSON_SEED = b'{"accession": "A1", "peaks": [[50.0, 1.0]], "meta": {"k": [null, true, "v"]}, "n": 12345}'
JSON_TOKENS = [b"[" * 200, b"{" * 150, b"]" * 50, b"9" * 5000, b"-" + b"1" * 4400, b"1e999999", b'"\\ud800"',
               b"NaN", b"\\", b'"\\u00"']


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz_lines_json")


def _lines(path, max_line_bytes, errors):
    return list(iter_lines(path, what="Fuzz file", max_line_bytes=max_line_bytes, errors=errors))


@fuzz_settings(scale=4)
@given(data=mutated(TEXT, [b"\n", b"\r\n", b"\xff", b"x" * 100]), compress=st.booleans(),
       max_line_bytes=st.integers(1, 120), errors=st.sampled_from(["strict", "replace"]))
def test_iter_lines(workdir, data, compress, max_line_bytes, errors):
    path = workdir / "lines.txt"
    path.write_bytes(gzip_bytes(data) if compress else data)
    lines = run_reader(FMT, _lines, path, max_line_bytes, errors)
    if lines is None:
        return
    assert [n for n, _ in lines] == list(range(1, len(lines) + 1))
    assert all(len(text.encode("utf-8", "surrogatepass")) <= max_line_bytes * 3 for _, text in lines)
    if errors == "strict":
        # Terminators are \n or \r\n; a lone \r is content (also at the end of a last line without terminator).
        expected = data.replace(b"\r\n", b"\n")
        expected = expected[:-1] if expected.endswith(b"\n") else expected
        assert b"\n".join(text.encode() for _, text in lines) == expected


@fuzz_settings(scale=3)
@given(data=mutated(gzip_bytes(TEXT * 20), max_ops=3))
def test_iter_lines_damaged_gzip(workdir, data):
    path = workdir / "damaged.gz"
    path.write_bytes(data)
    run_reader(FMT, _lines, path, 4096, "strict")


def test_iter_lines_errors_name_file_and_line(workdir):
    path = workdir / "long.gz"
    path.write_bytes(gzip.compress(b"short\n" + b"y" * 101 + b"\n"))
    with pytest.raises(IOKRDataError, match=r"Fuzz file .*long.gz: line 2 is longer than the 100 bytes cap"):
        _lines(path, 100, "strict")
    path.write_bytes(b"ok\n\xff\xfe\n")
    with pytest.raises(IOKRDataError, match=r"line 2 is not UTF-8 text"):
        _lines(path, 100, "strict")
    assert _lines(path, 100, "replace") == [(1, "ok"), (2, "\ufffd\ufffd")]
    COUNTS[FMT]["inputs"] += 3
    COUNTS[FMT]["rejected"] += 2
    COUNTS[FMT]["accepted"] += 1


def _loads(data):
    return loads_json(data, what="Fuzz document", where="line 1")


def _loads_boxed(data):
    return (_loads(data),)  # a parsed null is (None,), a rejection None


@fuzz_settings(scale=6)
@given(data=mutated(JSON_SEED, JSON_TOKENS, max_ops=5))
def test_loads_json(data):
    boxed = run_reader(FMT, _loads_boxed, data)
    if boxed is not None:
        # Compared as JSON text: NaN compares unequal to itself.
        assert json.dumps(boxed[0]) == json.dumps(json.loads(data))


@fuzz_settings(scale=3)
@given(value=json_values, depth=st.integers(0, 300))
def test_loads_json_nesting(value, depth):
    text = "[" * depth + json.dumps(value) + "]" * depth
    boxed = run_reader(FMT, _loads_boxed, text)
    assert (boxed is None) == (depth + _depth(value) > 100)


def _depth(value):
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    return 0


@pytest.mark.parametrize("text, reason", [
    ("[" * 100_000, "JSON nested deeper than 100 levels"),
    ("{\"a\":" * 50_000, "JSON nested deeper than 100 levels"),
    ("9" * 5000, "integer with more than 4300 digits"),
    ('{"x": [' + "1" * 4301 + "]}", "integer with more than 4300 digits"),
    ("[1,", "invalid JSON"),
    (b"\xff[]", "not UTF-8"),
])
def test_loads_json_hostile_documents(text, reason):
    with pytest.raises(JSONDataError, match=f"^Fuzz document: line 1: {reason}") as info:
        _loads(text)
    assert info.value.reason == reason and "\n" not in str(info.value)

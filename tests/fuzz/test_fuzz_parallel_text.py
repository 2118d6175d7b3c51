"""Fuzz the parallel-text loader (gzip JSONL of aligned chapters)."""

import json

import pytest
from fuzz_helpers import fuzz_settings, gzip_bytes, json_values, mutated, run_reader
from hypothesis import given
from hypothesis import strategies as st

from iokr.datasets import load_parallel_text
from iokr.exceptions import IOKRDataError

FMT = "parallel_text"
RECORDS = [{"id": "Gen.1", "en": ["In the beginning", "God created"], "es": ["En el principio", "cre\u00f3 Dios"]},
           {"id": "Gen.2", "en": ["Thus the heavens"], "es": ["Y fueron acabados"]}]
VALID = ("\n".join(json.dumps(r, ensure_ascii=False) for r in RECORDS) + "\n").encode()


def _check(result):
    if result is None:
        return
    ids, english, spanish = result
    assert len(ids) == len(english) == len(spanish)
    assert all(isinstance(t, str) for t in [*ids, *english, *spanish])


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz_parallel_text")


@fuzz_settings(scale=4)
@given(data=mutated(VALID, [b'"en"', b'"es"', b'"id"', b"[1]", b'"x"']))
def test_mutated_records(workdir, data):
    path = workdir / "p.jsonl.gz"
    path.write_bytes(gzip_bytes(data))
    _check(run_reader(FMT, load_parallel_text, path))


@fuzz_settings(scale=3)
@given(data=mutated(gzip_bytes(VALID), max_ops=3))
def test_mutated_gzip_stream(workdir, data):
    path = workdir / "damaged.jsonl.gz"
    path.write_bytes(data)
    _check(run_reader(FMT, load_parallel_text, path))


@fuzz_settings(scale=3)
@given(records=st.lists(st.dictionaries(st.sampled_from(["id", "en", "es"]), json_values, max_size=3)
                        | json_values, min_size=1, max_size=3))
def test_fields_of_wrong_type(workdir, records):
    path = workdir / "typed.jsonl.gz"
    path.write_bytes(gzip_bytes("\n".join(json.dumps(r) for r in records).encode("utf-8", "surrogatepass")))
    _check(run_reader(FMT, load_parallel_text, path))


# -- regression tests for crashes the fuzzer found ----------------------------------------------------------------


def test_plain_or_truncated(tmp_path):
    # gzip is detected from the content: plain JSONL is read whatever the file is named.
    path = tmp_path / "plain.jsonl.gz"
    path.write_bytes(VALID)
    path.with_name("compressed.jsonl").write_bytes(gzip_bytes(VALID))
    assert load_parallel_text(path) == load_parallel_text(path.with_name("compressed.jsonl"))
    blob = gzip_bytes(VALID * 30)
    path.write_bytes(blob[: len(blob) // 2])
    with pytest.raises(IOKRDataError, match="unreadable"):
        load_parallel_text(path)


def test_verses_must_be_lists_of_text(tmp_path):
    path = tmp_path / "str.jsonl.gz"
    path.write_bytes(gzip_bytes(json.dumps({"id": 1, "en": "abc", "es": ["x"]}).encode()))
    with pytest.raises(IOKRDataError, match="line 1.*lists of verse strings"):
        load_parallel_text(path)

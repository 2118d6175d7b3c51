"""Fuzz the Mulan ARFF reader (dense and sparse rows, plain and gzip)."""

import numpy as np
import pytest
from fuzz_helpers import fuzz_settings, gzip_bytes, mutated, run_reader
from hypothesis import given
from hypothesis import strategies as st

from iokr.datasets import load_arff
from iokr.exceptions import IOKRDataError

FMT = "arff"
VALID = b"""% a comment
@relation toy
@attribute f0 numeric
@attribute f1 numeric
@attribute f2 numeric
@attribute l0 {0,1}
@attribute l1 {0,1}
@data
0.5,0,1.25,1,0
{0 2.5,2 -1,3 1,4 1}
0,0,0,0,0
{}
"""
TOKENS = [b"@attribute", b"@attribute x numeric\n", b"@data\n", b"{", b"}", b"{-1 3}", b"{99 1}", b"{0 nan}",
          b"{4 2}", b"?", b"1e309", b",,", b"{0}", b"{0 1 2}"]


def _check(result, n_labels):
    if result is None:
        return
    X, Y = result
    assert X.shape[0] == Y.shape[0] and Y.shape[1] == n_labels and Y.dtype == np.int8
    assert np.isin(Y, (0, 1)).all()


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz_arff")


@fuzz_settings(scale=4)
@given(data=mutated(VALID, TOKENS), compress=st.booleans(), n_labels=st.integers(1, 3))
def test_mutated_file(workdir, data, compress, n_labels):
    path = workdir / ("d.arff.gz" if compress else "d.arff")
    path.write_bytes(gzip_bytes(data) if compress else data)
    _check(run_reader(FMT, load_arff, path, n_labels), n_labels)


@fuzz_settings(scale=2)
@given(data=mutated(gzip_bytes(VALID), max_ops=3))
def test_mutated_gzip_stream(workdir, data):
    path = workdir / "damaged.arff.gz"
    path.write_bytes(data)
    _check(run_reader(FMT, load_arff, path, 2), 2)


cells = st.one_of(st.integers(-5, 10).map(str), st.floats(allow_nan=True, allow_infinity=True).map(repr),
                  st.sampled_from(["", "?", "1e309", "-0", "9" * 400, "a b"]), st.text(max_size=5))


@fuzz_settings(scale=3)
@given(n_attributes=st.integers(0, 5), rows=st.lists(
    st.lists(cells, max_size=6).map(",".join)
    | st.lists(st.tuples(cells, cells), max_size=4).map(lambda kv: "{" + ",".join(f"{k} {v}" for k, v in kv) + "}"),
    max_size=5))
def test_generated_rows(workdir, n_attributes, rows):
    header = "".join(f"@attribute a{i} numeric\n" for i in range(n_attributes))
    path = workdir / "gen.arff"
    path.write_bytes(("@relation r\n" + header + "@data\n" + "\n".join(rows) + "\n").encode("utf-8", "surrogatepass"))
    _check(run_reader(FMT, load_arff, path, 1), 1)


# -- regression tests for crashes the fuzzer found ----------------------------------------------------------------


@pytest.mark.parametrize("text, match", [
    (b"@attribute\n@data\n", "line 1: @attribute without a name"),
    (b"@attribute a numeric\n@attribute b numeric\n@data\n{-1 1}\n", "line 4: .*negative attribute index"),
    (b"@attribute a numeric\n@data\n1\n", "'n_labels'"),
])
def test_malformed_headers_and_rows(tmp_path, text, match):
    path = tmp_path / "bad.arff"
    path.write_bytes(text)
    with pytest.raises(IOKRDataError, match=match):
        load_arff(path, 1)


def test_truncated_gzip(tmp_path):
    path = tmp_path / "cut.arff.gz"
    blob = gzip_bytes(VALID * 20)
    path.write_bytes(blob[: len(blob) // 2])
    with pytest.raises(IOKRDataError, match="truncated or corrupted"):
        load_arff(path, 2)

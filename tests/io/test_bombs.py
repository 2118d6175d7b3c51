"""Hostile files built at test time must be refused quickly and with bounded memory (issue #16).

Each reader runs in a fresh interpreter (``rss_probe``): it must fail with one ``IOKRDataError`` line (no traceback)
within :data:`MAX_SECONDS` and :data:`MAX_RSS_MB` of peak resident memory. Before the fix, the gzipped JSONL file with
one 1 GiB line cost 2.3 GB, and the 1.1 MB model with an extra 1 GiB array was refused only after 2.3 GB.
"""

import gzip
import io
import json
import tracemalloc
import zipfile

import numpy as np
import pytest
from rss_probe import CATCH, probe

from iokr.apps.metabolites import ReadReport
from iokr.io import save_model_file

MAX_SECONDS = 10
MAX_RSS_MB = 300
GIB = 2**30

GOOD_SPECTRUM = {"accession": "GOOD1", "precursor_mz": 181.07, "peaks": [[50.0, 1.0], [60.0, 2.0]]}


def _gzip_repeated(path, block, total_bytes, head=b""):
    """``head`` then ``block`` repeated up to ``total_bytes`` (decompressed), as a multi-member gzip file built in
    milliseconds."""
    member = gzip.compress(block, compresslevel=9, mtime=0)
    with open(path, "wb") as handle:
        handle.write(gzip.compress(head, mtime=0))
        handle.writelines(member for _ in range(total_bytes // len(block)))
    return path


def _check_refused(result, *fragments):
    assert result["stderr_lines"] == 0 and result["returncode"] == 0, result
    error, seconds = result["stdout"].splitlines()
    assert error.startswith("ERROR "), result
    for fragment in fragments:
        assert fragment in error, result
    assert float(seconds.removeprefix("CALL_SECONDS ")) < MAX_SECONDS, result
    assert result["rss_mb"] < MAX_RSS_MB, result


#: Per reader: (import, call) for rss_probe.CATCH.
READERS = {
    "spectra": ("from iokr.apps.metabolites import read_massbank_jsonl as read", "read({path!r})"),
    "parallel_text": ("from iokr.datasets import load_parallel_text as read", "read({path!r})"),
    "arff": ("from iokr.datasets import load_arff as read", "read({path!r}, 1)"),
}


def _catch(reader, path):
    imports, call = READERS[reader]
    return CATCH.format(imports=imports, call=call.format(path=str(path)))


@pytest.mark.parametrize("reader", list(READERS))
def test_gzip_file_with_one_1gib_line(tmp_path, reader):
    path = _gzip_repeated(tmp_path / "one_line.gz", b"x" * 2**20, GIB)
    result = probe(_catch(reader, path))
    _check_refused(result, str(path), "line 1 is longer than the 16 MiB cap", "max_line_bytes")


#: Per reader: (header, a line the reader accepts, keeping little or nothing of it).
SHORT_LINES = {
    "spectra": (b"", b"y" * 1023 + b"\n"),  # invalid JSON: skipped and counted
    "parallel_text": (b"", json.dumps({"id": "a", "en": ["x" * 480], "es": ["y" * 480]}).encode() + b"\n"),
    "arff": (b"@attribute a numeric\n@attribute b numeric\n@data\n", b"0." + b"0" * 1017 + b"1,0\n"),
}


@pytest.mark.parametrize("reader", list(READERS))
def test_gzip_bomb_of_short_lines(tmp_path, reader):
    """1 GiB of 1 KiB lines from 2 MB (ratio about 450): the compression-ratio cap stops it after 16 MiB."""
    head, line = SHORT_LINES[reader]
    path = _gzip_repeated(tmp_path / "many_lines.gz", line * (2**20 // len(line)), GIB, head)
    result = probe(_catch(reader, path))
    _check_refused(result, str(path), "max_compression_ratio cap of 100", "compression bomb")


def test_many_bad_records_keep_the_report_small(tmp_path):
    """Every bad line is counted, only the first 100 are kept by id (was one tuple per line: 3 GB for 20 million)."""
    n_bad = 300_000
    path = tmp_path / "bad.jsonl.gz"
    with gzip.open(path, "wb", compresslevel=1) as handle:
        handle.write(b"not json\n" * n_bad + json.dumps(GOOD_SPECTRUM).encode() + b"\n")
    result = probe(f"""
import time
from iokr.apps.metabolites import read_massbank_jsonl
start = time.perf_counter()
spectra, report = read_massbank_jsonl({str(path)!r})
print(len(spectra), report.n_skipped, len(report.skipped), report.summary())
print(time.perf_counter() - start)
""")
    assert result["returncode"] == 0 and result["stderr_lines"] == 0, result
    summary, seconds = result["stdout"].splitlines()
    assert summary == f"1 {n_bad} 100 1 spectra read, {n_bad} skipped ({n_bad} invalid JSON)"
    assert result["rss_mb"] < MAX_RSS_MB and float(seconds) < 20, result


def test_read_report_memory_does_not_grow_with_skipped_records():
    report = ReadReport()
    tracemalloc.start()
    for i in range(200_000):
        report.skip(f"line {i}", "invalid JSON" if i % 3 else "no peaks")
    retained = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert retained < 100_000  # 100 ids kept; the previous list of one tuple per record held about 30 MB
    assert report.n_skipped == 200_000 and len(report.skipped) == ReadReport.MAX_EXAMPLES
    assert report.skipped[:2] == [("line 0", "no peaks"), ("line 1", "invalid JSON")]
    assert report.summary() == "0 spectra read, 200000 skipped (133333 invalid JSON, 66667 no peaks)"


# -- model files ------------------------------------------------------------------------------------------------------


def _append_zero_array(path, name, n_bytes):
    """Append member ``name.npy``: ``n_bytes`` of float64 zeros, deflated (about 1 MB per GiB)."""
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f8", "fortran_order": False,
                                                  "shape": (n_bytes // 8,)})
    zeros = bytes(2**22)
    with zipfile.ZipFile(path, "a", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as archive, \
            archive.open(f"{name}.npy", "w", force_zip64=True) as member:
        member.write(header.getvalue())
        member.writelines(zeros for _ in range(n_bytes // len(zeros)))


@pytest.fixture(scope="module")
def model_files(tmp_path_factory):
    """A 1.1 MB model (format 2), the same with an extra 1 GiB zero array, and a format-1 file with that array."""
    folder = tmp_path_factory.mktemp("model_bombs")
    arrays = {"weights": np.random.default_rng(0).normal(size=(380, 380))}
    path = save_model_file(folder / "model.npz", arrays, {"alpha": 1.0}, kind="test")
    bomb = folder / "model_extra.npz"
    bomb.write_bytes(path.read_bytes())
    _append_zero_array(bomb, "extra", GIB)
    legacy = folder / "legacy_extra.npz"
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(legacy, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename == "__metadata__.npy":  # format 1: no per-member metadata
                meta = json.loads(np.load(io.BytesIO(data)).tobytes())
                meta.pop("members")
                meta["format_version"] = 1
                buf = io.BytesIO()
                np.save(buf, np.frombuffer(json.dumps(meta).encode(), np.uint8))
                data = buf.getvalue()
            dst.writestr(info.filename, data)
    _append_zero_array(legacy, "extra", GIB)
    return {"model": path, "extra": bomb, "legacy_extra": legacy}


@pytest.mark.parametrize("which, fragments", [
    ("extra", ("unknown member 'extra.npy'",)),
    ("legacy_extra", ("member 'extra.npy' would decompress", "max_compression_ratio cap of 100")),
])
def test_model_with_extra_1gib_array(model_files, which, fragments):
    assert model_files["model"].stat().st_size < 1.2e6 and model_files[which].stat().st_size < 2.5e6
    code = CATCH.format(imports="from iokr.io import load_model_file",
                        call=f"load_model_file({str(model_files[which])!r})")
    _check_refused(probe(code), str(model_files[which]), *fragments)


def test_model_loads_with_bounded_memory(model_files):
    """The untouched model still loads, in one pass (no second copy of the arrays for the checksum)."""
    result = probe(f"""
from iokr.io import load_model_file
arrays, meta = load_model_file({str(model_files["model"])!r}, kind="test")
print(arrays["weights"].shape, meta["format_version"])
""")
    assert result["stdout"].strip() == "(380, 380) 2" and result["rss_mb"] < MAX_RSS_MB, result

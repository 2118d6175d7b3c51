"""Text that is not UTF-8: Windows-1252 files (older Windows tools, Excel's CSV) are read with their characters and
said to be so; binary files and NUL bytes are refused with one line; nothing becomes U+FFFD silently."""

import numpy as np
import pytest

from iokr.apps.metabolites import read_spectra
from iokr.cli.main import main
from iokr.exceptions import IOKRDataError
from iokr.io import LegacyLines, iter_lines

MGF = b"BEGIN IONS\nTITLE=caf\xe9ine at 25 \xb0C\nPEPMASS=195.0877\nCHARGE=1+\n138.066 100\n110.071 50\nEND IONS\n"


def test_iter_lines_reads_windows_1252_lines_and_reports_each(tmp_path):
    path = tmp_path / "a.txt"
    path.write_bytes(b"plain\ncaf\xe9 \x80 \x81\n\xe2\x82\xac utf8\n")
    legacy = LegacyLines()
    lines = list(iter_lines(path, what="Test file", errors="windows-1252", on_legacy=legacy))
    # 0x80 is the euro sign in Windows-1252; 0x81 is undefined there and read as the Latin-1 control character
    assert lines == [(1, "plain"), (2, "café \u20ac \x81"), (3, "\u20ac utf8")]
    assert (legacy.count, legacy.first) == (1, 2)
    assert legacy.note() == "1 line not UTF-8, read as Windows-1252 (the first: line 2)"
    with pytest.raises(IOKRDataError, match="line 2 is not UTF-8 text"):
        list(iter_lines(path, what="Test file"))


@pytest.mark.parametrize(("data", "message"), [
    (b"one\ntw\x00o\n", "line 2 holds a NUL byte"),
    ("\ufeffname\nvalue\n".encode("utf-16-le"), "is UTF-16 text; save it as UTF-8"),
])
def test_iter_lines_refuses_nul_bytes_in_every_mode(tmp_path, data, message):
    path = tmp_path / "b.txt"
    path.write_bytes(data)
    for errors in ("strict", "replace", "windows-1252"):
        with pytest.raises(IOKRDataError, match=message):
            list(iter_lines(path, what="Test file", errors=errors))


def test_a_windows_1252_mgf_keeps_its_characters_and_says_so(tmp_path):
    path = tmp_path / "latin1.mgf"
    path.write_bytes(MGF)
    spectra, report = read_spectra(path, require_precursor=False, keep_empty=True)
    assert spectra.metadata[0]["title"] == "caféine at 25 °C"
    assert "1 lines not UTF-8, read as Windows-1252 (the first: line 2)" in report.summary()
    assert "\ufffd" not in str(spectra.metadata[0])


def test_random_bytes_are_refused_not_read_as_spectra(tmp_path, capsys):
    rng = np.random.default_rng(0)
    path = tmp_path / "random.msp"
    path.write_bytes(b"\x01" + rng.integers(0, 256, size=200_000, dtype=np.uint8).tobytes())
    with pytest.raises(IOKRDataError, match="NUL byte.*not a text file"):
        read_spectra(path, require_precursor=False, keep_empty=True)
    table = tmp_path / "random.csv"
    table.write_bytes(b"\x03\x11" + rng.integers(0, 256, size=20_000, dtype=np.uint8).tobytes())
    assert main(["metabolites", "index", str(table), "--output", str(tmp_path / "db.sqlite")]) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if "error" in line]
    assert len(errors) == 1 and "is not a text table" in errors[0] and not (tmp_path / "db.sqlite").exists()


def test_a_windows_1252_table_is_indexed_with_its_names_and_a_note(tmp_path, capsys):
    table = tmp_path / "excel.csv"
    table.write_bytes(b"Identifier,Name,SMILES\nC1,caf\xe9ine,CN1C=NC2=C1C(=O)N(C(=O)N2C)C\nC2,\xb5-ethanol,CCO\n")
    db = tmp_path / "db.sqlite"
    assert main(["metabolites", "index", str(table), "--output", str(db)]) == 0
    out = capsys.readouterr().out
    assert "2 lines not UTF-8, read as Windows-1252 (the first: line 2)" in out
    from iokr.apps.metabolites import StructureDatabase  # noqa: PLC0415 - after the CLI built it

    names = {r["name"] for r in StructureDatabase(db).records(np.arange(1, 3))}
    assert names == {"caféine", "µ-ethanol"}


def test_a_table_naming_a_column_twice_is_refused_not_half_read(tmp_path, capsys):
    table = tmp_path / "dup.csv"
    table.write_text("Identifier,SMILES,Name,Name,,\nV1,CCO,first,second,,\n")
    assert main(["metabolites", "index", str(table), "--output", str(tmp_path / "db.sqlite")]) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if "error" in line]
    assert len(errors) == 1 and "names columns more than once: 'Name' (columns 3, 4)" in errors[0]
    table.write_text("Identifier,SMILES,Name,,\nV1,CCO,first,,\n")  # blank trailing header cells are no names
    assert main(["metabolites", "index", str(table), "--output", str(tmp_path / "db2.sqlite")]) == 0

"""Formula injection: text from untrusted files that a spreadsheet would run as a formula is neutralized in every
column of both output tables (a leading ``'``); numbers and other text are written unchanged."""

import csv
import json

import pytest
from metab_helpers import bundled_lists_and_training

from iokr.apps.metabolites.exporting._cells import FORMULA_TRIGGERS, spreadsheet_safe
from iokr.cli.main import main

pytest.importorskip("rdkit")


@pytest.mark.parametrize("value, expected", [
    ("=1+1", "'=1+1"), ("+cmd", "'+cmd"), ("-2+3+cmd|' /C calc'!A0", "'-2+3+cmd|' /C calc'!A0"),
    ("@SUM(A1)", "'@SUM(A1)"), ("\t=1", "'\t=1"), ("\r=1", "'\r=1"), ("-", "-"), ("+", "+"),
    ("-1.5", "-1.5"), ("+2", "+2"), ("-3e-2", "-3e-2"), ("[M-H]-", "[M-H]-"), ("C6H12O6", "C6H12O6"), ("", ""),
    ("a=b", "a=b"), (-1.5, -1.5), (3, 3), (None, None),
])
def test_cell_policy(value, expected):
    assert spreadsheet_safe(value) == expected


def _cells(path):
    with open(path, encoding="utf-8", newline="") as handle:
        return list(csv.reader(handle, delimiter="\t"))


def _runs_as_formula(cell):
    if not cell.startswith(FORMULA_TRIGGERS) or cell in ("-", "+"):
        return False
    try:
        float(cell)
    except ValueError:
        return True
    return False


def test_every_text_column_of_both_tables_is_neutralized(tmp_path):
    rows, queries, train = bundled_lists_and_training(2, 25, skip=2)
    (tmp_path / "train.jsonl").write_text("\n".join(json.dumps(r) for r in train) + "\n")
    model = tmp_path / "model.npz"
    assert main(["metabolites", "train", "--spectra", str(tmp_path / "train.jsonl"), "--output", str(model),
                 "--alphas", "0.3", "--folds", "2"]) == 0
    table = tmp_path / "structures.csv"
    with open(table, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["Identifier", "Name", "InChI", "Note", "=evil", "Shift", "Ion"])
        for i, row in enumerate(r for list_rows in rows for r in list_rows[:20]):
            writer.writerow([f"=id{i}", f"@name{i}", row["id1"], "+HYPERLINK(\"http://x\")", "-2+3+cmd|' /C calc'!A0",
                             "-1.5", "[M-H]-"])
    peaks = ["\n".join(f"{mz} {i}" for mz, i in q["peaks"]) for q in queries]
    (tmp_path / "q.mgf").write_text("".join(
        f"BEGIN IONS\nFEATURE_ID={fid}\nPEPMASS={q['precursor_mz']}\nCHARGE=1+\nADDUCT=[M+H]+\n{p}\nEND IONS\n"
        for fid, q, p in zip(["=cmd|' /C calc'!A0", "@q2"], queries, peaks, strict=True)))
    out = tmp_path / "out"
    assert main(["metabolites", "identify", "--model", str(model), "--spectra", str(tmp_path / "q.mgf"),
                 "--candidates", str(table), "--output", str(out), "--top-k", "3"]) == 0
    for name in ("structure_identifications.tsv", "structure_candidates.tsv"):
        header, *body = _cells(out / name)
        assert body and all(len(r) == len(header) for r in body)
        assert [c for r in [header, *body] for c in r if _runs_as_formula(c)] == []
        assert {"'=evil", "Shift", "Ion", "Note"} <= set(header)
        column = {h: [r[header.index(h)] for r in body] for h in header}
        assert set(column["query_id"]) == {"'=cmd|' /C calc'!A0", "'@q2"}
        assert all(v.startswith("'=id") for v in column["identifier"]), column["identifier"]
        assert all(v.startswith("'@name") for v in column["name"])
        assert set(column["Note"]) == {"'+HYPERLINK(\"http://x\")"}
        assert set(column["'=evil"]) == {"'-2+3+cmd|' /C calc'!A0"}
        assert set(column["Shift"]) == {"-1.5"} and set(column["Ion"]) == {"[M-H]-"}  # numbers, other text: as is
        assert all(float(v) == float(v) for v in column["score"])

"""Candidate tables as other tools write them (``tests/data/candidate_tables``, see its README): columns
recognised, missing values counted apart from unparsable ones, quotes removed, later structure columns used when
an earlier one fails; output names made unique."""

from pathlib import Path

import numpy as np
import pytest

from iokr.apps.metabolites import Fingerprinter
from iokr.apps.metabolites.candidates._database import CANDIDATE_COLUMNS, StructureDatabase, output_names
from iokr.apps.metabolites.candidates._structure_tables import clean_value, read_structure_rows, structure_columns
from iokr.exceptions import IOKRDataError

pytest.importorskip("rdkit")
DATA = Path(__file__).resolve().parents[2] / "data" / "candidate_tables"
FP = Fingerprinter("morgan_counts", n_bits=64)
KEYS = {"metformin": "XZWYZXLIPXDOLR-UHFFFAOYSA-N", "paracetamol": "RZVAJINKPMORJF-UHFFFAOYSA-N",
        "aspirin": "BSYNRYMUTXBXSQ-UHFFFAOYSA-N", "caffeine": "RYYVLZVUVIJVGH-UHFFFAOYSA-N"}


def _index(name):
    db, stats = StructureDatabase.build(DATA / name, "", FP)
    records = db.records(range(1, db.n_structures + 1))
    db.close()
    return records, stats


# file, expected (identifier, name, structure) per indexed row, and the counts
TABLES = [
    ("metfrag_local.psv", [("MF0001", "metformin"), ("MF0002", "paracetamol"), ("MF0003", "aspirin"),
                           ("MF0004", "caffeine")], {"n_rows": 5, "n_missing": 1, "n_unparsable": 0}),
    ("metfrag_candidates.sdf", [("MF0001", "metformin"), ("MF0002", "paracetamol"), ("MF0003", "aspirin")],
     {"n_rows": 3, "n_missing": 0, "n_unparsable": 0}),
    ("sirius_structure_candidates.tsv", [("7_feature_7", n) for n in KEYS], {"n_rows": 4, "n_missing": 0}),
    ("gnps_library_search.tsv", [("CCMSLIB00000000001", "metformin"), ("CCMSLIB00000000002", "paracetamol"),
                                 ("CCMSLIB00000000004", "caffeine")],
     {"n_rows": 4, "n_missing": 1, "n_unparsable": 0, "n_structure_fallbacks": 1}),
    ("mzmine_features.csv", [("1", "metformin"), ("2", ""), ("4", "")], {"n_rows": 4, "n_missing": 1, "n_unparsable": 0}),
]


@pytest.mark.parametrize(("name", "expected", "counts"), TABLES, ids=[t[0] for t in TABLES])
def test_tables_of_other_tools_are_read(name, expected, counts):
    records, stats = _index(name)
    assert [(r["identifier"], r["name"]) for r in records] == expected
    names = {"mzmine_features.csv": ["metformin", "paracetamol", "caffeine"]}.get(name, [n for _, n in expected])
    assert [r["inchikey"] for r in records] == [KEYS[n] for n in names]
    assert {k: stats[k] for k in counts} == counts


def test_sirius_columns_keep_their_values_under_new_names():
    records, _ = _index("sirius_structure_candidates.tsv")
    assert records[0]["rank"] == "1" and records[0]["adduct"] == "[M + H]+"  # the database keeps its own names
    names = output_names(["rank", "adduct", "smiles", "InChI"], CANDIDATE_COLUMNS, ("rank", "adduct", "score"))
    assert names == {"rank": "candidate_rank", "adduct": "candidate_adduct", "smiles": "db_smiles", "InChI": "InChI"}


def test_output_names_prefix_until_unique():
    reserved = ("query_id", "rank", "adduct", "candidate_adduct")
    names = output_names(["adduct", "candidate_candidate_adduct", "smiles", "db_smiles", "Note", "rank"],
                         CANDIDATE_COLUMNS, reserved)
    outputs = list(names.values())
    assert len(set(outputs)) == len(outputs)
    assert not set(outputs) & (set(reserved) | set(CANDIDATE_COLUMNS))
    assert names["adduct"] == "candidate_candidate_candidate_adduct"  # two names on the way were taken
    assert names["candidate_candidate_adduct"] == "candidate_candidate_adduct"  # not clashing: kept
    assert names["smiles"] == "candidate_db_smiles" and names["db_smiles"] == "db_smiles"
    assert names["Note"] == "Note" and names["rank"] == "candidate_rank"


@pytest.mark.parametrize(("value", "cleaned"), [("N/A", ""), ("na", ""), (" nan ", ""), ("NULL", ""), ("", ""),
                                               (None, ""), ('"InChI=1S/CH4/h1H4"', "InChI=1S/CH4/h1H4"),
                                               ("'CCO'", "CCO"), ('"N/A"', ""), ("CCO", "CCO")])
def test_clean_value(value, cleaned):
    assert clean_value(value) == cleaned


def test_mzmine_structure_columns_in_order():
    columns = ["id", "spectral_db_matches:smiles", "x:inchi", "preferred_annotation:smiles", "SMILES",
               "spectral_db_matches:inchi", "compound_db_identity:smiles"]
    assert structure_columns(columns) == ["SMILES", "preferred_annotation:smiles", "compound_db_identity:smiles",
                                          "spectral_db_matches:smiles", "spectral_db_matches:inchi", "x:inchi"]


def test_bad_tables_get_one_line_errors_naming_the_file(tmp_path):
    (tmp_path / "nocol.psv").write_text("Identifier|Mass\nA|1\n")
    (tmp_path / "t.xlsx").write_text("x")
    for name, match in (("nocol.psv", "nocol.psv has no structure column"), ("t.xlsx", "t.xlsx: unsupported"),
                        ("absent.csv", "absent.csv does not exist")):
        with pytest.raises(IOKRDataError, match=match) as err:
            read_structure_rows(tmp_path / name)
        assert "\n" not in str(err.value)


def test_per_query_folder_of_metfrag_files(tmp_path):
    import shutil  # noqa: PLC0415

    from iokr.apps.metabolites.candidates._candidate_sources import open_source  # noqa: PLC0415
    from iokr.apps.metabolites.chemistry._structures import parent_of  # noqa: PLC0415

    folder = tmp_path / "lists"
    folder.mkdir()
    shutil.copy(DATA / "metfrag_candidates.sdf", folder / "q1.sdf")
    shutil.copy(DATA / "metfrag_local.psv", folder / "q2.psv")
    source = open_source(folder, FP, reserved=("query_id", "rank"))
    assert source.per_query and source.counts["n_rows"] == 8 and source.counts["n_missing"] == 1
    assert [r["identifier"] for r in source.records(source.for_query("q1"))] == ["MF0001", "MF0002", "MF0003"]
    assert [r["name"] for r in source.records(source.for_query("q2"))] == list(KEYS)
    assert source.for_query("q3") is None
    # the mass warning against masses computed from each structure's parent
    metformin = parent_of("CN(C)C(=N)N=C(N)N").mass
    ids, lookup, status, note = source.plan("q2", metformin, 5.0)
    assert status == "ok" and lookup == "list q2.psv" and note.startswith("warning: 3 of 4 candidates outside 5 ppm")
    np.testing.assert_allclose(source.masses_of(ids), [parent_of(r["smiles"]).mass for r in source.records(ids)])
    assert source.plan("q3", metformin, 5.0)[2:] == ("no candidates", "no candidate list for query id q3")
    np.testing.assert_array_equal(source.fingerprints(ids, FP), FP.transform([r["smiles"]
                                                                              for r in source.records(ids)])[0])


def test_per_query_lists_refuse_ambiguous_ids_with_one_line_errors(tmp_path):
    from iokr.apps.metabolites.candidates._candidate_sources import open_source  # noqa: PLC0415

    folder = tmp_path / "twice"
    folder.mkdir()
    (folder / "101.csv").write_text("SMILES\nCCO\n")
    (folder / "101.tsv").write_text("SMILES\nCCN\n")
    table = tmp_path / "table.csv"
    table.write_text("query_id,SMILES\n1,CCO\n,CCN\n")
    nocol = tmp_path / "nocol"
    nocol.mkdir()
    (nocol / "7.csv").write_text("Mass\n1.0\n")
    for path, match in ((folder, "101.csv and 101.tsv both name query id '101'"),
                        (table, "table.csv has a row without a query id in column 'query_id'"),
                        (nocol, "Candidate list 7.csv in .*nocol has no structure column")):
        with pytest.raises(IOKRDataError, match=match) as err:
            open_source(path, FP)
        assert "\n" not in str(err.value)


_TABLE = 'Identifier,SMILES,Name\nA,CCO,ethanol\nB,CCC,"propane, gas"\nC,CCN,"two\nlines"\nD,CCCC,butane\n'


@pytest.mark.parametrize("line_end", ["\n", "\r\n", "\r"], ids=["LF", "CRLF", "CR"])
@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
def test_any_line_end_gives_the_same_rows(tmp_path, line_end, gz):
    # Excel's 'CSV (Macintosh)' ends lines with a lone CR; a quoted field keeps its own line break
    import gzip  # noqa: PLC0415

    data = _TABLE.replace("\n", line_end).encode()
    path = tmp_path / ("t.csv.gz" if gz else "t.csv")
    path.write_bytes(gzip.compress(data) if gz else data)
    columns, rows, _ = read_structure_rows(path)
    assert columns == ["Identifier", "SMILES", "Name"]
    got = [(r["Identifier"], r["SMILES"], r["Name"].replace(line_end, "\n")) for r in rows]
    assert got == [("A", "CCO", "ethanol"), ("B", "CCC", "propane, gas"), ("C", "CCN", "two\nlines"),
                   ("D", "CCCC", "butane")]


@pytest.mark.parametrize("line_end", ["\n", "\r"], ids=["LF", "CR"])
def test_an_unclosed_quote_is_a_one_line_error_naming_its_line(tmp_path, line_end):
    path = tmp_path / "q.csv"
    path.write_text('SMILES,Name\nCCO,ethanol\nCCN,"ethylamine\nCCC,propane\nCCCC,butane\n'.replace("\n", line_end),
                    encoding="utf-8", newline="")
    with pytest.raises(IOKRDataError) as err:
        list(read_structure_rows(path)[1])
    message = str(err.value)
    assert "\n" not in message and "q.csv" in message and "line 3" in message and "quote" in message, message


def test_a_quote_closed_on_a_later_line_is_one_multi_line_field(tmp_path):
    path = tmp_path / "q.csv"
    path.write_text('SMILES,Name\nCCO,"ethanol\n(absolute)"\nCCC,propane\n', encoding="utf-8")
    assert [r["Name"] for r in read_structure_rows(path)[1]] == ["ethanol\n(absolute)", "propane"]


@pytest.mark.parametrize("name", ["score|rank", "a\tb", "x;y", "=cmd|' /C calc'!A0"])
def test_a_delimiter_inside_a_quoted_column_name_does_not_choose_the_delimiter(tmp_path, name):
    # a comma CSV whose header quotes a name holding '|', a tab or ';' was split on that character instead
    path = tmp_path / "c.csv"
    for header in ('"' + name + '"', name.replace("\t", " ")):  # quoted, or unquoted as csv.writer leaves '|'
        path.write_text(f'Identifier,{header},SMILES\nA,"1|2",CCO\n', encoding="utf-8")
        columns, rows, _ = read_structure_rows(path)
        assert columns == ["Identifier", header.strip('"'), "SMILES"]
        assert [(r["Identifier"], r[columns[1]], r["SMILES"]) for r in rows] == [("A", "1|2", "CCO")]


def test_a_tab_table_whose_column_names_hold_more_commas_than_tabs_is_split_on_tabs(tmp_path):
    path = tmp_path / "t.txt"
    path.write_text("Id\tNames (IUPAC, CAS, trivial, other)\tSMILES\nA\tethanol, alcohol\tCCO\n", encoding="utf-8")
    columns, rows, _ = read_structure_rows(path)
    assert columns == ["Id", "Names (IUPAC, CAS, trivial, other)", "SMILES"]
    assert [r["SMILES"] for r in rows] == ["CCO"]

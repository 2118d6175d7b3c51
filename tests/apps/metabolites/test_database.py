"""The structure database: lookups by formula and by mass against brute force over the source table, columns
carried, read-only opening, and damaged or foreign files refused."""

import csv
import sqlite3

import numpy as np
import pytest

from iokr.apps.metabolites import Fingerprinter
from iokr.apps.metabolites.candidates import _structure_parsing
from iokr.apps.metabolites.candidates._database import StructureDatabase
from iokr.apps.metabolites.chemistry._formulas import canonical_formula, monoisotopic_mass
from iokr.exceptions import IOKRDataError

pytest.importorskip("rdkit")
SMILES = ["CCO", "OCC", "COC", "CCN", "c1ccccc1O", "Oc1ccccc1", "CC(=O)O", "OC(=O)C", "COC=O", "C[C@H](N)C(=O)O",
          "CC(N)C(=O)O", "NCCC(=O)O", "not a smiles", "", "ClC(Cl)Cl"]
FP = Fingerprinter("morgan_counts+maccs", n_bits=64)


@pytest.fixture
def table(tmp_path):
    path = tmp_path / "db.csv"
    with open(path, "w", newline="", encoding="utf-8-sig") as handle:  # with a byte-order mark
        writer = csv.writer(handle)
        writer.writerow(["Identifier", "CompoundName", "SMILES", "Extra"])
        for i, s in enumerate(SMILES):
            writer.writerow([f"ID{i}", f"name {i}", s, f"e{i}"])
    return path


def test_build_and_lookups_match_brute_force(table, tmp_path):
    from rdkit import Chem  # noqa: PLC0415 - optional chem extra, after importorskip
    from rdkit.Chem.rdMolDescriptors import CalcMolFormula  # noqa: PLC0415 - optional chem extra, after importorskip

    out = tmp_path / "db.sqlite"
    db, stats = StructureDatabase.build(table, out, FP)
    # brute force: first row of each InChIKey skeleton, in file order
    kept, seen = [], set()
    for i, s in enumerate(SMILES):
        mol = Chem.MolFromSmiles(s) if s else None
        if mol is None or not s:
            continue
        key = Chem.MolToInchiKey(mol)[:14]
        if key not in seen:
            seen.add(key)
            kept.append((i, canonical_formula(CalcMolFormula(mol)), mol))
    assert stats["n_structures"] == len(kept) and stats["n_rows"] == len(SMILES)
    # the blank SMILES is missing, not unparsable
    assert stats["n_unparsable"] == 1 and stats["n_missing"] == 1
    assert stats["n_duplicates"] == len(SMILES) - 2 - len(kept)
    for formula in {f for _, f, _ in kept}:
        got = [r["identifier"] for r in db.records(db.by_formula(formula))]
        assert got == [f"ID{i}" for i, f, _ in kept if f == formula]
    mass = monoisotopic_mass("C2H6O")
    got = [r["identifier"] for r in db.records(db.by_mass(mass - 1e-4, mass + 1e-4))]
    assert got == [f"ID{i}" for i, f, _ in kept if abs(monoisotopic_mass(f) - mass) <= 1e-4]
    ids = db.by_formula("C2H6O")
    np.testing.assert_array_equal(db.fingerprints(ids), FP.transform([m for _, f, m in kept if f == "C2H6O"])[0])
    compact = db.fingerprints(ids, compact=True)  # the stored bytes, read as float32 row blocks for scoring
    assert type(compact).__name__ in ("CountFeatures", "PackedBinaryFeatures") and compact.shape == (ids.size, FP.n_features)
    np.testing.assert_array_equal(compact[np.arange(ids.size)], db.fingerprints(ids))
    other = Fingerprinter("maccs")  # other parameters than stored: recomputed from the structures
    np.testing.assert_array_equal(db.fingerprints(ids, other), other.transform([m for _, f, m in kept
                                                                                if f == "C2H6O"])[0])
    record = db.records(ids[:1])[0]
    assert record["CompoundName"] == "name 0" and record["Extra"] == "e0" and len(record["inchikey"]) == 27
    assert record["formula"] == "C2H6O" and record["smiles"] == "CCO"
    db.close()


def test_opened_read_only_and_foreign_files_refused(table, tmp_path):
    out = tmp_path / "db.sqlite"
    StructureDatabase.build(table, out, FP)[0].close()
    before = out.read_bytes()
    db = StructureDatabase(out)
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        db.db.execute("DELETE FROM structures")
    db.close()
    assert out.read_bytes() == before
    with pytest.raises(IOKRDataError, match="does not exist"):
        StructureDatabase(tmp_path / "typo.sqlite")
    assert not (tmp_path / "typo.sqlite").exists()
    foreign = tmp_path / "foreign.sqlite"
    sqlite3.connect(foreign).execute("CREATE TABLE x (a)").connection.commit()
    with pytest.raises(IOKRDataError, match="not an iokr structure database"):
        StructureDatabase(foreign)
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_bytes(b"not a database at all" * 100)
    with pytest.raises(IOKRDataError):
        StructureDatabase(garbage)


def test_tampered_rows_are_refused(table, tmp_path):
    out = tmp_path / "db.sqlite"
    StructureDatabase.build(table, out, FP)[0].close()
    con = sqlite3.connect(out)
    con.execute("PRAGMA writable_schema = 1")
    con.execute("UPDATE structures SET fp = x'00' WHERE id = 1")
    con.commit()
    con.close()
    db = StructureDatabase(out)
    with pytest.raises(IOKRDataError, match="damaged"):
        db.fingerprints(np.array([1]))


def test_tables_without_a_structure_column_name_the_columns(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("Identifier,MolecularFormula,MonoisotopicMass\nA,C2H6O,46.04\n")
    with pytest.raises(IOKRDataError, match="no structure column.*MolecularFormula"):
        StructureDatabase.build(path, ":memory:", FP)
    archive = tmp_path / "x.zip"
    archive.write_bytes(b"PK\x03\x04")
    with pytest.raises(IOKRDataError, match="unsupported format"):
        StructureDatabase.build(archive, ":memory:", FP)


def test_sdf_tables(tmp_path):
    from rdkit import Chem  # noqa: PLC0415 - optional chem extra, after importorskip

    path = tmp_path / "db.sdf"
    writer = Chem.SDWriter(str(path))
    for i, s in enumerate(["CCO", "COC", "c1ccccc1O"]):
        mol = Chem.MolFromSmiles(s)
        mol.SetProp("_Name", f"mol {i}")
        mol.SetProp("Identifier", f"S{i}")
        writer.write(mol)
    writer.close()
    db, _ = StructureDatabase.build(path, ":memory:", FP)
    records = db.records(db.by_formula("C2H6O"))
    assert [r["identifier"] for r in records] == ["S0", "S1"] and records[0]["name"] == "mol 0"


def test_worker_processes_give_the_single_process_database(table, monkeypatch):
    monkeypatch.setattr(_structure_parsing, "CHUNK_ROWS", 4)  # several chunks: the process pool runs
    one, stats_one = StructureDatabase.build(table, ":memory:", FP, n_jobs=1)
    two, stats_two = StructureDatabase.build(table, ":memory:", FP, n_jobs=2)
    assert {k: v for k, v in stats_one.items() if k not in ("seconds", "structures_per_s")} == \
        {k: v for k, v in stats_two.items() if k not in ("seconds", "structures_per_s")}
    ids = np.arange(1, stats_one["n_structures"] + 1)
    assert one.records(ids) == two.records(ids)
    np.testing.assert_array_equal(one.fingerprints(ids), two.fingerprints(ids))


def test_temporary_file_database_equals_the_in_memory_one(table):
    # identify indexes a candidate table into SQLite's private temporary file (""), not into memory.
    memory, stats_memory = StructureDatabase.build(table, ":memory:", FP, n_jobs=1)
    temporary, stats_temporary = StructureDatabase.build(table, "", FP, n_jobs=1)
    assert temporary.path == "(temporary file)" and memory.path == ":memory:"
    assert stats_temporary["n_structures"] == stats_memory["n_structures"] > 0
    ids = np.arange(1, stats_memory["n_structures"] + 1)
    assert temporary.records(ids) == memory.records(ids)
    np.testing.assert_array_equal(temporary.fingerprints(ids), memory.fingerprints(ids))

"""Structure databases and candidate stores that detect damage, refuse files that are not theirs, and tell a lock,
a full disk and damage apart (issue 31): each case once through the file's bytes or SQL, as a user's file gets it."""

import csv
import os
import shutil
import sqlite3
import stat
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from iokr.apps.metabolites import CandidateStore, Fingerprinter
from iokr.apps.metabolites.candidates import _database, _sqlite_files
from iokr.apps.metabolites.candidates._database import StructureDatabase
from iokr.cli.main import main
from iokr.exceptions import IOKRDataError

pytest.importorskip("rdkit")
FP = Fingerprinter("morgan_counts+maccs", n_bits=64)
SMILES = ["CCO", "COC", "c1ccccc1O", "CC(=O)O", "COC=O", "CC(N)C(=O)O", "NCCC(=O)O", "ClC(Cl)Cl"]


@pytest.fixture
def table(tmp_path):
    path = tmp_path / "db.csv"
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["Identifier", "SMILES"])
        writer.writerows([f"ID{i}", s] for i, s in enumerate(SMILES))
    return path


@pytest.fixture
def database(table, tmp_path):
    out = tmp_path / "db.sqlite"
    StructureDatabase.build(table, out, FP, n_jobs=1)[0].close()
    return out


def _row(path, column, where="id = 3"):
    with sqlite3.connect(path) as con:
        return con.execute(f"SELECT {column} FROM structures WHERE {where}").fetchone()[0]


def _flip(path, needle, offset):
    """Flip one bit of the first occurrence of ``needle`` in the file (its table row: written before the indexes)."""
    data = bytearray(path.read_bytes())
    assert data.count(needle) >= 1
    data[data.index(needle) + offset] ^= 0x01
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("column", ["fp", "smiles", "mass", "inchikey", "formula", "columns"])
def test_a_flipped_byte_in_a_database_row_is_named(database, column):
    value = _row(database, column)
    needle = (struct.pack(">d", value) if column == "mass" else value if isinstance(value, bytes)
              else value.encode())
    _flip(database, needle, len(needle) - 1 if column == "mass" else len(needle) // 2)
    db = StructureDatabase(database)
    ids = np.array([1, 2, 3, 4])
    with pytest.raises(IOKRDataError, match=r"db.sqlite is damaged: row 3 \(identifier 'ID2'\) does not match its "
                                            "checksum"):
        db.fingerprints(ids) if column == "fp" else db.records(ids)


@pytest.mark.parametrize("column, value", [("mass", "'94.04186'"), ("mass", "94.0418654"), ("smiles", "'CCO'"),
                                           ("fp", "x'00'"), ("inchikey", "'AAAAAAAAAAAAAA' || substr(inchikey, 15)")])
def test_a_rewritten_database_value_is_named(database, column, value):
    with sqlite3.connect(database) as con:
        con.execute(f"UPDATE structures SET {column} = {value} WHERE id = 3")
    db = StructureDatabase(database)
    ids = db.by_formula(_row(database, "formula"))
    assert 3 in ids
    with pytest.raises(IOKRDataError, match=r"db.sqlite is damaged: row 3 .*checksum; rebuild it"):
        db.records(ids)  # a mass stored as text is named, not "Unknown format code 'f'"
    with pytest.raises(IOKRDataError, match="row 3"):
        db.fingerprints(ids)


def test_rewritten_database_metadata_is_named(database):
    with sqlite3.connect(database) as con:
        con.execute("UPDATE meta SET value = replace(value, '64', '32') WHERE key = 'fingerprint'")
    with pytest.raises(IOKRDataError, match="db.sqlite is damaged: its metadata"):
        StructureDatabase(database)


@pytest.mark.parametrize("column, value", [("key14", "'AAAAAAAAAAAAAA'"), ("fp", "x'00'"), ("formula", "'C2H6O'"),
                                           ("ok", "0")])
def test_a_rewritten_store_value_is_named(tmp_path, column, value):
    path = tmp_path / "store.sqlite"
    store = CandidateStore(path, FP)
    store.add(["c1ccccc1O", "CCO"])
    store.close()
    with sqlite3.connect(path) as con:
        con.execute(f"UPDATE structures SET {column} = {value} WHERE text = 'c1ccccc1O'")
    store = CandidateStore(path, FP)
    with pytest.raises(IOKRDataError, match="store.sqlite is damaged: row 'c1ccccc1O' does not match its checksum"):
        store.keys_for(["CCO", "c1ccccc1O"])


def test_a_flipped_byte_in_a_store_key14_is_named(tmp_path):
    path = tmp_path / "store.sqlite"
    store = CandidateStore(path, FP)
    (key,), _ = store.keys_for(["c1ccccc1O"])
    store.close()
    _flip(path, key.encode(), 5)
    with pytest.raises(IOKRDataError, match="damaged: row 'c1ccccc1O'"):
        CandidateStore(path, FP).fingerprints(["c1ccccc1O"])


def _foreign(tmp_path):
    foreign = tmp_path / "foreign.sqlite"
    with sqlite3.connect(foreign) as con:
        con.execute("CREATE TABLE x (a)")
        con.execute("INSERT INTO x VALUES (1)")
    empty_db = tmp_path / "no_tables.sqlite"
    sqlite3.connect(empty_db).execute("PRAGMA user_version = 1").connection.close()  # an SQLite file, no table
    empty = tmp_path / "empty.sqlite"
    empty.touch()
    text = tmp_path / "text.sqlite"
    text.write_text("not a database\n" * 100)
    with sqlite3.connect(tmp_path / "meta_only.sqlite") as con:  # foreign 'meta' tables
        con.execute("CREATE TABLE meta (key, value)")
    with sqlite3.connect(tmp_path / "meta_other.sqlite") as con:
        con.execute("CREATE TABLE meta (a, b)")
    return {"foreign": (foreign, "another application|not an iokr"), "no tables": (empty_db, "another|not an iokr"),
            "empty": (empty, "empty file"), "text": (text, "not an SQLite file"),
            "meta only": (tmp_path / "meta_only.sqlite", "another|not an iokr"),
            "meta other": (tmp_path / "meta_other.sqlite", "another|not an iokr")}


@pytest.mark.parametrize("opener", ["store", "database"])
def test_foreign_and_empty_files_are_refused_unchanged(tmp_path, opener):
    for name, (path, message) in _foreign(tmp_path).items():
        before = path.read_bytes()
        with pytest.raises(IOKRDataError, match=message):
            CandidateStore(path, FP) if opener == "store" else StructureDatabase(path)
        assert path.read_bytes() == before, name
        assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(path.name)) == [path.name], name


@pytest.mark.parametrize("opener", ["store", "database"])
def test_devices_fifos_and_folders_are_refused_before_opening(tmp_path, opener):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    journal_existed = os.path.exists("/dev/null-journal")
    for path in ("/dev/null", fifo, tmp_path):
        with pytest.raises(IOKRDataError, match="not a regular file"):
            CandidateStore(path, FP) if opener == "store" else StructureDatabase(path)
    assert os.path.exists("/dev/null-journal") == journal_existed
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fifo"]


def _null_device(tmp_path):
    """A character device like /dev/null inside ``tmp_path`` (root only), else /dev/null itself."""
    if os.geteuid() == 0:
        node = tmp_path / "null"
        os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        return node
    return Path("/dev/null")


def test_store_cli_refuses_a_device_without_a_journal(tmp_path, capsys):
    device = _null_device(tmp_path)
    journal = Path(f"{device}-journal")
    journal_existed = journal.exists()  # /dev/null-journal may be left by an older iokr run as root
    spectra = tmp_path / "train.mgf"
    spectra.write_text("BEGIN IONS\nPEPMASS=100.0\n50.0 1.0\nEND IONS\n")
    code = main(["metabolites", "train", "--spectra", str(spectra), "--store", str(device), "--output",
                 str(tmp_path / "model.npz")])
    assert code == 2
    assert f"Candidate store {device} is not a regular file" in capsys.readouterr().err
    assert journal.exists() == journal_existed and device.exists()
    assert not (tmp_path / "model.npz").exists()


_HOLD_LOCK = textwrap.dedent("""
    import sqlite3, sys
    con = sqlite3.connect(sys.argv[1], isolation_level=None)
    con.execute("BEGIN EXCLUSIVE")
    print("locked", flush=True)
    sys.stdin.read()
""")


@pytest.fixture
def lock_holder(monkeypatch):
    monkeypatch.setattr(_sqlite_files, "BUSY_TIMEOUT_S", 0.05)
    holders = []

    def hold(path):
        process = subprocess.Popen([sys.executable, "-c", _HOLD_LOCK, str(path)], stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE, text=True)
        assert process.stdout.readline().strip() == "locked"
        holders.append(process)
        return process

    yield hold
    for process in holders:
        process.stdin.close()
        process.wait(timeout=10)


def test_a_database_locked_by_another_process_is_said_in_use(database, lock_holder):
    before = database.read_bytes()
    lock_holder(database)
    with pytest.raises(IOKRDataError, match="db.sqlite is in use by another process") as error:
        StructureDatabase(database)
    assert "not an iokr" not in str(error.value) and "damaged" not in str(error.value)
    assert database.read_bytes() == before


def test_a_store_locked_mid_run_is_said_in_use(tmp_path, lock_holder):
    path = tmp_path / "store.sqlite"
    store = CandidateStore(path, FP)
    store.add(["CCO"])
    lock_holder(path)
    with pytest.raises(IOKRDataError, match="store.sqlite is in use by another process") as error:
        store.add(["c1ccccc1O"])
    assert "damaged" not in str(error.value) and "delete" not in str(error.value)


def _small_disk(monkeypatch, pages):
    """Connections that may grow a database file to ``pages`` pages only: SQLite's own 'database or disk is full'."""
    def connect(path):
        connection = sqlite3.connect(path)
        connection.execute(f"PRAGMA max_page_count = {pages}")
        return connection
    monkeypatch.setattr(_database, "_connect_for_writing", connect)


def test_a_full_disk_while_indexing_is_named_and_leaves_nothing(table, tmp_path, monkeypatch, capsys):
    _small_disk(monkeypatch, 3)
    out = tmp_path / "out" / "db.sqlite"
    assert main(["metabolites", "index", str(table), "--output", str(out)]) == 2  # a user error, not internal (1)
    err = capsys.readouterr().err
    assert f"No space left on device while writing structure database {out}" in err and "internal" not in err
    left = sorted(p.name for p in (tmp_path / "out").rglob("*")) if (tmp_path / "out").exists() else []
    assert left == []  # no temporary file, no journal


def test_a_full_disk_on_a_store_is_named_and_keeps_the_store(tmp_path):
    path = tmp_path / "store.sqlite"
    store = CandidateStore(path, FP)
    store.add(["CCO"])
    pages = store.db.execute("PRAGMA page_count").fetchone()[0]
    store.db.execute(f"PRAGMA max_page_count = {pages}")
    before = path.read_bytes()
    many = [f"C{'C' * i}O" for i in range(1, 200)]
    with pytest.raises(IOKRDataError, match="No space left on device while writing candidate store .*store.sqlite")\
            as error:
        store.add(many)
    assert "damaged" not in str(error.value)
    assert path.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["store.sqlite"]
    assert store.keys_for(["CCO"])[1].all()  # the store still serves what it held


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("mount") is None, reason="mounting a small tmpfs needs root")
def test_a_really_full_disk_while_indexing(table, tmp_path, capsys):
    disk = tmp_path / "disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", str(disk)]).returncode:
        pytest.skip("mount is not permitted here")
    try:
        with open(table, "a", encoding="utf-8") as handle:  # enough rows to fill 16 KiB
            handle.writelines(f"X{i},{'C' * (i % 40 + 1)}O\n" for i in range(400))
        assert main(["metabolites", "index", str(table), "--output", str(disk / "db.sqlite")]) == 2
        assert "No space left on device while writing structure database" in capsys.readouterr().err
        assert list(disk.iterdir()) == []
    finally:
        subprocess.run(["umount", str(disk)], check=True)


@pytest.mark.parametrize("opener", ["store", "database"])
def test_text_that_is_not_utf8_in_the_schema_is_damage_not_a_crash(tmp_path, database, opener):
    path = database
    if opener == "store":
        path = tmp_path / "store.sqlite"
        CandidateStore(path, FP).close()
    data = bytearray(path.read_bytes())
    data[data.index(b"CREATE TABLE structures") + 13] = 0xFF  # SQLite's own schema text, in page 1
    path.write_bytes(bytes(data))
    with pytest.raises(IOKRDataError, match=f"{path.name} is damaged"):
        CandidateStore(path, FP) if opener == "store" else StructureDatabase(path)


def test_an_index_entry_pointing_at_another_row_is_named(database):
    with sqlite3.connect(database) as con:
        root = con.execute("SELECT rootpage FROM sqlite_master WHERE name = 'by_formula'").fetchone()[0]
        page_size = con.execute("PRAGMA page_size").fetchone()[0]
        phenol = con.execute("SELECT id FROM structures WHERE formula = 'C6H6O'").fetchone()[0]
        ethanol = con.execute("SELECT id FROM structures WHERE formula = 'C2H6O' ORDER BY id").fetchone()[0]
    data = bytearray(database.read_bytes())
    page = slice((root - 1) * page_size, root * page_size)
    entry = data[page].index(b"C6H6O" + bytes([phenol]))  # an index record: the formula, then the row id
    data[(root - 1) * page_size + entry + 5] = ethanol  # the entry now names ethanol's row
    database.write_bytes(bytes(data))
    db = StructureDatabase(database)
    with pytest.raises(IOKRDataError, match=f"db.sqlite is damaged: its index on formula lists row {ethanol}, whose"):
        db.by_formula("C6H6O")


def test_a_store_index_entry_pointing_at_another_row_is_named(tmp_path):
    path = tmp_path / "store.sqlite"
    store = CandidateStore(path, FP)
    store.add(["CCO", "c1ccccc1O"])
    store.close()
    with sqlite3.connect(path) as con:
        root = con.execute("SELECT rootpage FROM sqlite_master WHERE name = 'by_formula'").fetchone()[0]
        page_size = con.execute("PRAGMA page_size").fetchone()[0]
        rowids = dict(con.execute("SELECT text, rowid FROM structures"))
    data = bytearray(path.read_bytes())
    start = (root - 1) * page_size
    entry = data[start:start + page_size].index(b"C6H6O" + bytes([rowids["c1ccccc1O"]]))
    data[start + entry + 5] = rowids["CCO"]
    path.write_bytes(bytes(data))
    # SQLite reads the formula from the index entry: the row read back fails its checksum (else the formula check)
    with pytest.raises(IOKRDataError, match="store.sqlite is damaged: (row 'CCO'|its formula index lists 'CCO')"):
        CandidateStore(path, FP).by_formula("C6H6O")

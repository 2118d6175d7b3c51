"""The lookup check of structure databases (:class:`TableValues`) against the SQL it replaced: for any listed rows
and window, the first row whose table value does not fit is the one a brute-force count per lookup finds."""

import sqlite3

import numpy as np
import pytest

from iokr.apps.metabolites.candidates._lookup_check import TableValues


@pytest.fixture()
def table():
    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE structures (id INTEGER PRIMARY KEY, formula TEXT, mass)")
    rng = np.random.default_rng(0)
    rows = [(i, f"C{i % 7}H{i % 5}", float(rng.uniform(100, 110))) for i in range(1, 300)]
    rows[17] = (18, "C4H3", 104)  # an integer mass: not a real number, never fits a mass lookup
    con.executemany("INSERT INTO structures VALUES (?, ?, ?)", rows)
    yield con
    con.close()


def _brute_stray(con, ids, condition, args):
    for i in ids.tolist():
        (fits,), = con.execute(f"SELECT count(*) FROM structures WHERE id = ? AND {condition}", (i, *args))
        if not fits:
            return i
    return None


def test_strays_match_a_count_per_row(table):
    values = TableValues(lambda sql, args: table.execute(sql, args).fetchall())
    rng = np.random.default_rng(1)
    seen_stray = 0
    for _ in range(60):  # repeated lookups reuse the rows read before
        low = rng.uniform(99, 109)
        high = low + rng.uniform(0, 3)
        fitting = np.array([i for i, in table.execute("SELECT id FROM structures WHERE typeof(mass) = 'real' AND "
                                                      "mass BETWEEN ? AND ? ORDER BY id", (low, high))], dtype=np.int64)
        ids = fitting.copy()
        if rng.random() < 0.5:  # a damaged index: a listed row that does not fit, or that does not exist
            ids = np.sort(np.append(ids, rng.choice([18, 400, int(rng.integers(1, 300))])))
        expected = _brute_stray(table, ids, "typeof(mass) = 'real' AND mass BETWEEN ? AND ?", (low, high))
        assert values.stray_by_mass(ids, low, high) == expected
        formula = f"C{int(rng.integers(0, 7))}H{int(rng.integers(0, 5))}"
        ids = np.array([i for i, in table.execute("SELECT id FROM structures WHERE formula = ?", (formula,))] +
                       ([int(rng.integers(1, 320))] if rng.random() < 0.5 else []), dtype=np.int64)
        expected_formula = _brute_stray(table, ids, "formula = ?", (formula,))
        assert values.stray_by_formula(ids, formula) == expected_formula
        seen_stray += (expected is not None) + (expected_formula is not None)
    assert seen_stray > 10  # the damaged lists were caught, not only the clean ones passed


def test_no_rows_and_negative_ids(table):
    values = TableValues(lambda sql, args: table.execute(sql, args).fetchall())
    assert values.stray_by_mass(np.zeros(0, dtype=np.int64), 100, 110) is None
    assert values.stray_by_formula(np.array([3, -2], dtype=np.int64), "C3H3") == -2


def test_memory_follows_the_rows_read_not_the_largest_row_id():
    # a shard of a large store holds a few rows of high ids (positions in the store's input): the rows read are kept,
    # not an array up to the largest id (2**40 entries here)
    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE structures (id INTEGER PRIMARY KEY, formula TEXT, mass)")
    base = 1 << 40
    con.executemany("INSERT INTO structures VALUES (?, ?, ?)",
                    [(base + 7 * i, "C2H6O" if i % 3 else "C3H8", 46.0 + i / 1000) for i in range(2000)])
    values = TableValues(lambda sql, args: con.execute(sql, args).fetchall())
    listed = np.array([base + 7 * i for i in range(0, 2000, 3)], dtype=np.int64)
    assert values.stray_by_formula(listed, "C3H8") is None
    assert values.stray_by_formula(np.append(listed, base + 7), "C3H8") == base + 7
    assert values.stray_by_formula(np.array([base + 7 * 5000], dtype=np.int64), "C3H8") == base + 7 * 5000  # no row
    assert values.stray_by_mass(listed[:5], 46.0, 46.013) is None
    assert values.stray_by_mass(listed[:6], 46.0, 46.013) == base + 15 * 7
    assert values._ids.size == listed.size + 2  # noqa: SLF001 - the rows read, once each (one listed, not stored)
    con.close()


def test_positions_by_binary_search_and_by_row_id_agree_as_the_rows_read_grow():
    # rows spread over a wide id range: read a few at a time, the rows read are found by binary search; once a
    # sixteenth of the range is read, through positions by row id; every lookup is checked against the table
    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE structures (id INTEGER PRIMARY KEY, formula TEXT, mass)")
    rng = np.random.default_rng(2)
    ids = np.sort(rng.choice(60_000, 6000, replace=False)) + 1
    con.executemany("INSERT INTO structures VALUES (?, ?, ?)",
                    [(int(i), f"C{i % 3}", 100.0 + float(i % 11)) for i in ids])
    values = TableValues(lambda sql, args: con.execute(sql, args).fetchall())
    states = set()
    for start in range(0, ids.size, 150):
        listed = np.sort(np.concatenate([ids[start:start + 150], rng.choice(ids[:start + 1], 20)]))
        listed = np.unique(np.append(listed, [int(rng.integers(1, 70_000))]))  # sometimes no row, or beyond the rest
        expected = _brute_stray(con, listed, "typeof(mass) = 'real' AND mass BETWEEN ? AND ?", (102.0, 110.0))
        assert values.stray_by_mass(listed, 102.0, 110.0) == expected
        assert values.stray_by_formula(listed, "C1") == _brute_stray(con, listed, "formula = ?", ("C1",))
        states.add(values._index is None)  # noqa: SLF001
    assert states == {True, False}  # both ways of finding the rows were used
    con.close()

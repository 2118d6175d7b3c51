"""Candidate sources: a database source answers a repeated formula from its last lookups with exactly the ids a fresh
lookup gives (brute force: the database asked every time), within its bound of ids kept."""

import csv

import numpy as np
import pytest

from iokr.apps.metabolites import Fingerprinter, build_store
from iokr.apps.metabolites.candidates import _candidate_sources
from iokr.apps.metabolites.candidates._candidate_sources import DatabaseSource

pytest.importorskip("rdkit")


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    folder = tmp_path_factory.mktemp("source")
    table = folder / "structures.csv"
    with open(table, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["Identifier", "SMILES"])
        for n in range(2, 9):  # isomers: several structures per formula
            for i, smiles in enumerate(("C" * n + "O", "C" * (n - 1) + "OC", "CC(C)" + "C" * (n - 3) + "O")):
                writer.writerow([f"S{n}-{i}", smiles])
    db, _ = build_store(table, folder / "store", Fingerprinter("morgan_counts+maccs", n_bits=64), n_jobs=1)
    yield db
    db.close()


@pytest.mark.parametrize("limit", [1 << 20, 5, 1])
def test_repeated_formulas_give_the_ids_of_a_fresh_lookup(store, monkeypatch, limit):
    monkeypatch.setattr(_candidate_sources, "FORMULA_CACHE_IDS", limit)
    asked = []
    lookup = store.by_formula
    monkeypatch.setattr(store, "by_formula", lambda f: asked.append(f) or lookup(f), raising=False)
    source = DatabaseSource(store)
    formulas = [f"C{n}H{2 * n + 2}O" for n in range(2, 9)] + ["C99H2"]
    rng = np.random.default_rng(0)
    sequence = [formulas[i] for i in rng.integers(0, len(formulas), 60)]
    for formula in sequence:
        ids = source.select(formula, None, None)
        np.testing.assert_array_equal(ids, lookup(formula))
        assert not ids.flags.writeable  # shared between queries: nobody writes into it
    # a limit of 1 id keeps the last formula only
    runs = 1 + sum(a != b for a, b in zip(sequence, sequence[1:], strict=False))
    if limit == 5:  # some formulas kept, others dropped
        assert len(set(sequence)) < len(asked) < runs
    else:
        assert len(asked) == (runs if limit == 1 else len(set(sequence)))
    assert source._cached_ids <= max(limit, max(lookup(f).size for f in formulas))  # noqa: SLF001
    assert sum(v.size for v in source._by_formula.values()) == source._cached_ids  # noqa: SLF001


def test_mass_windows_are_looked_up_each_time(store):
    source = DatabaseSource(store)
    np.testing.assert_array_equal(source.select("", 40.0, 80.0), store.by_mass(40.0, 80.0))
    assert source._cached_ids == 0  # noqa: SLF001

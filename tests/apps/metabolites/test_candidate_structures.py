"""Candidates as indexed: parent structures of salts and mixtures, isotope labels, permanent charges (against
formulas and masses computed by hand from element and isotope masses), and the ``[M]+`` query that must find
choline within 5 ppm."""

import csv

import numpy as np
import pytest

from iokr.apps.metabolites import Fingerprinter, Spectra
from iokr.apps.metabolites.candidates._candidate_sources import DatabaseSource
from iokr.apps.metabolites.candidates._candidate_store import CandidateStore
from iokr.apps.metabolites.candidates._database import StructureDatabase
from iokr.apps.metabolites.chemistry._adducts import parse_adduct
from iokr.apps.metabolites.chemistry._formulas import ELEMENT_MASSES, FormulaError
from iokr.apps.metabolites.chemistry._structures import formula_mass, may_need_parent, parent_of
from iokr.apps.metabolites.ranking._identify import IdentifySettings, plan_queries

pytest.importorskip("rdkit")
FP = Fingerprinter("morgan_counts+maccs", n_bits=64)
H, C, N, O = (ELEMENT_MASSES[e] for e in "HCNO")  # noqa: E741 - element symbols
D, C13 = 2.01410177812, 13.0033548351  # isotope masses (AME 2016)

# (input text, parent SMILES, formula, neutral-equivalent mass by hand, reduced, neutralized, labelled, charge)
CASES = [
    ("CCN.Cl.Cl", "CCN", "C2H7N", 2 * C + 7 * H + N, True, False, False, 0),
    ("CCO.O", "CCO", "C2H6O", 2 * C + 6 * H + O, True, False, False, 0),
    ("[Na+].[O-]C(=O)c1ccccc1", "O=C(O)c1ccccc1", "C7H6O2", 7 * C + 6 * H + 2 * O, True, True, False, 0),
    ("CC[NH3+]", "CCN", "C2H7N", 2 * C + 7 * H + N, False, True, False, 0),
    ("C[N+](C)(C)CCO.[Cl-]", "C[N+](C)(C)CCO", "C5H14NO+", 5 * C + 14 * H + N + O, True, False, False, 1),
    ("C[N+](C)(C)CCO", "C[N+](C)(C)CCO", "C5H14NO+", 5 * C + 14 * H + N + O, False, False, False, 1),
    ("[2H]C([2H])([2H])N(C)C(=N)N=C(N)N", "[2H]C([2H])([2H])N(C)C(=N)N=C(N)N", "C4H8D3N5",
     4 * C + 8 * H + 3 * D + 5 * N, False, False, True, 0),
    ("[13CH3]C(=O)O", "[13CH3]C(=O)O", "C[13C]H4O2", C + C13 + 4 * H + 2 * O, False, False, True, 0),
    ("CN(C)C(=N)N=C(N)N", "CN(C)C(=N)N=C(N)N", "C4H11N5", 4 * C + 11 * H + 5 * N, False, False, False, 0),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_parent_formula_mass_and_flags(case):
    from rdkit import Chem  # noqa: PLC0415 - optional chem extra, after importorskip

    text, smiles, formula, mass, reduced, neutralized, labelled, charge = case
    parent = parent_of(text)
    assert Chem.MolToSmiles(parent.mol) == Chem.MolToSmiles(Chem.MolFromSmiles(smiles))
    assert parent.key == Chem.MolToInchiKey(Chem.MolFromSmiles(smiles))
    assert parent.formula == formula and parent.mass == pytest.approx(mass, abs=2e-6)
    assert (parent.reduced, parent.neutralized, parent.labelled, parent.charge) == (reduced, neutralized, labelled,
                                                                                    charge)
    # a text that needs a parent is always flagged by the cheap test (the fingerprint cache relies on it)
    assert may_need_parent(text) or (parent.smiles == text and not labelled and not charge)
    # the InChI of the same structure gives the same parent
    inchi = Chem.MolToInchi(Chem.MolFromSmiles(text))
    assert parent_of(inchi).key == parent.key and parent_of(inchi).formula == formula
    assert may_need_parent(inchi) == may_need_parent(text) or not may_need_parent(text)


def test_formula_mass_refuses_what_is_no_formula():
    for bad in ("C2H6Xq", "[13C", "C2[999C]", ""):
        with pytest.raises(FormulaError):
            formula_mass(bad)


def _table(path, rows, header=("Identifier", "SMILES")):
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path


@pytest.fixture
def labdb(tmp_path):
    rows = [(f"ID{i}", case[0]) for i, case in enumerate(CASES)]
    rows += [("NA1", "N/A"), ("NA2", "nan"), ("NA3", ""), ("BAD", "C1CC(")]
    db, stats = StructureDatabase.build(_table(tmp_path / "lab.csv", rows), tmp_path / "lab.sqlite", FP)
    yield db, stats
    db.close()


def test_index_counts_parents_labels_charges_and_missing_rows(labdb):
    db, stats = labdb
    # CCN.Cl.Cl and CC[NH3+] share their parent (the second is a duplicate); so do both cholines
    assert stats["n_rows"] == len(CASES) + 4 and stats["n_missing"] == 3 and stats["n_unparsable"] == 1
    assert stats["n_duplicates"] == 2 and stats["n_structures"] == len(CASES) - 2
    # counted over the parsed rows, duplicates included
    assert stats["n_parents"] == 4  # CCN.Cl.Cl, CCO.O, the benzoate, choline chloride
    assert stats["n_neutralized"] == 1  # CC[NH3+]
    assert stats["n_labelled"] == 2 and stats["n_charged"] == 2  # both cholines
    record = db.records(db.by_formula("C2H7N"))[0]
    assert record["identifier"] == "ID0" and record["smiles"] == "CCN" and record["SMILES"] == "CCN.Cl.Cl"
    assert record["monoisotopic_mass"] == f"{2 * C + 7 * H + N:.5f}"


def test_labelled_candidates_never_match_unlabelled_queries(labdb):
    db, _ = labdb
    metformin = 4 * C + 11 * H + 5 * N
    ids = db.by_formula("C4H11N5")
    assert [r["identifier"] for r in db.records(ids)] == ["ID8"]
    window = metformin * 5e-6
    assert [r["identifier"] for r in db.records(db.by_mass(metformin - window, metformin + window))] == ["ID8"]
    d3 = db.by_formula("C4H8D3N5")
    assert [r["identifier"] for r in db.records(d3)] == ["ID6"]


def test_choline_m_plus_query_finds_choline_at_5_ppm(labdb):
    db, _ = labdb
    neutral = parse_adduct("[M]+").neutral_mass(104.10700)
    choline = 5 * C + 14 * H + N + O
    assert abs(neutral - choline) / choline < 1e-6  # the query side's [M]+ mass is the stored one within 1 ppm
    peaks = [np.array([[58.0651, 1.0], [60.0808, 0.5]])]
    spectra = Spectra.from_peak_lists(peaks * 2, np.array([104.10700, 104.10700]),
                                      [{"feature_id": "1", "adduct": "[M]+"}, {"feature_id": "2", "adduct": "[M+H]+"}])
    queries = plan_queries(spectra, np.array([2, 2]), {"[M]+", "[M+H]+"}, DatabaseSource(db),
                           IdentifySettings(ppm=5))
    assert queries[0].status == "ok"
    # choline chloride, indexed as choline (the first of the two rows of choline)
    assert [r["identifier"] for r in db.records(queries[0].candidates)] == ["ID4"]
    assert queries[1].status == "no candidates"  # as [M+H]+ it would be 103.0997: nothing there


def test_store_keys_formulas_and_fingerprints_are_the_parents(tmp_path):
    store = CandidateStore("", FP)
    texts = ["CCN.Cl.Cl", "CCN", "[2H]C([2H])([2H])N(C)C(=N)N=C(N)N", "C[N+](C)(C)CCO.[Cl-]"]
    keys, ok = store.keys_for(texts)
    assert ok.all() and keys[0] == keys[1]
    assert store.formulas_for(texts) == ["C2H7N", "C2H7N", "C4H8D3N5", "C5H14NO+"]
    F = store.fingerprints(texts)
    np.testing.assert_array_equal(F[0], F[1])
    np.testing.assert_array_equal(F[3], FP.transform(["C[N+](C)(C)CCO"])[0][0])


def test_a_store_of_an_older_iokr_is_refused(tmp_path):
    import sqlite3  # noqa: PLC0415

    path = tmp_path / "old.sqlite"
    store = CandidateStore(path, FP)
    store.add(["CCO"])
    store.close()
    with sqlite3.connect(path) as db:
        db.execute("DELETE FROM meta WHERE key = 'structures'")
    with pytest.raises(Exception, match="older iokr .* delete it"):
        CandidateStore(path, FP)

"""The index's per-row parsing, computed step by step over a chunk and encoded from RDKit's sparse fingerprints
(:func:`~iokr.apps.metabolites.candidates._structure_parsing.parse_texts`), against the row-by-row reference it replaced
(parent structure per text, dense fingerprint, :func:`encode_compact`), on real structures: MOSES SMILES (the
bundled decoy table), PubChem InChIs of the bundled candidate lists (salts, charges, isotopes, stereo), hand-made
salts, ions and labelled structures, unparsable and missing rows and rows whose first structure text fails; and a
store built both ways, byte for byte."""

import gzip
import itertools
import tarfile

import numpy as np
import pytest

from iokr.apps.metabolites import Fingerprinter, build_store
from iokr.apps.metabolites.candidates import _shard_build
from iokr.apps.metabolites.candidates._store_format import BITMAP, SPARSE, encode_compact, encode_rows, stored_values
from iokr.apps.metabolites.candidates._structure_parsing import MISSING, parse_texts
from iokr.apps.metabolites.chemistry._fingerprints import (
    inchikey,
    inchikey_of_inchi,
    molecular_formula,
    parse_structure,
)
from iokr.apps.metabolites.chemistry._formulas import FormulaError, canonical_formula
from iokr.apps.metabolites.chemistry._structures import (
    Parent,
    formula_mass,
    isotope_formula,
    may_need_parent,
    parent_molecule,
)
from iokr.datasets import BUNDLED_METABOLITES

pytest.importorskip("rdkit")

HAND_MADE = ["CCN.Cl.Cl", "CCO.O", "[Na+].[O-]C(=O)c1ccccc1", "CC[NH3+]", "C[N+](C)(C)CCO.[Cl-]", "C[N+](C)(C)CCO",
             "[2H]C([2H])([2H])N(C)C(=N)N=C(N)N", "[13CH3]C(=O)O", "C[C@H](N)C(=O)O", "F/C=C/F", "[Fe+2]",
             "[U]", "C" * 60, "not a smiles", "C1CC(", "InChI=1S/garbage", "[H+]", "O.O", "[Na+].[Cl-]",
             # paclitaxel and angiotensin II: more than 138 nonzero columns of the default fingerprint (the bitmap)
             "CC1=C2[C@@]([C@]([C@H]([C@@H]3[C@]4([C@H](OC4)C[C@@H]([C@]3(C(=O)[C@@H]2OC(=O)C)C)O)OC(=O)C)OC(=O)"
             "c5ccccc5)(C[C@@H]1OC(=O)[C@H](O)[C@@H](NC(=O)c6ccccc6)c7ccccc7)O)(C)C",
             "CC[C@H](C)[C@H](NC(=O)[C@H](Cc1ccc(O)cc1)NC(=O)[C@H](CCCNC(N)=N)NC(=O)[C@@H](N)CC(=O)O)C(=O)N[C@@H]"
             "(Cc1c[nH]cn1)C(=O)N1CCC[C@H]1C(=O)N[C@@H](Cc1ccccc1)C(=O)O"]


def _moses(n):
    """The first ``n`` MOSES SMILES of the bundled decoy table (MIT; see the bundle's README)."""
    path = BUNDLED_METABOLITES["spectra"].parent / "decoys_moses.tsv.gz"
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        next(handle)
        return [line.split("\t", 1)[0] for line in itertools.islice(handle, n)]


def _pubchem(n_plain, n_parent):
    """InChIs of the bundled PubChem candidate lists: ``n_parent`` that may need a parent (salts, charges,
    isotopes), ``n_plain`` others."""
    plain, parent = [], []
    with tarfile.open(BUNDLED_METABOLITES["candidates"]) as tar:
        for member in tar:
            if not member.name.endswith(".csv"):
                continue
            for line in tar.extractfile(member).read().decode("utf-8").splitlines()[1:]:
                inchi = line.rsplit(",", 1)[0].strip('"')
                (parent if may_need_parent(inchi) else plain).append(inchi)
            if len(plain) >= n_plain and len(parent) >= n_parent:
                break
    return plain[:n_plain] + parent[:n_parent]


def _rows():
    """Rows of structure texts: one text each, none, and several (the first unparsable, a later one read)."""
    singles = _moses(400) + _pubchem(150, 250) + HAND_MADE
    return ([(text,) for text in singles] + [(), ("InChI=1S/garbage", "CCO"), ("C1CC(", "not a smiles", "CCN.Cl"),
                                             ("C1CC(", "not a smiles"), ("", "CCC")])


def _reference_parent(text):
    """The parent of one text as it was computed before the chunk-wise path: every step on this text alone, the
    formula and mass computed afresh."""
    mol = parse_structure(text) if isinstance(text, str) else None
    if mol is None:
        return None
    text = text.strip()
    from rdkit import Chem  # noqa: PLC0415 - optional chem extra, after importorskip

    plain = not may_need_parent(text)
    parent, reduced, neutralized = (mol, False, False) if plain else parent_molecule(mol)
    changed = reduced or neutralized
    key = inchikey_of_inchi(text) if text.startswith("InChI=") and not changed else None
    key = key or inchikey(parent)
    if key is None:
        return None
    try:
        formula = canonical_formula(molecular_formula(parent)) if plain else isotope_formula(parent)
        mass = formula_mass(formula)
    except FormulaError:
        return None
    smiles = text if not changed and not text.startswith("InChI=") else Chem.MolToSmiles(parent)
    labelled = not plain and any(atom.GetIsotope() for atom in parent.GetAtoms())
    return Parent(mol=parent, key=key, smiles=smiles, formula=formula, mass=mass, reduced=reduced,
                  neutralized=neutralized, labelled=labelled, charge=0 if plain else Chem.GetFormalCharge(parent))


def _reference_encode(values, binary):
    """One row of stored values in the smaller layout, written byte by byte (the format's definition)."""
    columns = [c for c, v in enumerate(values) if v]
    counts = b"" if binary else bytes(int(values[c]) for c in columns)
    width = (len(values) + 7) // 8
    if 2 * len(columns) < width:
        return bytes([SPARSE]) + b"".join(c.to_bytes(2, "little") for c in columns) + counts
    pattern = bytearray(width)
    for c in columns:
        pattern[c // 8] |= 0x80 >> (c % 8)
    return bytes([BITMAP]) + bytes(pattern) + counts


def _reference_parse_texts(texts, fingerprint):
    """Row by row: the first text with a parent, its dense fingerprint encoded by :func:`_reference_encode`."""
    fingerprinter = Fingerprinter(**fingerprint)
    out = []
    for row in texts:
        if not row:
            out.append(MISSING)
            continue
        found = next(((i, p) for i, p in ((i, _reference_parent(t)) for i, t in enumerate(row)) if p is not None),
                     None)
        if found is None:
            out.append(None)
            continue
        position, parent = found
        fp, _ = fingerprinter.transform([parent.mol])
        flags = (parent.reduced, parent.neutralized and not parent.reduced, parent.labelled, parent.charge != 0,
                 position > 0)
        blob = _reference_encode(stored_values(fp[0], fingerprinter.binary), fingerprinter.binary)
        out.append((parent.key, parent.smiles, parent.formula, parent.mass, blob, flags))
    return out


KINDS = [{"kind": "morgan_counts+maccs", "n_bits": 2048, "radius": 2},  # the default
         {"kind": "morgan_bits+maccs", "n_bits": 2048, "radius": 2},
         {"kind": "maccs", "n_bits": 2048, "radius": 2},  # binary, 167 columns: the bitmap layout
         {"kind": "atompair_counts+fcfp_bits+torsion_counts", "n_bits": 8, "radius": 3},  # counts above 255
         {"kind": "rdkit_counts+atompair_bits", "n_bits": 64, "radius": 2}]


@pytest.fixture(scope="module")
def rows():
    return _rows()


@pytest.mark.parametrize("fingerprint", KINDS, ids=[k["kind"] for k in KINDS])
def test_parse_texts_equals_the_row_by_row_dense_reference(rows, fingerprint):
    got = parse_texts(rows, fingerprint)
    expected = _reference_parse_texts(rows, fingerprint)
    assert got == expected
    # the cases the fast paths branch on are all there
    parsed = [r for r in got if r not in (MISSING, None)]
    assert got.count(MISSING) == 1 and got.count(None) >= 5
    assert any(r[5][0] for r in parsed) and any(r[5][1] for r in parsed) and any(r[5][2] for r in parsed)
    assert any(r[5][3] for r in parsed) and sum(r[5][4] for r in parsed) == 3
    assert {r[4][0] for r in parsed} == {0, 1}  # both layouts (sparse, bitmap)


@pytest.mark.parametrize("binary", [False, True])
@pytest.mark.parametrize("n_features", [8, 13, 167, 2215])
def test_encode_rows_equals_the_row_by_row_reference_encoder(binary, n_features):
    rng = np.random.default_rng(n_features)
    for density in (0.0, 0.01, 0.06, 0.1, 0.5, 1.0):
        dense = (rng.random((30, n_features)) < density) * rng.integers(1, 400, size=(30, n_features))
        dense[0] = 0
        values = stored_values(dense, binary)
        expected = [_reference_encode(row, binary) for row in values]
        assert encode_rows(values, binary) == expected
        assert [encode_compact(row, binary) for row in dense] == expected
    assert encode_rows(np.zeros((0, n_features), dtype=np.uint8), binary) == []


def test_encode_rows_of_real_fingerprints(rows):
    fingerprinter = Fingerprinter()
    mols = [m for m in (parse_structure(r[0]) for r in rows if r) if m is not None]
    values = stored_values(fingerprinter.transform(mols)[0], fingerprinter.binary)
    blobs = encode_rows(values, fingerprinter.binary)
    assert blobs == [_reference_encode(row, False) for row in values]
    assert {b[0] for b in blobs} == {SPARSE, BITMAP}


def _files(folder):
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_store_built_with_the_reference_parse_is_byte_for_byte_the_same(rows, tmp_path, monkeypatch):
    table = tmp_path / "table.csv"
    flat = [row[0] if row else "" for row in rows if len(row) <= 1]
    table.write_text("Identifier,SMILES\n" + "".join(f"R{i},\"{t}\"\n" for i, t in enumerate(flat)),
                     encoding="utf-8")
    build_store(table, tmp_path / "new", chunk_rows=97, n_jobs=1, shard_width=20.0)[0].close()
    monkeypatch.setattr(_shard_build, "parse_texts", _reference_parse_texts)
    build_store(table, tmp_path / "old", chunk_rows=97, n_jobs=1, shard_width=20.0)[0].close()
    new, old = _files(tmp_path / "new"), _files(tmp_path / "old")
    assert len(new) > 5 and new == old

"""Format versions: a version-2 structure database (fixture written by iokr 1b15daf) still opens, with the same
records, fingerprints and identify outputs as the version-3 database built from the same table; unknown versions
and version-2 candidate stores get a one-line message."""

import gzip
import json
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from metab_helpers import bundled_lists_and_training

from iokr.apps.metabolites import CandidateStore, Fingerprinter, load_identifier
from iokr.apps.metabolites.candidates._database import StructureDatabase
from iokr.cli.main import main
from iokr.exceptions import IOKRDataError

pytest.importorskip("rdkit")
DATA = Path(__file__).parent / "data" / "store_v2"


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    """The version-2 fixture and the version-3 database of the same table."""
    root = tmp_path_factory.mktemp("versions")
    v2 = root / "structures_v2.sqlite"
    with gzip.open(DATA / "structures_v2.sqlite.gz") as source, open(v2, "wb") as target:
        shutil.copyfileobj(source, target)
    v3 = root / "structures_v3.sqlite"
    StructureDatabase.build(DATA / "structures.csv", v3, n_jobs=1)[0].close()
    return root, v2, v3


def test_version_2_reads_like_version_3(both):
    _, v2, v3 = both
    old, new = StructureDatabase(v2), StructureDatabase(v3)
    assert (old.version, new.version) == (2, 3) and old.n_structures == new.n_structures == 17
    ids = np.arange(1, 18)
    assert old.records(ids) == new.records(ids)
    np.testing.assert_array_equal(old.fingerprints(ids), new.fingerprints(ids))
    for formula in {r["formula"] for r in new.records(ids)}:
        np.testing.assert_array_equal(old.by_formula(formula), new.by_formula(formula))
    np.testing.assert_array_equal(old.by_mass(100, 300), new.by_mass(100, 300))
    # the fingerprints are the fresh ones
    smiles = [r["smiles"] for r in new.records(ids)]
    np.testing.assert_array_equal(new.fingerprints(ids), Fingerprinter().transform(smiles)[0])
    assert v3.stat().st_size < v2.stat().st_size / 2


def test_identify_outputs_are_identical_on_both_versions(both):
    root, v2, v3 = both
    _, queries, train = bundled_lists_and_training(2, 30)
    train_path = root / "train.jsonl"
    train_path.write_text("\n".join(json.dumps(r) for r in train) + "\n")
    model = root / "model.npz"
    assert main(["metabolites", "train", "--spectra", str(train_path), "--output", str(model), "--alphas", "0.3",
                 "--folds", "2"]) == 0
    # the model's fingerprints are the stored ones: identify decodes them (nothing recomputed from SMILES)
    assert load_identifier(model)[1].params() == StructureDatabase(v3).fingerprint == StructureDatabase(v2).fingerprint
    mgf = root / "queries.mgf"
    blocks = []
    for i, record in enumerate(queries):
        peaks = "\n".join(f"{mz} {intensity}" for mz, intensity in record["peaks"])
        formula = f"FORMULA={record['formula_rdkit']}\n" if i == 0 else ""  # one by formula, one by mass
        blocks.append(f"BEGIN IONS\nTITLE=q{i}\nPEPMASS={record['precursor_mz']}\nCHARGE=1+\n{formula}{peaks}\n"
                      "END IONS\n")
    mgf.write_text("\n".join(blocks))
    outputs = {}
    for name, database in (("v2", v2), ("v3", v3)):
        out = root / f"out_{name}"
        assert main(["metabolites", "identify", "--model", str(model), "--spectra", str(mgf), "--candidates",
                     str(database), "--output", str(out), "--top-k", "10"]) == 0
        outputs[name] = {f: (out / f).read_bytes() for f in ("structure_identifications.tsv",
                                                              "structure_candidates.tsv")}
    assert outputs["v2"] == outputs["v3"]
    identified = outputs["v3"]["structure_identifications.tsv"].decode().splitlines()
    assert len(identified) == 3 and all("\tok\t" in line for line in identified[1:])  # both queries ranked
    assert len(outputs["v3"]["structure_candidates.tsv"].decode().splitlines()) > 3


def test_an_unknown_version_asks_to_re_index(both, tmp_path):
    _, _, v3 = both
    future = tmp_path / "future.sqlite"
    shutil.copy(v3, future)
    with sqlite3.connect(future) as con:
        con.execute("UPDATE meta SET value = '9' WHERE key = 'version'")
    before = future.read_bytes()
    with pytest.raises(IOKRDataError, match=r"schema version '9'.* re-index it with 'iokr metabolites index' "
                                            r"\(iokr >= "):
        StructureDatabase(future)
    assert future.read_bytes() == before


def test_a_version_2_store_is_refused_unchanged(tmp_path):
    path = tmp_path / "store.sqlite"
    shutil.copy(DATA / "candidate_store_v2.sqlite", path)
    before = path.read_bytes()
    with pytest.raises(IOKRDataError, match=r"store.sqlite has format 2; .* delete it, it is a cache"):
        CandidateStore(path, Fingerprinter("morgan_counts+maccs", n_bits=64))
    assert path.read_bytes() == before and [p.name for p in tmp_path.iterdir()] == ["store.sqlite"]

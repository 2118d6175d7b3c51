"""Fuzz the structure-database builder (``iokr metabolites index``) and the identify query planner: mutated
CSV/TSV/SDF tables and MGF queries with arbitrary adducts, formulas and charges give a database or a typed error,
and every query a status, never a crash."""

import numpy as np
import pytest
from fuzz_helpers import fuzz_settings, mutated, run_reader
from hypothesis import given
from hypothesis import strategies as st

from iokr.apps.metabolites import Fingerprinter, Spectra
from iokr.apps.metabolites.candidates._candidate_sources import DatabaseSource
from iokr.apps.metabolites.candidates._database import StructureDatabase
from iokr.apps.metabolites.ranking._identify import IdentifySettings, plan_queries

pytest.importorskip("rdkit")
FMT = "structure_db"
FP = Fingerprinter("morgan_counts+maccs", n_bits=32)
VALID_CSV = (b"\xef\xbb\xbfIdentifier,CompoundName,SMILES,InChI\nA,ethanol,CCO,\nB,ether,COC,\n"
             b'C,acid,,"InChI=1S/C2H4O2/c1-2(3)4/h1H3,(H,3,4)"\n')
TOKENS = [b",", b";", b"\t", b'"', b"\n", b"\r\n", b"SMILES", b"InChI=", b"C1CC", b"[Na+]", b"\x00", b"\xff\xfe",
          b"9" * 400, b"(" * 300, b"Identifier"]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz_structure_db")


@fuzz_settings(scale=1)
@given(data=mutated(VALID_CSV, TOKENS), suffix=st.sampled_from([".csv", ".tsv", ".sdf", ".csv.gz"]))
def test_mutated_tables(workdir, data, suffix):
    path = workdir / f"db{suffix}"
    path.write_bytes(data)
    result = run_reader(FMT, StructureDatabase.build, path, ":memory:", FP, n_jobs=1)
    if result is not None:
        db, stats = result
        assert stats["n_structures"] + stats["n_unparsable"] + stats["n_duplicates"] == stats["n_rows"]
        ids = np.arange(1, stats["n_structures"] + 1)
        assert len(db.records(ids)) == stats["n_structures"]
        assert db.fingerprints(ids).shape == (stats["n_structures"], FP.n_features)


text_values = st.one_of(st.none(), st.text(max_size=12),
                        st.sampled_from(["[M+H]+", "[M-H]-", "M+Na", "[2M+H]+", "[M+2H]2+", "[M]+", "1+", "2-",
                                         "C2H6O", "OC2H6", "C2H6O+", "Xx2", "positive", "negative", "", "0", "-1"]))


@pytest.fixture(scope="module")
def database(workdir):
    path = workdir / "valid.csv"
    path.write_bytes(VALID_CSV)
    return StructureDatabase.build(path, ":memory:", FP, n_jobs=1)[0]


@fuzz_settings(scale=2)
@given(adduct=text_values, charge=text_values, ion_mode=text_values, formula=text_values,
       precursor=st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.just(47.049)))
def test_every_query_gets_a_status(database, adduct, charge, ion_mode, formula, precursor):
    meta = {k: v for k, v in {"adduct": adduct, "charge": charge, "ion_mode": ion_mode, "formula": formula}.items()
            if v is not None}
    precursor = precursor if precursor > 0 else np.nan
    spectra = Spectra.from_peak_lists([np.array([[30.0, 1.0]])], np.array([precursor]), [meta])
    queries = run_reader("identify_queries", plan_queries, spectra, np.array([1]), {"[M+H]+"},
                         DatabaseSource(database), IdentifySettings())
    assert queries is not None and len(queries) == 1
    q = queries[0]
    assert q.status in ("ok", "no precursor m/z", "implausible precursor m/z", "unknown adduct",
                        "unsupported adduct", "unsupported charge", "invalid formula", "no candidates")
    assert (q.status == "ok") == (q.candidates.size > 0)

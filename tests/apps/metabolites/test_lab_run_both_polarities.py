"""Issue #28's "done means": a lab's MZmine-style MGF of both polarities through ``index`` + ``identify`` with the
ready model, on the command line.

The MGF holds positive and negative features (with and without an adduct), one 2+ feature, an ``[M+Na]+`` and an
``[M+NH4]+`` feature, ``SCANS=1`` on every feature (as exports that number scans per file write it) and a FORMULA that
contradicts its precursor m/z. The structure table holds a hydrochloride salt and columns named like result columns
(``score``, ``adduct``). Every status, adduct, id and column is checked, and the negative features' rankings are
checked against the ready model's ``[M-H]-`` sub-model scoring the same candidates directly.
"""

import csv
import json
import tarfile

import numpy as np
import pytest
from test_submodels import _block, _records

from iokr.apps.metabolites import Cleaning, load_metabolite_model, read_spectra
from iokr.apps.metabolites.chemistry._adducts import parse_adduct
from iokr.apps.metabolites.chemistry._formulas import monoisotopic_mass
from iokr.cli.main import main
from iokr.datasets._metabolites import BUNDLED_METABOLITES

Chem = pytest.importorskip("rdkit.Chem")
N_CANDIDATES = 8
BOTH = "[M+H]+, [M-H]-"


def _richest(records):
    """The record with the most fragment peaks (some hold only the precursor)."""
    return max(records, key=lambda r: sum(mz < r["precursor_mz"] - 1 for mz, _ in r["peaks"]))


def _candidates(tar, member, true_key):
    """The true structure and the first other candidates of a bundled PubChem list: ``[(inchi, smiles, key14)]``."""
    rows = csv.DictReader(tar.extractfile(member).read().decode().splitlines())
    out, true = [], None
    for row in rows:
        mol = Chem.MolFromInchi(row["id1"])
        if mol is None:
            continue
        entry = (row["id1"], Chem.MolToSmiles(mol), Chem.MolToInchiKey(mol)[:14])
        if entry[2] == true_key:
            true = entry
        elif len(out) < N_CANDIDATES - 1:
            out.append(entry)
        if true is not None and len(out) == N_CANDIDATES - 1:
            break
    return [true, *out]


def _table(path):
    with open(path, encoding="utf-8", newline="") as handle:
        rows = list(csv.reader(handle, delimiter="\t"))
    return rows[0], [dict(zip(rows[0], r, strict=True)) for r in rows[1:]]


@pytest.fixture(scope="module")
def lab(tmp_path_factory, ready_model_cache):
    root = tmp_path_factory.mktemp("lab")
    positive = _records(BUNDLED_METABOLITES["spectra"], 10**6)
    negative = _records(BUNDLED_METABOLITES["negative_spectra"], 10**6)
    with tarfile.open(BUNDLED_METABOLITES["candidates"]) as tar:
        members = {m.name.rsplit("_id=", 1)[1][:14]: m for m in tar.getmembers() if m.name.endswith(".csv")}
        keys = sorted(k for k in members if k in positive and k in negative)[:2]
        lists = {k: _candidates(tar, members[k], k) for k in keys}
    a, b = keys
    pos = {k: _richest(positive[k]) for k in keys}
    neg = {k: _richest(negative[k]) for k in keys}
    formula = {k: pos[k]["formula_rdkit"] for k in keys}
    mass = {k: monoisotopic_mass(formula[k]) for k in keys}

    def mz(key, adduct):
        return f"{parse_adduct(adduct).precursor_mz(mass[key]):.5f}"

    features = [  # (head, peaks from)
        (f"PEPMASS={pos[a]['precursor_mz']}\nCHARGE=1+\nFORMULA={formula[a]}\n", pos[a]),
        (f"PEPMASS={neg[a]['precursor_mz']}\nCHARGE=1-\n", neg[a]),
        (f"PEPMASS={neg[b]['precursor_mz']}\nCHARGE=1-\nION=[M-H]-\nFORMULA={formula[b]}\n", neg[b]),
        (f"PEPMASS={mz(b, '[M+2H]2+')}\nCHARGE=2+\n", pos[b]),
        (f"PEPMASS={mz(a, '[M+Na]+')}\nCHARGE=1+\nADDUCT=[M+Na]+\n", pos[a]),
        (f"PEPMASS={mz(b, '[M+NH4]+')}\nCHARGE=1+\nADDUCT=[M+NH4]+\n", pos[b]),
        (f"PEPMASS={pos[b]['precursor_mz']}\nCHARGE=1+\nFORMULA={formula[a]}\n", pos[b]),  # contradicts
    ]
    mgf = root / "features.mgf"
    mgf.write_text("".join(_block(f"FEATURE_ID={i}\nSCANS=1\nMSLEVEL=2\n{head}", rec)
                           for i, (head, rec) in enumerate(features, 1)))
    table = root / "structures.csv"
    inchi_of, salt = {}, None
    with open(table, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["Identifier", "Name", "SMILES", "score", "adduct"])
        for key in keys:
            for j, (inchi, smiles, _) in enumerate(lists[key]):
                ident = f"{key[:4]}-{j}"
                inchi_of[ident] = inchi
                if key == a and j == 0:  # the true structure of A as its hydrochloride
                    smiles, salt = smiles + ".Cl", (ident, smiles + ".Cl")
                writer.writerow([ident, f"compound {ident}", smiles, f"{j / 10:.1f}", "[M+H]+"])
    db = root / "structures.sqlite"
    assert main(["metabolites", "index", str(table), "--output", str(db)]) == 0
    runs = {}
    for name, extra in (("refuse", []), ("assume", ["--adduct-policy", "assume"]),
                        ("scans", ["--query-id-field", "SCANS"])):
        out = root / name
        assert main(["metabolites", "identify", "--spectra", str(mgf), "--candidates", str(db), "--output", str(out),
                     *extra]) == 0
        runs[name] = {"ident": _table(out / "structure_identifications.tsv"),
                      "cands": _table(out / "structure_candidates.tsv"),
                      "params": json.loads((out / "parameters.json").read_text())}
    return {"runs": runs, "mgf": mgf, "keys": keys, "mass": mass, "inchi_of": inchi_of, "salt": salt,
            "true": {k: f"{k[:4]}-0" for k in keys}, "cache": ready_model_cache}


def test_every_feature_has_its_status_adduct_and_id(lab):
    header, rows = lab["runs"]["refuse"]["ident"]
    got = {r["query_id"]: (r["status"], r["adduct"]) for r in rows}
    assert got == {
        "1": ("ok", "[M+H]+"), "2": ("ok", "[M-H]-"), "3": ("ok", "[M-H]-"), "4": ("unsupported charge", ""),
        "5": ("unsupported adduct", "[M+Na]+"), "6": ("unsupported adduct", "[M+NH4]+"), "7": ("ok", "[M+H]+")}
    by_id = {r["query_id"]: r for r in rows}
    assert by_id["1"]["detail"] == "no adduct given: assumed [M+H]+ (positive ion mode)"
    assert by_id["2"]["detail"] == "no adduct given: assumed [M-H]- (negative ion mode)"
    assert by_id["3"]["detail"] == "" and by_id["3"]["lookup"].startswith("formula ")
    assert by_id["2"]["lookup"].startswith("mass ")
    assert by_id["4"]["detail"] == f"charge 2+; the model serves singly charged {BOTH}"
    assert by_id["5"]["detail"] == f"[M+Na]+; model: {BOTH}" and by_id["6"]["detail"] == f"[M+NH4]+; model: {BOTH}"
    assert "contradicts precursor m/z" in by_id["7"]["detail"] and by_id["7"]["lookup"].startswith("mass ")
    a, b = lab["keys"]
    # each ranked feature finds its own true structure on top or in its list; the contradicting FORMULA is not used
    assert by_id["7"]["identifier"].startswith(b[:4]) and by_id["1"]["identifier"].startswith(a[:4])
    params = lab["runs"]["refuse"]["params"]
    assert params["model_precursor_types"] == ["[M+H]+", "[M-H]-"]
    assert params["queries_per_submodel"] == {"[M+H]+": 2, "[M-H]-": 2}
    assert params["statuses"] == {"ok": 4, "unsupported charge": 1, "unsupported adduct": 2}


def test_output_columns_are_unique_and_the_salt_is_found_as_its_parent(lab):
    for table in ("ident", "cands"):
        header, _ = lab["runs"]["refuse"][table]
        assert len(header) == len(set(header)), header
        assert {"candidate_score", "candidate_adduct"} <= set(header)
    assert lab["runs"]["refuse"]["params"]["candidate_columns_renamed"] == {"score": "candidate_score",
                                                                             "adduct": "candidate_adduct"}
    _, cands = lab["runs"]["refuse"]["cands"]
    ident, salt_text = lab["salt"]
    salt_rows = [c for c in cands if c["identifier"] == ident]
    # looked up by formula (feature 1) and by mass (feature 2): the hydrochloride is indexed as its parent
    assert sorted(c["query_id"] for c in salt_rows) == ["1", "2"]
    assert all(c["SMILES"] == salt_text and c["candidate_adduct"] == "[M+H]+" for c in salt_rows)


def test_negative_features_are_ranked_by_the_negative_submodel(lab, monkeypatch):
    monkeypatch.setenv("IOKR_CACHE_DIR", str(lab["cache"]))
    path = next(lab["cache"].glob("metabolites-model-*.npz"))
    models = load_metabolite_model(path)
    spectra, _ = read_spectra(lab["mgf"], keep_empty=True)
    cleaning = Cleaning()
    cleaned = cleaning.merged(cleaning.single(spectra), groups=list(range(len(spectra))))[0]
    _, cands = lab["runs"]["refuse"]["cands"]
    for qid, row, key in (("2", 1, lab["keys"][0]), ("3", 2, lab["keys"][1])):
        got = [c for c in cands if c["query_id"] == qid]
        idents = [f"{key[:4]}-{j}" for j in range(N_CANDIDATES)]
        F, ok = models.fingerprinter.transform([lab["inchi_of"][i] for i in idents])
        assert ok.all()
        query = cleaned[np.array([row])]
        scores = models.submodel("[M-H]-").score_sets(query, [F])[0]
        positive = models.submodel("[M+H]+").score_sets(query, [F])[0]
        order = np.argsort(-scores, kind="stable")
        assert [c["identifier"] for c in got] == [idents[j] for j in order]
        np.testing.assert_allclose([float(c["score"]) for c in got], scores[order], rtol=1e-5, atol=1e-6)
        assert not np.allclose(scores, positive, rtol=1e-3)  # the positive sub-model would score otherwise


def test_assume_maps_sodium_and_ammonium_to_the_positive_submodel_not_the_2plus(lab):
    _, rows = lab["runs"]["assume"]["ident"]
    by_id = {r["query_id"]: r for r in rows}
    a, b = lab["keys"]
    for qid, adduct, key in (("5", "[M+Na]+", a), ("6", "[M+NH4]+", b)):
        r = by_id[qid]
        assert (r["status"], r["adduct"]) == ("ok", adduct)
        assert f"warning: {adduct} ranked with the [M+H]+ sub-model" in r["detail"]
        # the neutral mass comes from the query's own adduct: the window is centred on the structure's mass
        centre = float(r["lookup"].split()[1])
        assert abs(centre - lab["mass"][key]) < 1e-5 * lab["mass"][key]
        assert r["identifier"].startswith(key[:4])
    assert by_id["4"]["status"] == "unsupported charge"
    assert lab["runs"]["assume"]["params"]["queries_per_submodel"] == {"[M+H]+": 4, "[M-H]-": 2}


def test_repeated_scans_fall_back_to_a_unique_id_and_say_so(lab):
    _, rows = lab["runs"]["scans"]["ident"]
    assert [r["query_id"] for r in rows] == [str(i) for i in range(1, 8)]
    ids = lab["runs"]["scans"]["params"]["query_ids"]
    assert ids["field"] != "scans" and "repeat" in ids["note"].lower(), ids

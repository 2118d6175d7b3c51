"""Model files of several sub-models (one per precursor type), routing of queries to them, training per type.

The end-to-end test trains on a MassBank JSONL of [M+H]+ spectra plus an MGF of negative spectra without an adduct
(IONMODE=negative: [M-H]- implied), and identifies a small mixed MGF through the CLI; the negative query's ranking
is checked against the [M-H]- sub-model's own ``score_sets`` on the same candidates.
"""

import csv
import gzip
import json
import tarfile

import numpy as np
import pytest

from iokr.apps.metabolites import (
    Cleaning,
    Spectra,
    load_identifier,
    load_metabolite_model,
    read_spectra,
    save_identifier,
)
from iokr.apps.metabolites.chemistry._adducts import PrecursorIon, parse_adduct, read_precursor_ion
from iokr.apps.metabolites.chemistry._formulas import monoisotopic_mass
from iokr.apps.metabolites.model import _model
from iokr.apps.metabolites.model._hypotheses import prediction_sq_norms
from iokr.apps.metabolites.model._routing import ASSUME_MAPPING, route_query
from iokr.apps.metabolites.model._training import precursor_types, types_to_train
from iokr.cli.main import main
from iokr.datasets._metabolites import BUNDLED_METABOLITES
from iokr.estimators import _sides
from iokr.estimators import iokr as iokr_module
from iokr.exceptions import IOKRDataError
from iokr.io import ModelFileError, load_model_file, save_model_file

N_TRAIN = 12
BOTH = ("[M+H]+", "[M-H]-")


def _ion(adduct=None, ion_mode=None, charge=None, problem=""):
    adduct = parse_adduct(adduct) if adduct else None
    return PrecursorIon(adduct=adduct, ion_mode=ion_mode or (adduct.ion_mode if adduct else None),
                        charge=charge if charge is not None else (adduct.charge if adduct else None), problem=problem)


@pytest.mark.parametrize(("ion", "types", "policy", "status", "submodel", "detail"), [
    (_ion("[M+H]+"), BOTH, "refuse", "ok", "[M+H]+", ""),
    (_ion("[M-H]-"), BOTH, "refuse", "ok", "[M-H]-", ""),
    (_ion(None, "negative", -1), BOTH, "refuse", "ok", "[M-H]-",
     "no adduct given: assumed [M-H]- (negative ion mode)"),
    (_ion(None, "positive", 1), BOTH, "refuse", "ok", "[M+H]+",
     "no adduct given: assumed [M+H]+ (positive ion mode)"),
    (_ion(None, "negative", None), BOTH, "refuse", "ok", "[M-H]-",
     "no adduct given: assumed [M-H]- (negative ion mode)"),
    (_ion(), BOTH, "refuse", "unknown ion mode", None,
     "no adduct, ion mode or charge given and the model serves both polarities ([M+H]+, [M-H]-): state it with "
     "--ion-mode (ion_mode)"),
    # MZmine's SIRIUS export: CHARGE=1, no sign, no ion mode; the detail used to say "no ... charge given"
    (PrecursorIon(None, None, None, "", unsigned_charge=1), BOTH, "refuse", "unknown ion mode", None,
     "no adduct or ion mode given and charge 1 has no sign and the model serves both polarities ([M+H]+, "
     "[M-H]-): state it with --ion-mode (ion_mode)"),
    (PrecursorIon(None, "negative", -1, "", ion_mode_assumed=True, unsigned_charge=None), BOTH, "refuse", "ok",
     "[M-H]-", "no adduct, ion mode or charge given: assumed [M-H]- (negative ion mode from --ion-mode)"),
    (_ion(), ("[M-H]-",), "refuse", "ok", "[M-H]-",
     "no adduct, ion mode or charge given: assumed [M-H]- (the model's only polarity)"),
    (_ion(None, "negative", -1), ("[M+H]+",), "refuse", "unsupported adduct", None,
     "no adduct given: assumed [M-H]- (negative ion mode); model: [M+H]+"),
    (_ion(None, "positive", 2), BOTH, "refuse", "unsupported charge", None,
     "charge 2+; the model serves singly charged [M+H]+, [M-H]-"),
    (_ion(None, "positive", 2), BOTH, "assume", "unsupported charge", None,
     "no adduct given: charge 2+ assumed [M+2H]2+; [M+2H]2+: charge 2+; the model serves singly charged "
     "[M+H]+, [M-H]-"),
    (_ion("[M+2H]2+"), BOTH, "assume", "unsupported charge", None,
     "[M+2H]2+: charge 2+; the model serves singly charged [M+H]+, [M-H]-"),
    (_ion("[M+2H]2+"), BOTH, "refuse", "unsupported charge", None,
     "[M+2H]2+: charge 2+; the model serves singly charged [M+H]+, [M-H]-"),
    (_ion("[M+Na]+"), BOTH, "refuse", "unsupported adduct", None, "[M+Na]+; model: [M+H]+, [M-H]-"),
    (_ion("[M+Na]+"), BOTH, "assume", "ok", "[M+H]+",
     "warning: [M+Na]+ ranked with the [M+H]+ sub-model (--adduct-policy assume)"),
    (_ion("[M+Cl]-"), BOTH, "assume", "ok", "[M-H]-",
     "warning: [M+Cl]- ranked with the [M-H]- sub-model (--adduct-policy assume)"),
    (_ion("[M+Na]+"), ("[M-H]-",), "assume", "unsupported adduct", None, "[M+Na]+; model: [M-H]-"),
    (_ion("[M+H]+", problem="adduct [M+H]+ contradicts ion mode negative"), BOTH, "refuse", "unknown adduct", None,
     "adduct [M+H]+ contradicts ion mode negative"),
])
def test_routing(ion, types, policy, status, submodel, detail):
    route = route_query(ion, types, policy)
    assert (route.status, route.submodel) == (status, submodel)
    if detail is not None:
        assert route.detail == detail
    if status == "ok":  # the neutral mass comes from the query's own (or assumed) adduct, with its charge
        assert route.adduct is not None and abs(route.adduct.charge) == abs(ion.charge or 1)
    elif ion.adduct is not None and not ion.problem:  # refused as the type its file names
        assert route.adduct == ion.adduct
    elif "assumed" in (detail or ""):  # refused as the type assumed for it, which the detail names
        assert route.adduct is not None and route.adduct.name in detail
    else:
        assert route.adduct is None


@pytest.mark.parametrize(("meta", "ion_mode", "status", "detail"), [
    # MZmine's SIRIUS export (CHARGE=1, no sign) with --ion-mode: the detail said "no adduct, ion mode or charge
    # given", although the file gives a charge (only without its sign)
    ({"charge": "1"}, "negative", "ok",
     "no adduct or ion mode given and charge 1 has no sign: assumed [M-H]- (negative ion mode from --ion-mode)"),
    ({}, "negative", "ok", "no adduct, ion mode or charge given: assumed [M-H]- (negative ion mode from --ion-mode)"),
    # an unsigned multiple charge: its sign comes from --ion-mode, which the detail says (it said only "charge 2+")
    ({"charge": "2"}, "positive", "unsupported charge",
     "charge 2+ (no sign in the file: positive ion mode from --ion-mode); the model serves singly charged "
     "[M+H]+, [M-H]-"),
    ({"charge": "2+"}, "negative", "unsupported charge", "charge 2+; the model serves singly charged [M+H]+, [M-H]-"),
    ({"charge": "1", "ion_mode": "positive"}, "negative", "ok", "no adduct given: assumed [M+H]+ (positive ion mode)"),
    # an ion-mode field that is neither mode (a typo, 'unknown', 'N/A') was dropped without a word: a misspelled
    # 'postive' was ranked as --ion-mode negative while the detail said the file gave no ion mode
    ({"ion_mode": "postive"}, "negative", "ok",
     "no adduct, ion mode or charge given (ion mode 'postive' is neither positive nor negative): assumed [M-H]- "
     "(negative ion mode from --ion-mode)"),
    ({"ion_mode": "N/A", "charge": "1"}, None, "unknown ion mode",
     "no adduct or ion mode given and charge 1 has no sign (ion mode 'N/A' is neither positive nor negative) and "
     "the model serves both polarities ([M+H]+, [M-H]-): state it with --ion-mode (ion_mode)"),
    ({"ion_mode": " "}, None, "unknown ion mode",
     "no adduct, ion mode or charge given and the model serves both polarities ([M+H]+, [M-H]-): state it with "
     "--ion-mode (ion_mode)"),
])
def test_ion_mode_option_details_say_what_the_file_gave(meta, ion_mode, status, detail):
    route = route_query(read_precursor_ion(meta, ion_mode), BOTH)
    assert (route.status, route.detail) == (status, detail)


def test_an_unsigned_multiple_charge_signed_by_the_ion_mode_option_says_so_under_assume():
    route = route_query(read_precursor_ion({"charge": "2"}, "negative"), BOTH, "assume")
    assert route.status == "unsupported charge"
    assert route.detail == ("no adduct given: charge 2- (no sign in the file: negative ion mode from --ion-mode) "
                            "assumed [M-2H]2-; [M-2H]2-: charge 2-; the model serves singly charged [M+H]+, [M-H]-")


def test_assume_mapping_is_canonical_and_maps_to_singly_charged_default_types():
    assert ASSUME_MAPPING[parse_adduct("M+Na").name] == "[M+H]+"
    assert ASSUME_MAPPING[parse_adduct("[M+FA-H]-").name] == "[M-H]-"
    assert set(ASSUME_MAPPING.values()) == {"[M+H]+", "[M-H]-"}
    for source, target in ASSUME_MAPPING.items():
        assert parse_adduct(source).ion_mode == parse_adduct(target).ion_mode


def _spectra(metas):
    peaks = [np.array([[100.0, 1.0]])] * len(metas)
    return Spectra.from_peak_lists(peaks, np.full(len(metas), 300.0), metas)


def test_training_types_never_contradict_the_spectra():
    metas = [{"adduct": "[M-H]-", "ion_mode": "negative"}, {"ion_mode": "negative"}, {"charge": "1-"},
             {"adduct": "[M+H]+", "ion_mode": "negative"}, {"charge": "2-", "ion_mode": "negative"}, {},
             {"adduct": "[M+Foo]+"}]
    lines = []
    types, counts = precursor_types(_spectra(metas), lines.append)
    assert types.tolist() == ["[M-H]-", "[M-H]-", "[M-H]-", "", "", "", ""]
    assert counts["named"] == 1 and counts["implied"] == {"[M-H]-": 2} and counts["assumed"] == 0
    assert sum(counts["skipped"].values()) == 4
    assert any("2 spectra name no adduct" in line for line in lines)
    # without any negative spectrum, a spectrum naming nothing is the legacy [M+H]+
    types, counts = precursor_types(_spectra([{}, {"adduct": "[M+H]+"}]), lines.append)
    assert types.tolist() == ["[M+H]+", "[M+H]+"] and counts["assumed"] == 1


def test_types_to_train_threshold_and_the_too_few_error():
    lines = []
    assert types_to_train({"[M+H]+": 300, "[M-H]-": 120, "[M+Na]+": 40}, 100, 3, lines.append) == ["[M+H]+", "[M-H]-"]
    assert "[M+Na]+ (40)" in lines[-1]
    assert types_to_train({"[M-H]-": 30, "[M+Na]+": 20}, 100, 3, lines.append) == ["[M-H]-"]
    with pytest.raises(IOKRDataError, match=r"need at least 9 training structures \(got 4 of \[M-H\]-\)"):
        types_to_train({"[M-H]-": 4}, 100, 3)


def _records(path, n, skip=()):
    out = {}
    with gzip.open(path, "rt") as handle:
        for line in handle:
            rec = json.loads(line)
            key = rec["inchikey_rdkit"][:14]
            if key in skip:
                continue
            if key in out or len(out) < n:
                out.setdefault(key, []).append(rec)
    return out


def _block(head, rec):
    return "BEGIN IONS\n" + head + "\n".join(f"{mz} {i}" for mz, i in rec["peaks"]) + "\nEND IONS\n"


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    root = tmp_path_factory.mktemp("mixed")
    with tarfile.open(BUNDLED_METABOLITES["candidates"]) as tar:
        members = {m.name.rsplit("_id=", 1)[1][:14]: m for m in tar.getmembers() if m.name.endswith(".csv")}
        negative_true = _records(BUNDLED_METABOLITES["negative_spectra"], 10**6)
        key = sorted(k for k in negative_true if k in members)[0]
        rows = list(csv.DictReader(tar.extractfile(members[key]).read().decode().splitlines()))[:25]
    positive = _records(BUNDLED_METABOLITES["spectra"], N_TRAIN, skip=set(members))
    negative = _records(BUNDLED_METABOLITES["negative_spectra"], N_TRAIN, skip=set(members))
    pos_path = root / "positive.jsonl"
    pos_path.write_text("".join(json.dumps(r) + "\n" for recs in positive.values() for r in recs))
    neg_path = root / "negative.mgf"  # a GNPS-style negative library: IONMODE, no adduct
    neg_path.write_text("".join(_block(f"PEPMASS={r['precursor_mz']}\nIONMODE=negative\nINCHI={r['inchi']}\n", r)
                                for recs in negative.values() for r in recs))
    model = root / "model.npz"
    assert main(["metabolites", "train", "--spectra", str(pos_path), "--spectra", str(neg_path), "--output",
                 str(model), "--alphas", "0.3", "--folds", "2", "--min-structures", "5"]) == 0
    db = root / "structures.csv"
    with open(db, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["Identifier", "InChI"])
        writer.writerows([f"C{i}", r["id1"]] for i, r in enumerate(rows))
    def richest(recs):  # the record with the most fragment peaks (some hold only the precursor)
        return max(recs, key=lambda r: sum(mz < r["precursor_mz"] - 1 for mz, _ in r["peaks"]))

    query, pos_query = richest(negative_true[key]), richest(next(iter(positive.values())))
    formula = query["formula_rdkit"]

    def mz(adduct):  # the precursor m/z of the query's formula as this ion
        return f"{parse_adduct(adduct).precursor_mz(monoisotopic_mass(formula)):.5f}"

    blocks = [
        _block(f"FEATURE_ID=1\nPEPMASS={query['precursor_mz']}\nCHARGE=1-\nFORMULA={formula}\n", query),
        _block(f"FEATURE_ID=2\nPEPMASS={query['precursor_mz']}\nIONMODE=negative\nADDUCT=[M-H]-\n"
               f"FORMULA={formula}\n", query),
        # a positive query of the same formula (its [M+H]+ m/z): the same candidates, ranked by the [M+H]+ sub-model
        _block(f"FEATURE_ID=3\nPEPMASS={mz('[M+H]+')}\nCHARGE=1+\nFORMULA={formula}\n", pos_query),
        _block(f"FEATURE_ID=4\nPEPMASS={query['precursor_mz']}\nFORMULA={formula}\n", query),
        _block(f"FEATURE_ID=5\nPEPMASS={mz('[M-2H]2-')}\nCHARGE=2-\nFORMULA={formula}\n", query),
        _block(f"FEATURE_ID=6\nPEPMASS={mz('[M+Cl]-')}\nADDUCT=[M+Cl]-\nFORMULA={formula}\n", query),
    ]
    mgf = root / "queries.mgf"
    mgf.write_text("".join(blocks))
    return {"root": root, "model": model, "db": db, "mgf": mgf}


def _table(path):
    with open(path, encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle, delimiter="\t"))


def test_mixed_training_gives_two_submodels(mixed):
    models = load_metabolite_model(mixed["model"])
    assert models.precursor_types == ("[M+H]+", "[M-H]-")
    for t in models.precursor_types:
        n = models.record(t)["n_train_structures"]
        assert N_TRAIN - 2 <= n <= N_TRAIN and models.submodel(t).train_spectra_.precursor_mz.size == n
    counts = models.metadata["extra"]["precursor_type_counts"]
    n_negative = (mixed["root"] / "negative.mgf").read_text().count("BEGIN IONS")
    assert counts["implied"] == {"[M-H]-": n_negative}
    # too few structures for a calibration: none stored, the reason kept
    assert models.calibration("[M-H]-") is None and "at least" in models.record("[M-H]-")["calibration_problem"]
    with pytest.raises(ModelFileError, match="holds 2 sub-models"):
        load_identifier(mixed["model"])


def test_mixed_identify_routes_each_query_to_its_submodel(mixed, tmp_path):
    out = tmp_path / "out"
    assert main(["metabolites", "identify", "--model", str(mixed["model"]), "--spectra", str(mixed["mgf"]),
                 "--candidates", str(mixed["db"]), "--output", str(out), "--top-k", "100"]) == 0
    ident = default = {r["query_id"]: r for r in _table(out / "structure_identifications.tsv")}
    assert {q: r["status"] for q, r in ident.items()} == {
        "1": "ok", "2": "ok", "3": "ok", "4": "unknown ion mode", "5": "unsupported charge",
        "6": "unsupported adduct"}
    assert ident["1"]["detail"] == "no adduct given: assumed [M-H]- (negative ion mode)"
    assert ident["1"]["adduct"] == ident["2"]["adduct"] == "[M-H]-" and ident["3"]["adduct"] == "[M+H]+"
    assert ident["5"]["detail"] == "charge 2-; the model serves singly charged [M+H]+, [M-H]-"
    assert ident["6"]["detail"] == "[M+Cl]-; model: [M+H]+, [M-H]-"
    params = json.loads((out / "parameters.json").read_text())
    assert params["model_precursor_types"] == ["[M+H]+", "[M-H]-"]
    assert params["queries_per_submodel"] == {"[M+H]+": 1, "[M-H]-": 2}
    assert params["adduct_mapping"]["[M+Cl]-"] == "[M-H]-"
    # brute force: each query's candidates scored by its own sub-model's score_sets
    models = load_metabolite_model(mixed["model"])
    with open(mixed["db"]) as handle:
        rows = list(csv.DictReader(handle))
    F, ok = models.fingerprinter.transform([r["InChI"] for r in rows])
    names = [r["Identifier"] for r, good in zip(rows, ok, strict=True) if good]
    spectra, _ = read_spectra(mixed["mgf"], keep_empty=True)
    cleaning = Cleaning()
    cleaned = cleaning.merged(cleaning.single(spectra), groups=list(range(len(spectra))))[0]
    cands = _table(out / "structure_candidates.tsv")
    for q, row, precursor_type, other in (("1", 0, "[M-H]-", "[M+H]+"), ("2", 1, "[M-H]-", "[M+H]+"),
                                          ("3", 2, "[M+H]+", "[M-H]-")):
        scores = models.submodel(precursor_type).score_sets(cleaned[np.array([row])], [F[ok]])[0]
        wrong = models.submodel(other).score_sets(cleaned[np.array([row])], [F[ok]])[0]
        order = np.argsort(-scores, kind="stable")
        got = [c for c in cands if c["query_id"] == q]
        assert [c["identifier"] for c in got] == [names[j] for j in order]
        np.testing.assert_allclose([float(c["score"]) for c in got], scores[order], rtol=1e-5)
        assert not np.allclose(scores, wrong, rtol=1e-3)  # the other sub-model would rank otherwise
    # policy assume: the [M+Cl]- query by the [M-H]- sub-model; the charge-2 one still refused (no CV supports
    # ranking a 2- precursor with a singly charged sub-model)
    assume = tmp_path / "assume"
    assert main(["metabolites", "identify", "--model", str(mixed["model"]), "--spectra", str(mixed["mgf"]),
                 "--candidates", str(mixed["db"]), "--output", str(assume), "--adduct-policy", "assume"]) == 0
    ident = {r["query_id"]: r for r in _table(assume / "structure_identifications.tsv")}
    assert ident["6"]["status"] == "ok" and ident["6"]["adduct"] == "[M+Cl]-"
    assert ident["5"]["status"] == "unsupported charge" and "[M-2H]2-" in ident["5"]["detail"]
    # --ion-mode: the query that states no ion mode (4) is ranked as that mode; what the others state wins
    stated = tmp_path / "ion_mode"
    assert main(["metabolites", "identify", "--model", str(mixed["model"]), "--spectra", str(mixed["mgf"]),
                 "--candidates", str(mixed["db"]), "--output", str(stated), "--top-k", "100",
                 "--ion-mode", "negative"]) == 0
    ident = {r["query_id"]: r for r in _table(stated / "structure_identifications.tsv")}
    assert ident["4"]["status"] == "ok" and ident["4"]["adduct"] == "[M-H]-"
    assert ident["4"]["detail"].startswith("no adduct, ion mode or charge given: assumed [M-H]- (negative ion "
                                           "mode from --ion-mode)")
    # the same spectrum and formula as query 1 (CHARGE=1-): the same ranking
    ranked = [(c["query_id"], c["identifier"]) for c in _table(stated / "structure_candidates.tsv")]
    assert [i for q, i in ranked if q == "4"] == [i for q, i in ranked if q == "1"]
    assert {q: (r["status"], r["adduct"]) for q, r in ident.items() if q != "4"} == {
        q: (r["status"], r["adduct"]) for q, r in default.items() if q != "4"}
    assert json.loads((stated / "parameters.json").read_text())["ion_mode"] == "negative"
    assert json.loads((out / "parameters.json").read_text())["ion_mode"] is None


def test_a_file_of_one_model_loads_as_one_submodel(mixed, tmp_path):
    """A file written before sub-models (one model, no precursor types recorded) is one [M+H]+ sub-model with the
    same scores; one recording its types serves those."""
    trained = load_metabolite_model(mixed["model"])
    model, fp = trained.submodel("[M+H]+"), trained.fingerprinter
    legacy = save_identifier(tmp_path / "legacy.npz", model, fp, Cleaning())
    models = load_metabolite_model(legacy)
    assert models.precursor_types == ("[M+H]+",) and models.calibration("[M+H]+") is None
    S = model.train_spectra_
    candidates = [(np.random.default_rng(0).random((7, fp.n_features)) < 0.3).astype(float)]
    np.testing.assert_allclose(models.submodel("[M+H]+").score_sets(S[:1], candidates)[0],
                               model.score_sets(S[:1], candidates)[0], rtol=1e-12)
    sodium = save_identifier(tmp_path / "na.npz", model, fp, Cleaning(), extra={"precursor_types": ["[M+Na]+"]})
    assert load_metabolite_model(sodium).precursor_types == ("[M+Na]+",)


def test_too_few_training_structures_is_a_one_line_error(mixed, tmp_path, capsys):
    records = [json.loads(line) for line in (mixed["root"] / "positive.jsonl").read_text().splitlines()]
    two = [r for r in records if r["inchikey_rdkit"][:14] in {x["inchikey_rdkit"][:14] for x in records[:1]}]
    two += [r for r in records if r["inchikey_rdkit"][:14] == records[-1]["inchikey_rdkit"][:14]]
    path = tmp_path / "two.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in two))
    assert main(["metabolites", "train", "--spectra", str(path), "--output", str(tmp_path / "m.npz")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].endswith("need at least 9 training structures (got 2 of [M+H]+).")
    assert not (tmp_path / "m.npz").exists()


def test_a_newer_submodel_layout_is_refused(mixed, tmp_path):
    arrays, meta = load_model_file(mixed["model"], kind="metabolites")
    meta = {k: v for k, v in meta.items() if k not in ("format", "format_version", "library_version", "kind",
                                                        "sha256", "members")}
    path = save_model_file(tmp_path / "newer.npz", arrays, {**meta, "submodel_layout": 2}, kind="metabolites")
    with pytest.raises(ModelFileError, match="sub-model layout 2"):
        load_metabolite_model(path)


def _stateless_with_gram(path, out):
    """The model file as written before the IOKR state was stored: no ``state_*`` arrays, and each sub-model's
    combined training Gram (``train_gram``) instead, taken from a refit on the stored spectra."""
    arrays, meta = load_model_file(path, kind="metabolites")
    meta = {k: v for k, v in meta.items() if k not in ("format", "format_version", "library_version", "kind",
                                                        "sha256", "members")}
    arrays = {k: v for k, v in arrays.items() if "_state_" not in k}
    for entry in meta["submodels"]:
        entry.pop("fitted_state_version", None)
    bare = save_model_file(out.with_name("bare_" + out.name), arrays, meta, kind="metabolites")
    refit = load_metabolite_model(bare)  # neither state nor Gram: refitted on the stored spectra
    for i, precursor_type in enumerate(refit.precursor_types):
        arrays[f"s{i}_train_gram"] = refit.submodel(precursor_type).train_gram_
    return save_model_file(out, arrays, meta, kind="metabolites")


def test_a_file_with_a_stored_gram_loads_without_spectrum_kernels_on_training_pairs(mixed, tmp_path, monkeypatch):
    """A file written before the IOKR state was stored holds each sub-model's combined training Gram: loading
    evaluates no spectrum kernel on training pairs, and scores equal, bit for bit, those of the same model refitted
    on its stored spectra and those of today's file (the state, no Gram: scoring never reads the Gram)."""
    arrays, _ = load_model_file(mixed["model"], kind="metabolites")
    assert not [name for name in arrays if name.endswith("train_gram")] and "s0_state_factor" in arrays
    with_gram = _stateless_with_gram(mixed["model"], tmp_path / "gram.npz")
    refitted = load_metabolite_model(tmp_path / "bare_gram.npz")
    recomputed_models = {t: refitted.submodel(t) for t in BOTH}
    rng = np.random.default_rng(3)

    def no_training_pairs(kernel, a, b=None, **kwargs):
        assert b is not None, "a spectrum kernel was evaluated on the training pairs while loading"
        return real(kernel, a, b, **kwargs)

    real = _model.normalized_gram
    monkeypatch.setattr(_model, "normalized_gram", no_training_pairs)
    from_gram, today = load_metabolite_model(with_gram), load_metabolite_model(mixed["model"])
    for t in BOTH:
        stored, recomputed, current = from_gram.submodel(t), recomputed_models[t], today.submodel(t)
        np.testing.assert_array_equal(stored.train_gram_, recomputed.train_gram_)
        assert current.train_gram_ is None
        np.testing.assert_array_equal(stored.weights_, recomputed.weights_)
        S = recomputed.train_spectra_
        candidates = [(rng.random((9, today.fingerprinter.n_features)) < 0.3).astype(float) for _ in range(3)]
        for a, b, c in zip(stored.score_sets(S[:3], candidates), recomputed.score_sets(S[:3], candidates),
                           current.score_sets(S[:3], candidates), strict=True):
            np.testing.assert_array_equal(a, b)
            np.testing.assert_array_equal(a, c)


@pytest.mark.parametrize("damage", ["shape", "nan", "negative_diag"])
def test_a_damaged_stored_gram_is_refused(mixed, tmp_path, damage):
    arrays, meta = load_model_file(_stateless_with_gram(mixed["model"], tmp_path / "gram.npz"), kind="metabolites")
    meta = {k: v for k, v in meta.items() if k not in ("format", "format_version", "library_version", "kind",
                                                        "sha256", "members")}
    arrays = dict(arrays)
    if damage == "shape":
        arrays["s0_train_gram"] = arrays["s0_train_gram"][:-1]
    elif damage == "nan":
        arrays["s0_train_gram"] = arrays["s0_train_gram"].copy()
        arrays["s0_train_gram"][0, 0] = np.nan
    else:
        arrays["s0_train_raw_diags"] = -arrays["s0_train_raw_diags"]
    path = save_model_file(tmp_path / "damaged.npz", arrays, meta, kind="metabolites")
    with pytest.raises(ModelFileError, match="train_gram|train_raw_diags"):
        load_metabolite_model(path).submodel("[M+H]+")


def _resaved(path, out, drop=(), meta_update=None, change=None):
    """The model file re-signed with arrays whose names end with ``drop`` removed, sub-model records updated by
    ``meta_update`` and arrays replaced by ``change(arrays)``."""
    arrays, meta = load_model_file(path, kind="metabolites")
    meta = {k: v for k, v in meta.items() if k not in ("format", "format_version", "library_version", "kind",
                                                        "sha256", "members")}
    arrays = {k: v for k, v in arrays.items() if not any(part in k for part in drop)}
    if change is not None:
        change(arrays)
    for entry in meta["submodels"]:
        entry.update(meta_update or {})
        if drop:
            entry.pop("fitted_state_version", None)
    return save_model_file(out, arrays, meta, kind="metabolites")


def test_loading_restores_the_stored_state_with_the_scores_of_a_refit(mixed, tmp_path, monkeypatch):
    """A model file stores each sub-model's IOKR state (Cholesky factor, transform statistics): loading factors
    nothing and computes no output Gram, and scores equal, bit for bit, those of the same file refitted from its
    stored Gram (a file without the state, as written before it was stored), prior and prediction norms included."""
    refit_path = _resaved(mixed["model"], tmp_path / "refit.npz", drop=("_state_",))
    refit = load_metabolite_model(refit_path)
    refitted = {t: refit.submodel(t) for t in BOTH}

    def forbidden(*args, **kwargs):
        raise AssertionError("the model was factorized or its output Gram computed while loading")

    monkeypatch.setattr(iokr_module, "cholesky_shifted", forbidden)
    monkeypatch.setattr(_sides.OutputSide, "_raw_train_gram", forbidden)
    restored = load_metabolite_model(mixed["model"])
    rng = np.random.default_rng(5)
    for t in BOTH:
        new, old = restored.submodel(t), refitted[t]
        assert new.iokr_.factor_.lower.shape == old.iokr_.factor_.lower.shape
        S = old.train_spectra_
        candidates = [rng.integers(0, 3, (11, restored.fingerprinter.n_features)).astype(float) for _ in range(4)]
        for prior in (0.0, 0.5):
            new.set_params(prior_weight=prior)
            old.set_params(prior_weight=prior)
            for a, b in zip(new.score_sets(S[:4], candidates), old.score_sets(S[:4], candidates), strict=True):
                np.testing.assert_array_equal(a, b)
    monkeypatch.undo()  # prediction norms read the output Gram: computed on first use, the refit's own
    for t in BOTH:
        new, old = restored.submodel(t), refitted[t]
        np.testing.assert_array_equal(new.iokr_.output_.train_gram, old.iokr_.output_.train_gram)
        K, diag = old.test_kernel(old.train_spectra_[:5])
        np.testing.assert_array_equal(prediction_sq_norms(new, K, diag), prediction_sq_norms(old, K, diag))


def test_a_newer_fitted_state_asks_to_retrain(mixed, tmp_path):
    path = _resaved(mixed["model"], tmp_path / "newer.npz", meta_update={"fitted_state_version": 2})
    with pytest.raises(ModelFileError, match=r"fitted state of version 2; this iokr reads version 1: retrain"):
        load_metabolite_model(path).submodel("[M+H]+")


@pytest.mark.parametrize("damage", ["factor_nan", "factor_shape", "factor_diagonal", "shift", "transform", "extra"])
def test_a_damaged_stored_state_is_refused(mixed, tmp_path, damage):
    def change(arrays):
        name = "s0_state_factor"
        if damage == "factor_nan":
            arrays[name] = arrays[name].copy()
            arrays[name][3] = np.nan
        elif damage == "factor_shape":
            arrays[name] = arrays[name][:-1]
        elif damage == "factor_diagonal":
            arrays[name] = arrays[name].copy()
            arrays[name][0] = -arrays[name][0]
        elif damage == "shift":
            arrays["s0_state_shift"] = arrays["s0_state_shift"] * 2
        elif damage == "transform":
            arrays["s0_state_output_row_means"] = arrays["s0_state_output_row_means"][:-1]
        else:
            arrays["s0_state_unknown"] = np.zeros(3)

    path = _resaved(mixed["model"], tmp_path / "damaged.npz", change=change)
    with pytest.raises(ModelFileError, match="is incomplete or inconsistent"):
        load_metabolite_model(path).submodel("[M+H]+")

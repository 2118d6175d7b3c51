"""A scientist's own files end to end: an MZmine-style MGF and a structure CSV through ``index`` and ``identify``.

Checks every status, every carried column, and the top hits against a brute-force ranking of the query's
candidates (selected by hand from the CSV by formula or by mass) with the model itself.
"""

import csv
import json
import re
import sqlite3

import numpy as np
import pytest
from metab_helpers import bundled_lists_and_training, train_small_model

from iokr.apps.metabolites import (
    Cleaning,
    Feedback,
    Fingerprinter,
    MetaboliteIdentifier,
    Spectra,
    concatenate,
    identify,
    load_identifier,
    parse_structure,
    read_spectra,
    save_identifier,
)
from iokr.apps.metabolites.chemistry._adducts import parse_adduct
from iokr.apps.metabolites.chemistry._fingerprints import molecular_formula
from iokr.apps.metabolites.chemistry._formulas import canonical_formula, monoisotopic_mass
from iokr.apps.metabolites.model._hypotheses import score_hypotheses
from iokr.apps.metabolites.ranking._identify import IdentifySettings
from iokr.cli.main import main

N_TRAIN, N_PER_LIST = 30, 40


def _shuffle_formula(formula):
    """The same formula in reverse element order (C19H23ClN2 -> N2ClH23C19)."""
    return "".join(reversed(re.findall(r"[A-Z][a-z]?\d*", formula)))


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A small model, a structure CSV (BOM, PubChemLite-like columns) and an MZmine-style MGF."""
    root = tmp_path_factory.mktemp("lab")
    lists, (a, b), train = bundled_lists_and_training(2, N_TRAIN)
    true = [a["inchikey_rdkit"][:14], b["inchikey_rdkit"][:14]]
    model = train_small_model(root, train)
    db = root / "structures.csv"
    with open(db, "w", encoding="utf-8-sig", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["Identifier", "CompoundName", "InChI", "MonoisotopicMass", "Note"])
        n = 0
        for rows in lists:
            for row in rows[:N_PER_LIST]:
                writer.writerow([f"CID{n}", f"compound {n}", row["id1"], "", "tab\there"])
                n += 1
        writer.writerow(["CID-bad", "garbage", "InChI=1S/not-a-structure", "", ""])
    def peaks(r):
        return "\n".join(f"{mz} {i}" for mz, i in r["peaks"])

    blocks = [
        (f"FEATURE_ID=101\nSCANS=7\nTITLE=first\nPEPMASS={a['precursor_mz']} 1234\nCHARGE=1+\n"
         f"FORMULA={_shuffle_formula(a['formula_rdkit'])}\nADDUCT=[M+H]+\n{peaks(a)}"),
        f"FEATURE_ID=102\nPEPMASS={b['precursor_mz']}\nCHARGE=1+\n{peaks(b)}",  # by mass, adduct assumed
        f"FEATURE_ID=103\nPEPMASS={b['precursor_mz']}\nCHARGE=1+\nADDUCT=[M+Na]+\n{peaks(b)}",
        f"FEATURE_ID=104\nCHARGE=1+\n{peaks(b)}",  # no precursor
        f"FEATURE_ID=105\nPEPMASS={b['precursor_mz']}\nCHARGE=1-\n{peaks(b)}",  # negative on a positive model
        f"FEATURE_ID=106\nPEPMASS=1000.5\nCHARGE=1+\n{peaks(b)}",  # nothing in the mass window
        f"FEATURE_ID=107\nPEPMASS={b['precursor_mz']}\nFORMULA=C2H6Xq\n{peaks(b)}",
        f"FEATURE_ID=108\nPEPMASS={b['precursor_mz']}\nADDUCT=[M+Foo]+\n{peaks(b)}",
        "FEATURE_ID=109\nPEPMASS=200.1\nCHARGE=1+",  # no peaks
    ]
    mgf = root / "features.mgf"
    mgf.write_text("".join(f"BEGIN IONS\n{b}\nEND IONS\n\n" for b in blocks))
    return {"root": root, "model": model, "db": db, "mgf": mgf, "true": true, "records": (a, b)}


def _table(path):
    with open(path, encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle, delimiter="\t"))


def test_index_and_identify_through_the_cli(lab, tmp_path, capsys):
    store = tmp_path / "structures.sqlite"
    before = {p: p.read_bytes() for p in (lab["db"], lab["mgf"], lab["model"])}
    assert main(["metabolites", "index", str(lab["db"]), "--output", str(store), "--model", str(lab["model"])]) == 0
    assert "1 unparsable" in capsys.readouterr().out
    out = tmp_path / "results"
    assert main(["metabolites", "identify", "--model", str(lab["model"]), "--spectra", str(lab["mgf"]),
                 "--candidates", str(store), "--output", str(out), "--top-k", "5"]) == 0
    summary = capsys.readouterr().out.strip().splitlines()[-1]
    assert summary.startswith("9 queries: 2 ok")
    assert {p: p.read_bytes() for p in before} == before  # inputs untouched
    ident = {r["query_id"]: r for r in _table(out / "structure_identifications.tsv")}
    assert list(ident) == [str(i) for i in range(101, 110)]
    expected = {"101": "ok", "102": "ok", "103": "unsupported adduct", "104": "no precursor m/z",
                "105": "unsupported adduct", "106": "no candidates", "107": "invalid formula",
                "108": "unknown adduct", "109": "no peaks"}
    assert {q: r["status"] for q, r in ident.items()} == expected
    a, _ = lab["records"]
    assert ident["101"]["lookup"] == f"formula {canonical_formula(a['formula_rdkit'])}"
    assert ident["102"]["lookup"].startswith("mass ") and "assumed [M+H]+" in ident["102"]["detail"]
    assert ident["103"]["detail"] == "[M+Na]+; model: [M+H]+"
    assert "mass 999.49" in ident["106"]["lookup"]
    for q in ("101", "102"):
        row = ident[q]
        assert row["identifier"].startswith("CID") and row["name"].startswith("compound ")
        assert len(row["inchikey"]) == 27 and row["InChI"].startswith("InChI=") and row["Note"] == "tab\there"
        # 30 training structures give too few hold-out lists for a calibration: no confidence, the reason said
        assert row["confidence"] == ""
    cands = _table(out / "structure_candidates.tsv")
    assert {c["query_id"] for c in cands} == {"101", "102"}
    params = json.loads((out / "parameters.json").read_text())
    assert params["statuses"]["ok"] == 2 and params["model_precursor_types"] == ["[M+H]+"]
    assert not params["calibrated"] and params["calibration"]["[M+H]+"].startswith("not calibrated (calibration "
                                                                                   "needs at least 100 hold-out")
    # the default model has no annotated kernels: nothing annotated, said once
    assert params["annotation"].startswith("not used") and {r["annotation"] for r in ident.values()} == {""}
    _check_against_brute_force(lab, cands, ident)


def _check_against_brute_force(lab, cands, ident):
    """Top-5 of each ranked query == the model's own ranking of the CSV rows that fit the query."""
    model, fingerprinter, cleaning, _ = load_identifier(lab["model"])
    with open(lab["db"], encoding="utf-8-sig") as handle:
        rows = list(csv.DictReader(handle))

    parsed = [(r, parse_structure(r["InChI"])) for r in rows]
    parsed = [(r, m, canonical_formula(molecular_formula(m))) for r, m in parsed if m is not None]
    spectra, _ = read_spectra(lab["mgf"], keep_empty=True)
    cleaned = cleaning.merged(cleaning.single(spectra), groups=list(range(len(spectra))))[0]
    a, b = lab["records"]
    mass_b = parse_adduct("[M+H]+").neutral_mass(b["precursor_mz"])
    fits = {"101": [x for x in parsed if x[2] == canonical_formula(a["formula_rdkit"])],
            "102": [x for x in parsed if abs(monoisotopic_mass(x[2]) - mass_b) <= mass_b * 10e-6]}
    for q, row in (("101", 0), ("102", 1)):
        chosen = fits[q]
        assert int(ident[q]["n_candidates"]) == len(chosen) > 1
        F, _ = fingerprinter.transform([m for _, m, _ in chosen])
        scores = model.score_sets(cleaned[np.array([row])], [F])[0]
        order = np.argsort(-scores, kind="stable")[:5]
        got = [c for c in cands if c["query_id"] == q]
        assert [c["identifier"] for c in got] == [chosen[j][0]["Identifier"] for j in order]
        np.testing.assert_allclose([float(c["score"]) for c in got], scores[order], rtol=1e-5)


def test_identify_refuses_to_touch_inputs_and_existing_outputs(lab, tmp_path, capsys):
    out = tmp_path / "r"
    common = ["metabolites", "identify", "--model", str(lab["model"]), "--spectra", str(lab["mgf"])]
    assert main([*common, "--candidates", str(tmp_path / "typo.sqlite"), "--output", str(out)]) == 2
    assert not (tmp_path / "typo.sqlite").exists() and not out.exists()
    assert main([*common, "--candidates", str(lab["db"]), "--output", str(out)]) == 0
    assert main([*common, "--candidates", str(lab["db"]), "--output", str(out)]) == 2
    assert "--overwrite" in capsys.readouterr().err
    assert main([*common, "--candidates", str(lab["db"]), "--output", str(out), "--overwrite"]) == 0
    # a single CSV is filtered per query, never applied to every query
    ident = {r["query_id"]: r for r in _table(out / "structure_identifications.tsv")}
    assert ident["106"]["status"] == "no candidates"
    foreign = tmp_path / "foreign.sqlite"

    sqlite3.connect(foreign).execute("CREATE TABLE t (x)").connection.commit()
    digest = foreign.read_bytes()
    assert main([*common, "--candidates", str(foreign), "--output", str(tmp_path / "f")]) == 2
    assert "not an iokr structure database" in capsys.readouterr().err and foreign.read_bytes() == digest


def test_training_on_another_precursor_type(lab, tmp_path, capsys):
    """A GNPS-style MGF of [M+Na]+ spectra with InChI only: the model records [M+Na]+ and refuses [M+H]+."""
    records = [json.loads(line) for line in (lab["root"] / "train.jsonl").read_text().splitlines()]
    blocks = [f"BEGIN IONS\nPEPMASS={r['precursor_mz'] + 21.98194}\nCHARGE=1+\nADDUCT=[M+Na]+\nINCHI={r['inchi']}\n"
              + "\n".join(f"{mz} {i}" for mz, i in r["peaks"]) + "\nEND IONS\n" for r in records if r.get("inchi")]
    train = tmp_path / "sodium.mgf"
    train.write_text("".join(blocks))
    model = tmp_path / "sodium.npz"
    assert main(["metabolites", "train", "--spectra", str(train), "--output", str(model), "--alphas", "0.3",
                 "--folds", "2"]) == 0
    _, _, _, meta = load_identifier(model)
    assert meta["extra"]["precursor_types"] == ["[M+Na]+"]
    out = tmp_path / "out"
    assert main(["metabolites", "identify", "--model", str(model), "--spectra", str(lab["mgf"]), "--candidates",
                 str(lab["db"]), "--output", str(out)]) == 0
    ident = {r["query_id"]: r for r in _table(out / "structure_identifications.tsv")}
    assert ident["101"]["status"] == "unsupported adduct" and ident["101"]["detail"] == "[M+H]+; model: [M+Na]+"
    assert ident["103"]["status"] == "no candidates"  # [M+Na]+ query: accepted, mass window from its own adduct
    assert main(["metabolites", "identify", "--model", str(model), "--spectra", str(lab["mgf"]), "--candidates",
                 str(lab["db"]), "--output", str(tmp_path / "assume"), "--adduct-policy", "assume"]) == 0
    ident = {r["query_id"]: r for r in _table(tmp_path / "assume" / "structure_identifications.tsv")}
    assert ident["101"]["status"] == "ok" and ident["101"]["detail"].startswith("warning: [M+H]+ ranked")


def test_query_scores_do_not_depend_on_the_batch(lab):
    """Each query scored alone, and shuffled among hostile queries (absurd precursor and peak m/z, many peaks):
    the same scores bit for bit."""
    model, fingerprinter, cleaning, _ = load_identifier(lab["model"])
    spectra, _ = read_spectra(lab["mgf"], keep_empty=True)
    rows = [i for i in range(len(spectra)) if spectra.n_peaks[i] > 0 and np.isfinite(spectra.precursor_mz[i])]
    queries = cleaning.merged(cleaning.single(spectra[np.array(rows)]), groups=list(range(len(rows))))[0]
    rng = np.random.default_rng(0)
    hostile = Spectra.from_peak_lists(
        [np.column_stack([rng.uniform(1e5, 1e6, 50), rng.uniform(0, 1, 50)]), np.array([[1e-3, 1.0]]),
         np.column_stack([rng.uniform(50, 500, 400), rng.uniform(0, 1, 400)])],
        np.array([1e17, 1e-3, 3e3]))
    with open(lab["db"], encoding="utf-8-sig") as handle:
        F, _ = fingerprinter.transform([r["InChI"] for r in csv.DictReader(handle)][:30])
    alone = [model.score_sets(queries[np.array([i])], [F])[0] for i in range(len(queries))]
    order = rng.permutation(len(queries) + len(hostile))
    batch = concatenate([queries, hostile])[order]
    mixed = model.score_sets(batch, [F] * len(order))
    for position, original in enumerate(order):
        if original < len(queries):
            np.testing.assert_array_equal(mixed[position], alone[original])


def test_identify_settings_are_checked_and_match_the_command_line():
    for bad in ({"top_k": 0}, {"ppm": -1.0}, {"adduct_policy": "guess"}, {"batch_size": True},
                {"ion_mode": "Positive"}, {"ion_mode": ""}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            IdentifySettings(**bad)


def test_identify_with_annotated_kernels(lab, tmp_path):
    """A model with annotated kernels: a query giving its formula is annotated under it (a low-resolution one falls
    back), a query without one under each formula of its mass window, scored as :func:`score_hypotheses` scores
    it; the annotation column, the parameters and the log say so."""
    spectra, _ = read_spectra(lab["root"] / "train.jsonl", require_structure=True)
    cleaning = Cleaning()
    merged, _ = cleaning.merged(cleaning.single(spectra))
    fingerprinter = Fingerprinter()
    Y, ok = fingerprinter.transform([m["inchi"] for m in merged.metadata])
    model = MetaboliteIdentifier(kernels=("ppk", "fragments", "losses"), weights="uniform", alpha=0.3)
    model.fit(merged[np.flatnonzero(ok)], Y[ok])
    path = save_identifier(tmp_path / "annotated.npz", model, fingerprinter, cleaning,
                           extra={"precursor_types": ["[M+H]+"]})
    a, b = lab["records"]
    fa, fb = canonical_formula(a["formula_rdkit"]), canonical_formula(b["formula_rdkit"])

    def block(qid, r, formula="", extra=""):
        head = f"FEATURE_ID={qid}\nPEPMASS={r['precursor_mz']}\nCHARGE=1+\n" + (f"FORMULA={formula}\n" * bool(formula))
        return f"BEGIN IONS\n{head}" + "\n".join(f"{mz} {i}" for mz, i in r["peaks"]) + extra + "\nEND IONS\n"

    mgf = tmp_path / "annotated.mgf"
    mgf.write_text(block(201, b, _shuffle_formula(fb)) + block(202, b) + block(203, a, fa)
                   + block(204, b, fb, f"\n{b['precursor_mz'] + 5.0} 500"))
    lines = []
    result = identify(mgf, lab["db"], path, IdentifySettings(top_k=100), feedback=Feedback(log=lines.append))
    ident = {r["query_id"]: r for r in result.identifications}
    assert {r["status"] for r in ident.values()} == {"ok"}
    explained = re.fullmatch(rf"{fb}: (\d+)/(\d+) peaks explained", ident["201"]["annotation"])
    assert explained and 0 < int(explained[1]) <= int(explained[2])
    peaks = explained[0][len(fb) + 2:]
    assert ident["202"]["annotation"] == f"1/1 candidate formulas annotated; top hit {fb}: {peaks}"
    assert ident["203"]["annotation"] == f"{fa}: fallback to the unannotated kernels (low_resolution)"
    # the query cleaning drops peaks heavier than the precursor before any annotation: counted
    assert ident["204"]["annotation"] == ident["201"]["annotation"] + "; 1 peak above the precursor dropped by cleaning"
    totals = result.parameters["annotation"]
    assert totals == {"queries": 4, "queries_annotated": 3, "queries_with_given_formula": 3, "formula_hypotheses": 4,
                      "hypotheses_annotated": 3, "fallbacks": {"low_resolution": 1}, "peaks_above_precursor": 0,
                      "peaks_above_precursor_dropped_by_cleaning": 1}
    assert any(line.startswith("annotation: 3/4 scored queries annotated") for line in lines)
    # query 202 by hand: its mass window's rows of the CSV, with their formulas, through score_hypotheses; the
    # same scores as query 201, which gives the formula
    loaded, fingerprinter, cleaning, _ = load_identifier(path)
    with open(lab["db"], encoding="utf-8-sig") as handle:
        parsed = [(r, parse_structure(r["InChI"])) for r in csv.DictReader(handle)]
    parsed = [(r, m, canonical_formula(molecular_formula(m))) for r, m in parsed if m is not None]
    mass = parse_adduct("[M+H]+").neutral_mass(b["precursor_mz"])
    chosen = [x for x in parsed if abs(monoisotopic_mass(x[2]) - mass) <= mass * 10e-6]
    F, _ = fingerprinter.transform([m for _, m, _ in chosen])
    queries, _ = read_spectra(mgf, keep_empty=True)
    cleaned = cleaning.merged(cleaning.single(queries), groups=list(range(len(queries))))[0]
    (scores,), _ = score_hypotheses(loaded, cleaned[np.array([1])], ["[M+H]+"], F, [np.arange(len(chosen))],
                                    [[f for _, _, f in chosen]])
    order = np.argsort(-scores, kind="stable")
    for q in ("201", "202"):
        got = [c for c in result.candidates if c["query_id"] == q]
        assert [c["identifier"] for c in got] == [chosen[j][0]["Identifier"] for j in order]
        np.testing.assert_allclose([float(c["score"]) for c in got], scores[order], rtol=1e-5)


@pytest.mark.parametrize("output_kernel", ["gaussian_tanimoto", "linear"])
def test_structure_prior_column_with_annotated_kernels_and_a_structure_database(lab, tmp_path, output_kernel):
    """structure_candidates.tsv under formula hypotheses, from an indexed database: every candidate's score is its
    spectrum-only score (--prior-weight 0) + the weight x its structure_prior column, for the prior read from the
    scoring block (kernel output) and the one computed apart (linear output)."""
    spectra, _ = read_spectra(lab["root"] / "train.jsonl", require_structure=True)
    cleaning = Cleaning()
    merged, _ = cleaning.merged(cleaning.single(spectra))
    fingerprinter = Fingerprinter()
    Y, ok = fingerprinter.transform([m["inchi"] for m in merged.metadata])
    model = MetaboliteIdentifier(kernels=("ppk", "fragments"), weights="uniform", alpha=0.3, prior_weight=0.7,
                                 prior_neighbors=3, output_kernel=output_kernel)
    model.fit(merged[np.flatnonzero(ok)], Y[ok])
    path = save_identifier(tmp_path / "m.npz", model, fingerprinter, cleaning, extra={"precursor_types": ["[M+H]+"]})
    store = tmp_path / "s.sqlite"
    assert main(["metabolites", "index", str(lab["db"]), "--output", str(store), "--model", str(path)]) == 0

    def run(weight):
        result = identify(lab["mgf"], store, path, IdentifySettings(top_k=100, prior_weight=weight))
        return {(c["query_id"], c["identifier"]): c for c in result.candidates}

    with_prior, alone, heavy = run(None), run(0.0), run(2.5)
    assert len(alone) > 5 and set(with_prior) == set(alone) == set(heavy)
    for key, b in alone.items():
        prior = float(b["structure_prior"])
        assert with_prior[key]["structure_prior"] == heavy[key]["structure_prior"] == b["structure_prior"]
        assert float(with_prior[key]["score"]) == pytest.approx(float(b["score"]) + 0.7 * prior, abs=1e-4)
        assert float(heavy[key]["score"]) == pytest.approx(float(b["score"]) + 2.5 * prior, abs=2e-4)
    assert len({b["structure_prior"] for b in alone.values()}) > 1


def test_the_python_api_returns_typed_results_and_writes_the_cli_folder_byte_for_byte(lab, tmp_path, capsys):
    """``identify`` (issue #29): typed rows (floats, None for missing), and ``results.write`` writes the same bytes
    as the command line, whose candidate table is streamed through :class:`CandidateTableWriter` instead."""
    store = tmp_path / "structures.sqlite"
    assert main(["metabolites", "index", str(lab["db"]), "--output", str(store), "--model", str(lab["model"])]) == 0
    cli_out = tmp_path / "cli"
    assert main(["metabolites", "identify", "--model", str(lab["model"]), "--spectra", str(lab["mgf"]),
                 "--candidates", str(store), "--output", str(cli_out), "--top-k", "5"]) == 0
    capsys.readouterr()
    results = identify(lab["mgf"], store, lab["model"], IdentifySettings(top_k=5))
    assert repr(results).startswith("IdentifyResults(9 queries: 2 ok")
    rows = {r["query_id"]: r for r in results.identifications}
    assert isinstance(rows["101"]["score"], float) and isinstance(rows["101"]["precursor_mz"], float)
    assert rows["101"]["confidence"] is None  # not calibrated (30 training structures)
    assert rows["104"]["precursor_mz"] is None and "score" not in rows["104"]
    assert all(isinstance(c["score"], float) and isinstance(c["structure_prior"], float) and isinstance(c["rank"], int)
               for c in results.candidates)
    for q in ("101", "102"):
        ranks = [c["rank"] for c in results.candidates if c["query_id"] == q]
        assert ranks == list(range(1, len(ranks) + 1)) and 1 <= len(ranks) <= 5
    api_out = results.write(tmp_path / "api")
    for name in ("structure_identifications.tsv", "structure_candidates.tsv"):
        assert (api_out / name).read_bytes() == (cli_out / name).read_bytes(), name
    api_params, cli_params = (json.loads((d / "parameters.json").read_text()) for d in (api_out, cli_out))
    assert api_params == cli_params
    # an existing folder is replaced only when asked, and never one holding other files
    with pytest.raises(FileExistsError, match="overwrite=True"):
        results.write(api_out)
    results.write(api_out, overwrite=True)
    (api_out / "mine.txt").write_text("x")
    with pytest.raises(FileExistsError, match="mine.txt"):
        results.write(api_out, overwrite=True)
    assert (api_out / "mine.txt").read_text() == "x"
    pandas = pytest.importorskip("pandas")
    frame = results.identifications_frame()
    assert isinstance(frame, pandas.DataFrame) and list(frame["query_id"]) == [str(i) for i in range(101, 110)]
    assert frame["score"].dtype.kind == "f"

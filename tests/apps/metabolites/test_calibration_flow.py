"""The decoy calibration (issue #30) carried through ``train``, ``identify`` and ``evaluate``: the features in the
model file, the calibration data described in ``parameters.json`` and ``summary.json``, and each ``confidence`` equal
to the calibration applied to the query's whole list scored by the model itself."""

import csv
import json

import numpy as np
import pytest
from metab_helpers import bundled_lists_and_training

from iokr.apps.metabolites import load_identifier, parse_structure, read_spectra
from iokr.apps.metabolites.model._submodels import load_metabolite_model
from iokr.cli.main import main


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A model trained with the default calibration on 500 bundled structures (enough lists with isomers for a
    calibration), three bundled candidate lists and their true structures' spectra."""
    root = tmp_path_factory.mktemp("calibration_flow")
    lists, queries, train = bundled_lists_and_training(3, 500)
    folder = root / "lists"
    folder.mkdir()
    for rows, query in zip(lists, queries, strict=True):
        name = f"scoring_list={query['formula_rdkit']}_spec=X_id={query['inchikey_rdkit']}.csv"
        with (folder / name).open("w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    (root / "train.jsonl").write_text("\n".join(json.dumps(r) for r in train) + "\n")
    (root / "queries.jsonl").write_text("\n".join(json.dumps(r) for r in queries) + "\n")
    model = root / "model.npz"
    assert main(["metabolites", "train", "--spectra", str(root / "train.jsonl"), "--output", str(model),
                 "--alphas", "0.3", "--folds", "3", "--quiet"]) == 0
    return {"root": root, "model": model, "lists": lists, "queries": queries, "folder": folder}


def test_the_model_file_holds_the_decoy_calibration_with_its_features(trained):
    models = load_metabolite_model(trained["model"])
    record = models.record("[M+H]+")
    calibration = models.calibration("[M+H]+")
    assert calibration is not None, record.get("calibration_problem")
    assert calibration.features == ("margin", "size", "gap_to_5th", "n_within_margin", "list_softmax")
    assert calibration.size_weight <= 0.0 and calibration.temperature > 0 and calibration.softmax_weight != 0
    data = record["calibration_data"]
    assert data["features"][2:] == ["gap_to_5th", "n_within_margin", "list_softmax"] and data["n_examples"] >= 100
    assert data["family"] == "logistic"
    assert data["decoys"]["source"].startswith("bundled decoys_moses") and "log-normal" in data["decoys"]["list_size"]
    assert data["size_weight_clipped"] == calibration.size_weight_clipped


def test_identify_confidence_is_the_calibration_of_the_whole_list(trained, tmp_path):
    out = tmp_path / "identified"
    assert main(["metabolites", "identify", "--model", str(trained["model"]), "--spectra",
                 str(trained["root"] / "queries.jsonl"), "--candidates", str(trained["folder"]), "--output",
                 str(out), "--quiet"]) == 0
    params = json.loads((out / "parameters.json").read_text())
    assert params["calibrated"] and params["calibration_data"]["[M+H]+"]["features"][2:] == [
        "gap_to_5th", "n_within_margin", "list_softmax"]
    with (out / "structure_identifications.tsv").open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    model, fingerprinter, cleaning, _ = load_identifier(trained["model"])
    calibration = load_metabolite_model(trained["model"]).calibration("[M+H]+")
    spectra, _ = read_spectra(trained["root"] / "queries.jsonl", keep_empty=True)
    cleaned = cleaning.merged(cleaning.single(spectra), groups=list(range(len(spectra))))[0]
    checked = 0
    for q, (row, candidates) in enumerate(zip(rows, trained["lists"], strict=True)):
        if row["status"] != "ok":
            continue
        mols = [m for m in (parse_structure(c["id1"]) for c in candidates) if m is not None]
        assert int(row["n_candidates"]) == len(mols)
        F, _ = fingerprinter.transform(mols)
        scores = model.score_sets(cleaned[np.array([q])], [F])[0]
        assert float(row["confidence"]) == pytest.approx(calibration.confidence([scores])[0], abs=6e-4)
        checked += 1
    assert checked >= 2


def test_evaluate_reports_the_calibration_data_and_reliability(trained, tmp_path):
    out = tmp_path / "evaluated"
    spectra = trained["root"] / "all.jsonl"
    spectra.write_text((trained["root"] / "train.jsonl").read_text() + (trained["root"] / "queries.jsonl").read_text())
    assert main(["metabolites", "evaluate", "--spectra", str(spectra), "--candidates", str(trained["folder"]),
                 "--output", str(out), "--alphas", "0.3", "--folds", "3", "--quiet"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    part = summary["per_polarity"]["positive"] if "per_polarity" in summary else summary
    assert part["calibration_data"]["features"][2:] == ["gap_to_5th", "n_within_margin", "list_softmax"]
    assert part["confidence"]["per_structure"]["n"] == 3
    # beside each ECE, the ECE of a perfectly calibrated confidence on the same queries (issue #30)
    assert part["confidence"]["per_structure"]["perfect_ece"]["n_simulations"] == 2000
    assert "perfect_ece_shared" in part["confidence"]["per_spectrum"]
    assert "perfectly calibrated at n=3" in (out / "summary.md").read_text()
    assert "gap_to_5th" in (out / "summary.md").read_text()

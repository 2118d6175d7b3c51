"""End to end on a slice of the bundled data: train / identify / evaluate, model files, the command line."""

import csv
import gzip
import json
import tarfile

import numpy as np
import pytest

from iokr import config_context
from iokr.apps.metabolites import (
    CandidateStore,
    Cleaning,
    Feedback,
    Fingerprinter,
    MetaboliteIdentifier,
    TrainingConfig,
    evaluate,
    load_identifier,
    read_candidate_lists,
    read_spectra,
    save_identifier,
)
from iokr.apps.metabolites.defaults import DEFAULT_PARAMS
from iokr.apps.metabolites.selection._pipeline import evaluate_lists, query_spectra, training_set
from iokr.apps.metabolites.spectra._spectra import clean_spectra
from iokr.cli.main import main
from iokr.datasets._metabolites import BUNDLED_METABOLITES
from iokr.metrics import true_candidate_rank

N_LISTS, N_TRAIN = 5, 25


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """The 5 smallest bundled lists, one extra list lacking its true structure, their spectra + 40 others."""
    root = tmp_path_factory.mktemp("tiny")
    lists_dir = root / "lists"
    lists_dir.mkdir()
    with tarfile.open(BUNDLED_METABOLITES["candidates"]) as tar:
        members = sorted((m for m in tar.getmembers() if m.name.endswith(".csv")), key=lambda m: m.size)[:N_LISTS]
        for m in members:
            (lists_dir / m.name.split("/")[-1]).write_bytes(tar.extractfile(m).read())
    true = {m.name.rsplit("_id=", 1)[1][:14] for m in members}
    first = (lists_dir / members[0].name.split("/")[-1]).read_text()
    (lists_dir / "scoring_list=C25H27N9O8S2_spec=Z_id=ZZZZZZZZZZZZZZ-UHFFFAOYSA-N.csv").write_text(first)
    records, others = [], {}
    with gzip.open(BUNDLED_METABOLITES["spectra"], "rt") as handle:
        for line in handle:
            rec = json.loads(line)
            key = rec["inchikey_rdkit"][:14]
            if key in true:
                records.append(rec)
            elif len(others) < N_TRAIN or key in others:
                others.setdefault(key, []).append(rec)
    records += [r for recs in others.values() for r in recs]
    spectra_path = root / "spectra.jsonl"
    spectra_path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    return {"root": root, "lists": lists_dir, "spectra": spectra_path, "true": true}


def test_evaluate_job_marks_lists_and_matches_direct_scoring(tiny):
    config = TrainingConfig(grid={"alpha": (0.1, 1.0), "input_gamma": (None,), "output_gamma": (1.0,)}, n_folds=2)
    summary = evaluate(tiny["spectra"], tiny["lists"], config, feedback=Feedback(log=lambda m: None)).summary
    assert summary["n_lists"] == N_LISTS + 1
    assert summary["n_lists_without_true_structure"] == 1
    assert summary["n_lists_with_spectra"] == N_LISTS
    for key in ("per_structure", "per_spectrum", "published"):
        assert set(summary[key]) == {"top1", "top5", "top10", "top20"}
    missing = [d for d in summary["lists"] if not d["true_in_list"]]
    assert len(missing) == 1 and missing[0].get("rank") is None
    # published top-k over all lists: the list lacking its true structure counts as a miss
    pub = [d.get("published_rank", np.inf) for d in summary["lists"]]
    assert summary["published"]["top20"] == pytest.approx(100.0 * np.sum(np.array(pub) <= 20) / (N_LISTS + 1))
    assert summary["n_train_structures"] <= N_TRAIN and len(summary["cv"]) == 2


def test_model_file_roundtrip_gives_identical_scores(tiny, tmp_path):
    fp = Fingerprinter()
    store = CandidateStore(":memory:", fp)
    spectra, _ = read_spectra(tiny["spectra"], require_structure=True)
    lists = read_candidate_lists(tiny["lists"], store)
    cleaning = Cleaning()
    train = training_set(spectra, store, cleaning, exclude_keys=[lst.true_key for lst in lists])
    assert not set(train.keys) & tiny["true"]  # structure-disjoint
    model = MetaboliteIdentifier(kernels=("ppk", "binned"), alpha=0.5).fit(train.spectra, train.Y)
    before = evaluate_lists(model, spectra, lists, store, cleaning)
    # evaluate_job keeps only the spectra of the lists' true structures: the same summary
    queries = query_spectra(spectra, [lst.true_key for lst in lists])
    assert 0 < len(queries) < len(spectra)
    assert evaluate_lists(model, queries, lists, store, cleaning) == before
    path = save_identifier(tmp_path / "m.npz", model, fp, cleaning)
    loaded, fp2, cleaning2, meta = load_identifier(path)
    after = evaluate_lists(loaded, spectra, lists, store, cleaning2)
    assert [d.get("rank") for d in before["lists"]] == [d.get("rank") for d in after["lists"]]
    np.testing.assert_allclose(loaded.weights_, model.weights_)
    # per-structure ranks equal a direct rank computation from the model's scores
    d = next(d for d in before["lists"] if d.get("rank") is not None)
    lst = next(lst for lst in lists if lst.name == d["list"])
    cleaned = cleaning.single(spectra)
    rows = np.flatnonzero(np.array(cleaned.structure_keys()) == lst.true_key[:14])
    query, _ = cleaning.merged(cleaned[rows], groups=[0] * rows.size)
    scores = model.score_sets(query, [store.fingerprints(lst.structures)])[0]
    assert d["rank"] == true_candidate_rank(scores, lst.true_index)


def test_evaluate_lists_scores_both_query_kinds_as_alone_and_at_any_budget(tiny):
    """One scoring pass serves merged and single-spectrum queries: each rank equals the query's own scoring, and the
    ranks do not depend on the working-memory budget (a tiny one splits the pool into many blocks)."""
    store = CandidateStore(fingerprinter=Fingerprinter())
    spectra, _ = read_spectra(tiny["spectra"], require_structure=True)
    lists = read_candidate_lists(tiny["lists"], store)
    cleaning = Cleaning()
    train = training_set(spectra, store, cleaning, exclude_keys=[lst.true_key for lst in lists])
    model = MetaboliteIdentifier(kernels=("ppk", "binned"), alpha=0.5).fit(train.spectra, train.Y)
    summary = evaluate_lists(model, spectra, lists, store, cleaning)
    # 0.1 MiB: one candidate row per block (a row of 2,215 count features and its kernel row need ~54 KB)
    with config_context(working_memory=0.1):
        small = evaluate_lists(model, spectra, lists, store, cleaning)
    for key in ("rank", "spectrum_ranks"):
        assert [d.get(key) for d in small["lists"]] == [d.get(key) for d in summary["lists"]]
    cleaned = cleaning.single(spectra)
    checked = 0
    for d, lst in zip(summary["lists"], lists, strict=True):
        if d.get("rank") is None:
            continue
        rows = np.flatnonzero((np.array(cleaned.structure_keys()) == lst.true_key[:14]) & (cleaned.n_peaks > 0))
        F = store.fingerprints(lst.structures)
        single = clean_spectra(cleaned[rows], min_relative_intensity=0.0, max_peaks=cleaning.max_peaks_merged,
                               remove_precursor=False)
        alone = [true_candidate_rank(s, lst.true_index) for s in model.score_sets(single, [F] * rows.size)]
        assert d["spectrum_ranks"] == alone
        checked += rows.size
    assert checked > 1


def test_cli_train_identify_evaluate_and_errors(tiny, tmp_path, capsys):
    model = tmp_path / "model.npz"
    common = ["--alphas", "0.3", "--folds", "2"]
    assert main(["metabolites", "train", "--spectra", str(tiny["spectra"]), "--output", str(model),
                 "--exclude-candidates", str(tiny["lists"]), *common]) == 0
    one_list = next(tiny["lists"].iterdir())
    out = tmp_path / "ranked"
    assert main(["metabolites", "identify", "--model", str(model), "--spectra", str(tiny["spectra"]),
                 "--candidates", str(one_list), "--output", str(out), "--top-k", "3"]) == 0
    lines = (out / "structure_candidates.tsv").read_text().splitlines()
    assert lines[0].split("\t")[:4] == ["query_id", "rank", "identifier", "name"] and len(lines) > 3
    # a folder of lists: queries are matched by formula; formulas without a list are reported, not dropped
    assert main(["metabolites", "identify", "--model", str(model), "--spectra", str(tiny["spectra"]),
                 "--candidates", str(tiny["lists"]), "--output", str(tmp_path / "r")]) == 0

    table = list(csv.DictReader((tmp_path / "r" / "structure_identifications.tsv").open(), delimiter="\t"))
    params = json.loads((tmp_path / "r" / "parameters.json").read_text())
    assert params["structure_prior"] == {"weight": DEFAULT_PARAMS["prior_weight"], "neighbors": DEFAULT_PARAMS["prior_neighbors"]}
    # --prior-weight 0: the spectrum alone; the model's calibration does not hold for it, so no confidence
    assert main(["metabolites", "identify", "--model", str(model), "--spectra", str(tiny["spectra"]),
                 "--candidates", str(tiny["lists"]), "--output", str(tmp_path / "r0"), "--prior-weight", "0"]) == 0
    spectrum_only = list(csv.DictReader((tmp_path / "r0" / "structure_identifications.tsv").open(), delimiter="\t"))
    assert json.loads((tmp_path / "r0" / "parameters.json").read_text())["structure_prior"]["weight"] == 0.0
    # (this tiny model has too few hold-out lists for a calibration in any case: the reason is given)
    assert params["calibration"]["[M+H]+"].startswith("not calibrated (calibration needs at least")
    assert json.loads((tmp_path / "r0" / "parameters.json").read_text())["calibration"]["[M+H]+"] == \
        "not used (--prior-weight differs from the model's)"
    assert all(r["confidence"] == "" for r in spectrum_only)
    assert [r["status"] for r in spectrum_only] == [r["status"] for r in table]
    assert any(a["score"] != b["score"] for a, b in zip(table, spectrum_only, strict=True) if a["status"] == "ok")
    # structure_candidates.tsv: score = spectrum score + prior_weight x structure_prior, candidate by candidate
    def candidates(folder):
        rows = csv.DictReader((tmp_path / folder / "structure_candidates.tsv").open(), delimiter="\t")
        return {(r["query_id"], r["structure"]): r for r in rows}

    with_prior, without = candidates("r"), candidates("r0")
    shared = set(with_prior) & set(without)
    assert len(shared) > 5 and list(next(iter(with_prior.values())))[-2:] == ["score", "structure_prior"]
    for key in shared:
        a, b = with_prior[key], without[key]
        assert a["structure_prior"] == b["structure_prior"] and 0 <= float(a["structure_prior"]) <= 1
        assert float(a["score"]) == pytest.approx(float(b["score"]) + DEFAULT_PARAMS["prior_weight"]
                                                  * float(a["structure_prior"]), abs=2e-4)
    statuses = {r["status"] for r in table}
    assert {"ok", "no candidates"} <= statuses <= {"ok", "no candidates", "no peaks after cleaning"}
    assert all(r["score"] == "" for r in table if r["status"] != "ok")
    out_dir = tmp_path / "eval"
    assert main(["metabolites", "evaluate", "--spectra", str(tiny["spectra"]), "--candidates", str(tiny["lists"]),
                 "--output", str(out_dir), "--report", *common]) == 0
    summary = json.loads((out_dir / "summary.json").read_text())
    assert {"per_structure", "per_spectrum", "published"} <= set(summary)
    assert (out_dir / "report.png").stat().st_size > 1000 and (out_dir / "report.html").exists()
    capsys.readouterr()
    # errors: one line on stderr, exit code 2, no traceback
    bad = tmp_path / "bad.npz"
    bad.write_bytes(model.read_bytes()[:500])
    cases = [["metabolites", "identify", "--model", str(bad), "--spectra", str(tiny["spectra"]), "--candidates",
              str(one_list), "--output", str(tmp_path / "new")],
             ["metabolites", "evaluate", "--spectra", str(tmp_path / "nope.jsonl"), "--candidates",
              str(tiny["lists"]), "--output", str(out_dir)],
             ["metabolites", "evaluate", "--spectra", str(tiny["spectra"]), "--candidates", str(tiny["lists"]),
              "--output", str(out_dir), "--folds", "1"],
             ["metabolites", "train", "--spectra", str(tiny["spectra"]), "--output", str(tmp_path / "m2.npz"),
              "--prior-weight", "-1"],
             ["metabolites", "train", "--spectra", str(tiny["spectra"]), "--output", str(tmp_path / "m2.npz"),
              "--prior-neighbors", "0"],
             ["metabolites", "identify", "--model", str(model), "--spectra", str(tiny["spectra"]), "--candidates",
              str(one_list), "--output", str(tmp_path / "new"), "--prior-weight", "nan"]]
    for argv in cases:
        assert main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "error:" in err[0] and "Traceback" not in err[0]

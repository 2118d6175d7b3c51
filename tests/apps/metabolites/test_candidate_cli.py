"""Candidate tables through the command line: columns named like result columns are prefixed (``index`` +
``identify``), and per-query lists (a folder, a ``.tar.gz``, one table with a ``query_id`` column) rank each query
among its own list, checked against the model's own scores of that list."""

import csv
import json
import tarfile

import numpy as np
import pytest
from metab_helpers import bundled_lists_and_training

from iokr.apps.metabolites import load_identifier, parse_structure, read_spectra
from iokr.cli.main import main

Chem = pytest.importorskip("rdkit.Chem")
N_TRAIN, N_PER_LIST = 25, 30


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    """A small model, two bundled lists (rows: InChI) and an MGF querying their true structures."""
    root = tmp_path_factory.mktemp("cands")
    rows, (a, b), train = bundled_lists_and_training(2, N_TRAIN, skip=2)
    lists = [[r["id1"] for r in list_rows][:N_PER_LIST] for list_rows in rows]
    (root / "train.jsonl").write_text("\n".join(json.dumps(r) for r in train) + "\n")
    model = root / "model.npz"
    assert main(["metabolites", "train", "--spectra", str(root / "train.jsonl"), "--output", str(model),
                 "--alphas", "0.3", "--folds", "2"]) == 0

    def block(fid, rec):
        peaks = "\n".join(f"{mz} {i}" for mz, i in rec["peaks"])
        return f"BEGIN IONS\nFEATURE_ID={fid}\nPEPMASS={rec['precursor_mz']}\nCHARGE=1+\nADDUCT=[M+H]+\n{peaks}\nEND IONS\n"

    mgf = root / "features.mgf"
    mgf.write_text(block(101, a) + block(102, b) + block(103, b))
    salt = Chem.MolToInchi(Chem.MolFromSmiles(Chem.MolToSmiles(parse_structure(lists[0][0])) + ".Cl.O"))
    return {"root": root, "model": model, "mgf": mgf, "lists": lists, "salt": salt}


def _table(path):
    with open(path, encoding="utf-8", newline="") as handle:
        header = handle.readline().rstrip("\r\n").split("\t")
        handle.seek(0)
        return header, list(csv.DictReader(handle, delimiter="\t"))


def _identify(bench, candidates, out, *extra):
    assert main(["metabolites", "identify", "--model", str(bench["model"]), "--spectra", str(bench["mgf"]),
                 "--candidates", str(candidates), "--output", str(out), "--top-k", "5", *extra]) == 0
    ident_header, ident = _table(out / "structure_identifications.tsv")
    cand_header, cands = _table(out / "structure_candidates.tsv")
    for header in (ident_header, cand_header):
        assert len(header) == len(set(header)), header
    return {r["query_id"]: r for r in ident}, cands, json.loads((out / "parameters.json").read_text())


def test_clashing_columns_are_prefixed_through_index_and_identify(bench, tmp_path, capsys):
    rows = bench["lists"][0] + bench["lists"][1]
    table = tmp_path / "clash.csv"
    with open(table, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["Identifier", "InChI", "adduct", "rank", "score", "status", "query_id", "candidate_adduct",
                         "detail", "Note"])
        for i, inchi in enumerate(rows):
            writer.writerow([f"C{i}", inchi, f"ad{i}", f"r{i}", f"s{i}", f"st{i}", f"q{i}", f"ca{i}", f"d{i}", "n"])
    with open(table, "a", newline="", encoding="utf-8") as handle:  # a salt of the first structure, and a blank
        csv.writer(handle).writerows([["SALT", f"{bench['salt']}", *["x"] * 8], ["NONE", "N/A", *["x"] * 8]])
    db = tmp_path / "clash.sqlite"
    assert main(["metabolites", "index", str(table), "--output", str(db), "--model", str(bench["model"])]) == 0
    out = capsys.readouterr().out
    assert "1 without a structure, 1 duplicates merged" in out and "1 salts/mixtures reduced to their parent" in out
    ident, cands, params = _identify(bench, db, tmp_path / "out")
    assert {q: r["status"] for q, r in ident.items()} == {"101": "ok", "102": "ok", "103": "ok"}
    assert params["candidate_columns_renamed"] == {
        "adduct": "candidate_candidate_adduct", "rank": "candidate_rank", "score": "candidate_score",
        "status": "candidate_status", "query_id": "candidate_query_id", "detail": "candidate_detail"}
    for row in [*ident.values(), *cands]:
        i = row["identifier"][1:]
        assert row["candidate_candidate_adduct"] == f"ad{i}" and row["candidate_adduct"] == f"ca{i}"
        assert row["candidate_rank"] == f"r{i}" and row["candidate_score"] == f"s{i}"
        assert row["candidate_status"] == f"st{i}" and row["candidate_query_id"] == f"q{i}"
        assert row["candidate_detail"] == f"d{i}" and row["Note"] == "n"
    for row in ident.values():  # the result columns are the run's own
        assert row["adduct"] == "[M+H]+" and row["status"] == "ok" and row["query_id"] in ("101", "102", "103")
    assert [c["rank"] for c in cands if c["query_id"] == "101"] == ["1", "2", "3", "4", "5"]
    captured = capsys.readouterr()
    assert "candidate columns renamed (their names are output columns): adduct -> candidate_candidate_adduct" in (
        captured.err + captured.out)


def _write_list(path, inchis, delimiter=","):
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, delimiter=delimiter)
        writer.writerow(["Identifier", "InChI"])
        writer.writerows((f"{path.stem}-{i}", s) for i, s in enumerate(inchis))


def _per_query_inputs(bench, tmp_path):
    """The same per-query lists as a folder, a .tar.gz and one table with a query_id column: 101 gets list A,
    102 list B plus three structures of list A (off its mass), 103 none."""
    a, b = bench["lists"]
    off = a[:3]
    folder = tmp_path / "lists"
    folder.mkdir()
    _write_list(folder / "101.csv", a)
    _write_list(folder / "102.tsv", b + off, delimiter="\t")
    archive = tmp_path / "lists.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for p in sorted(folder.iterdir()):
            tar.add(p, arcname=f"lists/{p.name}")
    table = tmp_path / "per_query.csv"
    with open(table, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["Query ID", "Identifier", "InChI"])
        writer.writerows(("101", f"101-{i}", s) for i, s in enumerate(a))
        writer.writerows(("102", f"102-{i}", s) for i, s in enumerate(b + off))
    return {"folder": folder, "archive": archive, "table": table}, {"101": a, "102": b + off}, len(off)


@pytest.mark.parametrize("kind", ["folder", "archive", "table"])
def test_per_query_lists_rank_each_query_among_its_own_list(bench, tmp_path, kind):
    inputs, lists, n_off = _per_query_inputs(bench, tmp_path)
    ident, cands, params = _identify(bench, inputs[kind], tmp_path / "out")
    assert {q: r["status"] for q, r in ident.items()} == {"101": "ok", "102": "ok", "103": "no candidates"}
    assert ident["103"]["detail"] == "no candidate list for query id 103"
    assert ident["101"]["detail"] == ""
    assert f"warning: {n_off} of {len(lists['102'])} candidates outside 10 ppm" in ident["102"]["detail"]
    assert params["candidate_source"].startswith("per-query candidate lists")
    # brute force: the model's own scores of each list's structures, in list order
    model, fingerprinter, cleaning, _ = load_identifier(bench["model"])
    spectra, _ = read_spectra(bench["mgf"], keep_empty=True)
    cleaned = cleaning.merged(cleaning.single(spectra), groups=list(range(len(spectra))))[0]
    for row, q in enumerate(("101", "102")):
        F, ok = fingerprinter.transform([parse_structure(s) for s in lists[q]])
        assert ok.all() and int(ident[q]["n_candidates"]) == len(lists[q])
        scores = model.score_sets(cleaned[np.array([row])], [F])[0]
        order = np.argsort(-scores, kind="stable")[:5]
        got = [c for c in cands if c["query_id"] == q]
        assert [c["identifier"] for c in got] == [f"{q}-{j}" for j in order]
        np.testing.assert_allclose([float(c["score"]) for c in got], scores[order], rtol=1e-5)
        assert all(c["structure"] == lists[q][j] for c, j in zip(got, order, strict=True))


def test_mixed_list_namings_are_refused(bench, tmp_path, capsys):
    inputs, _, _ = _per_query_inputs(bench, tmp_path)
    (inputs["folder"] / "scoring_list=C6H12O6_spec=1_id=WQZGKKKJIJFFOK-GASJEMHNSA-N.csv").write_text("id1\nCCO\n")
    assert main(["metabolites", "identify", "--model", str(bench["model"]), "--spectra", str(bench["mgf"]),
                 "--candidates", str(inputs["folder"]), "--output", str(tmp_path / "o")]) != 0
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "mix per-formula lists" in err and str(inputs["folder"]) in err


@pytest.mark.parametrize("workers", ["0", "-1"])
def test_index_refuses_a_worker_count_below_one(tmp_path, capsys, workers):
    # --workers 0 and --workers -1 (joblib's "all CPUs") were silently run as 1 worker process
    table = tmp_path / "t.csv"
    table.write_text("Identifier,SMILES\nA1,CCO\n")
    with pytest.raises(SystemExit) as exit_info:
        main(["metabolites", "index", str(table), "--output", str(tmp_path / "store"), "--workers", workers])
    assert exit_info.value.code == 2
    assert f"argument --workers: expected a number of worker processes >= 1, got {workers}" in capsys.readouterr().err
    assert not (tmp_path / "store").exists()

"""Files written by other tools (tests/data/real_files): ``index`` / ``train`` / ``identify`` through the CLI.

Each file's expectations (tests/data/real_files/expectations.json) were written from the file's own text by
``make_expectations.py`` (independent parsing, no iokr) and checked by hand: the number of query records, their
ids, ion mode, charge, adduct and the statuses a positive ``[M+H]+`` model must give them; for the candidate
tables (format replicas, see PROVENANCE.md) the structure and identifier columns, the salts that must be reduced
to their parent and the columns that clash with identify's own.

Cases that today's code gets wrong are marked ``xfail(strict=True)`` with the wrong behaviour seen: when a fix
lands the case passes, the strict mark fails the run, and the mark is removed. Never weaken an expectation.
"""

import csv
import gzip
import json
import re
from pathlib import Path

import pytest
from rdkit import Chem, RDLogger

from iokr.cli.main import main
from iokr.datasets._metabolites import BUNDLED_METABOLITES

ROOT = Path(__file__).parents[2] / "data" / "real_files"
MANIFEST = json.loads((ROOT / "expectations.json").read_text(encoding="utf-8"))
SPECTRA = MANIFEST["spectra"]
CANDIDATES = MANIFEST["candidates"]
UNREADABLE = MANIFEST["unreadable"]
N_TRAIN = 30  # structures of the tiny positive [M+H]+ model (bundled MassBank spectra)


def _xfail(reason):
    return pytest.mark.xfail(strict=True, reason=reason)


# -- what today's code gets wrong (file, aspect) -> the wrong behaviour seen --------------------------------------
_MZML_TITLE = "ids are the whole spectrum titles ('<file>.N.N.z File:\"...\", NativeID:\"... scan=N\"')"
SPECTRA_XFAIL = {}


def _table(path):
    with open(path, encoding="utf-8", newline="") as handle:
        rows = list(csv.reader(handle, delimiter="\t"))
    return rows[0], [dict(zip(rows[0], r, strict=True)) for r in rows[1:]]


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """A tiny positive [M+H]+ model (bundled MassBank spectra) and a structure database of every structure the
    corpus' spectra files name (so that library records find their own structure)."""
    RDLogger.DisableLog("rdApp.*")
    root = tmp_path_factory.mktemp("real_files")
    train, keys = [], set()
    with gzip.open(BUNDLED_METABOLITES["spectra"], "rt") as handle:
        for line in handle:
            rec = json.loads(line)
            key = rec["inchikey_rdkit"][:14]
            if len(keys) < N_TRAIN or key in keys:
                keys.add(key)
                train.append(line)
    (root / "train.jsonl").write_text("".join(train))
    model = root / "model.npz"
    assert main(["metabolites", "train", "--spectra", str(root / "train.jsonl"), "--output", str(model),
                 "--alphas", "0.3", "--folds", "2"]) == 0
    smiles = {}
    for name in SPECTRA:
        smiles.update(_structures_of(ROOT / name))
    db_csv = root / "structures.csv"
    with open(db_csv, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["Identifier", "SMILES"])
        writer.writerows(sorted(smiles.items()))
    db = root / "structures.sqlite"
    assert main(["metabolites", "index", str(db_csv), "--output", str(db), "--model", str(model)]) == 0
    return {"root": root, "model": model, "db": db, "runs": {}}


def _structures_of(path):
    """``{inchikey14: smiles}`` of the MGF / MSP SMILES and (unquoted) InChI lines of a file (independent of
    iokr)."""
    found = {}
    for value in re.findall(r"^(?:SMILES|INCHI)\s*[=:]\s*(.+)$", path.read_text(encoding="utf-8"),
                            flags=re.MULTILINE | re.IGNORECASE):
        value = value.strip().strip('"')
        mol = Chem.MolFromInchi(value) if value.startswith("InChI=") else Chem.MolFromSmiles(value)
        if mol is not None and value.upper() != "N/A":
            found[Chem.MolToInchiKey(mol)[:14]] = Chem.MolToSmiles(mol)
    return found


def _identify(work, spectra, candidates, *extra, model=None):
    """``identify`` once per (spectra, candidates, options): ``(rc, identifications, candidates, parameters)``."""
    key = (str(spectra), str(candidates), extra, str(model))
    if key not in work["runs"]:
        out = work["root"] / f"out{len(work['runs'])}"
        rc = main(["metabolites", "identify", "--model", str(model or work["model"]), "--spectra", str(spectra),
                   "--candidates", str(candidates), "--output", str(out), *extra])
        if rc != 0:
            work["runs"][key] = (rc, None, None, None)
        else:
            work["runs"][key] = (rc, _table(out / "structure_identifications.tsv"),
                                 _table(out / "structure_candidates.tsv"),
                                 json.loads((out / "parameters.json").read_text()))
    return work["runs"][key]


def _adduct_groups(text):
    """An adduct as a comparable value: the multiset of its signed groups and its charge ("[M+H-H2O]+" equals
    "[M-H2O+H]+"); None for no adduct."""
    if not text:
        return None
    # one ion written two ways: formic / acetic acid minus a proton is the formate / acetate anion
    for long, short in (("+FA-H", "+HCOO"), ("+HCOOH-H", "+HCOO"), ("+CH3COOH-H", "+CH3COO")):
        text = text.replace(long, short)
    m = re.fullmatch(r"\[?M((?:[+-]\d*[A-Za-z0-9]+)*)\]?(\d*)([+-])?", text.replace(" ", ""))
    if m is None:
        return ("unparsed", text)
    groups = sorted(re.findall(r"[+-]\d*[A-Za-z0-9]+", m.group(1)))
    charge = (int(m.group(2) or 1) * (-1 if m.group(3) == "-" else 1)) if m.group(3) else None
    return tuple(groups), charge


def _spectra_cases():
    for name in SPECTRA:
        for aspect in ("ids", "adducts", "refused_adducts", "statuses"):
            reason = SPECTRA_XFAIL.get((name, aspect))
            yield pytest.param(name, aspect, id=f"{name}-{aspect}", marks=[_xfail(reason)] if reason else [])


def _mismatches(aspect, rows, records):
    """What the rows of ``structure_identifications.tsv`` get wrong in one aspect, record by record."""
    wrong = []
    for row, e in zip(rows, records, strict=True):
        ranked = "ok" in e.get("status_in", ())
        refused = e.get("status_in", [""])[0].startswith("unsupported")
        if aspect == "adducts" and (ranked or e["problem"] or (e["charge"] or 1) not in (1, -1)):
            # a ranked query carries its type; a contradictory or multiply charged one is never [M+H]+
            if ranked and _adduct_groups(row["adduct"]) != _adduct_groups(e["adduct"]):
                wrong.append((e["id"], row["adduct"], e["adduct"]))
            elif not ranked and row["adduct"] == "[M+H]+":
                wrong.append((e["id"], row["adduct"], f"not [M+H]+ (charge {e['charge']}, problem {e['problem']})"))
            elif ranked and e["adduct_source"] == "assumed" and row["status"] == "ok" and e["adduct"] not in \
                    row["detail"]:
                wrong.append((e["id"], row["detail"], f"detail stating {e['adduct']} is assumed"))
        elif aspect == "refused_adducts" and refused and e["adduct"]:
            if _adduct_groups(row["adduct"]) != _adduct_groups(e["adduct"]):
                wrong.append((e["id"], row["adduct"], e["adduct"]))
            elif e["adduct_source"] == "assumed" and f"assumed {row['adduct']}" not in row["detail"]:
                wrong.append((e["id"], row["detail"], f"detail stating {row['adduct']} is assumed"))
        elif aspect == "statuses":
            if "status_in" in e and row["status"] not in e["status_in"]:
                wrong.append((e["id"], row["status"], row["detail"], e["status_in"]))
            elif "status_not" in e and (row["status"] in e["status_not"] or "contradict" not in row["detail"]):
                wrong.append((e["id"], row["status"], row["detail"], "flagged as a contradiction"))
    return wrong


@pytest.mark.parametrize(("name", "aspect"), list(_spectra_cases()))
def test_identify_on_spectra_written_by_other_tools(work, name, aspect):
    expected = SPECTRA[name]
    rc, ident, _, params = _identify(work, ROOT / name, work["db"], "--top-k", "3")
    assert rc == 0
    header, rows = ident
    records = expected["records"]
    assert len(rows) == expected["n_records"]  # every query record has a row, whatever its status
    if aspect == "ids":
        got = [r["query_id"] for r in rows]
        assert len(set(got)) == len(got), f"query ids repeat: {got}"
        if expected["id_field"] == "scan number":  # mzML / mzXML: the scan number, bare or as the scan=N id
            assert all(g in (e["id"], f"scan={e['id']}") for g, e in zip(got, records, strict=True)), got
        else:
            assert got == [e["id"] for e in records]
        return
    wrong = _mismatches(aspect, rows, records)
    assert not wrong, f"{len(wrong)} of {len(rows)} records: " + "; ".join(map(str, wrong))
    if aspect == "statuses":
        assert params["statuses"] == {s: sum(r["status"] == s for r in rows) for s in {r["status"] for r in rows}}


@pytest.mark.parametrize("name", list(UNREADABLE))
def test_unsupported_spectra_formats_are_named(work, name, capsys):
    rc, *_ = _identify(work, ROOT / name, work["db"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1, err
    for word in UNREADABLE[name]["error_mentions"]:
        assert word in err[0], err


# -- candidate tables -----------------------------------------------------------------------------------------------
# Every table below is queried with matchms/massbank_five_spectra.msp, whose PS010904 (ADP on a Waters TQD,
# LC-ESI-QQ) gives PrecursorMZ 428.31 and peaks 135.0 / 136.0: its FORMULA C10H15N5O10P2 is 639 ppm (0.27 Da) from
# that m/z as [M+H]+, within the nominal mass a unit-resolution record resolves, so the formula is the lookup (and
# 'detail' says so; see iokr/apps/metabolites/chemistry/_precursor_precision.py).
CANDIDATE_XFAIL = {}


def test_a_unit_resolution_record_is_looked_up_by_its_formula_and_says_so(work):
    rc, (_, rows), _, _ = _identify(work, ROOT / "matchms/massbank_five_spectra.msp", work["db"], "--top-k", "3")
    assert rc == 0
    adp = next(r for r in rows if r["query_id"] == "PS010904")
    assert adp["status"] == "ok" and adp["lookup"] == "formula C10H15N5O10P2", adp
    assert "FORMULA C10H15N5O10P2 taken: precursor m/z 428.31 is 639 ppm" in adp["detail"], adp["detail"]
    assert "unit-resolution record" in adp["detail"], adp["detail"]


def _index(work, name):
    key = ("index", name)
    if key not in work["runs"]:
        out = work["root"] / f"db{len(work['runs'])}.sqlite"
        rc = main(["metabolites", "index", str(ROOT / name), "--output", str(out), "--model", str(work["model"])])
        work["runs"][key] = (rc, out)
    return work["runs"][key]


def _candidate_cases():
    for name, table in CANDIDATES.items():
        for aspect in ("index", "identify", "columns", "identifiers"):
            if aspect == "identifiers" and not table["identifiers"]:
                continue
            reason = CANDIDATE_XFAIL.get((name, aspect))
            yield pytest.param(name, aspect, id=f"{name}-{aspect}", marks=[_xfail(reason)] if reason else [])


@pytest.mark.parametrize(("name", "aspect"), list(_candidate_cases()))
def test_candidate_tables_written_by_other_tools(work, name, aspect, capsys):
    table = CANDIDATES[name]
    capsys.readouterr()
    rc, db = _index(work, name)
    if aspect == "index":
        out = capsys.readouterr().out
        assert rc == 0
        assert (f"{table['n_structures']} structures indexed from {table['n_rows']} rows "
                f"({table['n_unparsable']} unparsable") in out, out
        return
    assert rc == 0
    rc, ident, cands, _ = _identify(work, ROOT / table["queries"], db, "--top-k", "10")
    assert rc == 0
    (header, rows), (cand_header, cand_rows) = ident, cands
    by_id = {r["query_id"]: r for r in rows}
    if aspect == "identify":
        for qid, status in table["status"].items():
            assert by_id[qid]["status"] == status, (qid, by_id[qid]["status"], by_id[qid]["detail"])
            if status == "ok":
                keys = {r["inchikey"][:14] for r in cand_rows if r["query_id"] == qid}
                assert table["true_inchikey14"][qid] in keys, (qid, keys)
    elif aspect == "columns":
        for cols in (header, cand_header):
            assert len(set(cols)) == len(cols), sorted(c for c in cols if cols.count(c) > 1)
        for col in table["clashing_columns"]:  # kept in the identifications, under a prefixed name
            assert [c for c in header if c != col and c.endswith(col)], header
    else:
        for qid, identifier in table["identifiers"].items():
            top = [r for r in cand_rows if r["query_id"] == qid and
                   r["inchikey"][:14] == table["true_inchikey14"][qid]]
            assert [r["identifier"] for r in top] == [identifier], (qid, top[:1])


# -- training on other tools' libraries ------------------------------------------------------------------------------
def _train(work, spectra, name, *extra):
    """``train`` on one or several spectra files (``--spectra A B``)."""
    out = work["root"] / f"{name}.npz"
    rc = main(["metabolites", "train", "--spectra", *map(str, spectra), "--output", str(out), "--alphas", "0.3",
               "--folds", "2", *extra])
    return rc, out


def test_train_on_a_negative_gnps_library_records_negative_types(work):
    name = "matchms/gnps_pesticides_negative.mgf"
    rc, model = _train(work, [ROOT / name], "pesticides")
    assert rc == 0
    rc, (_, rows), _, params = _identify(work, ROOT / name, work["db"], model=model)
    assert rc == 0
    types = params["model_precursor_types"]
    assert "[M-H]-" in types and all(t.endswith("-") for t in types), types
    for row, e in zip(rows, SPECTRA[name]["records"], strict=True):
        if e["adduct"] == "[M-H]-":
            assert row["status"] in ("ok", "no candidates"), (e["id"], row["status"], row["detail"])


def _submodel_structures(out):
    """``{precursor type: training structures}`` from train's per-sub-model lines ("  [M+H]+: 19 structures; ...")."""
    return {t: int(n) for t, n in re.findall(r"^  (\S+): (\d+) structures;", out, flags=re.MULTILINE)}


def test_train_on_a_gnps_library_with_quoted_inchis_keeps_every_structure(work, capsys):
    # INCHI="InChI=..." values keep no quotes: every [M+H]+ structure the file's own text gives is trained on
    name = "matchms/gnps_library_mixed.mgf"
    capsys.readouterr()
    rc, _ = _train(work, [ROOT / name], "gnps_mixed")
    out = capsys.readouterr().out
    assert rc == 0, out
    per_type = _submodel_structures(out)
    assert per_type["[M+H]+"] >= SPECTRA[name]["n_structures_by_adduct"]["[M+H]+"], out


def test_one_model_from_a_positive_and_a_negative_library_ranks_both(work, capsys):
    # the positive file has N_TRAIN structures: --min-structures at most that gives each polarity its sub-model
    pos, neg = work["root"] / "train.jsonl", ROOT / "matchms/gnps_pesticides_negative.mgf"
    capsys.readouterr()
    rc, model = _train(work, [pos, neg], "both", "--min-structures", str(N_TRAIN))
    out = capsys.readouterr().out
    assert rc == 0, out
    per_type = _submodel_structures(out)
    assert per_type["[M+H]+"] == N_TRAIN, out
    assert per_type["[M-H]-"] == SPECTRA["matchms/gnps_pesticides_negative.mgf"]["n_structures_by_adduct"]["[M-H]-"]
    name = "matchms/gnps_pesticides_negative.mgf"
    rc, (_, rows), _, params = _identify(work, ROOT / name, work["db"], model=model)
    assert rc == 0
    assert {"[M+H]+", "[M-H]-"} <= set(params["model_precursor_types"]), params["model_precursor_types"]
    wrong = [(e["id"], r["adduct"], r["status"]) for r, e in zip(rows, SPECTRA[name]["records"], strict=True)
             if e["adduct"] == "[M-H]-" and (r["adduct"] != "[M-H]-" or r["status"] not in ("ok", "no candidates"))]
    assert wrong == []


# -- the same files as saved by other editors and systems -------------------------------------------------------------
def _variant(work, name, transform, suffix):
    path = work["root"] / f"{Path(name).stem}-{transform.__name__}{suffix}"
    path.write_bytes(transform((ROOT / name).read_bytes()))
    return path


def crlf(data):
    return data.replace(b"\n", b"\r\n")


def bom(data):
    return b"\xef\xbb\xbf" + data


def cr_only(data):  # classic Mac OS line ends
    return data.replace(b"\n", b"\r")


def utf16(data):  # Windows Notepad's "Unicode"
    return data.decode("utf-8").encode("utf-16")


_VARIANTS = [
    ("matchms/gnps_library_mixed.mgf", crlf), ("matchms/gnps_library_mixed.mgf", bom),
    ("matchms/massbank_five_spectra.msp", crlf), ("matchms/massbank_five_spectra.msp", bom),
    ("matchms/massbank_five_spectra.msp", cr_only), ("matchms/massbank_five_spectra.msp", utf16),
]


@pytest.mark.parametrize(("name", "transform"), _VARIANTS)
def test_line_ends_bom_and_encodings_give_the_same_table_or_say_why(work, name, transform, capsys):
    rc, (_, plain), _, _ = _identify(work, ROOT / name, work["db"], "--top-k", "3")
    assert rc == 0
    capsys.readouterr()
    rc, ident, _, _ = _identify(work, _variant(work, name, transform, Path(name).suffix), work["db"], "--top-k", "3")
    err = capsys.readouterr().err.strip().splitlines()
    if rc == 0:
        assert ident[1] == plain
    else:  # refused: one line that names the encoding / line ends
        assert rc == 2 and re.search(r"UTF-16|encoding|line end", err[-1]), err


def _run(argv, capsys):
    """``(rc, stdout, stderr lines)`` of one command."""
    capsys.readouterr()
    rc = main(argv)
    captured = capsys.readouterr()
    return rc, captured.out, captured.err.strip().splitlines()


def test_index_of_a_table_with_cr_line_ends_reads_it_or_says_why(work, capsys):
    path = _variant(work, "sirius/structure_candidates_replica.tsv", cr_only, ".tsv")
    rc, out, err = _run(["metabolites", "index", str(path), "--output", str(work["root"] / "cr.sqlite")], capsys)
    assert (rc == 0 and "7 structures indexed from 7 rows" in out) or (
        rc == 2 and path.name in err[-1] and "line end" in err[-1]), (rc, out, err)


def test_index_of_a_table_with_an_unclosed_quote_loses_no_row_silently(work, capsys):
    path = work["root"] / "quote.csv"
    path.write_text('SMILES,Name\nCCO,"ethanol\nCCC,propane\n', encoding="utf-8")
    rc, out, err = _run(["metabolites", "index", str(path), "--output", str(work["root"] / "quote.sqlite")], capsys)
    assert (rc == 2 and "quote" in err[-1]) or (rc == 0 and "from 2 rows" in out), (rc, err)
    if rc == 2:  # the error line names the file and the line where the quote opens
        assert path.name in err[-1] and "line 2" in err[-1], err


# -- --query-id-field on a real export ---------------------------------------------------------------------------------

@pytest.mark.parametrize("field", ["FEATURE_ID", "feature_id", "Feature_Id"])
def test_query_id_field_matches_the_files_own_key_in_any_case(work, field):
    name = "openms/GNPSExport_1_out_subset.mgf"
    rc, (_, rows), _, _ = _identify(work, ROOT / name, work["db"], "--query-id-field", field)
    assert rc == 0
    assert [r["query_id"] for r in rows] == [e["id"] for e in SPECTRA[name]["records"]]


def test_query_id_field_absent_from_the_file_is_a_one_line_error(work, capsys):
    rc, _, err = _run(["metabolites", "identify", "--model", str(work["model"]), "--spectra",
                       str(ROOT / "openms/GNPSExport_1_out_subset.mgf"), "--candidates", str(work["db"]), "--output",
                       str(work["root"] / "no-such-field"), "--query-id-field", "COMPOUND_ID"], capsys)
    assert rc == 2 and "COMPOUND_ID" in err[-1], err

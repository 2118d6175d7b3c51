"""Write expectations.json: what each corpus file's OWN text implies, parsed here without iokr.

usage: python make_expectations.py   (from any folder; reads the files next to this script)

Rules (the same for every file of a format; exceptions are listed in OVERRIDES with the reason):
- records: MGF BEGIN/END IONS blocks of MSLEVEL 2 (or none); MSP blank-line separated records with a peak count; mzML/mzXML spectra of
  MS level 2 (MS1 and MS3 scans are not queries); JSON list entries.
- id: the first of FEATURE_ID, SCANS, TITLE present in every record with unique values; else SPECTRUMID (GNPS
  library files repeat SCANS); MSP DB# else Name; mzML/mzXML the scan number; GNPS JSON spectrum_id; MZmine library
  JSON the first of feature_id, scan_number, lib_id / entry_id (MZmine's ENTRY_ID: MSP DB#, MGF SPECTRUMID) unique
  in every record, else compound_name (MZmine's NAME: MSP Name, as for MSP files without DB#); else the 1-based
  position.
- ion mode: IONMODE / Ion_mode / polarity text when it says positive or negative, else the adduct's sign, else
  the charge's sign. charge: CHARGE / charge state with its sign (0 or missing: unknown).
- adduct: the ADDUCT / Precursor_type / PRECURSORTYPE field, else a GNPS name's last word when it reads as an
  adduct ("M+H", "M-H", "M+NH4", "M+2H/2"); written in brackets with its charge ("[M+H]+", "[M+2H]2+").
- a problem (contradiction) when the ion mode text, the charge sign and the adduct's sign disagree.
- structure: a valid structure from the file: INCHI (quotes removed) parsed by RDKit, else SMILES.
- status_in (statuses acceptable with a positive [M+H]+-only model, --adduct-policy refuse): [M+H]+ (given or,
  for a singly charged positive query without adduct, assumed): ok / no candidates; another readable type or a
  negative query: unsupported adduct; |charge| >= 2 without adduct: unsupported charge / unsupported adduct; an
  unreadable adduct text: unknown adduct / unsupported adduct; a contradiction: anything but ok.
"""

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

from rdkit import Chem, RDLogger

RDLogger.DisableLog("rdApp.*")
HERE = Path(__file__).parent

# GNPS name suffixes and file adduct texts -> bracketed adduct with charge (independent of iokr's parser).
ADDUCT_WORD = re.compile(r"^\[?(M[A-Za-z0-9]*(?:[+-][A-Za-z0-9]+)*)\]?(\d*[+-])?(?:/(\d))?$")
NEUTRAL_GROUPS = {"H2O", "NH3", "FA", "ACN", "MeOH"}
CATIONS = {"H", "Na", "K", "Li", "NH4"}
ANIONS = {"Cl", "Br", "HCOO", "CH3COO"}


def bracket_adduct(text):
    """``(adduct, charge)`` of an adduct text, or ``(None, None)`` when the groups do not give an ion."""
    text = text.strip()
    m = ADDUCT_WORD.match(text.replace(" ", ""))
    if not m:
        return None, None
    core, explicit, per = m.group(1), m.group(2), m.group(3)
    parts = re.findall(r"([+-])(\d*)([A-Za-z0-9]+)", core[1:]) if core.startswith("M") else []
    if not core.startswith("M") or re.sub(r"[+-]\d*[A-Za-z0-9]+", "", core[1:]) != "":
        return None, None
    charge = 0
    for sign, n, group in parts:
        k = int(n or 1) * (1 if sign == "+" else -1)
        if group in CATIONS:
            charge += k
        elif group in ANIONS:
            charge -= k
        elif group not in NEUTRAL_GROUPS:
            return None, None
    if explicit:
        given = int(explicit[:-1] or 1) * (1 if explicit[-1] == "+" else -1)
        if given != charge:
            return None, None
    if charge == 0:
        return None, None
    if per and int(per) != abs(charge):
        return None, None
    suffix = ("" if abs(charge) == 1 else str(abs(charge))) + ("+" if charge > 0 else "-")
    return f"[{core}]{suffix}", charge


def signed_charge(text, mode):
    text = (text or "").strip()
    digits = re.sub(r"\D", "", text)
    if not digits or int(digits) == 0:
        return None
    sign = -1 if "-" in text else (1 if "+" in text else {"positive": 1, "negative": -1}.get(mode, 1))
    return sign * int(digits)


def mode_of(text):
    t = (text or "").strip().lower()
    return {"positive": "positive", "negative": "negative", "pos": "positive", "neg": "negative", "+": "positive",
            "-": "negative"}.get(t)


def structure_key(inchi, smiles):
    """First InChIKey block of the record's structure (InChI without its quotes, else SMILES), or None."""
    inchi = (inchi or "").strip().strip('"')
    mol = Chem.MolFromInchi(inchi) if inchi.startswith("InChI=") else None
    smiles = (smiles or "").strip()
    if mol is None and smiles and smiles.upper() not in ("N/A", "NA"):
        mol = Chem.MolFromSmiles(smiles)
    return None if mol is None else Chem.MolToInchiKey(mol)[:14]


def expectation(rid, mode_text, charge_text, adduct_text, name, inchi, smiles, n_peaks):
    mode = mode_of(mode_text)
    adduct_source, adduct, adduct_charge = None, None, None
    unreadable = False
    if adduct_text and adduct_text.strip():
        adduct_source = "file"
        adduct, adduct_charge = bracket_adduct(adduct_text)
        unreadable = adduct is None
    elif name and " " in name.strip():
        word = name.strip().split()[-1].strip('"')
        a, c = bracket_adduct(word)
        if a is not None:
            adduct, adduct_charge, adduct_source = a, c, "name"
    charge = signed_charge(charge_text, mode)
    signs = {s for s in (
        {"positive": 1, "negative": -1}.get(mode),
        None if charge is None else (1 if charge > 0 else -1),
        None if adduct_charge is None else (1 if adduct_charge > 0 else -1)) if s is not None}
    problem = len(signs) > 1
    ion_mode = None if problem else {1: "positive", -1: "negative"}.get(next(iter(signs), None))
    if charge is None and adduct_charge is not None:
        charge = adduct_charge
    if n_peaks == 0:
        status = ["no peaks"]
    elif problem:
        status = None  # anything but ok
    elif unreadable:
        status = ["unknown adduct", "unsupported adduct"]
    elif adduct is None and charge is not None and abs(charge) >= 2:
        status = ["unsupported charge", "unsupported adduct"]
    elif adduct is None and ion_mode == "positive":
        adduct, adduct_source = "[M+H]+", "assumed"
        status = ["ok", "no candidates"]
    elif adduct is None and ion_mode == "negative":
        adduct, adduct_source = "[M-H]-", "assumed"
        status = ["unsupported adduct"]
    elif adduct == "[M+H]+":
        status = ["ok", "no candidates"]
    elif adduct is not None:
        status = ["unsupported adduct", "unsupported charge"] if abs(adduct_charge) >= 2 else ["unsupported adduct"]
    else:
        status = None
    rec = {"id": rid, "ion_mode": ion_mode, "charge": charge, "adduct": adduct, "adduct_source": adduct_source,
           "problem": problem, "inchikey14": structure_key(inchi, smiles)}
    if status is None:
        rec["status_not"] = ["ok"]
    else:
        rec["status_in"] = status
    return rec


def pick_ids(records, fields, fallback=("SPECTRUMID",)):
    for key in (*fields, *fallback):
        values = [r.get(key, "").strip() for r in records]
        if all(values) and len(set(values)) == len(values):
            return values, key
    return [str(i + 1) for i in range(len(records))], "position"


def parse_mgf(path):
    records, cur = [], None
    for line in path.read_text(encoding="utf-8").splitlines():
        s = line.strip()
        if s == "BEGIN IONS":
            cur = {"_peaks": 0}
        elif s == "END IONS":
            if cur.get("MSLEVEL", "2").strip() == "2":  # MS1 records (MZmine's SIRIUS export) are not queries
                records.append(cur)
            cur = None
        elif cur is not None and "=" in s and not s[0].isdigit():
            k, v = s.split("=", 1)
            cur.setdefault(k.upper(), v)
        elif cur is not None and s and s[0].isdigit():
            parts = s.split()
            if len(parts) >= 2 and float(parts[1]) > 0:
                cur["_peaks"] += 1
    ids, field = pick_ids(records, ("FEATURE_ID", "SCANS", "TITLE"))
    out = [expectation(i, r.get("IONMODE"), r.get("CHARGE"), r.get("ADDUCT"), r.get("NAME"), r.get("INCHI"),
                       r.get("SMILES"), r["_peaks"]) for i, r in zip(ids, records, strict=True)]
    return out, field


def parse_msp(path):
    records, cur = [], {}
    for line in path.read_text(encoding="utf-8").splitlines() + [""]:
        s = line.strip()
        if not s:
            if cur:
                records.append(cur)
            cur = {}
        elif ":" in s and not s[0].isdigit():
            k, v = s.split(":", 1)
            cur.setdefault(k.strip().upper().replace(" ", "_"), v.strip())
        elif s[0].isdigit():
            cur["_peaks"] = cur.get("_peaks", 0) + 1
    ids, field = pick_ids(records, ("DB#", "NAME"), fallback=())
    out = [expectation(i, r.get("ION_MODE") or r.get("IONMODE"), r.get("CHARGE"),
                       r.get("PRECURSOR_TYPE") or r.get("PRECURSORTYPE"), None, r.get("INCHI"), r.get("SMILES"),
                       r.get("_peaks", 0)) for i, r in zip(ids, records, strict=True)]
    return out, field


def _local(tag):
    return tag.rsplit("}", 1)[-1]


def parse_mzml(path):
    out = []
    for spec in ET.parse(path).getroot().iter():
        if _local(spec.tag) != "spectrum":
            continue
        params = {p.get("name"): p.get("value") for p in spec.iter() if _local(p.tag) == "cvParam"}
        if params.get("ms level") != "2":
            continue
        scan = re.search(r"scan=(\d+)", spec.get("id")).group(1)
        mode = "positive" if "positive scan" in params else ("negative" if "negative scan" in params else None)
        n_peaks = int(spec.get("defaultArrayLength"))
        out.append(expectation(scan, mode, params.get("charge state"), None, None, None, None, n_peaks))
    return out, "scan number"


def parse_mzxml(path):
    out = []
    for scan in ET.parse(path).getroot().iter():
        if _local(scan.tag) != "scan" or scan.get("msLevel") != "2":
            continue
        prec = next(p for p in scan if _local(p.tag) == "precursorMz")
        mode = mode_of(scan.get("polarity"))
        out.append(expectation(scan.get("num"), mode, prec.get("precursorCharge"), None, None, None, None,
                               int(scan.get("peaksCount"))))
    return out, "scan number"


def parse_gnps_json(path):
    records = json.loads(path.read_text(encoding="utf-8"))
    out = [expectation(r["spectrum_id"], r.get("Ion_Mode"), r.get("Charge"), r.get("Adduct"), None, r.get("INCHI"),
                       r.get("Smiles"), len(json.loads(r["peaks_json"]))) for r in records]
    return out, "spectrum_id"


def parse_mzmine_json(path):
    """MZmine 3 library JSON (one record per line); key names from mzmine3's DBEntryField.getMZmineJsonID and
    MZmineJsonLibraryEntry (lib_id written, entry_id read)."""
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    id_field = next((k for k in ("feature_id", "scan_number", "lib_id", "entry_id", "compound_name")
                     if all(r.get(k) not in (None, "") for r in records)
                     and len({str(r[k]) for r in records}) == len(records)), "position")
    out = []
    for i, r in enumerate(records):
        adduct = r["adduct"].split(" (")[0]  # "[M+H]+ (1.0073)": the type and its mass difference
        rid = str(i + 1) if id_field == "position" else str(r[id_field])
        out.append(expectation(rid, r.get("polarity"), str(r.get("charge")), adduct, None, None, r.get("smiles"),
                               len(r["signals"])))
    return out, id_field


SPECTRA = {
    "matchms/gnps_library_mixed.mgf": parse_mgf,
    "matchms/gnps_pesticides_negative.mgf": parse_mgf,
    "ms2query/100_test_spectra_subset.mgf": parse_mgf,
    "openms/GNPSExport_1_out_subset.mgf": parse_mgf,
    "mzmine/dbgi_002_fbmn_export.mgf": parse_mgf,
    "mzmine/dbgi_002_sirius_export.mgf": parse_mgf,
    "matchms/massbank_five_spectra.msp": parse_msp,
    "matchms/riken_style_five_spectra.msp": parse_msp,
    "mzmine/fraghub.msp": parse_msp,
    "matchms/thermo_dda_beer_pos.mzML": parse_mzml,
    "openms/thermo_qexactive_charge2.mzML": parse_mzml,
    "matchms/testdata_neg.mzXML": parse_mzxml,
    "matchms/gnps_spectra.json": parse_gnps_json,
    "mzmine/gnps_library.json": parse_gnps_json,
    "mzmine/mzmine_library.json": parse_mzmine_json,
}

# Files no reader should take for spectra: what the error must name (hand-written from the file text).
UNREADABLE = {
    "matchms/golm.msp": {"format": "GOLM (GMD) MSP: peaks as 'mz int; mz int;' pairs on one line",
                         "error_mentions": ["GOLM"]},
}
# mzmine/massbank_eu_lc.txt (a MassBank record, ACCESSION: / PK$PEAK:) was listed here while no reader took MassBank
# record text; the readers now do (tests/apps/metabolites/test_readers_ions.py reads it).

# Candidate tables (the replicas of make_replicas.py), queried with the five MassBank MSP records. Hand-written:
# the true structure of each query is its record's InChIKey: line; the identifiers are the tables' own values.
FIVE = "matchms/massbank_five_spectra.msp"
TRUE_KEYS = {"PS010904": "XTWYTFMLZFPYCI", "HB003316": "BEJNERDRQOWKJM", "HB000434": "UVKZSORBKUEBAZ",
             "HB001203": "TTWJBBZEZQICBI", "HB003619": "SIIRBDOFKDACOK"}
# With a positive [M+H]+-only model the four positive queries are ranked (ADP's type assumed); Kojic acid's one
# peak is its precursor.
FIVE_STATUS = {"PS010904": "ok", "HB003316": "no peaks after cleaning", "HB000434": "ok", "HB001203": "ok",
               "HB003619": "ok"}
CANDIDATES = {
    "sirius/structure_candidates_replica.tsv": {
        "tool": "SIRIUS 5 structure_candidates.tsv", "n_rows": 7, "n_structures": 7, "n_unparsable": 0,
        "structure_columns": ["InChI", "smiles"], "identifier_column": None, "clashing_columns": ["adduct"],
        "salts": {"HB001203": "Metoclopramide hydrochloride"}, "identifiers": {}},
    "metfrag/candidates_replica.psv": {
        "tool": "MetFrag .psv", "n_rows": 7, "n_structures": 7, "n_unparsable": 0,
        "structure_columns": ["InChI", "SMILES"], "identifier_column": "Identifier", "clashing_columns": [],
        "salts": {"HB001203": "Metoclopramide hydrochloride", "HB003316": "Kojic acid hydrate"},
        "identifiers": {"PS010904": "6022", "HB000434": "6726", "HB001203": "23663954", "HB003619": "5281143"}},
    "metfrag/candidates_replica.sdf": {
        "tool": "MetFrag SDF", "n_rows": 7, "n_structures": 7, "n_unparsable": 0,
        "structure_columns": ["molblock"], "identifier_column": "DatabaseID", "clashing_columns": [],
        "salts": {"HB000434": "Cyclizine hydrochloride"},
        "identifiers": {"PS010904": "6022", "HB000434": "6726-HCl", "HB001203": "4168", "HB003619": "5281143"}},
    "mzmine/feature_table_replica.csv": {
        "tool": "MZmine 3 feature list CSV", "n_rows": 8, "n_structures": 7, "n_unparsable": 0,
        "structure_columns": ["compound_db_identity:smiles"], "identifier_column": None, "clashing_columns": [],
        "salts": {"HB001203": "Metoclopramide hydrochloride"}, "identifiers": {}},
    "gnps/library_search_results_replica.tsv": {
        "tool": "GNPS library search results (FBMN library_matches)", "n_rows": 7, "n_structures": 7,
        "n_unparsable": 0, "structure_columns": ["Smiles", "INCHI"], "identifier_column": "SpectrumID",
        "clashing_columns": [], "salts": {"HB001203": "Metoclopramide hydrochloride"},
        "identifiers": {"PS010904": "CCMSLIB00009990001", "HB000434": "CCMSLIB00009990003",
                        "HB001203": "CCMSLIB00009990004", "HB003619": "CCMSLIB00009990005"}},
}
for table in CANDIDATES.values():
    table.update(queries=FIVE, true_inchikey14=TRUE_KEYS, status=FIVE_STATUS)

# Per-record corrections of the rules above, each with its reason (checked by hand against the file text).
_ONLY_PEAK_IS_PRECURSOR = {"status_in": ["no peaks after cleaning"]}  # "Num Peaks: 1", "141.0194 999"
OVERRIDES = {"matchms/massbank_five_spectra.msp": {1: _ONLY_PEAK_IS_PRECURSOR},
             "matchms/riken_style_five_spectra.msp": {1: _ONLY_PEAK_IS_PRECURSOR}}


def main():
    spectra = {}
    for name, parse in SPECTRA.items():
        records, id_field = parse(HERE / name)
        for i, fix in OVERRIDES.get(name, {}).items():
            records[i].update(fix)
        by_type = {}
        for r in records:
            if r["inchikey14"] and not r["problem"] and r["adduct"]:
                by_type.setdefault(r["adduct"], set()).add(r["inchikey14"])
        spectra[name] = {"n_records": len(records), "id_field": id_field,
                         "n_structures_by_adduct": {a: len(k) for a, k in sorted(by_type.items())},
                         "records": records}
    manifest = json.loads((HERE / "expectations.json").read_text()) if (HERE / "expectations.json").exists() else {}
    manifest["spectra"] = spectra
    manifest["unreadable"] = UNREADABLE
    manifest["candidates"] = CANDIDATES
    (HERE / "expectations.json").write_text(json.dumps(manifest) + "\n")  # one line: diffs stay small
    for name, e in spectra.items():
        print(f"{name}: {e['n_records']} records, ids from {e['id_field']}")


if __name__ == "__main__":
    main()

"""Write the candidate tables of the corpus that are format REPLICAS, not copies (see PROVENANCE.md).

The real example outputs of SIRIUS (AGPL-3.0), MetFrag (LGPL) and the GNPS workflows (UC non-commercial licence)
cannot be shipped here, and no permissively licensed MZmine 3 feature table was found; these files follow each
tool's documented column layout (header names as the tools write them) with rows written by this script: the five
structures of matchms/massbank_five_spectra.msp (the queries of the candidate-table tests), two same-formula
decoys, and the salts, hydrates, 'N/A' values and clashing column names that those tools' outputs carry.

usage: python make_replicas.py   (needs RDKit)
"""

import csv
from pathlib import Path

from rdkit import Chem, RDLogger
from rdkit.Chem import Crippen, rdMolDescriptors

RDLogger.DisableLog("rdApp.*")
HERE = Path(__file__).parent

# (identifier, name, SMILES as a database would hold it): the five query structures (parents), two decoys.
STRUCTURES = [
    ("CID6022", "ADP", "C1=NC2=C(C(=N1)N)N=CN2C3C(C(C(O3)COP(=O)(O)OP(=O)(O)O)O)O"),
    ("CID3840", "Kojic acid", "C1=C(OC=C(C1=O)O)CO"),
    ("CID6726", "Cyclizine", "CN1CCN(CC1)C(C2=CC=CC=C2)C3=CC=CC=C3"),
    ("CID4168", "Metoclopramide", "CCN(CC)CCNC(=O)C1=CC(=C(C=C1OC)N)Cl"),
    ("CID5281143", "Tentotoxin", "CC1C(=O)NC(C(=O)N(C(=CC2=CC=CC=C2)C(=O)NCC(=O)N1C)C)CC(C)C"),
    ("DECOY1", "2-methyl-1-benzhydrylpiperazine", "CC1CNCCN1C(C2=CC=CC=C2)C3=CC=CC=C3"),
    ("DECOY2", "metoclopramide positional isomer", "CCN(CC)CCNC(=O)C1=CC(=C(C=C1N)Cl)OC"),
]
# Forms in which tables carry some of them: a salt, a hydrate (reduced to the parent, the query's formula).
SALT = ("CID23663954", "Metoclopramide hydrochloride", "CCN(CC)CCNC(=O)C1=CC(=C(C=C1OC)N)Cl.Cl")
HYDRATE = ("CID3840-H2O", "Kojic acid hydrate", "C1=C(OC=C(C1=O)O)CO.O")
CYCLIZINE_SALT = ("CID6726-HCl", "Cyclizine hydrochloride", "CN1CCN(CC1)C(C2=CC=CC=C2)C3=CC=CC=C3.Cl")

ROW_OF = {"adp": 0, "kojic": 1, "cyclizine": 2, "metoclopramide": 3, "tentotoxin": 4}


def table(**replaced):
    """The seven structures, with some of them only in another form (a salt, a hydrate): the query of that
    structure then finds it only when the table's row is reduced to its parent."""
    rows = list(STRUCTURES)
    for key, row in replaced.items():
        rows[ROW_OF[key]] = row
    return rows


def props(smiles):
    mol = Chem.MolFromSmiles(smiles)
    inchi = Chem.MolToInchi(mol)
    key = Chem.InchiToInchiKey(inchi)
    return {"mol": mol, "inchi": inchi, "key": key, "formula": rdMolDescriptors.CalcMolFormula(mol),
            "mass": rdMolDescriptors.CalcExactMolWt(mol), "xlogp": round(Crippen.MolLogP(mol), 1)}


def write(path, header, rows, delimiter):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, delimiter=delimiter, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)


def sirius():
    """SIRIUS 5 ``structure_candidates.tsv``: its own ``adduct`` column ("[M + H]+"), 'N/A' confidences."""
    header = ["structureRankPerFormula", "formulaRank", "ConfidenceScore", "CSI:FingerIDScore", "molecularFormula",
              "adduct", "InChIkey2D", "InChI", "name", "smiles", "xlogp", "pubchemids", "links", "dbflags"]
    rows = []
    for rank, (cid, name, smiles) in enumerate(table(metoclopramide=SALT), 1):
        p = props(smiles)
        adduct = "[M - H]-" if name == "Kojic acid" else "[M + H]+"
        rows.append([1, rank, "0.81" if rank == 1 else "N/A", f"{-3.5 * rank:.3f}", p["formula"], adduct,
                     p["key"][:14], p["inchi"], name, smiles, p["xlogp"], cid.removeprefix("CID"),
                     f"PubChem:({cid.removeprefix('CID')})", 2])
    write(HERE / "sirius" / "structure_candidates_replica.tsv", header, rows, "\t")


def metfrag_psv():
    """A MetFrag result / local database ``.psv`` (pipe separated), with a salt, a hydrate and an 'N/A' SMILES."""
    header = ["Score", "InChI", "MonoisotopicMass", "Identifier", "MolecularFormula", "InChIKey3", "SMILES",
              "InChIKey2", "InChIKey1", "InChIKey", "CompoundName", "NoExplPeaks"]
    rows = []
    for i, (cid, name, smiles) in enumerate(table(metoclopramide=SALT, kojic=HYDRATE)):
        p = props(smiles)
        key = p["key"].split("-")
        rows.append([f"{1 - i / 10:.2f}", p["inchi"], f"{p['mass']:.6f}", cid.removeprefix("CID"), p["formula"],
                     key[2], "N/A" if name == "Tentotoxin" else smiles, key[1], key[0], p["key"], name, i])
    write(HERE / "metfrag" / "candidates_replica.psv", header, rows, "|")


def metfrag_sdf():
    """A MetFrag SDF candidate file: structures in the molblock, identifiers in ``DatabaseID``, a salt."""
    path = HERE / "metfrag" / "candidates_replica.sdf"
    writer = Chem.SDWriter(str(path))
    for cid, name, smiles in table(cyclizine=CYCLIZINE_SALT):
        p = props(smiles)
        mol = p["mol"]
        mol.SetProp("_Name", "")
        mol.SetProp("DatabaseID", cid.removeprefix("CID"))
        mol.SetProp("InChIKey", p["key"])
        mol.SetProp("MolecularFormula", p["formula"])
        mol.SetProp("MonoisotopicMass", f"{p['mass']:.6f}")
        mol.SetProp("Name", name)
        writer.write(mol)
    writer.close()


def mzmine():
    """An MZmine 3 feature list CSV export with ``compound_db_identity:*`` annotation columns (empty when a
    feature has no annotation), the structure only in ``compound_db_identity:smiles``."""
    header = ["id", "rt", "mz", "charge", "height", "area", "compound_db_identity:compound_name",
              "compound_db_identity:mol_formula", "compound_db_identity:adduct", "compound_db_identity:smiles",
              "compound_db_identity:precursor_mz"]
    rows = []
    for i, (_, name, smiles) in enumerate(table(metoclopramide=SALT), 1):
        p = props(smiles)
        rows.append([i, f"{1.5 + i / 7:.3f}", f"{p['mass'] + 1.007276:.4f}", 1, 1.2e5 * i, 3.4e5 * i, name,
                     p["formula"], "[M+H]+", smiles, f"{p['mass'] + 1.007276:.4f}"])
    rows.append([len(rows) + 1, "7.250", "512.2983", 1, 9.9e4, 2.1e5, "", "", "", "", ""])  # no annotation
    write(HERE / "mzmine" / "feature_table_replica.csv", header, rows, ",")


def gnps():
    """A GNPS library-search result table (FBMN ``library_matches`` layout): ``SpectrumID``, ``Smiles``, ``INCHI``
    ('N/A' when absent), and columns named like identify's result columns (``Adduct``, ``Charge``...)."""
    header = ["#Scan#", "Adduct", "CAS_Number", "Charge", "Compound_Name", "Compound_Source", "Data_Collector",
              "ExactMass", "FileScanUniqueID", "INCHI", "INCHI_AUX", "Instrument", "IonMode", "Ion_Source", "LibMZ",
              "LibraryName", "LibraryQualityString", "Library_Class", "MQScore", "MZErrorPPM", "MassDiff",
              "NumberHits", "Organism", "PI", "Precursor_MZ", "Pubmed_ID", "RT_Query", "SharedPeaks", "Smiles",
              "SpecCharge", "SpecMZ", "SpectrumFile", "SpectrumID", "TIC_Query", "UpdateWorkflowName", "tags"]
    rows = []
    for i, (_, name, smiles) in enumerate(table(metoclopramide=SALT), 1):
        p = props(smiles)
        mz = f"{p['mass'] + 1.007276:.3f}"
        inchi = "N/A" if i % 2 else p["inchi"]
        rows.append([100 + i, "M+H", "N/A", 1, name, "Commercial", "corpus", "0.0", f"spectra/specs_ms.mgf{100 + i}",
                     inchi, "N/A", "HCD", "Positive", "ESI", mz, "lib-00001.mgf", "Gold", 1, f"{0.9 - i / 50:.3f}",
                     "1.2", "0.0002", 1, "GNPS-LIBRARY", "corpus", mz, "N/A", "0", 12, smiles, 1, mz,
                     "spectra/specs_ms.mgf", f"CCMSLIB0000999{i:04d}", 42610, "UPDATE-SINGLE-ANNOTATED-GOLD", " "])
    write(HERE / "gnps" / "library_search_results_replica.tsv", header, rows, "\t")


if __name__ == "__main__":
    sirius()
    metfrag_psv()
    metfrag_sdf()
    mzmine()
    gnps()

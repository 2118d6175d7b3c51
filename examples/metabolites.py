"""Metabolite identification from MS/MS spectra with the Python API (needs RDKit and matchms: 'iokr[chem]').

User guide: docs/metabolites.md. Bundled MassBank subset and PubChem candidate lists; a reduced run (10 lists,
500 training structures, no cross-validation) takes about 15 seconds:

    python examples/metabolites.py [--report DIR] [--full]

``--full`` then runs the command-line evaluation of the whole bundle (``iokr metabolites evaluate``, 3-fold CV,
60 lists; a few minutes), as ``make demo`` does.
"""
# requires: rdkit, matchms

import argparse
import tarfile
import tempfile
from pathlib import Path

import numpy as np

from iokr.apps.metabolites import (
    CandidateStore,
    Cleaning,
    Fingerprinter,
    MetaboliteIdentifier,
    evaluate_lists,
    load_identifier,
    read_candidate_lists,
    read_spectra,
    save_identifier,
    training_set,
)
from iokr.datasets import BUNDLED_METABOLITES

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--report", default=None, help="folder for report.html and its figures (default: a temp dir)")
parser.add_argument("--full", action="store_true", help="also run 'iokr metabolites evaluate' on the whole bundle")
args = parser.parse_args()
work = Path(tempfile.mkdtemp(prefix="iokr_metabolites_"))

# Candidate lists: one CSV per query (columns id1 = InChI, score), named ..._id=<InChIKey of the true structure>.csv.
# Ten of the bundled lists, extracted to a folder (a folder, a .tar.gz or a .sqlite store are all accepted).
with tarfile.open(BUNDLED_METABOLITES["candidates"]) as tar:
    members = sorted((m for m in tar.getmembers() if m.name.endswith(".csv")), key=lambda m: m.name)[:10]
    (work / "lists").mkdir()
    for m in members:
        (work / "lists" / Path(m.name).name).write_bytes(tar.extractfile(m).read())

fingerprinter = Fingerprinter("morgan_counts+maccs")  # RDKit Morgan counts (r=2, 2048) + MACCS keys
store = CandidateStore(work / "candidates.sqlite", fingerprinter)  # parsed structures and fingerprints, cached
store.attach_cache(BUNDLED_METABOLITES["fingerprint_cache"])  # precomputed fingerprints of the bundled candidates
lists = read_candidate_lists(work / "lists", store)
print(f"{len(lists)} candidate lists, {sum(len(lst) for lst in lists)} candidates")

# Spectra: MassBank JSONL (also .mgf / .msp through matchms). Keep the spectra of the lists' true structures (the
# queries) and of 500 other structures (training), to keep this example short.
spectra, read_report = read_spectra(BUNDLED_METABOLITES["spectra"], require_structure=True)
keys = np.array(spectra.structure_keys())
true_keys = {lst.true_key[:14] for lst in lists}
others = sorted(set(keys.tolist()) - true_keys - {""})
chosen = set(np.random.default_rng(0).choice(others, 500, replace=False).tolist()) | true_keys
spectra = spectra[np.flatnonzero(np.isin(keys, list(chosen)))]
print(f"{len(spectra)} spectra ({read_report.summary()})")

# Structure-disjoint training set: the lists' true structures are excluded; one merged spectrum per structure.
cleaning = Cleaning()
train = training_set(spectra, store, cleaning, exclude_keys=[lst.true_key for lst in lists])
model = MetaboliteIdentifier(kernels=("ppk", "ppk_nl"), weights="alignf", alpha=0.3, output_kernel="gaussian_tanimoto")
model.fit(train.spectra, train.Y)
print(f"trained on {len(train.spectra)} structures; ALIGNF weights {np.round(model.weights_, 3)}")

# Model file: npz arrays + JSON metadata + checksum, no pickle; loading rebuilds the identifier.
save_identifier(work / "model.npz", model, fingerprinter, cleaning)
model, fingerprinter, cleaning, _ = load_identifier(work / "model.npz")

summary = evaluate_lists(model, spectra, lists, store, cleaning)
print("top-k (%) per structure:", {k: round(v, 1) for k, v in summary["per_structure"].items()})
print("published IOKR on these lists:", {k: round(v, 1) for k, v in summary["published"].items()})
for d in summary["lists"][:3]:
    print(f"  {d['formula']:12s} {d['n_candidates']:5d} candidates: rank {d['rank']:g} "
          f"(published {d['published_rank']:g}); median over its {len(d['spectrum_ranks'])} single spectra "
          f"{np.median(d['spectrum_ranks']):g}")

try:
    import matplotlib  # noqa: F401
except ImportError:
    print("matplotlib is not installed: no report (pip install 'iokr[plot]')")
else:
    from iokr.cli._report import write_report

    png, page = write_report(summary, Path(args.report) if args.report else work / "report")
    print("report:", page)

if args.full:
    from iokr.cli.main import main

    main(["metabolites", "evaluate", "--spectra", str(BUNDLED_METABOLITES["spectra"]), "--candidates",
          str(BUNDLED_METABOLITES["candidates"]), "--output", str(work / "evaluate"), "--report"])

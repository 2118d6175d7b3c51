"""A small data folder for the experiments' smoke runs, laid out like the shared data (``DATA/metabolites/...``).

Built from the bundled subsets (``iokr/datasets/data``: MassBank spectra and PubChem candidate lists, Bible
chapters, Taskar's OCR words; sources and licences in their READMEs), cut down further so that every study's quick
run takes seconds, and from tiny synthetic files where a study's real data is not bundled (a Mulan-style ARFF pair
for ``multilabel/flags``; an ``[M+Na]+`` file of relabelled ``[M+H]+`` spectra for ``ion_modes``). Nothing here reads
/work/shared.
"""

import gzip
import importlib.util
import io
import json
import tarfile
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from iokr.apps.metabolites import inchikey
from iokr.datasets import BUNDLED_METABOLITES, BUNDLED_PARALLEL_TEXT

OCR_SUBSET = Path(__file__).resolve().parents[2] / "iokr" / "datasets" / "data" / "ocr_letters_subset"
#: Candidate lists kept, candidates per list, and training structures (up to 3 spectra each) of the smoke data.
N_LISTS, LIST_SIZE, N_TRAIN_STRUCTURES = 3, 25, 70
#: Negative-mode training structures (up to 3 spectra each) and structures of the synthetic rare type.
N_NEGATIVE_STRUCTURES, N_RARE_STRUCTURES = 60, 12
#: ``[M+Na]+`` minus ``[M+H]+`` (Na - H), the precursor shift of the relabelled spectra.
NA_MINUS_H = 22.989218 - 1.007276


def _write_jsonl_gz(path, records):
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.writelines(json.dumps(r) + "\n" for r in records)


def _candidate_lists(folder):
    """The first ``N_LISTS`` bundled lists, each cut to its true structure and ``LIST_SIZE - 1`` other candidates;
    returns the true structures' first InChIKey blocks."""
    keys = []
    with tarfile.open(BUNDLED_METABOLITES["candidates"]) as source, \
            tarfile.open(folder / "pubchem_candidate_sets_dev.tar.gz", "w:gz") as target:
        members = sorted((m for m in source.getmembers() if m.isfile()), key=lambda m: m.name)[:N_LISTS]
        for member in members:
            true_key = member.name.rsplit("_id=", 1)[1].removesuffix(".csv")
            header, *rows = source.extractfile(member).read().decode().splitlines()
            true_rows = [r for r in rows if (inchikey(r.rsplit(",", 1)[0].strip('"')) or "")[:14] == true_key[:14]]
            kept = true_rows[:1] + [r for r in rows if r not in true_rows][:LIST_SIZE - 1]
            data = "\n".join([header, *kept]).encode() + b"\n"
            info = tarfile.TarInfo(member.name)
            info.size = len(data)
            target.addfile(info, io.BytesIO(data))
            keys.append(true_key[:14])
    return keys


def _metabolites(folder):
    folder.mkdir(parents=True)
    list_keys = set(_candidate_lists(folder))
    with gzip.open(BUNDLED_METABOLITES["spectra"], "rt", encoding="utf-8") as handle:
        records = [json.loads(line) for line in handle]
    per_structure = {}
    for r in records:
        per_structure.setdefault(r["inchikey_rdkit"][:14], []).append(r)
    # isomers first: the per-spectrum CV of single_spectra_metabolites queries structures whose formula another
    # training structure shares
    others = [k for k in per_structure if k not in list_keys]
    formula_count = Counter(per_structure[k][0]["formula_rdkit"] for k in others)
    others.sort(key=lambda k: formula_count[per_structure[k][0]["formula_rdkit"]] < 2)  # stable: file order kept
    train = others[:N_TRAIN_STRUCTURES]
    kept = [r for k in sorted(list_keys) for r in per_structure.get(k, [])[:4]]
    kept += [r for k in train for r in per_structure[k][:3]]
    _write_jsonl_gz(folder / "massbank_ms2_posMH_permissive.jsonl.gz", kept)
    _negative(folder, list_keys)
    unused = others[N_TRAIN_STRUCTURES:N_TRAIN_STRUCTURES + N_RARE_STRUCTURES]
    _write_jsonl_gz(folder / "massbank_ms2_other_permissive.jsonl.gz",
                    [_as_sodium_adduct(per_structure[k][0]) for k in unused])


def _negative(folder, list_keys):
    """The bundled negative subset cut down like the positive one (for ``ion_modes``)."""
    with gzip.open(BUNDLED_METABOLITES["negative_spectra"], "rt", encoding="utf-8") as handle:
        records = [json.loads(line) for line in handle]
    per_structure = {}
    for r in records:
        per_structure.setdefault(r["inchikey_rdkit"][:14], []).append(r)
    train = [k for k in per_structure if k not in list_keys][:N_NEGATIVE_STRUCTURES]
    kept = [r for k in sorted(list_keys) for r in per_structure.get(k, [])[:4]]
    kept += [r for k in train for r in per_structure[k][:3]]
    _write_jsonl_gz(folder / "massbank_ms2_negMH_permissive.jsonl.gz", kept)


def _as_sodium_adduct(record):
    """A synthetic rare type for ``ion_modes``' smoke run: an ``[M+H]+`` spectrum relabelled ``[M+Na]+`` (precursor
    shifted by Na - H; the peaks unchanged), so that the rare types' own sub-models and curves run."""
    mz = record["precursor_mz"]
    return {**record, "precursor_type": "[M+Na]+", "precursor_mz": None if mz is None else mz + NA_MINUS_H,
            "accession": record["accession"] + "-as-Na"}


def _parallel_text(folder, n_chapters=120):
    folder.mkdir(parents=True)
    with gzip.open(BUNDLED_PARALLEL_TEXT, "rt", encoding="utf-8") as handle:
        lines = [line for line in handle if line.strip()][:n_chapters]
    with gzip.open(folder / "bible_kjv_en__rv1909_es.chapters.jsonl.gz", "wt", encoding="utf-8") as handle:
        handle.writelines(lines)


def _ocr_letters(folder, n_words=(40, 30)):
    """The bundled subset's first words of folds 0 and 1, in the bundled file's layout."""
    folder.mkdir(parents=True)
    z = np.load(OCR_SUBSET / "ocr_letters_subset.npz")
    starts = np.concatenate([[0], np.cumsum(z["word_lengths"])])
    words = np.concatenate([np.flatnonzero(z["word_folds"] == f)[:n] for f, n in enumerate(n_words)])
    letters = np.concatenate([np.arange(starts[w], starts[w + 1]) for w in words])
    np.savez_compressed(folder / "ocr_letters_taskar.npz", pixels_packed=z["pixels_packed"][letters],
                        labels=z["labels"][letters], word_lengths=z["word_lengths"][words],
                        word_folds=z["word_folds"][words], word_index=np.arange(words.size))


def _flags(folder, n_train=60, n_test=30, n_features=6, n_labels=4, seed=0):
    """A synthetic Mulan pair ``flags-train`` / ``flags-test`` (dense numeric features, labels last) and its XML."""
    folder.mkdir(parents=True)
    rng = np.random.default_rng(seed)
    W = rng.normal(size=(n_features, n_labels))
    head = ["@relation synthetic_flags", ""] + [f"@attribute f{j} numeric" for j in range(n_features)]
    head += [f"@attribute label{j} {{0,1}}" for j in range(n_labels)] + ["", "@data"]
    for name, n in (("flags-train", n_train), ("flags-test", n_test)):
        X = rng.normal(size=(n, n_features))
        Y = (X @ W + 0.3 * rng.normal(size=(n, n_labels)) > 0).astype(int)
        rows = [",".join([*(f"{v:.4f}" for v in x), *map(str, y)]) for x, y in zip(X, Y, strict=True)]
        with gzip.open(folder / f"{name}.arff.gz", "wt") as handle:
            handle.write("\n".join(head + rows) + "\n")
    labels = "".join(f'<label name="label{j}"></label>' for j in range(n_labels))
    (folder / "flags.xml").write_text(f'<?xml version="1.0"?><labels>{labels}</labels>\n')


@pytest.fixture(scope="session")
def smoke_data(tmp_path_factory):
    """The smoke runs' data folder (built once per session)."""
    data = tmp_path_factory.mktemp("experiments_data")
    _parallel_text(data / "parallel_text")
    _ocr_letters(data / "ocr_letters")
    _flags(data / "multilabel" / "flags")
    if importlib.util.find_spec("rdkit"):  # the metabolite studies (skipped without RDKit) parse structures
        _metabolites(data / "metabolites")
    return data

import numpy as np
import pytest

from iokr.apps.metabolites import Spectra


def random_spectra(rng, n, max_peaks=12, mz_range=(50.0, 300.0), grid=None, empty_every=None):
    """Random spectra; ``grid`` snaps m/z to a coarse grid so that many peaks coincide across spectra."""
    peak_lists, precursors = [], []
    for i in range(n):
        k = 0 if (empty_every and i % empty_every == 0) else int(rng.integers(1, max_peaks + 1))
        mz = rng.uniform(*mz_range, size=k)
        if grid is not None:
            mz = np.round(mz / grid) * grid + rng.normal(scale=grid / 50, size=k)
        peak_lists.append(np.column_stack([mz, rng.uniform(0.01, 1.0, size=k)]))
        precursors.append(mz_range[1] + rng.uniform(1, 20))
    meta = [{"accession": f"A{i}", "inchikey": f"KEY{i % 5:011d}-X-N"} for i in range(n)]
    return Spectra.from_peak_lists(peak_lists, np.array(precursors), meta)


@pytest.fixture
def spectra_factory():
    return random_spectra


def bundled_lists_and_training(n_lists, n_train, skip=0):
    """Rows of ``n_lists`` bundled candidate lists (the smallest, after ``skip``), one MassBank record of each
    list's true structure, and the records of the first ``n_train`` other structures (training).

    Returns ``(lists, queries, train)``: lists of row dicts per list, one record per list, training records.
    """
    import csv  # noqa: PLC0415
    import gzip  # noqa: PLC0415
    import json  # noqa: PLC0415
    import tarfile  # noqa: PLC0415

    from iokr.datasets._metabolites import BUNDLED_METABOLITES  # noqa: PLC0415

    with tarfile.open(BUNDLED_METABOLITES["candidates"]) as tar:
        members = sorted((m for m in tar.getmembers() if m.name.endswith(".csv")),
                         key=lambda m: m.size)[skip:skip + n_lists]
        lists = [list(csv.DictReader(tar.extractfile(m).read().decode().splitlines())) for m in members]
        true = [m.name.rsplit("_id=", 1)[1][:14] for m in members]
    records, train = dict.fromkeys(true), {}
    with gzip.open(BUNDLED_METABOLITES["spectra"], "rt") as handle:
        for line in handle:
            rec = json.loads(line)
            key = rec["inchikey_rdkit"][:14]
            if key in records and records[key] is None:
                records[key] = rec
            elif key not in records and (len(train) < n_train or key in train):
                train.setdefault(key, []).append(rec)
    return lists, [records[k] for k in true], [r for recs in train.values() for r in recs]


def train_small_model(root, train):
    """``iokr metabolites train`` on training records (JSONL written under ``root``), one alpha, 2 folds: the
    model file's path."""
    import json  # noqa: PLC0415

    from iokr.cli.main import main  # noqa: PLC0415

    train_path = root / "train.jsonl"
    train_path.write_text("\n".join(json.dumps(r) for r in train) + "\n")
    model = root / "model.npz"
    assert main(["metabolites", "train", "--spectra", str(train_path), "--output", str(model),
                 "--alphas", "0.3", "--folds", "2"]) == 0
    return model

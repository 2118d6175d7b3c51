"""Fuzz the candidate-list readers (CSV, TSV, SDF, tar.gz, folder), the fingerprint cache and the store file."""

import shutil

import numpy as np
import pytest
from fuzz_helpers import fuzz_settings, mutated, run_reader, tar_gz
from hypothesis import given
from hypothesis import strategies as st

pytest.importorskip("rdkit")

from iokr.apps.metabolites import CandidateStore, Fingerprinter, read_candidate_lists
from iokr.apps.metabolites.candidates._candidates import export_fingerprint_cache

FMT = "candidates"
FP = Fingerprinter(kind="morgan_bits", n_bits=64, radius=1)

L_ALA = "InChI=1S/C3H7NO2/c1-2(4)3(5)6/h2H,4H2,1H3,(H,5,6)/t2-/m0/s1"
SARCOSINE = "InChI=1S/C3H7NO2/c1-4-2-3(5)6/h4H,2H2,1H3,(H,5,6)"
NAME = "scoring_list=C3H7NO2_spec=X1_id=QNAYBMKLOCPYGJ-REOHCLBHSA-N"
CSV = f'id1,score\n"{SARCOSINE}",0.9\n"{L_ALA}",0.5\nCCO,1e309\n"InChI=1S/garbage",0.1\n'.encode()
TSV = b"smiles\tscore\nCCO\t0.5\nOC(=O)C(N)C\tnan\nC1CC1\t-3\n"
SDF = (b"\n     RDKit          2D\n\n  3  2  0  0  0  0  0  0  0  0999 V2000\n"
       b"    0.0000    0.0000    0.0000 C   0  0  0  0  0  0  0  0  0  0  0  0\n"
       b"    1.2990    0.7500    0.0000 C   0  0  0  0  0  0  0  0  0  0  0  0\n"
       b"    2.5981   -0.0000    0.0000 O   0  0  0  0  0  0  0  0  0  0  0  0\n"
       b"  1  2  1  0\n  2  3  1  0\nM  END\n$$$$\n") * 2
TOKENS = [b"id1", b"smiles", b"inchi", b"score", b"InChI=1S/", b"InChI=", b"C", b"c1ccccc1", b"[Na+]", b"(", b"$$$$\n",
          b"M  END\n", b"999 V2000", b"99999", b"\x00"]


def _check_lists(lists):
    if lists is None:
        return
    for lst in lists:
        assert len(lst.keys) == len(lst.structures) == len(set(lst.keys))
        assert lst.n_rows == len(lst.keys) + lst.n_unparsable + lst.n_duplicates + lst.n_missing
        assert all(isinstance(k, str) and len(k) == 14 for k in lst.keys)
        assert lst.scores is None or lst.scores.shape == (len(lst.keys),)
        assert lst.true_index is None or 0 <= lst.true_index < len(lst)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz_candidates")


def _read(path):
    return read_candidate_lists(path, CandidateStore(":memory:", FP))


@fuzz_settings(scale=2)
@given(kind=st.sampled_from([("csv", CSV), ("tsv", TSV), ("sdf", SDF), ("txt", CSV)]), data=st.data())
def test_mutated_single_file(workdir, kind, data):
    ext, seed = kind
    blob = data.draw(mutated(seed, TOKENS))
    path = workdir / f"{NAME}.{ext}"
    path.write_bytes(blob)
    _check_lists(run_reader(FMT, _read, path))


@fuzz_settings(scale=1)
@given(csv_blob=mutated(CSV, TOKENS, max_ops=2), sdf_blob=mutated(SDF, TOKENS, max_ops=2),
       archive_ops=st.integers(0, 3), data=st.data())
def test_mutated_archive_and_folder(workdir, csv_blob, sdf_blob, archive_ops, data):
    members = {f"lists/{NAME}.csv": csv_blob, "lists/b.sdf": sdf_blob, "lists/readme.md": b"ignored"}
    archive = tar_gz(members)
    if archive_ops:  # damage the compressed archive itself
        archive = data.draw(mutated(archive, max_ops=archive_ops))
    path = workdir / "lists.tar.gz"
    path.write_bytes(archive)
    _check_lists(run_reader(FMT, _read, path))
    folder = workdir / "folder"
    shutil.rmtree(folder, ignore_errors=True)
    (folder / "lists").mkdir(parents=True)
    for name, blob in members.items():
        (folder / name).write_bytes(blob)
    _check_lists(run_reader(FMT, _read, folder))


@fuzz_settings(scale=2)
@given(header=st.lists(st.sampled_from(["id1", "ID1", " smiles", "inchi", "score", "Score", "x", "", "structure"]),
                       min_size=1, max_size=4),
       rows=st.lists(st.lists(st.text(max_size=12) | st.sampled_from([SARCOSINE, "CCO", "nan", "1e999", "-0", ""]),
                              max_size=5), max_size=5),
       delimiter=st.sampled_from([",", "\t"]))
def test_generated_tables(workdir, header, rows, delimiter):
    """Headers with duplicated/missing/odd columns, ragged rows, quotes and unicode in cells."""
    text = "\n".join(delimiter.join(r) for r in [header, *rows]) + "\n"
    path = workdir / f"{NAME}.{'tsv' if delimiter == chr(9) else 'csv'}"
    path.write_bytes(text.encode("utf-8", errors="surrogatepass"))
    _check_lists(run_reader(FMT, _read, path))


@pytest.fixture(scope="module")
def cache_blob(tmp_path_factory):
    store = CandidateStore(":memory:", FP)
    path = tmp_path_factory.mktemp("cache") / "cache.npz"
    export_fingerprint_cache(store, [SARCOSINE, L_ALA, "CCO"], path)
    return path.read_bytes()


def _attach_and_use(path):
    store = CandidateStore(":memory:", FP)
    n = store.attach_cache(path)
    # a cached structure is then served from the cache: its fingerprint must come out well-formed
    fps = store.fingerprints([SARCOSINE, L_ALA, "CCO", "C1CC1"])
    assert fps.shape == (4, FP.n_features) and np.isin(fps, (0, 1)).all()
    return n


@fuzz_settings(scale=2)
@given(data=st.data())
def test_mutated_fingerprint_cache(workdir, cache_blob, data):
    blob = data.draw(mutated(cache_blob, max_ops=3))
    path = workdir / "cache.npz"
    path.write_bytes(blob)
    run_reader(FMT, _attach_and_use, path)


def _rewritten_cache(cache_path, out_path, name, value):
    with np.load(cache_path, allow_pickle=False) as d:
        arrays = {k: d[k] for k in d.files}
    if value is None:
        arrays.pop(name)
    else:
        arrays[name] = value
    np.savez(out_path, **arrays)


cache_values = st.one_of(
    st.none(), st.just(np.zeros(0)), st.just(np.array(-1)), st.just(np.array(10**6)), st.just(np.array("x")),
    st.just(np.arange(5)), st.just(np.arange(5)[::-1].copy()), st.just(np.full((2, 2), 7, np.uint16)),
    st.just(np.array([np.nan])), st.just(np.array([0, 2, 1, 99])), st.just(np.array([b"x" * 8] * 3, "S8")),
)


@fuzz_settings(scale=2)
@given(name=st.sampled_from(["digest", "key14", "formula", "indptr", "cols", "vals", "params", "n_features"]),
       value=cache_values)
def test_fingerprint_cache_with_wrong_members(workdir, cache_blob, name, value):
    """A well-formed archive whose members have the wrong shape, dtype or range (or are missing)."""
    src = workdir / "cache_src.npz"
    src.write_bytes(cache_blob)
    path = workdir / "cache_bad.npz"
    _rewritten_cache(src, path, name, value)
    run_reader(FMT, _attach_and_use, path)


@pytest.fixture(scope="module")
def store_blob(tmp_path_factory):
    path = tmp_path_factory.mktemp("store") / "store.sqlite"
    store = CandidateStore(path, FP)
    store.add([SARCOSINE, L_ALA, "CCO"])
    store.close()
    return path.read_bytes()


def _open_store_and_query(path):
    store = CandidateStore(path, FP)
    try:
        keys, _ = store.keys_for([SARCOSINE, "CCO", "C1CC1"])
        fps = store.fingerprints([SARCOSINE, "CCO"])
        assert fps.shape == (2, FP.n_features)
        for formula in store.formulas():
            store.by_formula(formula)
        return keys
    finally:
        store.close()


@fuzz_settings(scale=1)
@given(data=st.data())
def test_mutated_store_file(workdir, store_blob, data):
    blob = data.draw(mutated(store_blob, max_ops=3))
    path = workdir / "store.sqlite"
    path.unlink(missing_ok=True)
    path.write_bytes(blob)
    run_reader(FMT, _open_store_and_query, path)

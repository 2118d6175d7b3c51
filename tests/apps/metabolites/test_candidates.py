import io
import tarfile

import numpy as np
import pytest

from iokr.apps.metabolites import CandidateStore, Fingerprinter, read_candidate_lists
from iokr.apps.metabolites.candidates._candidates import export_fingerprint_cache
from iokr.exceptions import IOKRDataError

# L- and D-alanine share the first InChIKey block (QNAYBMKLOCPYGJ): a duplicate to merge.
L_ALA = "InChI=1S/C3H7NO2/c1-2(4)3(5)6/h2H,4H2,1H3,(H,5,6)/t2-/m0/s1"
D_ALA = "InChI=1S/C3H7NO2/c1-2(4)3(5)6/h2H,4H2,1H3,(H,5,6)/t2-/m1/s1"
SARCOSINE = "InChI=1S/C3H7NO2/c1-4-2-3(5)6/h4H,2H2,1H3,(H,5,6)"
BETA_ALA = "InChI=1S/C3H7NO2/c4-2-1-3(5)6/h1-2,4H2,(H,5,6)"
NAME = "scoring_list=C3H7NO2_spec=X1_id=QNAYBMKLOCPYGJ-REOHCLBHSA-N.csv"
CSV = f'id1,score\n"{SARCOSINE}",0.9\n"{L_ALA}",0.5\n"{D_ALA}",0.7\n"InChI=1S/garbage",0.1\n"{BETA_ALA}",0.2\n'


def _folder(tmp_path):
    d = tmp_path / "lists"
    d.mkdir(exist_ok=True)
    (d / NAME).write_text(CSV)
    (d / "scoring_list=C3H7NO2_spec=X2_id=AAAAAAAAAAAAAA-UHFFFAOYSA-N.csv").write_text(
        f'id1,score\n"{SARCOSINE}",0.9\n')
    return d


def test_folder_lists_merge_duplicates_and_count_unparsable(tmp_path):
    lists = read_candidate_lists(_folder(tmp_path))
    first, second = sorted(lists, key=lambda lst: lst.name)[::-1] if lists[0].name != NAME else lists
    assert first.name == NAME and first.formula == "C3H7NO2"
    assert first.n_rows == 5 and first.n_unparsable == 1 and first.n_duplicates == 1
    assert first.keys == ["FSYKKLYZXJSNPZ", "QNAYBMKLOCPYGJ", "UCMIRNVEIXFBKS"]
    np.testing.assert_allclose(first.scores, [0.9, 0.7, 0.2])  # duplicates keep their best published score
    assert first.true_index == 1
    assert second.true_index is None  # the true structure is missing: never a hit


def test_tar_and_plain_files(tmp_path):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        data = CSV.encode()
        info = tarfile.TarInfo(f"candidate_sets/{NAME}")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    (tmp_path / "l.tar.gz").write_bytes(buf.getvalue())
    (lst,) = read_candidate_lists(tmp_path / "l.tar.gz")
    assert lst.keys == ["FSYKKLYZXJSNPZ", "QNAYBMKLOCPYGJ", "UCMIRNVEIXFBKS"]
    (tmp_path / "c.tsv").write_text("name\tsmiles\na\tCNCC(=O)O\nb\tnot_a_smiles\nc\tNCCC(=O)O\n")
    (lst,) = read_candidate_lists(tmp_path / "c.tsv")
    assert lst.n_unparsable == 1 and len(lst) == 2 and lst.formula == "C3H7NO2" and lst.scores is None
    from rdkit import Chem  # noqa: PLC0415 - optional chem extra, after importorskip

    sdf = "".join(Chem.MolToMolBlock(Chem.MolFromSmiles(s)) + "$$$$\n" for s in ("CNCC(=O)O", "NCCC(=O)O"))
    (tmp_path / "c.sdf").write_text(sdf)
    (lst,) = read_candidate_lists(tmp_path / "c.sdf")
    assert lst.keys == ["FSYKKLYZXJSNPZ", "UCMIRNVEIXFBKS"]
    (tmp_path / "broken.tar.gz").write_bytes(buf.getvalue()[:40])
    with pytest.raises(IOKRDataError, match="truncated or corrupted"):
        read_candidate_lists(tmp_path / "broken.tar.gz")
    (tmp_path / "nocol.csv").write_text("a,b\n1,2\n")
    with pytest.raises(IOKRDataError, match="no structure column"):
        read_candidate_lists(tmp_path / "nocol.csv")


def test_store_caches_fingerprints_and_formula_lookup(tmp_path):
    fp = Fingerprinter("morgan_bits+maccs", n_bits=128)
    store = CandidateStore(tmp_path / "s.sqlite", fp)
    read_candidate_lists(_folder(tmp_path), store)
    assert store.n_computed == 5
    again = CandidateStore(tmp_path / "s.sqlite", fp)
    read_candidate_lists(_folder(tmp_path), again)
    assert again.n_computed == 0  # everything came from the cache
    direct, ok = fp.transform([SARCOSINE, L_ALA])
    np.testing.assert_array_equal(again.fingerprints([SARCOSINE, L_ALA]), direct)
    keys, texts, F = again.by_formula("C3H7NO2")
    assert keys == ["FSYKKLYZXJSNPZ", "QNAYBMKLOCPYGJ", "UCMIRNVEIXFBKS"] and F.shape == (3, fp.n_features)
    assert again.by_formula("C99")[0] == []
    with pytest.raises(IOKRDataError, match="caches fingerprints"):
        CandidateStore(tmp_path / "s.sqlite", Fingerprinter("maccs"))


def test_exported_cache_replaces_parsing(tmp_path):
    fp = Fingerprinter("morgan_counts+maccs", n_bits=256)
    store = CandidateStore(":memory:", fp)
    lists = read_candidate_lists(_folder(tmp_path), store)
    export_fingerprint_cache(store, [s for lst in lists for s in lst.structures], tmp_path / "cache.npz")
    fresh = CandidateStore(":memory:", fp)
    assert fresh.attach_cache(tmp_path / "cache.npz") == 3
    lists2 = read_candidate_lists(_folder(tmp_path), fresh)
    assert fresh.n_computed == 2  # only D-alanine (merged away, not exported) and the unparsable text
    assert [lst.keys for lst in lists2] == [lst.keys for lst in lists]
    np.testing.assert_array_equal(fresh.fingerprints(lists[0].structures), store.fingerprints(lists[0].structures))
    assert CandidateStore(":memory:", Fingerprinter("maccs")).attach_cache(tmp_path / "cache.npz") == 0


def test_default_store_is_a_temporary_file_with_the_same_contents(tmp_path):
    fp = Fingerprinter("morgan_counts+maccs", n_bits=256)
    memory, temporary = CandidateStore(":memory:", fp), CandidateStore(fingerprinter=fp)
    assert temporary.path == ""  # SQLite's private temporary file, deleted on close
    lists_m = read_candidate_lists(_folder(tmp_path), memory)
    lists_t = read_candidate_lists(_folder(tmp_path), temporary)
    assert [lst.keys for lst in lists_t] == [lst.keys for lst in lists_m]
    structures = lists_m[0].structures
    np.testing.assert_array_equal(temporary.fingerprints(structures), memory.fingerprints(structures))
    np.testing.assert_array_equal(temporary.fingerprints(structures, compact=True).counts,
                                  memory.fingerprints(structures, compact=True).counts)
    temporary.close()


def test_detached_cache_keeps_stored_structures_and_parses_new_ones(tmp_path):
    fp = Fingerprinter("morgan_counts+maccs", n_bits=256)
    store = CandidateStore(":memory:", fp)
    lists = read_candidate_lists(_folder(tmp_path), store)
    export_fingerprint_cache(store, [SARCOSINE, L_ALA, BETA_ALA], tmp_path / "cache.npz")
    fresh = CandidateStore(fingerprinter=fp)
    fresh.attach_cache(tmp_path / "cache.npz")
    read_candidate_lists(_folder(tmp_path), fresh)
    n_computed = fresh.n_computed
    fresh.detach_cache()
    np.testing.assert_array_equal(fresh.fingerprints(lists[0].structures), store.fingerprints(lists[0].structures))
    assert fresh.n_computed == n_computed  # stored structures are not parsed again
    fresh.fingerprints(["CCO"])  # not stored: parsed
    assert fresh.n_computed == n_computed + 1


def test_temporary_store_is_named_in_messages():
    store = CandidateStore()
    assert store.label == "(temporary file)"
    assert CandidateStore(":memory:").label == ":memory:"
    store.close()

"""``kill -9`` of ``identify`` while it indexes a candidate table in worker processes: no process of the run is left
after 5 s, and the next run to the same ``--output`` writes the complete folder and sweeps the temporary folder the
killed one left."""

import json
import sys

import pytest
from metab_helpers import bundled_lists_and_training
from process_helpers import kill_mid_run, start, write_structure_table

from iokr.cli.main import main
from iokr.io._atomic import TEMPORARY_PATTERN
from iokr.io._ownership import is_claimed

pytest.importorskip("rdkit")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_kill_9_of_identify_indexing_a_table(tmp_path, sessions):
    _, queries, train = bundled_lists_and_training(1, 25, skip=2)
    (tmp_path / "train.jsonl").write_text("\n".join(json.dumps(r) for r in train) + "\n")
    model = tmp_path / "model.npz"
    assert main(["metabolites", "train", "--spectra", str(tmp_path / "train.jsonl"), "--output", str(model),
                 "--alphas", "0.3", "--folds", "2"]) == 0
    q = queries[0]
    peaks = "\n".join(f"{mz} {i}" for mz, i in q["peaks"])
    mgf = tmp_path / "q.mgf"
    mgf.write_text(f"BEGIN IONS\nFEATURE_ID=1\nPEPMASS={q['precursor_mz']}\nCHARGE=1+\nADDUCT=[M+H]+\n{peaks}\n"
                   "END IONS\n")
    out = tmp_path / "results" / "identified"
    args = ["metabolites", "identify", "--model", model, "--spectra", mgf, "--output", out]

    killed = start(sessions, *args, "--candidates", write_structure_table(tmp_path / "big.csv", 6000))
    kill_mid_run(killed)
    assert not is_claimed(out) and not out.exists()
    assert [p.name for p in out.parent.iterdir() if TEMPORARY_PATTERN.match(p.name)]  # what the next run sweeps

    assert main([*map(str, args), "--candidates", str(write_structure_table(tmp_path / "small.csv", 40))]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["parameters.json", "structure_candidates.tsv",
                                                     "structure_identifications.tsv"]
    assert sorted(p.name for p in out.parent.iterdir()) == ["identified"]

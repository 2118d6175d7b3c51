"""Coverage-guided fuzzing of the readers with atheris (libFuzzer), complementing the hypothesis campaign.

Optional (``pip install atheris``; not a test dependency, not run by pytest). One reader per run::

    python tests/fuzz/atheris_fuzz.py massbank_jsonl -atheris_runs=20000 -max_len=4096
    python tests/fuzz/atheris_fuzz.py model_file -max_total_time=60

Formats: massbank_jsonl, arff, parallel_text, cmudict, candidate_manifest, candidate_csv, model_file, mgf. Each input
is written to a temporary file and read; an exception other than :class:`~iokr.exceptions.IOKRDataError` is a crash
(libFuzzer stops and writes the input to ``crash-*``). Seeds are the valid files of the hypothesis modules.
"""

import contextlib
import os
import sys
import tempfile

import atheris

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

with atheris.instrument_imports(include=["iokr"]):
    from iokr.apps.metabolites import read_candidate_lists, read_massbank_jsonl, read_spectra
    from iokr.datasets import load_arff, load_parallel_text
    from iokr.decoding import CandidateFile
    from iokr.exceptions import IOKRDataError
    from iokr.io import load_model_file
    from iokr.strings import load_cmudict

_DIR = tempfile.mkdtemp(prefix="iokr_atheris_")


def _file(name, data):
    path = os.path.join(_DIR, name)
    with open(path, "wb") as f:
        f.write(data)
    return path


def _candidate_file(data):
    _file("pool.bin", bytes(range(16)) * 2)
    _file("pool.bin.json", data)
    f = CandidateFile(os.path.join(_DIR, "pool.bin"), verify="always")
    try:
        return f[:]
    finally:
        f.close()


READERS = {
    "massbank_jsonl": lambda data: read_massbank_jsonl(_file("s.jsonl", data)),
    "arff": lambda data: load_arff(_file("d.arff", data), 1),
    "parallel_text": lambda data: load_parallel_text(_file("p.jsonl.gz", data)),
    "cmudict": lambda data: load_cmudict(_file("cmudict.dict", data)),
    "candidate_manifest": _candidate_file,
    "candidate_csv": lambda data: read_candidate_lists(_file("scoring_list=C3H7NO2_spec=1_id=X.csv", data)),
    "model_file": lambda data: load_model_file(_file("m.npz", data)),
    "mgf": lambda data: read_spectra(_file("s.mgf", data)),
}


def _seeds(fmt):
    import json

    import numpy as np
    import test_fuzz_arff
    import test_fuzz_candidates
    import test_fuzz_massbank_jsonl
    import test_fuzz_mgf_msp
    import test_fuzz_parallel_text
    import test_fuzz_string_data

    from iokr.io import save_model_file

    if fmt == "model_file":
        path = save_model_file(os.path.join(_DIR, "seed.npz"), {"a": np.arange(6.0)}, {"alpha": 0.1}, kind="t")
        return [open(path, "rb").read()]
    if fmt == "candidate_manifest":
        manifest = {"format": "iokr-candidates-1", "dtype": "|u1", "n_rows": 2, "row_width": 16, "n_features": 16,
                    "packed": False, "block_rows": 1, "crc32": [0, 0]}
        return [json.dumps(manifest).encode()]
    seeds = {"massbank_jsonl": test_fuzz_massbank_jsonl.VALID, "arff": test_fuzz_arff.VALID,
             "parallel_text": test_fuzz_parallel_text.gzip_bytes(test_fuzz_parallel_text.VALID),
             "cmudict": test_fuzz_string_data.CMUDICT, "candidate_csv": test_fuzz_candidates.CSV,
             "mgf": test_fuzz_mgf_msp.VALID_MGF}
    return [seeds[fmt]]


def main():
    fmt = sys.argv[1]
    reader = READERS[fmt]

    def one_input(data):
        with contextlib.suppress(IOKRDataError):
            reader(data)

    corpus = os.path.join(_DIR, "corpus")
    os.makedirs(corpus, exist_ok=True)
    for i, seed in enumerate(_seeds(fmt)):
        _file(os.path.join("corpus", f"seed{i}"), seed)
    atheris.Setup([sys.argv[0], *sys.argv[2:], corpus], one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()

"""Every study of ``experiments/`` imports, has the study surface, and runs its ``--quick`` configuration.

The runs go through the CLI (``python -m experiments NAME --data DIR --quick --output DIR``, in-process) on the
small data folder of ``conftest.py``: the bundled subsets cut down (metabolites, parallel text, OCR words) and a
synthetic Mulan pair for ``multilabel`` and ``multilabel_grid``; ``pairwise``'s quick run is its synthetic
rock-paper-scissors section. Each run must write its JSON (what ``run`` returned) and its Markdown (what ``render``
made of it), and ``--render-only`` must reproduce the Markdown from the JSON alone.
"""

import dataclasses
import json

import pytest

import experiments
from experiments.__main__ import main, parse_setting

#: Studies whose quick run needs RDKit (fingerprints of structures).
NEEDS_RDKIT = {"confidence_calibration", "formula_hypotheses", "ion_modes", "metabolite_baseline", "mpiokr_metabolites",
               "single_spectra_metabolites",
               "sketched_metabolites", "structure_prior"}


def test_every_study_is_listed_and_has_the_study_surface(capsys):
    main([])
    listed = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert listed == list(experiments.STUDIES) and len(listed) == 16
    for name in listed:
        study = experiments.load(name)
        assert dataclasses.is_dataclass(study.Config) and study.Config.__dataclass_params__.frozen
        assert isinstance(study.QUICK, study.Config) and study.Config() != study.QUICK
        assert callable(study.run) and callable(study.render) and study.OUTPUTS.json.endswith(".json")


def test_unknown_study_and_bad_setting_are_refused():
    with pytest.raises(KeyError, match="unknown study 'nope'; expected one of: core, "):
        experiments.load("nope")
    with pytest.raises(SystemExit, match="--set: expected FIELD=VALUE with FIELD one of splits, skip"):
        parse_setting(experiments.load("core").Config(), "split=3")
    assert parse_setting(experiments.load("core").Config(), "skip=bibtex,retrieval_cv") == (
        "skip", ("bibtex", "retrieval_cv"))


# Welch's test of two identical columns of top-k (100 % on a few chapters) warns; the study records its p as None.
@pytest.mark.filterwarnings("ignore:Precision loss occurred in moment calculation:RuntimeWarning")
@pytest.mark.parametrize("name", list(experiments.STUDIES))
def test_quick_run_writes_json_and_markdown(name, smoke_data, tmp_path, capsys):
    if name in NEEDS_RDKIT:
        pytest.importorskip("rdkit")
    study = experiments.load(name)
    report = main([name, "--data", str(smoke_data), "--quick", "--output", str(tmp_path)])
    capsys.readouterr()
    assert isinstance(report, dict) and report
    written = json.loads((tmp_path / study.OUTPUTS.json).read_text())
    assert written == json.loads(json.dumps(report, default=float))
    markdown = (tmp_path / study.OUTPUTS.markdown).read_text()
    assert markdown.startswith("# ")
    main([name, "--render-only", "--output", str(tmp_path)])
    assert (tmp_path / study.OUTPUTS.markdown).read_text() == markdown

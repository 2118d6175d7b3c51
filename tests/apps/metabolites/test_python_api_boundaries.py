"""The Python API at a notebook's boundary (issue #29): a typo costs no waiting, numpy scalars are numbers, and what
``identify`` refuses it refuses in one line naming the parameter."""

from pathlib import Path

import numpy as np
import pytest

from iokr.apps.metabolites import IdentifySettings, identify
from iokr.apps.metabolites.workflows import _identify

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "data"


@pytest.fixture
def no_training(monkeypatch):
    """The ready model must not be trained (a minute or more) before the user's paths are checked."""
    def refuse(**_):
        raise AssertionError("the ready model was trained before the paths were checked")
    monkeypatch.setattr(_identify, "ensure_default_model", refuse)


@pytest.mark.parametrize("missing", ["spectra", "candidates"])
def test_a_missing_file_is_reported_before_the_ready_model_is_trained(tmp_path, no_training, missing):
    paths = {"spectra": EXAMPLES / "mzmine_features.mgf", "candidates": EXAMPLES / "structures.csv"}
    paths[missing] = tmp_path / "typo.mgf"
    with pytest.raises(FileNotFoundError) as err:
        identify(paths["spectra"], paths["candidates"])
    message = str(err.value)
    assert f"'{missing}'" in message and "typo.mgf" in message and "\n" not in message, message


def test_a_missing_model_file_names_the_parameter(tmp_path):
    with pytest.raises(FileNotFoundError, match="'model'.*nope.npz"):
        identify(EXAMPLES / "mzmine_features.mgf", EXAMPLES / "structures.csv", tmp_path / "nope.npz")


def test_numpy_scalars_are_numbers_and_stored_as_python_numbers():
    # a notebook's loop over np.arange or a value read from a DataFrame gives numpy scalars
    settings = IdentifySettings(top_k=np.int64(5), batch_size=np.int32(64), ppm=np.float32(5.0),
                                prior_weight=np.float64(0.5))
    assert (settings.top_k, settings.batch_size, settings.ppm, settings.prior_weight) == (5, 64, 5.0, 0.5)
    assert [type(v) for v in (settings.top_k, settings.batch_size, settings.ppm, settings.prior_weight)] == \
        [int, int, float, float]
    assert str(IdentifySettings(prior_weight=-0.0).prior_weight) == "0.0"  # as the command line writes it
    assert repr(IdentifySettings(ppm=10).ppm) == "10.0"  # parameters.json as from the command line (--ppm 10)
    for bad in (np.bool_(True), True, 2.0, "5", np.float64(5.0)):
        with pytest.raises(ValueError, match="'top_k' parameter of IdentifySettings"):
            IdentifySettings(top_k=bad)


@pytest.mark.parametrize("field", [5, b"FEATURE_ID", "", ["FEATURE_ID"]])
def test_query_id_field_must_be_a_field_name(field):
    with pytest.raises(ValueError, match="'query_id_field' parameter of IdentifySettings"):
        IdentifySettings(query_id_field=field)


def _empty_results():
    from iokr.apps.metabolites import IdentifyResults  # noqa: PLC0415

    return IdentifyResults(identifications=[], candidates=[], candidate_columns=("identifier",), statuses={},
                           parameters={"top_k": 1}, spectra=None)


def test_write_respects_the_claim_of_another_run_on_the_folder(tmp_path):
    # Two notebooks (or a notebook and `iokr metabolites identify`) writing one folder: without the claim the later
    # rename silently replaced the folder the other had just written, even with overwrite=False.
    import subprocess  # noqa: PLC0415
    import sys  # noqa: PLC0415

    folder = tmp_path / "out"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys; from iokr.io._ownership import claim; claim(sys.argv[1]); "
         "print('held', flush=True); sys.stdin.read()", str(folder)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=Path(__file__).resolve().parents[3])
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(OSError, match="in use by another iokr run"):
            _empty_results().write(folder)
        assert not folder.exists()
    finally:
        holder.communicate("")
    assert _empty_results().write(folder) == folder  # free again once the other run ended
    assert sorted(p.name for p in folder.iterdir()) == ["parameters.json", "structure_candidates.tsv",
                                                        "structure_identifications.tsv"]
    assert not list(tmp_path.glob(".*"))  # no lock file or temporary left


def test_write_names_the_parameter_of_a_wrong_folder():
    with pytest.raises(TypeError, match="'folder'.*NoneType"):
        _empty_results().write(None)


@pytest.mark.parametrize("name", ["report", "overwrite"])
@pytest.mark.parametrize("value", ["no", 1, None])
def test_write_takes_only_true_or_false_for_its_switches(tmp_path, name, value):
    # "no" is truthy: taken as True it wrote a report (or replaced a folder) the caller declined
    with pytest.raises(TypeError, match=f"'{name}'.*True or False.*{type(value).__name__}"):
        _empty_results().write(tmp_path / "out", **{name: value})
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("options", "name"), [
    ({"n_folds": 0}, "n_folds"), ({"n_folds": -2}, "n_folds"), ({"n_folds": "3"}, "n_folds"),
    ({"n_folds": 2.0}, "n_folds"), ({"seed": "a"}, "seed"), ({"surrogate": "bogus"}, "surrogate"),
    ({"gram_storage": "x"}, "gram_storage"), ({"prior_neighbors": 0}, "prior_neighbors"),
    ({"grid": [0.1]}, "grid")])
def test_training_config_refuses_what_train_would_silently_change_or_fail_on_late(options, name):
    # surrogate="bogus" trained with the fold lists and n_folds=0 as "no search", silently; n_folds="3" and
    # seed="a" failed deep inside with errors naming no parameter
    from iokr.apps.metabolites import TrainingConfig  # noqa: PLC0415

    with pytest.raises(ValueError, match=f"'{name}' parameter of TrainingConfig"):
        TrainingConfig(**options)


def test_training_config_takes_numpy_integers():
    from iokr.apps.metabolites import TrainingConfig  # noqa: PLC0415

    config = TrainingConfig(n_folds=np.int64(4), seed=np.int32(7), prior_neighbors=np.int64(2))
    assert (config.n_folds, config.seed, config.prior_neighbors) == (4, 7, 2)
    assert {type(v) for v in (config.n_folds, config.seed, config.prior_neighbors)} == {int}
    assert TrainingConfig().n_folds == 3 and TrainingConfig(n_folds=1).n_folds == 1  # 1: no search, documented


#: The notebook's entry points (docs/metabolites.md "Python API"): numpydoc-valid as ``iokr.__all__`` is in
#: tests/test_docstrings.py (same ignored codes).
NOTEBOOK_API = ("identify", "train", "evaluate", "IdentifyResults", "IdentifySettings", "TrainingConfig",
                "TrainingResult", "EvaluationResult", "SubmodelSummary", "write_identify_folder", "Feedback",
                "CandidateTableWriter", "make_output_kernel")


def _notebook_names():
    import dataclasses  # noqa: PLC0415
    import inspect  # noqa: PLC0415

    import iokr.apps.metabolites as app  # noqa: PLC0415

    names = []
    for name in NOTEBOOK_API:
        obj = getattr(app, name)
        names.append(f"iokr.apps.metabolites.{name}")
        if inspect.isclass(obj):
            fields = {f.name for f in dataclasses.fields(obj)} if dataclasses.is_dataclass(obj) else set()
            for attr in sorted(set(vars(obj)) - fields):  # a field's default (Feedback.progress) is no method
                static = inspect.getattr_static(obj, attr)
                if not attr.startswith("_") and (inspect.isfunction(static) or isinstance(static, property)):
                    names.append(f"iokr.apps.metabolites.{name}.{attr}")
    return names


@pytest.mark.parametrize("name", _notebook_names())
def test_notebook_api_docstrings(name):
    numpydoc_validate = pytest.importorskip("numpydoc.validate")
    ignored = {"ES01", "SA01", "EX01", "RT02", "GL01", "GL02"}
    result = numpydoc_validate.validate(name)
    errors = [f"{code}: {message}" for code, message in result["errors"] if code not in ignored]
    assert not errors, f"{name}:\n" + "\n".join(errors)


@pytest.fixture(scope="module")
def small_model(tmp_path_factory):
    from metab_helpers import bundled_lists_and_training, train_small_model  # noqa: PLC0415

    _, _, train = bundled_lists_and_training(2, 30)
    return train_small_model(tmp_path_factory.mktemp("model"), train)


def test_a_store_the_candidates_do_not_use_is_said_not_silently_ignored(small_model, tmp_path):
    # a structure table is indexed into SQLite's private temporary file and a .sqlite database is opened as is:
    # `store` (--store) only caches candidate lists, and was dropped without a word for the other sources
    from iokr.apps.metabolites import Feedback  # noqa: PLC0415

    lines = []
    store = tmp_path / "cache.sqlite"
    results = identify(EXAMPLES / "mzmine_features.mgf", EXAMPLES / "structures.csv", small_model, store=store,
                       feedback=Feedback(log=lines.append))
    assert results.statuses["ok"] == 4
    notes = [line for line in lines if "store" in line and "not used" in line]
    assert len(notes) == 1 and str(store) in notes[0] and "candidate lists" in notes[0], lines
    assert not store.exists()


def test_train_never_replaces_an_input_and_asks_before_replacing_a_model(tmp_path, no_training):
    # train(spectra, output) overwrote whatever `output` named, silently: an existing model, even one of its own
    # input files (measured: the MGF of examples/data replaced by a model); a folder failed only after the training
    import json  # noqa: PLC0415

    from metab_helpers import bundled_lists_and_training  # noqa: PLC0415

    from iokr.apps.metabolites import train  # noqa: PLC0415
    from iokr.apps.metabolites.workflows import _api  # noqa: PLC0415

    def refuse(*_, **__):
        raise AssertionError("trained before the output was checked")

    _, _, records = bundled_lists_and_training(1, 3)
    spectra = tmp_path / "train.jsonl"
    spectra.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    before = spectra.read_bytes()
    model = tmp_path / "model.npz"
    model.write_bytes(b"previous model")
    (tmp_path / "folder").mkdir()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_api, "train_job", refuse)
        for output, overwrite, match in ((spectra, True, "'output'.*is the 'spectra' input"),
                                         (model, False, "'output'.*exists.*overwrite=True"),
                                         (tmp_path / "folder", True, "'output'.*is a folder")):
            with pytest.raises((FileExistsError, ValueError), match=match):
                train([str(spectra)], output, overwrite=overwrite)
        with pytest.raises(AssertionError, match="trained before"):  # allowed: replacing a model when asked
            train(spectra, model, overwrite=True)
    assert spectra.read_bytes() == before and model.read_bytes() == b"previous model"


def test_evaluate_never_replaces_an_input_with_its_model(tmp_path, no_training):
    from iokr.apps.metabolites import evaluate  # noqa: PLC0415

    spectra = tmp_path / "s.jsonl"
    spectra.write_text("{}\n")
    with pytest.raises(ValueError, match="'model_output'.*is the 'spectra' input"):
        evaluate([spectra], tmp_path, model_output=spectra, overwrite=True)
    previous = tmp_path / "previous.npz"
    previous.write_bytes(b"x")
    with pytest.raises(FileExistsError, match="'model_output'.*exists.*overwrite=True"):
        evaluate([spectra], tmp_path, model_output=previous)
    assert spectra.read_text() == "{}\n" and previous.read_bytes() == b"x"


@pytest.mark.parametrize("value", [0, -1, "5", 2.5, True])
def test_min_structures_is_an_int_of_at_least_one(tmp_path, value):
    # the command line refuses --min-structures 0; from Python it went into the training unchecked
    from iokr.apps.metabolites import evaluate, train  # noqa: PLC0415

    with pytest.raises(ValueError, match="'min_structures' parameter of train"):
        train(EXAMPLES / "mzmine_features.mgf", tmp_path / "m.npz", min_structures=value)
    with pytest.raises(ValueError, match="'min_structures' parameter of evaluate"):
        evaluate(EXAMPLES / "mzmine_features.mgf", tmp_path, min_structures=value)


def test_candidates_frame_of_streamed_results_says_where_the_candidates_went():
    # with a candidate_sink the candidates are not kept: an empty frame read as "nothing ranked", silently
    pytest.importorskip("pandas")
    streamed = _empty_results()
    streamed.candidates_streamed = True
    with pytest.raises(ValueError, match="candidate_sink"):
        streamed.candidates_frame()
    assert list(_empty_results().candidates_frame().columns) == ["query_id", "rank", "identifier", "score",
                                                                 "structure_prior"]


def test_a_report_of_streamed_results_needs_the_rows_the_table_writer_kept(tmp_path):
    # Before: write_identify_files(results, folder, report=True) on results whose candidates went to a
    # candidate_sink wrote a report.html in which every ranked query said "No candidate ranked (status: ok)".
    from iokr.apps.metabolites import write_identify_files  # noqa: PLC0415

    streamed = _empty_results()
    streamed.candidates_streamed = True
    with pytest.raises(ValueError, match="candidate_sink.*keep_for_report=True"):
        write_identify_files(streamed, tmp_path, report=True)
    assert not (tmp_path / "report.html").exists()

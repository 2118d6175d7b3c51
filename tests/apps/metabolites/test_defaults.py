"""Every default of the metabolite app lives in ``iokr/apps/metabolites/defaults.py`` (issue #29): the settings
objects, the workflows and the command line read it, no other module assigns a ``DEFAULT_*`` name, and the base
parameters never carry a value that the grid always overrides."""

from __future__ import annotations

import argparse
import ast
import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

import iokr.apps.metabolites as app
from iokr.apps.metabolites import defaults
from iokr.cli.main import build_parser

APP = Path(app.__file__).parent


def test_base_parameters_and_grid_share_no_key():
    assert not set(defaults.DEFAULT_PARAMS) & set(defaults.DEFAULT_GRID)
    # every key is a MetaboliteIdentifier parameter
    params = set(app.MetaboliteIdentifier().get_params())
    assert set(defaults.DEFAULT_PARAMS) <= params and set(defaults.DEFAULT_GRID) <= params


def test_no_other_module_assigns_a_default():
    owners = {}
    for path in APP.rglob("*.py"):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
                node, ast.AnnAssign) else []
            for target in targets:
                if isinstance(target, ast.Name) and target.id.startswith("DEFAULT_"):
                    owners.setdefault(target.id, []).append(path.relative_to(APP).as_posix())
    assert owners and all(files == ["defaults.py"] for files in owners.values()), owners


def test_defaults_import_nothing_and_load_without_numpy():
    tree = ast.parse((APP / "defaults.py").read_text(encoding="utf-8"))
    assert not [n for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)]
    code = "import sys, iokr.apps.metabolites.defaults; print('numpy' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True).stdout.strip() == "False"


def _field_defaults(cls):
    return {f.name: f.default for f in dataclasses.fields(cls) if f.default is not dataclasses.MISSING}


def test_settings_objects_take_their_defaults_from_the_module():
    identify = _field_defaults(app.IdentifySettings)
    assert (identify["top_k"], identify["ppm"], identify["adduct_policy"], identify["batch_size"]) == (
        defaults.DEFAULT_TOP_K, defaults.DEFAULT_PPM, defaults.DEFAULT_ADDUCT_POLICY, defaults.DEFAULT_BATCH_SIZE)
    config = app.TrainingConfig()
    assert config.fingerprint == defaults.DEFAULT_FINGERPRINT and config.fingerprint is not defaults.DEFAULT_FINGERPRINT
    assert (config.n_folds, config.seed, config.surrogate, config.gram_storage, config.decoys) == (
        defaults.DEFAULT_FOLDS, defaults.DEFAULT_SEED, defaults.DEFAULT_SURROGATE, defaults.DEFAULT_GRAM_STORAGE,
        defaults.DEFAULT_CALIBRATION_DECOYS)


def _subcommand(parser, *names):
    for name in names:
        parser = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[name]
    return {a.dest: a for a in parser._actions}


def test_command_line_defaults_are_the_modules():
    identify = _subcommand(build_parser(), "metabolites", "identify")
    assert identify["top_k"].default == defaults.DEFAULT_TOP_K and identify["ppm"].default == defaults.DEFAULT_PPM
    assert tuple(identify["adduct_policy"].choices) == defaults.ADDUCT_POLICIES
    assert identify["adduct_policy"].default == defaults.DEFAULT_ADDUCT_POLICY
    for action in ("train", "evaluate"):
        options = _subcommand(build_parser(), "metabolites", action)
        assert options["folds"].default == defaults.DEFAULT_FOLDS and options["seed"].default == defaults.DEFAULT_SEED
        assert tuple(options["cv_lists"].choices) == defaults.SURROGATES


@pytest.mark.parametrize(("call", "message"), [
    (lambda: app.identify(123, "c.csv"), "The 'spectra' parameter of identify must be a path .* Got int 123"),
    (lambda: app.identify("q.mgf", ["c.csv"]), "The 'candidates' parameter of identify must be a path"),
    (lambda: app.identify("q.mgf", "c.csv", settings={"top_k": 3}),
     r"must be an instance of IdentifySettings or None. Got dict instead; for a dict d, pass IdentifySettings\(\*\*d\)"),
    (lambda: app.train([], "m.npz"), "The 'spectra' parameter of train must be a path .* or a non-empty list"),
    (lambda: app.train("s.mgf", "m.npz", config="fast"), "The 'config' parameter of train must be an instance of "
                                                         "TrainingConfig"),
    (lambda: app.evaluate("s.mgf", "lists/", model_output=3.5), "The 'model_output' parameter of evaluate"),
])
def test_the_workflows_check_their_arguments_at_the_boundary(call, message):
    """A notebook's wrong argument is one error naming the parameter, before any file is read."""
    with pytest.raises(TypeError, match=message):
        call()


@pytest.mark.parametrize(("name", "where"), [("identify_job", r"identify\(spectra, candidates, model\)"),
                                             ("alignf_weights", "iokr.model_selection.alignf_gram_weights"),
                                             ("fold_candidate_sets", "iokr.model_selection.fold_candidate_sets")])
def test_a_name_that_moved_says_where_it_went(name, where):
    with pytest.raises(ImportError, match=f"iokr.apps.metabolites.{name} was replaced: use {where}"):
        exec(f"from iokr.apps.metabolites import {name}")  # noqa: S102 - the import statement users wrote

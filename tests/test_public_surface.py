"""Public surfaces (issue #29): each public package's ``__all__`` names what users need, and only that.

A public module is one of ``iokr`` whose dotted name has no part starting with ``_`` (``iokr.linalg``,
``iokr.metrics``, ``iokr.linalg.developer``, ...; not ``iokr.linalg._path``). The command-line modules are the
``iokr`` command's, not a Python surface, and are left out. Dunder names (``iokr.__version__``) are public by
convention; any other name starting with ``_`` is private. Plumbing for code that extends iokr lives in the
developer modules (:mod:`iokr.linalg.developer`, :mod:`iokr.decoding.developer`), outside the package's ``__all__``.
"""

import importlib
import pkgutil

import pytest

import iokr

#: Packages and modules users import from, which must declare their surface.
MUST_DECLARE = ("iokr", "iokr.linalg", "iokr.decoding", "iokr.kernels", "iokr.estimators", "iokr.model_selection",
                "iokr.metrics", "iokr.io", "iokr.datasets", "iokr.strings", "iokr.text", "iokr.apps.metabolites",
                "iokr.apps.retrieval", "iokr.apps.multilabel", "iokr.linalg.developer", "iokr.decoding.developer")
#: Developer module -> the package whose plumbing it holds.
DEVELOPER = {"iokr.linalg.developer": "iokr.linalg", "iokr.decoding.developer": "iokr.decoding"}


def _public_modules():
    names = ["iokr"]
    for info in pkgutil.walk_packages(iokr.__path__, "iokr."):
        parts = info.name.split(".")
        if any(p.startswith("_") for p in parts) or parts[1] == "cli":
            continue
        names.append(info.name)
    return names


def _import(name):
    try:
        return importlib.import_module(name)
    except ImportError as error:  # an optional extra (Dask for iokr.distributed) not installed
        pytest.skip(f"{name}: {error}")


def test_the_listed_surfaces_are_public_modules():
    assert set(MUST_DECLARE) <= set(_public_modules())


@pytest.mark.parametrize("name", _public_modules())
def test_all_lists_only_existing_public_names(name):
    module = _import(name)
    if name in MUST_DECLARE:
        assert hasattr(module, "__all__"), f"{name} has no __all__"
    listed = getattr(module, "__all__", None)
    if listed is None:
        return
    assert len(listed) == len(set(listed)), f"{name}.__all__ repeats a name"
    private = [n for n in listed if n.startswith("_") and not (n.startswith("__") and n.endswith("__"))]
    assert not private, f"{name}.__all__ lists private names {private}"
    missing = [n for n in listed if not hasattr(module, n)]
    assert not missing, f"{name}.__all__ lists names that do not exist: {missing}"


@pytest.mark.parametrize(("developer", "package"), DEVELOPER.items())
def test_developer_plumbing_is_outside_the_package_surface(developer, package):
    plumbing, public = importlib.import_module(developer), importlib.import_module(package)
    assert plumbing.__all__ and not set(plumbing.__all__) & set(public.__all__)
    assert not set(plumbing.__all__) & set(dir(public))
    # reachable only from the developer module (every import in iokr, tests, benchmarks and experiments uses it)
    assert not [n for n in plumbing.__all__ if hasattr(public, n)]
    with pytest.raises(AttributeError, match=f"module '{package}' has no attribute 'no_such_name'"):
        public.no_such_name  # noqa: B018 - the access is the test


def test_user_facing_names_stay_in_the_packages():
    surface = {name: set(importlib.import_module(name).__all__) for name in ("iokr.decoding", "iokr.linalg",
                                                                              "iokr.metrics")}
    assert {"CountTanimotoIndex", "BinaryTanimotoIndex", "CandidateSets", "top_k_scores", "top_mean"} <= surface[
        "iokr.decoding"]
    assert {"RegularizationPath", "cholesky_shifted", "holdout_predictions", "block_cg", "falkon_solve"} <= surface[
        "iokr.linalg"]
    assert {"true_candidate_rank", "top_k_accuracy", "mean_reciprocal_rank", "concordance_index"} <= surface[
        "iokr.metrics"]

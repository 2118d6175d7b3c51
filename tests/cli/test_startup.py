"""Start-up cost: ``import iokr`` and ``iokr --help`` import no numerical package; lazy names stay the real objects."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("numpy", "scipy", "sklearn", "matchms", "rdkit", "matplotlib", "tqdm", "iokr.estimators")


def _loaded_after(code):
    """Run ``code`` in a fresh interpreter (this checkout first on the path); return the heavy modules it loaded."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, cwd=ROOT,
                         check=True, timeout=120)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_import_iokr_loads_no_numerical_package():
    assert _loaded_after(f"import iokr\nassert iokr.__file__.startswith({str(ROOT)!r})") == []


@pytest.mark.parametrize("argv", [["--help"], ["metabolites", "--help"], ["retrieval", "evaluate", "--help"],
                                  ["multilabel", "evaluate", "--help"], ["demo", "--help"]])
def test_help_loads_no_numerical_package(argv):
    code = ("from iokr.cli.main import main\n"
            f"try:\n    main({argv!r})\nexcept SystemExit as exc:\n    assert exc.code == 0, exc.code")
    assert _loaded_after(code) == []


def test_exceptions_module_is_light_and_its_sklearn_classes_are_sklearns():
    assert _loaded_after("import iokr.exceptions") == []
    from sklearn.exceptions import ConvergenceWarning, NotFittedError

    import iokr.exceptions

    assert iokr.exceptions.ConvergenceWarning is ConvergenceWarning
    assert iokr.exceptions.NotFittedError is NotFittedError
    from iokr.exceptions import ConvergenceWarning as ours

    assert ours is ConvergenceWarning
    assert {"ConvergenceWarning", "NotFittedError", "IOKRDataError"} <= set(dir(iokr.exceptions))
    with pytest.raises(AttributeError, match="no attribute 'Missing'"):
        iokr.exceptions.Missing  # noqa: B018


def test_lazy_public_names_are_complete_and_the_real_objects():
    import iokr
    from iokr.estimators import IOKR
    from iokr.estimators.iokr import IOKR as defined

    assert iokr.IOKR is IOKR is defined
    assert set(iokr.__all__) <= set(dir(iokr))
    for name in iokr.__all__:
        assert getattr(iokr, name) is not None
    assert iokr.kernels.Gaussian is not None  # subpackages reachable as attributes, as before
    with pytest.raises(AttributeError, match="no attribute 'Missing'"):
        iokr.Missing  # noqa: B018


def test_python_dash_m_iokr_runs_the_command():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-m", "iokr", "--version"], capture_output=True, text=True, env=env,
                         cwd=ROOT, timeout=120, check=False)
    assert out.returncode == 0 and out.stdout.strip().startswith("iokr ")

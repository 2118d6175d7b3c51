"""Modules scikit-learn imports but commands rarely use (scipy.stats, scipy.special, pandas) are loaded on first use: importing the
metabolite app after :func:`defer_unused_imports` runs neither, and their first use gives the real objects."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]


def _run(code):
    """Run ``code`` in a fresh interpreter (this checkout first on the path); return what it printed last (JSON)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT,
                         check=True, timeout=120)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_app_loads_without_scipy_stats_and_pandas_which_load_on_first_use():
    code = """
import json, sys
from iokr.cli._deferred_imports import defer_unused_imports
deferred = defer_unused_imports()
import sklearn.base, iokr.apps.metabolites, iokr.metrics, iokr.model_selection
loaded = sorted(m for m in ("scipy.stats._stats_py", "scipy.special._ufuncs", "pandas.core.frame") if m in sys.modules)
from scipy.special import gammaln
import pandas as pd
from scipy.stats import kendalltau
frame = pd.DataFrame({"a": [1, 2]})
real_pandas = sys.modules["pandas"]
tau = iokr.metrics.kendall_tau_b([1, 2, 3], [1, 3, 2])
print(json.dumps({"deferred": deferred, "loaded_before_use": loaded, "frame": type(frame).__module__,
                  "same_class": pd.DataFrame is real_pandas.DataFrame, "real": type(real_pandas).__name__,
                  "tau": tau, "kendalltau": kendalltau.__module__, "gammaln": float(gammaln(4.0))}))
"""
    out = _run(code)
    assert out["deferred"] == ["scipy.stats", "scipy.special", "pandas"]
    assert out["loaded_before_use"] == []
    assert out["frame"].split(".")[0] == "pandas" and out["same_class"] and out["real"] == "module"
    assert abs(out["tau"] - 1 / 3) < 1e-12
    assert out["kendalltau"].startswith("scipy.stats")
    assert abs(out["gammaln"] - np.log(6.0)) < 1e-12


def test_imported_or_missing_modules_get_no_placeholder():
    code = """
import json, sys
import pandas
from iokr.cli._deferred_imports import defer_unused_imports
print(json.dumps(defer_unused_imports(("pandas", "no_such_package_iokr"))))
"""
    assert _run(code) == []

"""Safe persistence audit: no code path of the package can unpickle or evaluate data.

Rules, checked on the syntax tree of every ``iokr/**/*.py`` (so strings and comments never trigger them, and
multi-line calls are seen whole):

1. no import of a pickle-based serializer: ``pickle``, ``_pickle``, ``cPickle``, ``cloudpickle``, ``dill``,
   ``shelve``, ``marshal``, ``joblib``;
2. no ``allow_pickle=True`` in any call;
3. every ``np.load`` / ``numpy.load`` call passes ``allow_pickle=False`` explicitly (NumPy's default has changed
   before; the intent must be visible at the call);
4. no call of ``eval`` or ``exec``, nor of pickle-backed loaders reached through other libraries
   (``pandas.read_pickle``, ``torch.load``, ``yaml.load`` / ``yaml.unsafe_load``).
"""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "iokr"
FORBIDDEN_MODULES = {"pickle", "_pickle", "cPickle", "cloudpickle", "dill", "shelve", "marshal", "joblib"}
FORBIDDEN_CALLS = {"eval", "exec"}
FORBIDDEN_ATTRIBUTE_CALLS = {("pd", "read_pickle"), ("pandas", "read_pickle"), ("torch", "load"), ("yaml", "load"),
                             ("yaml", "unsafe_load")}


def _is_false(node):
    return isinstance(node, ast.Constant) and node.value is False


def violations(source, name="<string>"):
    """``(file:line, rule)`` for every rule the source breaks."""
    found = []
    for node in ast.walk(ast.parse(source, filename=name)):
        where = f"{name}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Import):
            found += [(where, f"imports {a.name}") for a in node.names if a.name.split(".")[0] in FORBIDDEN_MODULES]
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in FORBIDDEN_MODULES:
            found.append((where, f"imports from {node.module}"))
        elif isinstance(node, ast.Call):
            for kw in node.keywords:
                if kw.arg == "allow_pickle" and not _is_false(kw.value):
                    found.append((where, "allow_pickle is not False"))
            func = node.func
            if isinstance(func, ast.Name) and func.id in FORBIDDEN_CALLS:
                found.append((where, f"calls {func.id}()"))
            if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
                pair = (func.value.id, func.attr)
                if pair in FORBIDDEN_ATTRIBUTE_CALLS:
                    found.append((where, f"calls {pair[0]}.{pair[1]}()"))
                if pair in {("np", "load"), ("numpy", "load")} and not any(
                        kw.arg == "allow_pickle" and _is_false(kw.value) for kw in node.keywords):
                    found.append((where, f"{pair[0]}.load() without allow_pickle=False"))
    return found


def test_package_source_has_no_unsafe_persistence():
    files = sorted(PACKAGE.rglob("*.py"))
    assert len(files) > 50  # the whole package is scanned, not an empty folder
    found = []
    for path in files:
        found += violations(path.read_text(encoding="utf-8"), str(path.relative_to(PACKAGE.parent)))
    assert not found, "unsafe persistence in the package:\n" + "\n".join(f"{w}: {r}" for w, r in found)


@pytest.mark.parametrize("source, rule", [
    ("import pickle", "imports pickle"),
    ("import joblib as jl", "imports joblib"),
    ("from cloudpickle import loads", "imports from cloudpickle"),
    ("import dill.settings", "imports dill.settings"),
    ("np.save(path, a, allow_pickle=True)", "allow_pickle is not False"),
    ("np.load(path, mmap_mode='r',\n        allow_pickle=flag)",
     "allow_pickle is not False|np.load() without allow_pickle=False"),
    ("with np.load(path) as d: pass", "np.load() without allow_pickle=False"),
    ("numpy.load(p)", "numpy.load() without allow_pickle=False"),
    ("x = eval(text)", "calls eval()"),
    ("exec(code)", "calls exec()"),
    ("pd.read_pickle(p)", "calls pd.read_pickle()"),
    ("yaml.load(stream)", "calls yaml.load()"),
])
def test_audit_detects_each_rule(source, rule):
    assert [r for _, r in violations(source)] == rule.split("|")


@pytest.mark.parametrize("source", [
    "np.load(path, allow_pickle=False)",
    "'import pickle'  # a string, not an import",
    "model.eval()",  # a method named eval is not the builtin
    "json.load(f)",
    "def __getstate__(self): return {}",
])
def test_audit_allows_safe_code(source):
    assert violations(source) == []

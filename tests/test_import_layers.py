"""Import-layer contract of ``iokr`` (issue #29): imports go one way down the layers, and no module imports itself
back through others.

Every ``import`` statement of every module under ``iokr/`` is read from the source (``ast``, nothing is imported),
at module level, inside functions and under ``if TYPE_CHECKING:``. Three rules:

1. Layers (:data:`LAYERS`, lowest first): a module imports only from its own top-level package or from a lower
   layer; packages sharing a layer are independent of each other, and so are the applications under ``iokr/apps``.
   The root ``iokr/__init__.py`` is the facade above everything (it names every public class lazily) and is exempt
   as an importer; imported, it only gives ``__version__``.
2. No cycles: the modules that run at import time (every import except ``TYPE_CHECKING`` ones, function-level ones
   included, so a local import cannot hide a cycle) form no cycle. Importing ``a.b.c`` runs the packages ``a`` and
   ``a.b`` first, so an import also points at the ``__init__`` of every package it enters.
3. Function-level imports are for start-up time and optional heavy libraries only: of another ``iokr`` module, as
   :data:`LOCAL_IMPORTS_ALLOWED` lists with its reason; of a third-party package, as :data:`LAZY_THIRD_PARTY` does
   (the standard library is free).

Inside the metabolite application the same rule holds between its subpackages (:data:`METABOLITE_LAYERS`).
"""

from __future__ import annotations

import ast
import functools
import sys
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "iokr"

#: Top-level parts of ``iokr``, lowest layer first (cli -> apps -> model_selection -> estimators -> decoding, kernels
#: -> linalg -> _config). A new top-level module must be placed here.
LAYERS = (
    ("_config", "_docstrings", "_validation", "exceptions"),  # configuration, validation, errors: import no iokr
    ("linalg", "io", "metrics"),  # numerics, safe files, metrics: know nothing of kernels or estimators
    ("kernels", "decoding", "datasets"),  # kernel objects; candidate scoring; bundled data sets
    ("estimators", "strings"),  # thin estimators; the string-output KDE family
    ("model_selection",),  # CV estimators and kernel learning on top of the estimators
    ("text", "distributed"),  # the context classifier (uses model_selection); Dask execution (an optional extra)
    ("apps",),  # applications built only from the layers above; independent of each other
    ("cli",),  # argument parsing and reports
    ("__main__",),  # ``python -m iokr``
)
RANK = {part: rank for rank, parts in enumerate(LAYERS) for part in parts}
ROOT = "iokr"

_CLI_START_UP = ("start-up time: the subcommand modules import the apps, data sets, kernels and _config (numpy, "
                 "scipy, scikit-learn) only inside the commands, so `iokr --help` starts without them "
                 "(benchmarks/results/startup.md; pyproject's per-file-ignores for PLC0415 say the same)")

#: Function-level imports of iokr modules: (importer, imported, reason), ``fnmatch`` patterns of module names.
LOCAL_IMPORTS_ALLOWED = (
    ("iokr.cli.*", "iokr.apps.*", _CLI_START_UP),
    ("iokr.cli.*", "iokr.datasets*", _CLI_START_UP),
    ("iokr.cli.*", "iokr.kernels", _CLI_START_UP),
    ("iokr.cli.*", "iokr._config", _CLI_START_UP),
    ("iokr.cli.*", "iokr.io", _CLI_START_UP),
    ("iokr.cli.*", "iokr.cli._report", "start-up time: the report imports numpy (and matplotlib) at module level; "
     "it is loaded only when a report is asked for"),
)

#: Third-party packages a function may import, with the reason (the standard library needs no entry).
LAZY_THIRD_PARTY = {
    "rdkit": "optional extra 'chem'",
    "matchms": "optional extra 'chem'",
    "matplotlib": "optional extra 'plot'",
    "pandas": "optional: DataFrames of the metabolite app's results (IdentifyResults.identifications_frame)",
    "distributed": "optional extra 'distributed' (Dask)",
    "threadpoolctl": "optional: not a declared dependency; BLAS threads are limited only when it is installed",
    "tqdm": "start-up time of the CLI: a live bar is drawn only on a terminal",
    "numpy": "start-up time of the CLI (`iokr --help` loads no numerical package)",
    "sklearn": "start-up time: `import iokr` loads iokr.exceptions, which must not load scikit-learn; "
               "sklearn.model_selection and sklearn.linear_model load sklearn.metrics, scipy.optimize and scipy.stats "
               "(0.5 s), which `identify` never calls (iokr/cli/_deferred_imports.py)",
    "scipy": "start-up time: scipy.stats takes 0.5 s to import and scipy.optimize 0.1 s; only kendalltau, rankdata "
             "and nnls are used, inside the functions that need them (iokr/cli/_deferred_imports.py)",
}

#: Layers inside the metabolite application (issue #29), lowest first: a subpackage imports only from itself or from
#: a lower one, so the folders read in the order data flows. The package's ``__init__`` is the lazy facade above
#: them all (it imports nothing at module level).
METABOLITE_APP = "iokr.apps.metabolites"
METABOLITE_LAYERS = ("defaults", "spectra", "chemistry", "importing", "kernels", "candidates", "model", "evaluation",
                     "selection", "exporting", "ranking", "workflows")
METABOLITE_RANK = {part: rank for rank, part in enumerate(METABOLITE_LAYERS)}

@dataclass(frozen=True)
class Import:
    """One imported module as a statement names it."""

    importer: str
    target: str
    line: int
    local: bool  # inside a function (runs when the function is called)
    type_checking: bool  # under ``if TYPE_CHECKING:`` (never runs)


def read_sources(package=PACKAGE):
    """``{module name: (source, is_package)}`` of every module under ``package``."""
    sources = {}
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        is_package = parts[-1] == "__init__"
        sources[".".join(parts[:-1] if is_package else parts)] = (path.read_text(encoding="utf-8"), is_package)
    return sources


def _resolve(module, is_package, node, modules):
    """Full names of the modules an ``import`` / ``from ... import`` statement loads (iokr or third party)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        parts = module.split(".") if is_package else module.split(".")[:-1]
        base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
    else:
        base = node.module
    # ``from pkg import name`` loads the submodule pkg.name when there is one, else pkg (name is an attribute).
    return [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]


def _is_type_checking(test):
    return isinstance(test, ast.Name | ast.Attribute) and ast.unparse(test).endswith("TYPE_CHECKING")


@functools.cache
def _imports_of(module, source, is_package, modules):
    """The imports of one module (cached: the self-tests rescan the package with one module changed)."""
    found = []

    def visit(node, local, type_checking):
        for child in ast.iter_child_nodes(node):
            guarded = type_checking or (isinstance(node, ast.If) and child in node.body and _is_type_checking(node.test))
            if isinstance(child, ast.Import | ast.ImportFrom):
                for target in _resolve(module, is_package, child, modules):
                    found.append(Import(module, target, child.lineno, local, guarded))
            visit(child, local or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda), guarded)

    visit(ast.parse(source, filename=module), False, False)
    return tuple(found)


def collect_imports(sources):
    """Every import of every module of ``sources`` (see :func:`read_sources`), in source order."""
    modules = frozenset(sources)
    return [imp for module, (source, is_package) in sources.items()
            for imp in _imports_of(module, source, is_package, modules)]


def _part(module):
    """Top-level part of an iokr module (``"linalg"`` for ``iokr.linalg._cg``); ROOT for the package itself."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ROOT


def _app(module):
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[1] == "apps" else None


def _is_iokr(name):
    return name == ROOT or name.startswith(ROOT + ".")


def _app_part(module):
    """The metabolite app's subpackage (or top-level module) that ``module`` sits in; None outside the app or for
    its ``__init__``."""
    if not module.startswith(METABOLITE_APP + "."):
        return None
    return module[len(METABOLITE_APP) + 1:].split(".")[0]


def app_layer_violations(imports):
    """Imports inside the metabolite app against :data:`METABOLITE_LAYERS`, as one-line messages."""
    out = set()
    for imp in imports:
        src, dst = _app_part(imp.importer), _app_part(imp.target)
        if src is None or dst is None or src == dst:
            continue
        for part in (src, dst):
            if part not in METABOLITE_RANK:
                out.add(f"{METABOLITE_APP}.{part} is in no layer: place it in METABOLITE_LAYERS")
        if src in METABOLITE_RANK and dst in METABOLITE_RANK and METABOLITE_RANK[dst] > METABOLITE_RANK[src]:
            out.add(f"upward import in the metabolite app: {imp.importer} -> {imp.target} ({src} must not import "
                    f"{dst})")
    return out


def layer_violations(imports):
    """Imports against :data:`LAYERS` (and :data:`METABOLITE_LAYERS`), as sorted one-line messages."""
    out = app_layer_violations(imports)
    for imp in imports:
        if not (_is_iokr(imp.target) and _is_iokr(imp.importer)) or imp.importer == ROOT or imp.target == ROOT:
            continue
        src, dst = _part(imp.importer), _part(imp.target)
        for part in (src, dst):
            if part not in RANK:
                out.add(f"iokr.{part} is in no layer: place it in LAYERS of tests/test_import_layers.py")
        if src == dst:
            if src == "apps" and None not in (_app(imp.importer), _app(imp.target)) \
                    and _app(imp.importer) != _app(imp.target):
                out.add(f"applications must be independent: {imp.importer} -> {imp.target}")
            continue
        if src in RANK and dst in RANK and RANK[dst] >= RANK[src]:
            kind = "upward" if RANK[dst] > RANK[src] else "sideways (same layer)"
            out.add(f"{kind} import: {imp.importer} -> {imp.target} (iokr.{src} must not import iokr.{dst})")
    return sorted(out)


def import_graph(imports, modules):
    """``{module: set of modules its import runs}``: every import but ``TYPE_CHECKING`` ones, between ``modules``."""
    graph = {m: set() for m in modules}
    for imp in imports:
        if imp.type_checking or not _is_iokr(imp.target) or imp.target not in graph:
            continue
        inside, parts = imp.importer.split("."), imp.target.split(".")
        # Importing a.b.c runs the packages a and a.b first, except those the importer sits in (already running).
        entered = [".".join(parts[:k]) for k in range(1, len(parts)) if parts[:k] != inside[:k]] + [imp.target]
        graph[imp.importer].update(t for t in entered if t in graph and t != imp.importer)
    return graph


def import_cycles(graph):
    """Strongly connected sets of ``graph`` with more than one module (Tarjan), each sorted, in sorted order."""
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def connect(v):  # recursive Tarjan; the module graph is shallow (a few hundred nodes)
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            members = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                members.append(w)
                if w == v:
                    break
            if len(members) > 1:
                cycles.append(sorted(members))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return sorted(cycles)


def shortest_cycle(graph, members):
    """A shortest cycle through the first of ``members`` (a strongly connected set), as ``[m0, m1, ..., m0]``."""
    start, inside = members[0], set(members)
    previous, frontier = {start: None}, [start]
    while frontier:  # breadth first; the set is strongly connected, so the way back to start is found
        following = []
        for v in frontier:
            for w in sorted(graph[v] & inside):
                if w == start:
                    path = [v]
                    while previous[path[-1]] is not None:
                        path.append(previous[path[-1]])
                    return [*reversed(path), start]
                if w not in previous:
                    previous[w] = v
                    following.append(w)
        frontier = following
    raise AssertionError(f"{members} is not strongly connected")


def local_import_violations(imports):
    """Function-level imports neither in :data:`LOCAL_IMPORTS_ALLOWED` nor of a :data:`LAZY_THIRD_PARTY` package."""
    stdlib = sys.stdlib_module_names
    out = set()
    for imp in imports:
        if not imp.local or imp.type_checking:
            continue
        if _is_iokr(imp.target):
            if not any(fnmatchcase(imp.importer, a) and fnmatchcase(imp.target, b)
                       for a, b, _ in LOCAL_IMPORTS_ALLOWED):
                out.add(f"function-level import not allowed: {imp.importer} -> {imp.target}")
        elif (top := imp.target.split(".")[0]) not in stdlib and top not in LAZY_THIRD_PARTY:
            out.add(f"function-level import of third-party {top!r} not in LAZY_THIRD_PARTY: {imp.importer}")
    return sorted(out)


def all_violations(sources):
    """Every violation of the three rules in ``sources``, as one-line messages."""
    imports = collect_imports(sources)
    graph = import_graph(imports, sources)
    cycles = [f"import cycle {' -> '.join(shortest_cycle(graph, c))} (strongly connected: {', '.join(c)})"
              for c in import_cycles(graph)]
    return set(layer_violations(imports)) | set(cycles) | set(local_import_violations(imports))


@pytest.fixture(scope="module")
def sources():
    return read_sources()


def test_the_package_keeps_its_import_layers(sources):
    assert sorted(all_violations(sources)) == []


def test_the_scan_sees_the_package(sources):
    """The contract is only as good as the scan: known imports of every kind are found."""
    imports = {(i.importer, i.target, i.local, i.type_checking) for i in collect_imports(sources)}
    assert ("iokr.estimators.iokr", "iokr.linalg", False, False) in imports  # from ..linalg import (...)
    assert ("iokr.linalg", "iokr.linalg._cg", False, False) in imports  # from ._cg import ... in a package
    assert ("iokr.cli.demo", "iokr.cli._report", True, False) in imports  # inside a function
    assert ("iokr", "iokr.estimators", False, True) in imports  # under if TYPE_CHECKING
    assert len(sources) > 100 and {_part(m) for m in sources} <= set(RANK) | {ROOT}


def _with(sources, module, extra):
    """A copy of ``sources`` with ``extra`` source appended to ``module``."""
    text, is_package = sources[module]
    return {**sources, module: (text + "\n" + extra, is_package)}


@pytest.mark.parametrize(("module", "extra", "expected"), [
    ("iokr.linalg._cg", "from ..kernels import Gaussian",
     "upward import: iokr.linalg._cg -> iokr.kernels (iokr.linalg must not import iokr.kernels)"),
    ("iokr.kernels._base", "from ..estimators.iokr import IOKR",
     "upward import: iokr.kernels._base -> iokr.estimators.iokr (iokr.kernels must not import iokr.estimators)"),
    ("iokr.decoding._scoring", "from iokr import distributed",
     "upward import: iokr.decoding._scoring -> iokr.distributed (iokr.decoding must not import iokr.distributed)"),
    ("iokr.estimators.rls", "import iokr.apps.metabolites",
     "upward import: iokr.estimators.rls -> iokr.apps.metabolites (iokr.estimators must not import iokr.apps)"),
    ("iokr.apps.retrieval", "def f():\n    from ...cli import main",
     "upward import: iokr.apps.retrieval -> iokr.cli.main (iokr.apps must not import iokr.cli)"),
    ("iokr.kernels._vector", "from ..decoding import CandidateSets",
     "sideways (same layer) import: iokr.kernels._vector -> iokr.decoding "
     "(iokr.kernels must not import iokr.decoding)"),
    ("iokr.apps.multilabel", "from ..metabolites import read_spectra",
     "applications must be independent: iokr.apps.multilabel -> iokr.apps.metabolites"),
    ("iokr.apps.metabolites.chemistry._formulas", "from ..model._confidence import top_margins",
     "upward import in the metabolite app: iokr.apps.metabolites.chemistry._formulas -> "
     "iokr.apps.metabolites.model._confidence (chemistry must not import model)"),
    ("iokr.apps.metabolites.model._persist", "def f():\n    from ..workflows._feedback import Feedback",
     "upward import in the metabolite app: iokr.apps.metabolites.model._persist -> "
     "iokr.apps.metabolites.workflows._feedback (model must not import workflows)"),
])
def test_an_added_upward_import_is_reported(sources, module, extra, expected):
    assert expected not in all_violations(sources)
    assert expected in all_violations(_with(sources, module, extra))


def test_the_cycle_of_issue_29_is_reported_even_inside_a_function(sources):
    # The import estimators/_pairwise.py had before #29 (a cycle through model_selection's __init__ and
    # estimators.kron, hidden in a function): it is upward, not allowed at function level, and a cycle.
    extra = "def f():\n    from ..model_selection._pairwise_search import pairwise_cv_scores"
    found = all_violations(_with(sources, "iokr.estimators._pairwise", extra)) - all_violations(sources)
    assert "function-level import not allowed: iokr.estimators._pairwise -> iokr.model_selection._pairwise_search" \
        in found
    assert any(m.startswith("upward import: iokr.estimators._pairwise -> iokr.model_selection") for m in found)
    (cycle,) = [m for m in found if m.startswith("import cycle ")]
    path = cycle.removeprefix("import cycle ").split(" (")[0].split(" -> ")
    assert path[0] == path[-1] and "iokr.estimators._pairwise" in path
    assert any(m.startswith("iokr.model_selection") for m in path)


def test_a_cycle_within_a_layer_and_through_a_package_init_is_reported(sources):
    # linalg/__init__ imports _cholesky; _cholesky importing a name of the package closes a cycle without leaving linalg.
    found = all_violations(_with(sources, "iokr.linalg._cholesky", "from . import EigenPath"))
    assert any(m.startswith("import cycle iokr.linalg -> iokr.linalg._cholesky -> iokr.linalg (") for m in found)
    # Under TYPE_CHECKING the import never runs: no cycle.
    guarded = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import EigenPath"
    assert all_violations(_with(sources, "iokr.linalg._cholesky", guarded)) == all_violations(sources)


def test_unlisted_function_level_imports_are_reported(sources):
    found = all_violations(_with(sources, "iokr.metrics", "def f():\n    import polars\n    import json"))
    assert found - all_violations(sources) == {
        "function-level import of third-party 'polars' not in LAZY_THIRD_PARTY: iokr.metrics"}
    found = all_violations(_with(sources, "iokr.model_selection._mkl", "def f():\n    from ..linalg import minres"))
    assert found - all_violations(sources) == {
        "function-level import not allowed: iokr.model_selection._mkl -> iokr.linalg"}

"""The accuracy studies use iokr as users do (issue #29): no ``iokr`` module or name that starts with an underscore
is imported by ``experiments/`` (their own shared helpers in ``experiments/_common`` aside)."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def private_iokr_imports(source, filename="<source>"):
    """``(line, text)`` of every import of a private iokr module or name in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source, filename=filename)):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "iokr":
            private_module = any(part.startswith("_") for part in node.module.split("."))
            private_names = [a.name for a in node.names if a.name.startswith("_")]
            if private_module or private_names:
                found.append((node.lineno, ast.unparse(node)))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, ast.unparse(node)) for a in node.names
                      if a.name.split(".")[0] == "iokr" and any(p.startswith("_") for p in a.name.split("."))]
    return found


def test_experiments_import_no_private_iokr_name():
    offenders = {}
    for path in sorted((ROOT / "experiments").rglob("*.py")):
        found = private_iokr_imports(path.read_text(encoding="utf-8"), str(path))
        if found:
            offenders[str(path.relative_to(ROOT))] = found
    assert offenders == {}


def test_the_scan_finds_private_imports():
    source = ("from iokr.apps.metabolites.model._model import X\nfrom iokr.apps import metabolites\n"
              "from iokr.apps.metabolites import _jobs\nimport iokr.kernels._training_grams\n"
              "from experiments._common.reports import Outputs\n")
    assert [line for line, _ in private_iokr_imports(source)] == [1, 3, 4]

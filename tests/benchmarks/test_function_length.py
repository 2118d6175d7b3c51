"""No function in benchmarks/ or experiments/ over 80 lines, no experiments module over 400: the harness and
``experiments/_common`` carry the shared parts, each benchmark or study its own steps."""

import ast
from pathlib import Path

MAX_LINES = 80
BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
EXPERIMENTS = BENCHMARKS.parent / "experiments"
MAX_MODULE_LINES = 400


def _long_functions(path):
    tree = ast.parse(path.read_text(), filename=str(path))
    return [f"{path.name}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)"
            for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.end_lineno - node.lineno + 1 > MAX_LINES]


def test_no_benchmark_function_over_80_lines():
    files = sorted(BENCHMARKS.rglob("*.py"))
    assert len(files) > 20
    assert [f for p in files for f in _long_functions(p)] == []


def test_no_experiment_function_over_80_lines_nor_module_over_400():
    files = sorted(EXPERIMENTS.rglob("*.py"))
    assert len(files) > 20
    assert [f for p in files for f in _long_functions(p)] == []
    assert [p.name for p in files if len(p.read_text().splitlines()) > MAX_MODULE_LINES] == []


def test_the_check_finds_a_long_function(tmp_path):
    path = tmp_path / "long.py"
    path.write_text("def f():\n" + "    x = 1\n" * MAX_LINES)
    assert _long_functions(path) == ["long.py:1 f (81 lines)"]

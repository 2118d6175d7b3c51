"""The test tree has no ``__init__.py`` files, so pytest imports each test module by its basename: two modules with
one basename make the whole run stop at collection ("import file mismatch")."""

from collections import defaultdict
from pathlib import Path


def test_test_module_basenames_are_unique():
    root = Path(__file__).parent
    seen = defaultdict(list)
    for path in root.rglob("test_*.py"):
        seen[path.name].append(str(path.relative_to(root)))
    assert {name: paths for name, paths in seen.items() if len(paths) > 1} == {}

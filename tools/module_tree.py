"""The code map of ``docs/index.md``: every package and module of ``iokr/`` as a tree, one line each.

A maintainer script (it reads sources with ``ast``; nothing is imported)::

    python tools/module_tree.py --write   # rewrite the tree between the markers in docs/index.md
    python tools/module_tree.py --check   # exit 1 when docs/index.md's tree is not the current one

Each line links the file and gives the first sentence of its docstring (packages: of their ``__init__``), so the
map changes when the code does; ``tests/test_module_tree.py`` runs ``--check``.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "iokr"
INDEX = ROOT / "docs" / "index.md"
BEGIN, END = "<!-- module tree: begin (tools/module_tree.py --write) -->", "<!-- module tree: end -->"
MAX_PURPOSE = 150
#: Modules a newcomer looks for first: marked in the tree.
#: Folders whose subpackages are listed in the order data flows through them (lowest layer first), as
#: ``tests/test_import_layers.py`` checks it; other folders list theirs alphabetically.
FLOW = {"iokr/apps/metabolites": ("defaults", "spectra", "chemistry", "importing", "kernels", "candidates", "model",
                                  "evaluation", "selection", "exporting", "ranking", "workflows")}
MARKS = {"iokr/apps/metabolites/ranking/_identify.py": "**ranks the queries: `score_queries`**",
         "iokr/apps/metabolites/model/_model.py": "**scores one query's candidates: `MetaboliteIdentifier.score_sets`**"}


def purpose(path):
    """The first sentence of a module's docstring, on one line (at most :data:`MAX_PURPOSE` characters)."""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    text = " ".join(doc.split())
    match = re.match(r"(.+?(?<!\bal)(?<!\be\.g)(?<!\bi\.e)(?<!\bcf)[.])(\s|$)", text)
    first = match.group(1) if match else text
    return first if len(first) <= MAX_PURPOSE else first[: MAX_PURPOSE - 3].rstrip() + "..."


def _line(depth, path, label):
    rel = path.relative_to(ROOT).as_posix()
    source = path / "__init__.py" if path.is_dir() else path
    mark = MARKS.get(rel)
    text = purpose(source) if source.exists() else ""
    if mark:
        text = f"{mark}; {text}" if text else mark
    return f"{'  ' * depth}- [`{label}`](../{rel}){' — ' + text if text else ''}"


def tree_lines(folder=PACKAGE, depth=0):
    """The tree of ``folder``: packages first (their own line, then their contents), then modules."""
    lines = [] if depth else [_line(0, folder, folder.name + "/")]
    flow = FLOW.get(folder.relative_to(ROOT).as_posix(), ())
    children = sorted((p for p in folder.iterdir() if p.name != "__pycache__"),
                      key=lambda p: (flow.index(p.stem) if p.stem in flow else len(flow), p.name))
    for sub in (p for p in children if p.is_dir() and (p / "__init__.py").exists()):
        lines.append(_line(depth + 1, sub, sub.name + "/"))
        lines.extend(tree_lines(sub, depth + 1))
    for module in (p for p in children if p.suffix == ".py" and p.name != "__init__.py"):
        lines.append(_line(depth + 1, module, module.name))
    return lines


def rendered(text):
    """``docs/index.md``'s text with the tree between the markers replaced by the current one."""
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{INDEX}: the markers {BEGIN!r} and {END!r} are missing")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return head + BEGIN + "\n" + "\n".join(tree_lines()) + "\n" + END + tail


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="rewrite docs/index.md's tree")
    parser.add_argument("--check", action="store_true", help="exit 1 when docs/index.md's tree is out of date")
    args = parser.parse_args(argv)
    if not (args.write or args.check):
        print("\n".join(tree_lines()))
        return 0
    text = INDEX.read_text(encoding="utf-8")
    new = rendered(text)
    if args.write and new != text:
        INDEX.write_text(new, encoding="utf-8")
    if args.check and new != text:
        print(f"{INDEX} is out of date: run python tools/module_tree.py --write", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

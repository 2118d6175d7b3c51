"""Every ``iokr`` command run by the tests must leave its inputs byte-identical (installed by tests/conftest.py)."""

import hashlib
from pathlib import Path

import iokr.cli.main as cli

#: Options whose value is written by the command (everything else that names an existing path is an input).
_OUTPUT_OPTIONS = ("--output", "--store")


def _tree_digest(path):
    path = Path(path)
    files = sorted(p for p in path.rglob("*") if p.is_file() and not p.is_symlink()) if path.is_dir() else [path]
    digest = hashlib.blake2b(digest_size=16)
    for p in files:
        digest.update(str(p.relative_to(path) if path.is_dir() else p.name).encode())
        with open(p, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def _input_paths(argv):
    argv = [str(a) for a in argv]
    outputs = {argv[i + 1] for i, a in enumerate(argv[:-1]) if a in _OUTPUT_OPTIONS}
    inputs = []
    for i, arg in enumerate(argv):
        written = i > 0 and argv[i - 1] in _OUTPUT_OPTIONS
        if arg.startswith("-") or (written and argv.count(arg) == 1):
            continue
        path = Path(arg)
        try:
            if (path.is_file() or path.is_dir()) and (not written or arg not in outputs or argv.count(arg) > 1):
                inputs.append(path)
        except OSError:
            continue
    return inputs


def guard_cli_main():
    """Wrap ``iokr.cli.main.main`` before test modules import it: each call's input files and folders (every
    existing path on the command line but the outputs) must hash the same after the command as before."""
    original = cli.main
    if getattr(original, "_checks_inputs", False):
        return

    def main(argv=None, *args, **kwargs):
        inputs = _input_paths(argv or [])
        before = {p: _tree_digest(p) for p in inputs}
        try:
            return original(argv, *args, **kwargs)
        finally:
            changed = [str(p) for p in inputs if not p.exists() or _tree_digest(p) != before[p]]
            assert not changed, f"iokr {' '.join(map(str, argv or []))} modified its inputs: {changed}"

    main._checks_inputs = True
    cli.main = main

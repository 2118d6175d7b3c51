"""Helpers shared by subcommands: atomic writes, progress lines, tables."""

from __future__ import annotations

import json
import sys

from ..io._atomic import atomic_open


def write_atomic(path, text):
    """Write ``text`` to ``path`` through a temporary file and a rename, so readers never see half a file.

    ``text`` is a str (written as UTF-8) or bytes (written as is, e.g. a PNG).
    """
    if isinstance(text, (bytes, bytearray)):
        with atomic_open(path, "wb") as handle:
            handle.write(text)
        return
    with atomic_open(path, "w", encoding="utf-8") as handle:
        handle.write(text)


def write_json(path, data):
    write_atomic(path, json.dumps(data, indent=2, sort_keys=False, default=float) + "\n")


class Progress:
    """A one-line progress indicator on stderr (quiet when stderr is not a terminal, except for the final line)."""

    def __init__(self, total, label):
        self.total, self.label, self.done = total, label, 0
        self.interactive = sys.stderr.isatty()

    def __call__(self, done=None):
        self.done = self.done + 1 if done is None else done
        if self.interactive:
            print(f"\r{self.label}: {self.done}/{self.total}", end="", file=sys.stderr, flush=True)
        if self.done >= self.total:
            print(("\r" if self.interactive else "") + f"{self.label}: {self.total}/{self.total} done",
                  file=sys.stderr, flush=True)


def format_table(header, rows):
    widths = [max(len(str(x)) for x in column) for column in zip(header, *rows)]
    line = lambda values: "  ".join(str(v).rjust(w) for v, w in zip(values, widths))  # noqa: E731
    return "\n".join([line(header), line(["-" * w for w in widths])] + [line(r) for r in rows])

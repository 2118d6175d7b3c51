"""A study's report files: the JSON it computed and the Markdown rendered from it, keeping a hand-written tail."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from benchmarks._harness import write_json

__all__ = ["Outputs", "read_json", "write_json", "write_keeping_section"]


@dataclass(frozen=True)
class Outputs:
    """Where a study's results go, relative to the ``--output`` folder (``reports`` by default).

    Attributes
    ----------
    json : str
        File name of the results (what ``run`` returned).
    markdown : str
        File name of the rendered report (what ``render`` returned).
    keep : str or None
        Heading of a hand-written section of the Markdown carried over when it is regenerated (``"## Reading"``),
        or None to overwrite the whole file.
    json_indent : int
        Indentation of the JSON file (each study keeps the layout of its committed file, so diffs stay readable).
    json_newline : bool
        Whether the JSON file ends with a newline (likewise).
    extra_json : str or None
        A sibling results file (another study's) that ``render`` also shows, passed as its second argument when
        present (the multi-label report's "Grid" section from ``multilabel_grid.json``).
    """

    json: str
    markdown: str
    keep: str | None = "## Reading"
    json_indent: int = 2
    json_newline: bool = True
    extra_json: str | None = None


def read_json(path):
    """The JSON object in ``path``, or None when there is no such file."""
    path = Path(path)
    return json.loads(path.read_text()) if path.is_file() else None


def write_keeping_section(path, text, heading):
    """Write ``text`` to ``path``, followed by the section starting at ``heading`` in the file being replaced.

    Runners regenerate their reports from their JSON; the section from ``heading`` to the end (a reading written by
    hand, or a summary produced by another command) is not theirs to regenerate, so it is carried over.

    Parameters
    ----------
    path : str or Path
        The report file.
    text : str
        The generated part, ending with a newline.
    heading : str
        The heading line of the kept section, e.g. ``"## Reading"``.
    """
    path = Path(path)
    kept = path.read_text().partition("\n" + heading)[2] if path.exists() else ""
    path.write_text(text + (f"\n{heading}{kept}" if kept else ""))

"""Rewrite a generated report while keeping its hand-written tail."""

from pathlib import Path


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

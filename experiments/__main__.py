"""``python -m experiments [NAME --data DIR [--quick] [--output DIR] [--set FIELD=VALUE ...] [--render-only]]``.

With no NAME, lists the studies. With NAME, runs the study with its ``Config`` (``QUICK`` with ``--quick``; fields
changed by ``--set``), writes ``OUTPUT/<json>`` and ``OUTPUT/<markdown>`` (the study's ``OUTPUTS``; a hand-written
"## Reading" section of the Markdown is kept) and prints the Markdown. ``--render-only`` re-renders the Markdown
from the existing JSON.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
from pathlib import Path

from experiments import STUDIES, load
from experiments._common.reports import read_json, write_json, write_keeping_section


def parse_setting(config, text):
    """``(field, value)`` from ``FIELD=VALUE``: a Python literal (strings may go unquoted); for a tuple field, a
    list or comma-separated words (``skip=bibtex,retrieval_cv``).

    Raises
    ------
    SystemExit
        ``FIELD`` is not a field of the study's ``Config`` or the text has no ``=``.
    """
    name, sep, raw = text.partition("=")
    names = [f.name for f in dataclasses.fields(config)]
    if not sep or name not in names:
        raise SystemExit(f"--set: expected FIELD=VALUE with FIELD one of {', '.join(names)}; got {text!r}")
    try:
        value = ast.literal_eval(raw)
    except (ValueError, SyntaxError):
        value = raw
    if isinstance(getattr(config, name), tuple):
        value = tuple(v for v in value.split(",") if v) if isinstance(value, str) else tuple(value)
    return name, value


def write_report(study, report, output):
    """Write the study's JSON and Markdown into ``output`` (created); returns the Markdown."""
    save_json(study, report, output)
    return write_markdown(study, report, Path(output))


def save_json(study, report, output):
    """Write the study's JSON into ``output`` (created): the final results, or a checkpoint of partial ones."""
    out = Path(output)
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / study.OUTPUTS.json, report, indent=study.OUTPUTS.json_indent, newline=study.OUTPUTS.json_newline)


def write_markdown(study, report, out):
    """Render ``report`` into ``out / OUTPUTS.markdown`` (keeping its hand-written section); returns the text."""
    files = study.OUTPUTS
    extra = read_json(out / files.extra_json) if files.extra_json else None
    text = study.render(report, extra) if extra is not None else study.render(report)
    if files.keep:
        write_keeping_section(out / files.markdown, text, files.keep)
    else:
        (out / files.markdown).write_text(text)
    return text


def run_study(name, data, quick=False, output="reports", settings=(), render_only=False):
    """Run study ``name`` and write its report files; returns the results (the JSON's content)."""
    study = load(name)
    out = Path(output)
    previous = read_json(out / study.OUTPUTS.json)
    if render_only:
        if previous is None:
            raise SystemExit(f"--render-only: no {out / study.OUTPUTS.json} to render")
        print(write_markdown(study, previous, out))
        return previous
    config = study.QUICK if quick else study.Config()
    config = dataclasses.replace(config, **dict(parse_setting(config, s) for s in settings))
    if data is None:
        raise SystemExit("--data: the shared data folder is required (unless --render-only)")
    update = previous if getattr(config, "update", False) else None
    report = study.run(config, Path(data), previous=update, checkpoint=lambda partial: save_json(study, partial, out))
    print(write_report(study, report, out))
    return report


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m experiments", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("name", nargs="?", choices=list(STUDIES), metavar="NAME", help="the study (none: list them)")
    parser.add_argument("--data", help="the shared data folder (see each study's docstring for what it reads)")
    parser.add_argument("--quick", action="store_true", help="the study's smoke-run configuration")
    parser.add_argument("--output", default="reports", help="folder of the report files (default: reports)")
    parser.add_argument("--set", dest="settings", action="append", default=[], metavar="FIELD=VALUE",
                        help="change one field of the study's Config (repeatable), e.g. --set splits=3")
    parser.add_argument("--render-only", action="store_true", help="re-render the Markdown from the existing JSON")
    args = parser.parse_args(argv)
    if args.name is None:
        width = max(map(len, STUDIES))
        print("\n".join(f"{name:<{width}}  {purpose}" for name, purpose in STUDIES.items()))
        return None
    return run_study(args.name, args.data, args.quick, args.output, args.settings, args.render_only)


if __name__ == "__main__":
    main()

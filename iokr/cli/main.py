"""Entry point of the ``iokr`` command.

Each subcommand lives in its own module of this package and exposes ``register(subparsers)``, which adds its parser
and sets ``func`` (a callable taking the parsed arguments and returning an exit code). Errors of the library's own
kinds are printed as one line and give a non-zero exit code, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from .. import __version__, set_config

# Subcommand modules, in the order they appear in --help.
SUBCOMMANDS = ("demo", "retrieval", "multilabel", "metabolites")


class CommandError(Exception):
    """An error to report to the user as one line (exit code 2)."""


def build_parser():
    parser = argparse.ArgumentParser(prog="iokr", description="Structured-output prediction with least-squares "
                                     "kernel methods.")
    parser.add_argument("--version", action="version", version=f"iokr {__version__}")
    parser.add_argument("--working-memory", type=float, default=None, metavar="MIB",
                        help="budget in MiB for the chunked temporaries of every computation (default: the library "
                             "setting, 1024)")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in SUBCOMMANDS:
        try:
            module = importlib.import_module(f"iokr.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"iokr.cli.{name}":
                continue
            raise
        module.register(subparsers)
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        if args.working_memory is not None:
            if not args.working_memory > 0:
                raise CommandError(f"--working-memory must be a number of MiB > 0, got {args.working_memory!r}.")
            set_config(working_memory=args.working_memory)
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("iokr: interrupted", file=sys.stderr)
        return 130
    except (CommandError, ValueError, TypeError, OSError, MemoryError) as exc:
        print(f"iokr {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

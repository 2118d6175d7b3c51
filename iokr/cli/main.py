"""Entry point of the ``iokr`` command.

Each subcommand lives in its own module of this package and exposes ``register(subparsers)``, which adds its parser
and sets ``func`` (a callable taking the parsed arguments and returning an exit code). Subcommand modules import
the library inside their ``run`` functions, so building the parser (``iokr --help``) imports no numerical package.

Every exception reaching :func:`main` becomes one line on stderr and a non-zero exit code (see ``EXIT_CODES``);
``--debug`` adds the traceback.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import os
import signal
import sys
import threading

from .. import __version__
from ..exceptions import IOKRDataError
from ._deferred_imports import defer_unused_imports
from ._output import CommandError, release_outputs, set_quiet

__all__ = ["EXIT_CODES", "CommandError", "Terminated", "build_parser", "main"]

# Subcommand modules, in the order they appear in --help.
SUBCOMMANDS = ("demo", "retrieval", "multilabel", "metabolites")

EXIT_CODES = {
    0: "success",
    1: "internal error (a bug: rerun with --debug and report the traceback)",
    2: "usage or data error (the message names the option or file)",
    130: "interrupted (Ctrl-C)",
    143: "terminated (SIGTERM); temporary outputs removed",
}

# Errors about the user's request or data (or the machine's limits), reported as one line with exit code 2.
# Anything else is an internal error (exit code 1).
USER_ERRORS = (CommandError, IOKRDataError, ValueError, TypeError, OSError, MemoryError, RecursionError)


class Terminated(BaseException):
    """Raised in the main thread on SIGTERM, so ``finally`` blocks and context managers clean up as on Ctrl-C.

    A ``BaseException`` (like ``KeyboardInterrupt``), so ``except Exception`` blocks in the library do not swallow it.
    """


class _Parser(argparse.ArgumentParser):
    """An argument parser whose every (sub)command accepts the global options, before or after the command name."""

    def __init__(self, *args, global_defaults=False, **kwargs):
        super().__init__(*args, **kwargs)
        _add_global_options(self, defaults=global_defaults)


def _add_global_options(parser, defaults):
    # Subcommand parsers leave an option unset unless given there, so `iokr --quiet demo` and `iokr demo --quiet`
    # both work and neither overrides the other.
    default = (lambda value: value) if defaults else (lambda value: argparse.SUPPRESS)
    group = parser.add_argument_group("global options")
    group.add_argument("--working-memory", type=float, default=default(None), metavar="MIB",
                       help="budget in MiB for the chunked temporaries of every computation (default: the library "
                            "setting, 1024)")
    group.add_argument("--overwrite", action="store_true", default=default(False),
                       help="replace existing outputs (an output folder is replaced as a whole, once the new one is "
                            "complete); inputs are never replaced")
    group.add_argument("--quiet", action="store_true", default=default(False),
                       help="no progress bars or status lines on stderr")
    group.add_argument("--debug", action="store_true", default=default(False),
                       help="print the full traceback of an error")


def _epilog():
    codes = "\n".join(f"  {code:>3}  {meaning}" for code, meaning in EXIT_CODES.items())
    return f"exit codes:\n{codes}"


def build_parser():
    """Build the ``iokr`` argument parser (imports the subcommand modules, which import no numerical package).

    Returns
    -------
    parser : argparse.ArgumentParser
        The parser; parsed arguments carry ``func`` (the subcommand to run) and the global options.
    """
    parser = _Parser(prog="iokr", description="Structured-output prediction with least-squares kernel methods.",
                     epilog=_epilog(), formatter_class=argparse.RawDescriptionHelpFormatter, global_defaults=True)
    parser.add_argument("--version", action="version", version=f"iokr {__version__}")
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


#: The library's advice on a too small budget, as the command line says it.
_LIBRARY_BUDGET_ADVICE = "raise it with iokr.set_config(working_memory=...) or the working_memory argument"


def _one_line(exc):
    message = " ".join(str(exc).split())
    if isinstance(exc, MemoryError) and not message:
        return "out of memory (MemoryError)"
    if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
        where = f" while writing {exc.filename}" if exc.filename else " while writing the results"
        return f"No space left on device{where}; free some space or write elsewhere (--output)"
    message = message.replace(_LIBRARY_BUDGET_ADVICE, "raise it with --working-memory MIB")
    if isinstance(exc, RecursionError):
        return f"input nested too deeply ({message or 'maximum recursion depth exceeded'})"
    return message or type(exc).__name__


def _silence_stdout():
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # stdout replaced (tests) or already closed
        pass


def _on_sigterm(signum, frame):
    raise Terminated()


def _install_sigterm_handler():
    """Turn SIGTERM into :class:`Terminated`; return a function restoring the previous handler."""
    if threading.current_thread() is not threading.main_thread():  # signals only reach the main thread
        return lambda: None
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    # None: the previous handler was not installed from Python; the default is the closest we can restore.
    return lambda: signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)


def main(argv=None):
    """Run the ``iokr`` command.

    Parameters
    ----------
    argv : list of str, optional
        Arguments after the program name (default: ``sys.argv[1:]``).

    Returns
    -------
    code : int
        The exit code (see ``iokr --help``).
    """
    restore_sigterm = _install_sigterm_handler()
    previous_quiet = None
    name, debug = "iokr", "--debug" in (sys.argv[1:] if argv is None else argv)
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        name = " ".join(["iokr"] + [v for v in (args.command, getattr(args, "action", None)) if v])
        debug = args.debug
        if not getattr(args, "func", None):
            parser.print_help()
            return 2
        previous_quiet = set_quiet(args.quiet)
        defer_unused_imports()  # start-up time: scipy.stats and pandas load on first use (see the module)
        if args.working_memory is not None:
            if not args.working_memory > 0:
                raise CommandError(f"--working-memory must be a number of MiB > 0, got {args.working_memory!r}.")
            from .._config import config_context

            # for this command only: main() called in-process (tests, notebooks) leaves the caller's budget as it was
            with config_context(working_memory=args.working_memory):
                return int(args.func(args) or 0)
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print(f"{name}: interrupted", file=sys.stderr)
        return 130
    except Terminated:
        print(f"{name}: terminated", file=sys.stderr)
        return 143
    except USER_ERRORS as exc:
        if isinstance(exc, BrokenPipeError):  # `iokr ... | head`: no second error when Python flushes stdout at exit
            _silence_stdout()
        if debug:
            import traceback

            traceback.print_exc()
        print(f"{name}: error: {_one_line(exc)}", file=sys.stderr)
        return 2
    except Exception as exc:  # noqa: BLE001 - the one place every unexpected error becomes one line
        if debug:
            import traceback

            traceback.print_exc()
        message = " ".join(str(exc).split())
        hint = "" if debug else " (rerun with --debug for the traceback)"
        print(f"{name}: internal error: {type(exc).__name__}{': ' + message if message else ''}{hint}",
              file=sys.stderr)
        return 1
    finally:
        release_outputs()  # the outputs this command claimed (kill -9: the kernel releases them)
        if previous_quiet is not None:
            set_quiet(previous_quiet)
        restore_sigterm()


if __name__ == "__main__":
    sys.exit(main())

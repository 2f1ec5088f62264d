"""What goes where: the report to stdout, progress and errors to stderr, library chatter to the log.

Every command takes `--quiet` (no progress, no notes on stderr: only the report and errors) and
`--verbose` (library log lines on stderr too). Progress is drawn only when stderr is a terminal,
so a pipe, a CI log or `2> file` never receives it. Every line we write to stderr goes through
`say`: an error quotes file names and spec values, and none of them may become a workflow command
in a CI log (`tunegate.output.safe.inert_lines`).
"""
from __future__ import annotations

import argparse
import os
import sys

from tunegate.cli.logs import route_library_output
from tunegate.output.safe import inert_lines


def add_output_flags(command: argparse.ArgumentParser) -> None:
    group = command.add_argument_group("output")
    group.add_argument("-q", "--quiet", action="store_true",
                       help="no progress and no notes on stderr: only the result and errors")
    group.add_argument("-v", "--verbose", action="store_true",
                       help="also show library log lines (Prefect, MLflow, warnings) on stderr")


def start_output(args: argparse.Namespace) -> None:
    """Route library logs, and draw progress when a person is watching stderr."""
    from tunegate import progress

    route_library_output(verbose=getattr(args, "verbose", False))
    if wants_progress(args, sys.stderr):
        progress.enable(sys.stderr)
    else:
        progress.disable()


def wants_progress(args: argparse.Namespace, stream) -> bool:
    if getattr(args, "quiet", False):
        return False
    if os.environ.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or replaced stream
        return False


def say(text: str) -> None:
    """Write `text` (an error, a note) to stderr, its lines kept, none a command to a CI runner.

    A stderr that cannot be written (a full disk, a closed terminal) loses the line: the exit code
    still says how the command ended, and a failure to complain must not become a crash.
    """
    try:
        print(inert_lines(text), file=sys.stderr)
    except (OSError, ValueError):
        pass


def note(args: argparse.Namespace, text: str) -> None:
    """A line for the person at the terminal (where to look next); silenced by --quiet."""
    if not getattr(args, "quiet", False):
        say(text)

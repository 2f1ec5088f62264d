"""The `tunegate` command line: the single place that turns outcomes into exit codes.

    tunegate check examples/quickstart.yaml

Exit codes: 0 approved (or the command succeeded), 1 rejected, 2 usage or environment error (bad
flags, an unreadable spec, a missing extra, a configured service that does not answer), 3 an
internal error (a bug in tunegate: please report it), 130 interrupted
(Ctrl-C), 143 terminated (SIGTERM: the command stops as for Ctrl-C, its MLflow runs end KILLED and
the Prefect server it started stops; see `tunegate.cli.flow_runner`), 141 the reader of its output
went away (`tunegate gpus | head -1`: what a Unix tool ends with on SIGPIPE, without a message).
An output that cannot be written (stdout on a full disk, `> /dev/full`; a read-only or full folder)
is the environment's problem, not a bug: exit 2 with a line naming the output.
"""
from __future__ import annotations

import argparse
import errno
import importlib
import os
import signal
import sys
import threading
import traceback

from tunegate.cli.logs import log_file
from tunegate.cli.start_up import hold_collections, is_static, leave, started, static_settings
from tunegate.cli.streams import add_output_flags, say, start_output
from tunegate.errors import EXIT_INTERNAL, EXIT_USAGE, Terminated, TunegateError, cut_short_by
from tunegate.processes.held_collections import own_process

EXIT_TERMINATED = 128 + signal.SIGTERM
EXIT_BROKEN_PIPE = 128 + signal.SIGPIPE
# Errors of the place written to, never of tunegate: a full disk or quota, a file past its size
# limit, a read-only file system, an I/O error of the device.
WRITE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EIO}

# Subcommand modules under tunegate.cli, in the order `--help` lists them.
COMMANDS = ["check", "lint", "convert", "samples", "fingerprint", "preflight", "sweep", "launch", "estimate",
            "advise", "runs", "schema",
            "gpus", "api"]



def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or of only the one `argv` names first.

    Each subcommand module imports what its command runs (the advisor, the output formats, the
    flows), so registering all of them costs a check ~50 ms of imports it never uses. A command
    named first parses the same either way (`tunegate check --help` is that command's own parser);
    anything else (`--help`, `--version`, a misspelt command) gets the full parser and its list.
    """
    parser = argparse.ArgumentParser(
        prog="tunegate", description="Fail-fast preflight gate for LLM fine-tuning.")
    parser.add_argument("--version", action="version", version=f"tunegate {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    named = [argv[0]] if argv and argv[0] in COMMANDS else COMMANDS
    for name in named:
        module = importlib.import_module(f"tunegate.cli.{name}")
        module.register(sub)
    for command in sub.choices.values():
        add_output_flags(command)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    with static_settings(argv):  # a check's process skips what it never uses (tunegate.cli.start_up)
        return _run(argv)


def entry() -> int:
    """The process's own entry point (the console script, `python -m tunegate`): `main()`, with a
    static command's start-up and exit spared the garbage collector's passes (tunegate.cli.start_up)."""
    argv = sys.argv[1:]
    own_process()
    hold_collections(argv)
    code = main(argv)
    if is_static(argv):  # the report is out: end without the interpreter's teardown (tunegate.cli.fast_exit)
        from tunegate.cli.fast_exit import end_now

        end_now(code)
    return leave(argv, code)


def _run(argv: list[str]) -> int:
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    start_output(args)
    previous = _raise_on_sigterm()
    started()  # the command's module is loaded: collect again (held only by entry())
    try:
        code = int(args.run(args))
        sys.stdout.flush()  # a reader gone away shows here, not in the interpreter's exit
        return code
    except BrokenPipeError:  # `| head`: the reader had what it wanted; not a bug of ours
        _quiet_stdout()
        return EXIT_BROKEN_PIPE
    except TunegateError as exc:  # each class says what its exit code means (tunegate.errors)
        say(f"tunegate: error: {exc}")
        _failure_document(args, exc.exit_code, str(exc))
        return exc.exit_code
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM as Terminated
        return _cut_short(cut_short_by(exc) or KeyboardInterrupt)
    except OSError as exc:
        if exc.errno not in WRITE_ERRNOS:
            return _internal_error(args, exc)
        return _write_failed(exc)
    except Exception as exc:  # a bug in tunegate, never the user's data: keep it short, offer the trace
        from tunegate.cli.extras import missing_extra

        signal_exc = cut_short_by(exc)  # the signal's exception, wrapped where it landed
        if signal_exc is not None:
            return _cut_short(signal_exc)

        if (missing := missing_extra(exc)) is not None:  # an optional extra no command checked for first
            say(f"tunegate: error: {missing}")
            _failure_document(args, missing.exit_code, str(missing))
            return missing.exit_code
        return _internal_error(args, exc)
    finally:
        from tunegate import progress

        progress.disable()  # erase a board still drawn, before the shell prompt returns
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _cut_short(signal_exc: type[KeyboardInterrupt]) -> int:
    """Say the command was cut short (`tunegate.errors.cut_short_by`'s answer); its exit code."""
    if signal_exc is Terminated:
        print("tunegate: terminated (SIGTERM)", file=sys.stderr)
        return EXIT_TERMINATED
    print("tunegate: interrupted", file=sys.stderr)
    return 130


def _internal_error(args: argparse.Namespace, exc: BaseException) -> int:
    """A bug in tunegate, never the user's data: said short, with the way to the trace (exit 3)."""
    if os.environ.get("TUNEGATE_DEBUG"):
        traceback.print_exc()
    say(f"tunegate: internal error: {type(exc).__name__}: {exc}\n"
        "This is a bug in tunegate; rerun with TUNEGATE_DEBUG=1 for the traceback and report it "
        f"(library log: {log_file()}).")
    _failure_document(args, EXIT_INTERNAL, f"internal error: {type(exc).__name__}: {exc}")
    return EXIT_INTERNAL


def _write_failed(exc: OSError) -> int:
    """A write the place written to refused (a full disk): named, exit 2. Every file tunegate writes
    names itself (tunegate.destination, an OSError's filename), so one without a name is stdout."""
    from tunegate.pathguard import shown

    where = shown(exc.filename) if exc.filename else "stdout"
    say(f"tunegate: error: cannot write {where}: {exc.strerror or exc}")
    if where == "stdout":
        _quiet_stdout()  # what is still buffered for it is dropped, not raised again at exit
    return EXIT_USAGE


def _failure_document(args: argparse.Namespace, code: int, message: str) -> None:
    """`--output-format sarif|junit|github|json` still gets a valid document saying the run failed."""
    try:
        from tunegate.cli.emit import emit_failure

        emit_failure(args, code, message)
        sys.stdout.flush()
    except Exception:  # noqa: BLE001 - the exit code and stderr already carry the failure
        pass


def _quiet_stdout() -> None:
    """Point stdout at /dev/null: what is still buffered for the closed pipe is dropped at exit
    instead of raising BrokenPipeError again from the interpreter's last flush."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # stdout without a descriptor (a notebook's): nothing to silence
        pass


def _raise_on_sigterm() -> signal.Handlers | None:
    """Make SIGTERM raise Terminated in the main thread; return the handler it replaced."""
    if threading.current_thread() is not threading.main_thread():
        return None

    def terminated(signum: int, frame: object) -> None:
        raise Terminated()

    return signal.signal(signal.SIGTERM, terminated)  # type: ignore[return-value]


def _version() -> str:
    from tunegate import __version__
    return __version__

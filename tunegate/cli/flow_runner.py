"""Run a Prefect flow from the CLI (a local API, no server needed) and read back its data.

Import this module BEFORE anything that imports prefect: Prefect reads its settings from the
environment once, at import, so the defaults below only take effect if they are set first.

Which API: a server the user configured; else the user's shared local API, one per Prefect home,
that the commands find or start before they import Prefect (`tunegate.local_api`) and that stops
by itself `TUNEGATE_LOCAL_API_IDLE_S` (600) s after the last command using it: it outlives the
command by design, and only by that. No other process outlives the command. With
`TUNEGATE_LOCAL_API_IDLE_S=0`, or where the command could not start it first (Prefect already
imported, as in a library caller, or a Ray or Dask sweep), the API is a uvicorn child of the
command's own, started here by the main thread before the flow, with a parent-death signal
(Linux `PR_SET_PDEATHSIG`): the kernel sends it SIGTERM when the CLI dies, however it dies
(Prefect's own exit hook, which a SIGKILL never runs, used to leave it behind as an orphan). A
SIGTERM of the CLI itself becomes `Terminated` (`tunegate.cli.main`): the flow unwinds as for
Ctrl-C (Prefect marks it Crashed), this module ends the process's MLflow runs KILLED, Prefect's
exit hooks stop a server of the command's own, and the command exits 143.
"""
from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from typing import Any

from tunegate import local_api
from tunegate.cli.streams import say
from tunegate.processes import on_parent_death

# Ephemeral mode starts a local API for this process; no `prefect server` is needed.
os.environ.setdefault("PREFECT_SERVER_ALLOW_EPHEMERAL_MODE", "true")
# A fresh Prefect home takes ~7 s to migrate on an idle 2-core machine and over 20 s (Prefect's
# default limit) on a loaded one; a slow first start must not read as a tunegate bug.
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
# No phoning home: these machines (and many clusters) have no route out, and it only adds noise.
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
# Prefect 3's client has usage events of its own (Amplitude): queued from a terminal, sent when the
# API's server allows analytics (a team's server may). DO_NOT_TRACK is its opt-out, read when
# prefect is imported, which the flow commands do after this module.
os.environ.setdefault("DO_NOT_TRACK", "1")


def run_flow(flow_fn: Callable[..., Any], **parameters: Any) -> tuple[bool, Any]:
    """Call the flow; return (completed, the data its final state carries).

    On `Terminated` (SIGTERM) or a Ctrl-C, end this process's MLflow runs KILLED before the exception
    goes on to the CLI; Prefect's exit hooks stop the server. A failure the signal's exception caused (Python
    wrapped it where it landed: `tunegate.errors.cut_short_by`) is that signal's, not a failure.
    """
    from tunegate import progress

    with progress.step("starting Prefect's local API"):  # 10-20 s on a busy machine
        own_api = start_ephemeral_server() is not None or local_api.serving()
    try:
        with progress.step(f"{flow_fn.name} flow"), _no_heartbeats(own_api):
            state = flow_fn(**parameters, return_state=True)
    except BaseException as exc:
        _reraise_if_cut_short(exc, parameters.get("spec_path"))
        raise
    data = state.result(raise_on_failure=False)
    if isinstance(data, BaseException):
        _reraise_if_cut_short(data, parameters.get("spec_path"))
        from tunegate.errors import TunegateError

        if isinstance(data, TunegateError):
            raise data
        raise RuntimeError(f"flow run {state.name}: {data}") from data
    return state.is_completed(), data


def _reraise_if_cut_short(exc: BaseException, spec_path: Any) -> None:
    """Raise the signal's own exception (Terminated, KeyboardInterrupt) when `exc` is or came from
    one, this process's MLflow runs ended KILLED first; return otherwise."""
    from tunegate.errors import Terminated, cut_short_by

    signal_exc = cut_short_by(exc)
    if signal_exc is None:
        return
    # The server stays up until Prefect's exit hooks have drained its services, then they stop it
    # (stopping it here left them retrying a dead API for a minute).
    why = "the command got SIGTERM" if signal_exc is Terminated else "the command was interrupted"
    _end_runs_killed(spec_path, why)
    if isinstance(exc, signal_exc):
        raise exc
    raise signal_exc() from exc


@contextlib.contextmanager
def _no_heartbeats(own_api: bool) -> Iterator[None]:
    """No flow-run heartbeats to tunegate's local API (the command's own or the shared one),
    unless the user set their frequency.

    Heartbeats (every 180 s by default) let a server that outlives a flow run mark it Crashed once
    they stop, through an automation; the local API is Prefect's ephemeral one, where no
    automation is set up to notice, and one of the command's own outlives nothing. They cost every flow run's end up to
    1 s: Prefect joins the heartbeat thread, which sleeps in 1 s steps (issue 15 measured 0.54 +
    0.20 s of a sweep's end).
    """
    from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, get_current_settings, temporary_settings

    if not own_api or "heartbeat_frequency" in get_current_settings().flows.model_fields_set:
        yield
        return
    with temporary_settings(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}):
        yield


def start_ephemeral_server() -> Any:
    """Start Prefect's ephemeral API from this (main) thread so it dies with this process; None when
    a server is configured (PREFECT_API_URL) or ephemeral mode is off.

    Prefect starts the same server on the first client it needs; it reuses the one started here.
    """
    from prefect.settings import PREFECT_API_URL, PREFECT_SERVER_ALLOW_EPHEMERAL_MODE

    if PREFECT_API_URL.value() or not PREFECT_SERVER_ALLOW_EPHEMERAL_MODE.value():
        return None
    from prefect.server.api import server as prefect_server

    prefect_server.subprocess = _DyingWithParent()  # type: ignore[assignment]
    server = prefect_server.SubprocessASGIServer()
    server.start()
    return server


class _DyingWithParent:
    """`subprocess` as Prefect's server module sees it: each Popen dies with this process (Linux)."""

    def __getattr__(self, name: str) -> Any:
        return getattr(subprocess, name)

    @staticmethod
    def Popen(*args: Any, **kwargs: Any) -> subprocess.Popen[Any]:  # noqa: N802 (subprocess's name)
        if sys.platform.startswith("linux") and "preexec_fn" not in kwargs:
            kwargs["preexec_fn"] = on_parent_death(signal.SIGTERM)
        return subprocess.Popen(*args, **kwargs)


def warn_store_outside(spec: Any, spec_path: str) -> None:
    """Say it on stderr when the spec's SQLite store writes this project's artifacts outside it (a
    location tunegate will not re-root: tunegate.tracking.artifact_root). `spec` is the parsed spec."""
    if spec is None:
        return
    from tunegate.tracking.artifact_root import outside_project
    from tunegate.tracking.store import resolve_tracking_uri, sqlite_path

    path = sqlite_path(resolve_tracking_uri(spec, spec_path))
    warning = outside_project(path, spec.tracking.experiment) if path is not None and path.is_file() else None
    if warning:
        say(f"tunegate: warning: {warning}")


def _end_runs_killed(spec_path: Any, why: str) -> None:
    """End the RUNNING MLflow runs this process opened as KILLED (best effort: it is terminating)."""
    if spec_path is None:
        return
    try:
        from tunegate.spec.check import parse_spec
        from tunegate.tracking.session import end_runs_of_process
        from tunegate.tracking.store import open_client, resolve_tracking_uri, sqlite_path

        spec = parse_spec(spec_path).spec
        if spec is None:
            return
        uri = resolve_tracking_uri(spec, spec_path)
        path = sqlite_path(uri)
        if path is not None and not path.is_file():
            return  # no store was created: no run to end
        end_runs_of_process(open_client(uri), spec.tracking.experiment, socket.gethostname(), os.getpid(),
                            f"{why}; its flow run was stopped")
    except Exception as exc:  # never let the cleanup hide the termination itself
        say(f"tunegate: could not end the MLflow runs of this process: {type(exc).__name__}: {exc}")

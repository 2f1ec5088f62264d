"""`--emit-event` for `tunegate check` and `tunegate lint`: tell Prefect a data version passed.

    PREFECT_API_URL=http://prefect:4200/api tunegate check spec.yaml --emit-event
    PREFECT_API_URL=... tunegate lint --emit-event --spec spec.yaml data/train.jsonl data/val.jsonl

The event (tunegate.dataset.version) is sent only when the data passed, after the report is shown;
the `preflight` deployment's trigger starts a preflight of the spec it names. Prefect is imported
only when the flag is given (the static path stays free of it).
"""
from __future__ import annotations

import argparse
import importlib.util
from typing import Any

from tunegate.cli.streams import say
from tunegate.errors import MissingDependency, UsageError
from tunegate.pathguard import refusal

HELP = ("after the gate, send a tunegate.dataset.version event (the spec path and the data's SHA-256 "
        "digests, never their content) to the Prefect API in PREFECT_API_URL, which starts the `preflight` "
        "deployment's trigger. Sent only when the data passed; exit 2 when no API takes it (the verdict stands)")


def add_emit_flag(p: argparse.ArgumentParser, needs_spec_flag: bool = False) -> None:
    p.add_argument("--emit-event", action="store_true", help=HELP)
    if needs_spec_flag:
        p.add_argument("--spec", metavar="SPEC", help="with --emit-event: the spec whose preflight the event starts")


def require_spec(args: argparse.Namespace, spec: Any, how: str) -> None:
    """--emit-event starts a preflight of a spec: without one it is a usage error, before any check runs."""
    if not args.emit_event:
        return
    if spec is None:
        raise UsageError(f"--emit-event needs a spec (the preflight it starts gates one): {how}")
    if (why := refusal(spec)) is not None:  # the event would start a preflight of nothing readable
        raise UsageError(f"--emit-event: the spec {why}: give the spec file the preflight should gate")
    if importlib.util.find_spec("prefect") is None:  # found without importing it
        raise MissingDependency("prefect (for --emit-event)", "orchestrate")


def emit_dataset_event(spec_path: str, fingerprints: dict[str, dict[str, Any]],
                       spec_digest: str | None = None) -> None:
    """Send the event and say so on stderr (stdout may carry the JSON or SARIF document)."""
    from tunegate.events.payload import dataset_event
    from tunegate.events.send import send_event

    message = dataset_event(spec_path, fingerprints, spec_digest)
    event_id = send_event(message)
    say(f"tunegate: sent {message.event} {message.resource['prefect.resource.id']} (event {event_id})")


def skipped(reason: str) -> None:
    say(f"tunegate: --emit-event: no event sent: {reason}")

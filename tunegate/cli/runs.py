"""`tunegate runs`: the experiment table, grouped by training and validation data, ranked within a group.

    tunegate runs --spec examples/quickstart.yaml
    tunegate runs --tracking-uri sqlite:///mlflow.db --experiment tunegate --json
    tunegate runs --compare RUN_A RUN_B        # refused when A and B used different training or validation data

The table ends with the command that opens the same runs in the MLflow UI.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from tunegate.errors import UsageError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("runs", help="list tracked candidate runs, ranked by validation loss",
                       description="Print every candidate run of an MLflow experiment: dataset version, "
                                   "model, LoRA r/alpha/dropout, lr, batch, steps/epochs, final train loss, "
                                   "val loss and verdict, grouped by the digests of their training AND validation "
                                   "data (both shown, with record counts). Runs are ranked by validation loss "
                                   "only against runs trained and scored on the same data.")
    p.add_argument("--spec", metavar="SPEC", help="take the tracking URI and experiment from this spec")
    p.add_argument("--tracking-uri", metavar="URI",
                   help="MLflow tracking URI (default: the spec's, else sqlite:///mlflow.db here)")
    p.add_argument("--experiment", metavar="NAME", help="experiment name (default: the spec's, else 'tunegate')")
    p.add_argument("--compare", nargs="+", metavar="RUN_ID",
                   help="rank only these runs; refused if they used different training or validation data")
    p.add_argument("--json", action="store_true", help="write the groups as one JSON document")
    p.set_defaults(run=run)


def _target(args: argparse.Namespace) -> tuple[str, str]:
    from tunegate.tracking.store import check_tracking_uri, resolve_tracking_uri, sqlite_path

    spec = None
    if args.spec:
        from tunegate.spec.check import load_spec

        spec = load_spec(Path(args.spec))
    if args.tracking_uri:
        uri = args.tracking_uri
        check_tracking_uri(uri)
    else:
        uri = resolve_tracking_uri(spec, args.spec)
    experiment = args.experiment or (spec.tracking.experiment if spec else "tunegate")
    from tunegate.pathguard import refusal, shown

    path = sqlite_path(uri)
    # Reading must never create an empty store as a side effect, nor open a FIFO or a device.
    if path is not None and refusal(path):
        if not os.path.lexists(path):
            raise UsageError(f"no MLflow store at {shown(path)}; run a preflight or sweep first, "
                             "or pass --tracking-uri")
        raise UsageError(f"cannot read the MLflow store: {refusal(path)}")
    return uri, experiment


def run(args: argparse.Namespace) -> int:
    from mlflow.exceptions import MlflowException

    from tunegate.tracking.reachable import check_reachable
    from tunegate.tracking.runs_table import candidate_rows, compare_runs, format_table, group_by_data
    from tunegate.tracking.store import open_client

    uri, experiment = _target(args)
    check_reachable(uri)  # a down server: said now, not after MLflow's minutes of retries
    client = open_client(uri)
    try:
        if args.compare:
            groups = _compared(client, args.compare, compare_runs)
        else:
            groups = group_by_data(candidate_rows(client, experiment))
    except MlflowException as exc:
        from tunegate.tracking.redaction import uri_without_password

        raise UsageError(f"cannot read the MLflow store {uri_without_password(uri)}: {exc.message}") from None
    if args.json:
        doc = {"experiment": experiment, "groups": [g.model_dump() for g in groups]}
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
    else:
        sys.stdout.write(format_table(groups, experiment))
        if groups:
            sys.stdout.write(ui_hint(uri, client.get_experiment_by_name(experiment)))
    return 0


def ui_hint(uri: str, found) -> str:
    """How to open these runs in the MLflow UI: the exact command for a SQLite store, the URL for a server."""
    from tunegate.tracking.store import sqlite_path

    # MLflow 3's UI opens in its GenAI layout unless told otherwise; CHART shows the parents'
    # candidates/val_loss without expanding them.
    page = (f"#/experiments/{found.experiment_id}/runs?workflowType=machine_learning&compareRunsMode=CHART"
            if found is not None else "")
    if sqlite_path(uri) is None:
        from tunegate.tracking.redaction import uri_without_password

        return f"\nopen in the MLflow UI: {uri_without_password(uri).rstrip('/')}/{page}\n"
    return (f"\nopen in the MLflow UI: mlflow ui --backend-store-uri {uri} --port 5000\n"
            f"  then http://127.0.0.1:5000/{page}\n")


def _compared(client, run_ids: list[str], compare_runs) -> list:
    from tunegate.tracking.runs_table import RunGroup

    rows = compare_runs(client, run_ids)
    if not rows:
        return []
    first = rows[0]
    return [RunGroup(validation_digest=first.validation_digest, train_digest=first.train_digest,
                     train_records=first.train_records, validation_records=first.validation_records, runs=rows)]

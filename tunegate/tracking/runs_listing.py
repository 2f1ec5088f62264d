"""What `tunegate runs` prints: the experiment's candidate runs, grouped by data, as text or JSON.

    sys.stdout.write(list_runs("examples/quickstart.yaml", None, None, None))       # the table
    sys.stdout.write(list_runs(None, "sqlite:///mlflow.db", "tunegate", ["RUN_A", "RUN_B"], as_json=True))

The store is only read: a missing SQLite file is a usage error, never created as a side effect.
The table ends with the command that opens the same runs in the MLflow UI.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tunegate.errors import UsageError
from tunegate.processes.mlflow_import import import_mlflow
from tunegate.tracking.runs_table import RunGroup, candidate_rows, compare_runs, format_table, group_by_data
from tunegate.tracking.store import TRAINING_PAGE, check_tracking_uri, open_client, resolve_tracking_uri, sqlite_path

if TYPE_CHECKING:
    from mlflow import MlflowClient


def list_runs(spec_path: str | None, tracking_uri: str | None, experiment: str | None,
              compare: list[str] | None, as_json: bool = False) -> str:
    """The experiment's runs grouped and ranked (or only the `compare` runs), as text or one JSON document.

    Args:
        spec_path: take the tracking URI and experiment from this spec (the explicit ones win).
        tracking_uri: the MLflow store; default the spec's, else sqlite:///mlflow.db here.
        experiment: the experiment's name; default the spec's, else 'tunegate'.
        compare: rank only these runs against each other (whole ids, or the short ones the table prints).

    Raises:
        UsageError: no store there, or MLflow cannot read it.
        IncomparableRunsError: the `compare` runs were trained or scored on different data.
    """
    import_mlflow()
    from mlflow.exceptions import MlflowException

    from tunegate.tracking.reachable import check_reachable

    uri, experiment = runs_target(spec_path, tracking_uri, experiment)
    check_reachable(uri)  # a down server: said now, not after MLflow's minutes of retries
    client = open_client(uri)
    try:
        groups = (compared_group(client, compare, experiment) if compare
                  else group_by_data(candidate_rows(client, experiment)))
    except MlflowException as exc:
        from tunegate.tracking.redaction import uri_without_password

        raise UsageError(f"cannot read the MLflow store {uri_without_password(uri)}: {exc.message}") from None
    if as_json:
        return json.dumps({"experiment": experiment, "groups": [g.model_dump() for g in groups]}, indent=2) + "\n"
    text = format_table(groups, experiment)
    if groups:
        text += ui_hint(uri, client.get_experiment_by_name(experiment))
    return text


def runs_target(spec_path: str | None, tracking_uri: str | None, experiment: str | None) -> tuple[str, str]:
    """The store's URI and the experiment's name to read, refusing a store that is not there."""
    from tunegate.pathguard import refusal, shown

    spec = None
    if spec_path:
        from tunegate.spec.check import load_spec

        spec = load_spec(Path(spec_path))
    if tracking_uri:
        uri = tracking_uri
        check_tracking_uri(uri)
    else:
        uri = resolve_tracking_uri(spec, spec_path)
    experiment = experiment or (spec.tracking.experiment if spec else "tunegate")
    path = sqlite_path(uri)
    # Reading must never create an empty store as a side effect, nor open a FIFO or a device.
    if path is not None and refusal(path):
        if not os.path.lexists(path):
            raise UsageError(f"no MLflow store at {shown(path)}; run a preflight or sweep first, "
                             "or pass --tracking-uri")
        raise UsageError(f"cannot read the MLflow store: {refusal(path)}")
    return uri, experiment


def compared_group(client: MlflowClient, run_ids: list[str], experiment: str | None = None) -> list[RunGroup]:
    """The given runs (whole ids, or the short ones the table prints) ranked against each other, as one
    group ([] when none); refused across data."""
    rows = compare_runs(client, run_ids, experiment)
    if not rows:
        return []
    first = rows[0]
    return [RunGroup(validation_digest=first.validation_digest, train_digest=first.train_digest,
                     train_records=first.train_records, validation_records=first.validation_records, runs=rows)]


def ui_hint(uri: str, found: Any) -> str:
    """How to open these runs in the MLflow UI: the exact command for a SQLite store, the URL for a server."""
    # MLflow 3's UI opens in its GenAI layout unless told otherwise (tracking.store, KIND_TAG); CHART
    # shows the parents' candidates/val_loss without expanding them.
    page = TRAINING_PAGE.format(id=found.experiment_id) if found is not None else ""
    if sqlite_path(uri) is None:
        from tunegate.tracking.redaction import uri_without_password

        return f"\nopen in the MLflow UI: {uri_without_password(uri).rstrip('/')}/{page}\n"
    import shlex

    from tunegate.pathguard import shown

    # A command to paste into a shell: a store in `my runs/` is one argument, and no escape reaches the terminal.
    return (f"\nopen in the MLflow UI: mlflow ui --backend-store-uri {shown(shlex.quote(uri))} --port 5000\n"
            f"  then http://127.0.0.1:5000/{page}\n")

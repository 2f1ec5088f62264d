"""`tunegate runs`: the experiment table, grouped by training and validation data, ranked within a group.

    tunegate runs --spec examples/quickstart.yaml
    tunegate runs --tracking-uri sqlite:///mlflow.db --experiment tunegate --json
    tunegate runs --compare RUN_A RUN_B        # refused when A and B used different training or validation data

The table ends with the command that opens the same runs in the MLflow UI.
"""
from __future__ import annotations

import argparse
import sys


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
                   help="rank only these runs (whole ids, or the 8-character ones the table prints); refused "
                        "if they used different training or validation data")
    p.add_argument("--json", action="store_true", help="write the groups as one JSON document")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from tunegate.cli.extras import require

    require("mlflow", why="tunegate runs reads the MLflow store")
    if args.spec:  # a folder, a FIFO or /proc/kmsg: said before MLflow's seconds of imports
        from tunegate.cli.paths import require_file

        require_file(args.spec, "--spec")
    from tunegate.tracking.runs_listing import list_runs

    sys.stdout.write(list_runs(args.spec, args.tracking_uri, args.experiment, args.compare, as_json=args.json))
    return 0

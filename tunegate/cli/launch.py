"""`tunegate launch SPEC`: the full run, only from an approval that matches the files now.

    tunegate preflight examples/quickstart.yaml && tunegate launch examples/quickstart.yaml
"""
from __future__ import annotations

import argparse
import json
import sys


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("launch", help="start the full run of an approved spec",
                       description="Run the `full-run` Prefect flow: refuse unless `tunegate preflight` approved "
                                   "this exact spec and data, then launch tunegate.fullrun.trainer with the spec's launcher "
                                   "(accelerate, torchrun or python). Exit 0 trained, 1 refused or unhealthy.")
    p.add_argument("spec", help="the approved spec YAML")
    p.add_argument("--report", metavar="PATH", help="the approval report (default: the spec's last preflight)")
    p.add_argument("--resume", action="store_true",
                   help="continue from the last checkpoint in full_run.output_dir (after a crash or preemption)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from tunegate.cli.fast_exit import skip_teardown_at_exit

    ending = skip_teardown_at_exit()  # first: its atexit handler must run last
    from tunegate.cli.extras import ORCHESTRATION, TRAINING, require

    require(*ORCHESTRATION, why="tunegate launch runs the full run as a Prefect flow tracked in MLflow")
    require(*TRAINING, why="the full run trains the model")
    from tunegate.cli.flow_runner import run_flow, warn_store_outside  # first: it sets Prefect defaults
    from tunegate.cli.paths import require_file, require_files, require_flow_inputs
    from tunegate.fullrun import approved_report
    from tunegate.local_api import adopt_or_stop, start_local_api
    from tunegate.processes.held_collections import collections_held
    from tunegate.spec.check import parse_spec

    with collections_held():  # the start-up's imports: no collection walks them (tunegate.processes.held_collections)
        parsed = parse_spec(args.spec)
        spec = parsed.require()  # an invalid spec is a usage error, as before
        refuse_what_the_trainer_cannot_run(parsed)
        require_files(spec, "data.train", "data.validation")
        require_flow_inputs(parsed)
        if args.report:
            require_file(args.report, "--report")
        approved_report(parsed, args.report)  # refuse before any flow or process starts
        api = adopt_or_stop(start_local_api())  # Prefect's API starts while the flow's modules import
        from tunegate.flows.full_run import full_run

        if api is not None:
            api.wait_ready()
    warn_store_outside(parsed.spec, args.spec)
    completed, data = run_flow(full_run, spec_path=args.spec, report_file=args.report, resume=args.resume)
    summary = {k: data.get(k) for k in ("status", "reason", "final_train_loss", "val_loss", "adapter_dir")}
    sys.stdout.write(json.dumps(summary, indent=2) + "\n")
    ending.append(0 if completed else 1)
    return ending[0]


def refuse_what_the_trainer_cannot_run(parsed) -> None:
    """ApprovalError (exit 1) naming each setting tunegate's trainer cannot run (TG160, an imported
    config's TG147), before anything loads: `check` only warns of them, as the config's own trainer
    (axolotl, trl sft) runs them."""
    from tunegate.errors import ApprovalError

    refusals = parsed.result.stats.get("tunegate_launch", [])
    if refusals:
        trainer = parsed.result.stats.get("trainer", "its own trainer")
        raise ApprovalError("tunegate launch cannot run this config:\n  - " + "\n  - ".join(refusals)
                            + f"\nChange those settings to launch it with tunegate, or train it with {trainer}.")


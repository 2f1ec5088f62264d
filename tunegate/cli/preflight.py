"""`tunegate preflight SPEC`: the whole gate as a Prefect flow, tracked in MLflow.

    tunegate preflight examples/quickstart.yaml
"""
from __future__ import annotations

import argparse
import sys

from tunegate.cli.check import add_approval_flag, exit_code


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("preflight", help="run every stage as a Prefect flow, tracked in MLflow",
                       description="Run the gate (spec, dataset, overlap, estimate, mini-run, advisor) as the "
                                   "`preflight` Prefect flow, log it to MLflow and save the report beside the spec "
                                   "(the approval `tunegate launch` needs). Exit 0 when every gate that ran "
                                   "passed, 1 when one rejected (with --require-full-approval: 1 unless a full "
                                   "run is approved).")
    p.add_argument("spec", help="the spec YAML")
    p.add_argument("--no-mini-run", action="store_true", help="skip the mini-run (the report will not approve a launch)")
    p.add_argument("--no-advisor", action="store_true", help="skip the advisor stage")
    p.add_argument("--json", action="store_true", help="write the report as JSON to stdout")
    add_approval_flag(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from tunegate.cli.fast_exit import skip_teardown_at_exit

    ending = skip_teardown_at_exit()  # first: its atexit handler must run last
    from tunegate.cli.extras import ORCHESTRATION, TRAINING, require

    require(*ORCHESTRATION, why="tunegate preflight runs a Prefect flow tracked in MLflow")
    if not args.no_mini_run:
        require(*TRAINING, why="the preflight's mini-run; --no-mini-run skips it")
    from tunegate.cli.flow_runner import run_flow, warn_store_outside  # first: it sets Prefect defaults
    from tunegate.cli.paths import require_files, require_flow_inputs
    from tunegate.local_api import adopt_or_stop, start_local_api
    from tunegate.processes.held_collections import collections_held
    from tunegate.processes.import_ahead import TRACKING_MODULES, TRAINING_MODULES, import_ahead
    from tunegate.spec.check import parse_spec
    from tunegate.sweep.start_ahead import start_mini_run_ahead

    with collections_held():  # the start-up's imports: no collection walks them (tunegate.processes.held_collections)
        parsed = parse_spec(args.spec)  # an unreadable spec is a usage error before any flow starts
        if parsed.spec is not None:  # and so is a data path that is not a file: never a hang in a flow
            require_files(parsed.spec, "data.train", "data.validation")
        require_flow_inputs(parsed)
        # The mini-run's training stack imports in a process of its own (Linux) while this one imports Prefect.
        forked = not args.no_mini_run and start_mini_run_ahead(parsed)
        api = adopt_or_stop(start_local_api())  # Prefect's API starts while the flow's modules import
        if api is not None:  # and, while this thread waits for it, what the flow will import later
            training = TRAINING_MODULES if parsed.spec is not None and not args.no_mini_run and not forked else ()
            import_ahead(TRACKING_MODULES + training)
        from tunegate.flows.preflight import preflight
        from tunegate.render import terminal
        from tunegate.report import GateReport

        if api is not None:
            api.wait_ready()
    warn_store_outside(parsed.spec, args.spec)
    completed, data = run_flow(preflight, spec_path=args.spec, mini_run=not args.no_mini_run,
                               advisor=not args.no_advisor)
    report = GateReport.model_validate(data)
    sys.stdout.write(report.model_dump_json(indent=2) + "\n" if args.json else terminal(report, sys.stdout))
    ending.append(exit_code(report, args.require_full_approval) if completed else 1)
    return ending[0]

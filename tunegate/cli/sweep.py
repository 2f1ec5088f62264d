"""`tunegate sweep SPEC`: gate and score every candidate of the spec's sweep.

    tunegate sweep examples/sweep.yaml
    tunegate sweep examples/sweep.yaml --launch-best     # then preflight the winner and train it to the end
"""
from __future__ import annotations

import argparse
import contextlib
import json
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tunegate.local_api import LocalApi
    from tunegate.spec.check import ParsedSpec


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sweep", help="gate, train briefly and score each sweep candidate",
                       description="Run the `sweep` Prefect flow: the data stages once, then every candidate "
                                   "(from sweep.candidates, sweep.grid, or NOMAD) through spec, estimate and "
                                   "mini-run before a short training budget scored on the frozen validation set.")
    p.add_argument("spec", help="the spec YAML with a `sweep` section")
    p.add_argument("--strategy", choices=["list", "grid", "nomad"],
                   help="override sweep.strategy (nomad: NOMAD proposes candidates over sweep.space)")
    p.add_argument("--launch-best", action="store_true",
                   help="then write the winner's spec beside SPEC (SPEC-best.yaml), preflight it and train it to "
                        "the end with the gated full run; exit 1 unless that full run completes")
    p.add_argument("--full-run-deployment", metavar="NAME",
                   help="with --launch-best: run the full run as a flow run of this deployment (full-run/full-run, "
                        "on the gpu pool; needs PREFECT_API_URL) instead of here")
    p.add_argument("--json", action="store_true", help="write the summary as JSON")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.full_run_deployment and not args.launch_best:
        from tunegate.errors import UsageError

        raise UsageError("--full-run-deployment says where --launch-best's full run runs: add --launch-best")
    from tunegate.cli.fast_exit import skip_teardown_at_exit

    ending = skip_teardown_at_exit()  # first: its atexit handler must run last
    from tunegate.cli.extras import ORCHESTRATION, TRAINING, require

    require(*ORCHESTRATION, why="tunegate sweep runs a Prefect flow tracked in MLflow")
    require(*TRAINING, why="every candidate's mini-run and short training")
    from tunegate.cli.flow_runner import run_flow, warn_store_outside  # first: it sets Prefect defaults
    from tunegate.cli.paths import require_files, require_flow_inputs
    from tunegate.local_api import adopt_or_stop, start_local_api
    from tunegate.processes.held_collections import collections_held
    from tunegate.spec.check import parse_spec
    from tunegate.sweep.plan import check_sweep_plan
    from tunegate.sweep.start_ahead import start_imports_ahead, start_trainers_ahead

    with collections_held():  # the start-up's imports: no collection walks them (tunegate.processes.held_collections)
        # An invalid spec, no sweep section, nothing to try, or a data path that is not a file is a
        # usage error before Prefect starts.
        parsed = parse_spec(args.spec)
        check_sweep_plan(parsed, args.strategy)
        require_files(parsed.require(), "data.train", "data.validation")
        require_flow_inputs(parsed)
        # The slow, certain work starts now (issue 15): Prefect's local API first, before Prefect is
        # imported (tunegate.local_api); then the fork server (elsewhere the standby trainers),
        # whose imports overlap the API's start-up; once this thread has imported what it needs
        # itself, the flow's later imports in a thread of their own.
        on_deployments = parsed.require().sweep.candidates_on == "deployment"  # they need a server: no local API
        api = start_local_api() if parsed.require().sweep.task_runner == "threads" and not on_deployments else None
        start_trainers_ahead(parsed, args.strategy)  # the fork server: the first mini-run waits for its imports
        api = adopt_or_stop(api)
        _require_server(parsed, api)
        if api is None:
            _import_local_api()

        from tunegate.flows.sweep import sweep

        start_imports_ahead(parsed)
        if api is not None:
            api.wait_ready()
    # Only the result goes to stdout: Ray's driver prints its workers' and raylet's stdout lines to
    # sys.stdout ("(raylet) A worker died ..." once broke the --json of a sweep whose worker was killed)
    warn_store_outside(parsed.spec, args.spec)
    with contextlib.redirect_stdout(sys.stderr):
        completed, data = run_flow(sweep, spec_path=args.spec, strategy=args.strategy, launch_best=args.launch_best,
                                   full_run_deployment=args.full_run_deployment)
    if args.json:
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
    elif "outcomes" in data:
        from tunegate.sweep.summary import SweepSummary

        sys.stdout.write(SweepSummary.model_validate(data).text() + "\n")
    else:
        from tunegate.render import terminal
        from tunegate.report import GateReport

        sys.stdout.write(terminal(GateReport.model_validate(data), sys.stdout))
    ending.append(0 if completed else 1)
    return ending[0]


def _require_server(parsed: ParsedSpec, api: LocalApi | None) -> None:
    """Deployment candidates need a Prefect server where `prefect deploy` registered sweep.deployment and
    a worker serves its pool: Prefect's local API has neither. Raises UsageError saying so, before the
    flow starts (no local API was started for such a sweep)."""
    sweep = parsed.require().sweep
    if sweep.candidates_on != "deployment":
        return
    from prefect.settings import PREFECT_API_URL

    if api is None and PREFECT_API_URL.value():
        return
    from tunegate.errors import UsageError

    raise UsageError(f"sweep.candidates_on: deployment runs each candidate as a flow run of {sweep.deployment} on its "
                     "work pool, which needs a Prefect server: start one, `prefect deploy --all` and a worker for the "
                     "pool (deployments/README.md), then export PREFECT_API_URL=http://HOST:4200/api; or set "
                     "candidates_on: task_runner")


def _import_local_api() -> None:
    """Import Prefect's server module now, when the flow will start the ephemeral API (its first
    step), so that import does not share this thread's interpreter lock with the import thread."""
    from prefect.settings import PREFECT_API_URL, PREFECT_SERVER_ALLOW_EPHEMERAL_MODE

    if not PREFECT_API_URL.value() and PREFECT_SERVER_ALLOW_EPHEMERAL_MODE.value():
        from prefect.server.api import server  # noqa: F401

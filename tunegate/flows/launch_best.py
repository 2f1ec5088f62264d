"""The sweep's winner launched: its own spec written, preflighted, then trained to the end by the
gated full run, here or on the GPU pool's `full-run` deployment.

    tunegate sweep examples/sweep.yaml --launch-best
    prefect deployment run sweep/nightly-sweep -p launch_best=true -p full_run_deployment=full-run/full-run

The preflight is the `preflight` flow itself on the written spec: its report, saved beside it, is
the approval the full run checks against the spec's exact bytes and data. It emits no approval
event: this flow starts the full run itself, and prefect.yaml's trigger would start a second one.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import flow

from tunegate.fullrun.approval import report_path
from tunegate.spec.check import ParsedSpec
from tunegate.sweep.evaluate import CandidateOutcome
from tunegate.sweep.winner import Launch, write_winner_spec
from tunegate.tasks.names import flow_run_namer


@flow(name="launch-best", flow_run_name=flow_run_namer("launch-best"), log_prints=True)
def launch_best(parsed: ParsedSpec, best: CandidateOutcome, full_run_deployment: str | None = None) -> Launch:
    """Write the winner's spec beside the sweep's, preflight it, and train it to the end."""
    from tunegate.flows.full_run import full_run
    from tunegate.flows.preflight import preflight

    path = write_winner_spec(parsed, best.overrides, best.val_loss, best.run_id)
    print(f"the winner's spec: {path}")
    checked = preflight(str(path), emit_event=False, return_state=True)
    report_file = str(report_path(path))
    if not checked.is_completed():
        return Launch(spec_path=str(path), report_file=report_file, preflight=checked.name,
                      message=f"the winner's preflight did not approve it: {checked.message}")
    if full_run_deployment is None:
        state = full_run(str(path), report_file, return_state=True)
    else:
        state = _on_deployment(full_run_deployment, path, report_file)
    done = bool(state is not None and state.is_completed())
    return Launch(spec_path=str(path), report_file=report_file, preflight=checked.name, completed=done,
                  full_run=state.name if state is not None else None,
                  message=f"{path.name}: full run {state.name if state else 'not started'}"
                          + (f": {state.message}" if state is not None and state.message else ""))


def _on_deployment(name: str, path: Path, report_file: str) -> Any:
    """The full run as a flow run of the GPU pool's deployment, its paths relative to the project root
    (the worker resolves them in its own checkout, as a triggered full run does)."""
    from prefect.deployments import run_deployment

    from tunegate.events.paths import portable, project_root

    root = project_root(path)
    run = run_deployment(name, parameters={"spec_path": portable(path, root),
                                           "report_file": portable(report_file, root)})
    return run.state

"""The sweep flow: data stages once, then every candidate gated before its short training budget.

    tunegate sweep examples/sweep.yaml
    tunegate sweep examples/sweep.yaml --launch-best       # then preflight the winner and train it to the end
    prefect deployment run sweep/nightly-sweep
"""
from __future__ import annotations

from pathlib import Path
from typing import Literal

from prefect import flow, unmapped
from prefect.states import Completed, Failed

from tunegate.processes.followed import stopped_if_cut_short
from tunegate.report import GateReport
from tunegate.spec.check import ParsedSpec
from tunegate.sweep import job_slots
from tunegate.sweep.budget import sweep_budget, tokens_removed
from tunegate.sweep.candidates import candidate_key
from tunegate.sweep.evaluate import CandidateOutcome
from tunegate.sweep.nomad_sweep import nomad_sweep
from tunegate.sweep.start_ahead import start_trainers_ahead, trainers_stopped_after
from tunegate.sweep.summary import SweepSummary, summarise
from tunegate.sweep.tally import CandidateTally
from tunegate.sweep.winner import Launch
from tunegate.tasks.gate_tasks import parse_spec_task, static_gate_task
from tunegate.tasks.names import flow_run_namer
from tunegate.tasks.report_tasks import publish_report_task, publish_sweep_task
from tunegate.tasks.run_tasks import tag_flow_run_task
from tunegate.tasks.sweep_tasks import evaluate_candidate_task, propose_task, run_candidate_deployment_task
from tunegate.tasks.task_runners import candidate_resources, task_runner
from tunegate.tasks.tracking_tasks import chart_candidates_task, close_tracking_task, open_tracking_task
from tunegate.tracking.session import TrackingSession


@flow(name="sweep-candidates", flow_run_name=flow_run_namer("sweep-candidates"), log_prints=True)
def sweep_candidates(parsed: ParsedSpec, base: GateReport, session: TrackingSession | None,
                     strategy: str | None = None) -> list[CandidateOutcome]:
    """Evaluate the candidates, `sweep.max_parallel` at a time, on the sweep's task runner (threads,
    Dask or Ray: `tunegate.tasks.task_runners`), or each as a flow run of `sweep.deployment`."""
    settings = parsed.require().sweep
    tally = CandidateTally(settings.max_evals)  # the terminal's "candidates done/total, last verdict"
    budget = sweep_budget(parsed.require(), parsed.path, session.parent_run_id if session else "untracked")

    # Each candidate here, on the task runner, or as a flow run of sweep.deployment on its work pool.
    evaluate = run_candidate_deployment_task if settings.candidates_on == "deployment" else evaluate_candidate_task

    def evaluate_many(batch: list[dict]) -> list[CandidateOutcome]:
        with candidate_resources(parsed.require()):  # one GPU each, when the spec wants one
            futures = evaluate.map(unmapped(parsed), batch, unmapped(base), unmapped(session), unmapped(budget),
                                   unmapped(settings.max_parallel))
        for future, overrides in zip(futures, batch):
            future.add_done_callback(job_slots.ended(candidate_key(overrides)))
        return [tally.record(f.result()) for f in futures]

    # what no candidate took is stopped by the sweep flow, around this one; their encoded data here;
    # what the candidates' threads follow, if this ends by an exception, before the runner joins them
    with tally, tokens_removed(budget.token_cache), stopped_if_cut_short():
        if (strategy or settings.strategy) == "nomad":
            return nomad_sweep(parsed, evaluate_many)[0]
        candidates = propose_task(parsed, strategy)
        tally.plan(len(candidates))
        if settings.task_runner == "threads" and settings.candidates_on == "task_runner":
            # all at once; max_parallel job slots, taken in the sweep's order (tunegate.sweep.job_slots):
            # one candidate's logging and the next one's static stages run beside a job
            with job_slots.limited(settings.max_parallel, [candidate_key(c) for c in candidates]):
                return evaluate_many(candidates)
        step = settings.max_parallel  # the runner's max_parallel workers bound them, a batch at a time
        return [o for i in range(0, len(candidates), step) for o in evaluate_many(candidates[i:i + step])]


@flow(name="sweep", flow_run_name=flow_run_namer("sweep"), log_prints=True)
def sweep(spec_path: str, strategy: Literal["list", "grid", "nomad"] | None = None, launch_best: bool = False,
          full_run_deployment: str | None = None):
    """Gate and score every candidate (list, grid or NOMAD) on the frozen validation set; with
    `launch_best`, preflight the winner's own spec and train it to the end (on `full_run_deployment`)."""
    parsed = parse_spec_task(spec_path)
    start_trainers_ahead(parsed, strategy)  # their imports while the data gate runs (`tunegate sweep` did already)
    # Stopped however this part ends (what no candidate took, after the candidates): a rejected base,
    # or an experiment that refuses the validation set (a raise), would otherwise leave the fork
    # server running in a process that lives on (a worker).
    with trainers_stopped_after():
        tag_flow_run_task(parsed)
        base = static_gate_task(parsed)
        if not base.gates_passed:
            publish_report_task(base, spec_path)
            return Failed(message="the sweep's data or base spec was rejected", data=base.model_dump(mode="json"))
        session = open_tracking_task(parsed, "sweep", base.fingerprints["validation"]["digest"],
                                     base.fingerprints["train"]["digest"], variant=strategy)
        on_runner = sweep_candidates.with_options(task_runner=task_runner(parsed.require()))
        outcomes = on_runner(parsed, base, session, strategy)
    summary = summarise(outcomes, None, base.fingerprints["train"]["digest"])
    charts = chart_candidates_task(session, Path(spec_path).stem)
    best = close_tracking_task(session, best_spec=summary.best.spec_path if summary.best else None,
                               candidates=len(outcomes))
    summary.best_run_id = best
    if launch_best:
        summary.launch = _launched(parsed, summary, full_run_deployment)
    publish_sweep_task(summary, spec_path, charts)
    print(summary.text())
    if not any(o.approved for o in outcomes):
        what = "could not be evaluated" if all(o.errored for o in outcomes) else "was rejected or errored"
        return Failed(message=f"every candidate {what}", data=summary.model_dump(mode="json"))
    if summary.launch is not None and not summary.launch.completed:
        return Failed(message=f"--launch-best: {summary.launch.message}", data=summary.model_dump(mode="json"))
    return Completed(message=f"{summary.approved} of {len(outcomes)} candidates approved",
                     data=summary.model_dump(mode="json"))


def _launched(parsed: ParsedSpec, summary: SweepSummary, full_run_deployment: str | None) -> Launch:
    """The winner launched (tunegate.flows.launch_best), or why there is none to launch."""
    if summary.best is None:
        return Launch(message="no candidate was approved and trained its whole budget: nothing to launch")
    # Imported here: building its flow's parameter schema (the whole spec's and an outcome's JSON
    # schema) is ~0.04 CPU s of every sweep's start-up, and only --launch-best runs it.
    from tunegate.flows.launch_best import launch_best

    return launch_best(parsed, summary.best, full_run_deployment)

"""Evaluate one sweep candidate: gate it, train it briefly, score it on the frozen validation set.

Every candidate passes the spec, its data (its own files when they differ from the base's),
estimate, frozen-validation and mini-run stages before it may spend a training budget (the
source's rule; `tunegate.sweep.candidate_gate`). Every candidate is logged, a spec-rejected one too,
with what it trained (`run.trained_steps`: the sweep's budget, not the spec's max_steps).

A crash of ours (an exception while gating, a training that crashed, died or never started) is
not a verdict on the candidate: its outcome is `errored`, its run FAILED with verdict `error` and
the reason, and a rerun of the sweep evaluates it again. The short training runs in a process of
its own (`tunegate.fullrun.launcher.train_apart`), so candidates in parallel share no process state:
with the sweep's fork server, the process that ran the candidate's mini-run, held until its merged
report approves it (`tunegate.fullrun.held_jobs`), so the candidate is one job, warmed up once.

The budget (`tunegate.sweep.budget`) says how long it trains, how often it is evaluated and under
which pruning rule: a candidate the rule stops is `pruned` (the gate approved it; its run ends KILLED
with the step and the steps saved) and is never the sweep's best.
"""
from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from tunegate import progress
from tunegate.fullrun.result import CANNOT_START, CRASHED, NO_RESULT, TIMED_OUT
from tunegate.report import GateReport
from tunegate.spec.check import ParsedSpec, parse_spec
from tunegate.spec.model import Spec
from tunegate.sweep import job_slots
from tunegate.sweep.budget import Budget
from tunegate.sweep.candidate_gate import changed_data_inputs, gate_candidate
from tunegate.sweep.candidates import Overrides, candidate_digest, candidate_key, run_name, write_candidate_spec
from tunegate.sweep.warning_counts import warning_counts
from tunegate.tracking.session import TrackingSession

# Training results that say tunegate could not train the candidate, not that the candidate is bad
# (a non-finite loss, a zero gradient or an out-of-memory step are verdicts; docs/checks.md, TG7xx).
OUR_FAILURES = {CRASHED, NO_RESULT, CANNOT_START, TIMED_OUT}
# One mini-run at a time per process: it seeds torch's process-wide RNG for the LoRA init and the
# dropout masks, which a second mini-run in another thread would draw from too.
_MINI_RUN_LOCK = threading.Lock()


class CandidateOutcome(BaseModel):
    """What one candidate came to, for the sweep's summary and NOMAD's objective."""

    overrides: dict[str, Any]
    spec_path: str
    approved: bool
    reason: str = ""
    codes: list[str] = Field(default_factory=list)
    final_train_loss: float | None = None
    val_loss: float | None = None
    predicted_peak_gib: float | None = None
    gpu_memory_gib: float | None = None
    run_id: str | None = None
    reused: bool = False
    errored: bool = Field(False, description="tunegate failed to evaluate it: no verdict on the candidate.")
    own_data: list[str] = Field(default_factory=list, description="Data inputs it changes (its own data stages ran).")
    train_digest: str | None = Field(None, description="The training data it was gated (and trained) on.")
    pruned_at_step: int | None = Field(None, description="The step the sweep's pruning rule stopped it at.")
    steps_saved: int | None = Field(None, description="Steps of its budget pruning left untrained.")
    warnings: dict[str, int] = Field(default_factory=dict, description="Its report's warnings per code, "
                                                                       "truncation (TG511, TG512) first.")
    # The candidate's gate report, for its Prefect artifact; left out of the JSON (and NOMAD's history).
    report: GateReport | None = Field(default=None, exclude=True)


def evaluate_candidate(base_spec: ParsedSpec, overrides: Overrides, base: GateReport,
                       session: TrackingSession | None, budget: Budget | int, parallel: int = 1) -> CandidateOutcome:
    """Gate, train and log one candidate; never raises: a bad candidate is rejected, a crash of ours
    is an errored outcome (logged as verdict `error` when the store can still be written).

    `budget`: the sweep's `Budget`, or just its training steps (no evaluation before the end, no pruning).
    """
    if isinstance(budget, int):
        budget = Budget(train_steps=budget)
    try:
        return _evaluate(base_spec, overrides, base, session, budget, parallel)
    except Exception as exc:  # noqa: BLE001  (a bug of ours must not end the sweep or judge the candidate)
        if os.environ.get("TUNEGATE_DEBUG"):
            raise
        return errored_outcome(base_spec, overrides, session, f"{type(exc).__name__}: {exc}")


def _evaluate(base_spec: ParsedSpec, overrides: Overrides, base: GateReport, session: TrackingSession | None,
              budget: Budget, parallel: int) -> CandidateOutcome:
    # Its gate and job take their turn and a slot in a sweep on threads (tunegate.sweep.job_slots);
    # its logging after its job runs beside the next candidate's.
    with job_slots.claim(candidate_key(overrides)) as claim:
        path = write_candidate_spec(base_spec, overrides)
        parsed = parse_spec(path)  # the candidate's one parse; parsed.spec is None when it is invalid
        own = changed_data_inputs(parsed.spec, base_spec.require()) if parsed.spec is not None else []
        digest = candidate_digest(base_spec, overrides)  # its run's id in MLflow, found or logged
        done = _logged_before(session, parsed, base, own, digest)
        if done is not None:
            return CandidateOutcome(overrides=overrides, spec_path=str(path), reused=True, own_data=own, **done)
        report, outcome, measured = _gated_and_trained(path, parsed, base_spec, overrides, digest, base, own,
                                                       budget, parallel, claim)
    if not outcome.approved and not outcome.reason:
        outcome.reason = measured.get("reason") or _reason(report)
    if session is not None:
        logged = _log(session, report, parsed.spec, base_spec.require(), overrides, measured)
        outcome.run_id, outcome.reused = logged.run_id, logged.reused
    return outcome


def _gated_and_trained(path: Path, parsed: ParsedSpec, base_spec: ParsedSpec, overrides: Overrides, digest: str,
                       base: GateReport, own: list[str], budget: Budget, parallel: int,
                       claim: job_slots.Claim) -> tuple[GateReport, CandidateOutcome, dict[str, Any]]:
    """The candidate gated and, if approved, trained: its report, its outcome and what its run logs."""
    from tunegate.fullrun import held_jobs

    try:
        with claim.turn(), _MINI_RUN_LOCK:
            report = gate_candidate(parsed, base_spec, base, token_cache=budget.token_cache,
                                    before_mini_run=claim.take_slot)
        return _judged(path, parsed, overrides, digest, own, budget, parallel, report)
    finally:  # its mini-run's child, held for its training (tunegate.fullrun.held_jobs), ends if it did not
        held_jobs.release(path)  # train, before its slot is given back


def _judged(path: Path, parsed: ParsedSpec, overrides: Overrides, digest: str, own: list[str],
            budget: Budget, parallel: int, report: GateReport) -> tuple[GateReport, CandidateOutcome, dict[str, Any]]:
    outcome = CandidateOutcome(overrides=overrides, spec_path=str(path), approved=report.approved_for_full_run,
                               codes=sorted({f.code for f in report.findings if f.severity == "error"}),
                               own_data=own, train_digest=(report.fingerprints.get("train") or {}).get("digest"),
                               warnings=warning_counts(report), report=report, **_memory(report))
    # Trained: only what the sweep's budget trained (its mini-run is a gate, logged as mini_run/*); a
    # candidate the gate rejected logs no run.trained_steps and no training time.
    measured: dict[str, Any] = {"name": run_name(overrides), "kind": "sweep candidate", "trained_steps": None,
                                "train_seconds": None, "spec_digest": digest,
                                "warnings": outcome.warnings}
    if outcome.approved:
        pruning = budget.pruning.for_candidate(candidate_key(overrides)) if budget.pruning else None
        measured.update(_trained(parsed.require(), path, budget.model_copy(update={"pruning": pruning}), outcome,
                                 parallel))
    return report, outcome, measured


def _trained(spec: Spec, path: Path, budget: Budget, outcome: CandidateOutcome, parallel: int) -> dict[str, Any]:
    """Train the approved candidate for the sweep's budget; fold the result into its outcome. The
    training's wall time is the run's duration in MLflow."""
    started = time.time()
    result = _train(spec, path, budget, parallel)
    ended = time.time()
    return {**fold_training(result, outcome), "train_seconds": round(ended - started, 3), "trained_until": ended}


def fold_training(result: Any, outcome: CandidateOutcome) -> dict[str, Any]:
    """Fold a short training's `TrainResult` into the outcome; return what the candidate's run logs.

    An unhealthy or out-of-memory training rejects the candidate; one that crashed, died, never
    started or timed out (OUR_FAILURES) makes it `errored`: tunegate could not judge it; one the
    sweep's pruning rule stopped stays approved, `pruned` at its step, with the steps it saved.
    """
    measured = {**_train_fields(result), "trained_steps": result.global_step}
    outcome.final_train_loss, outcome.val_loss = measured.get("final_train_loss"), measured.get("val_loss")
    if result.status == "pruned":
        outcome.pruned_at_step, outcome.reason = result.global_step, result.reason
        outcome.steps_saved = max(0, (result.max_steps or result.global_step) - result.global_step)
        measured.update(verdict="pruned", reason=result.reason, pruned_at_step=outcome.pruned_at_step,
                        steps_saved=outcome.steps_saved)
    elif result.status != "completed":
        outcome.approved = False
        outcome.codes = sorted(set(outcome.codes) | set(result.codes))
        ours = bool(set(result.codes) & OUR_FAILURES)
        outcome.errored = ours
        what = "tunegate could not train it" if ours else f"short training {result.status}"
        outcome.reason = f"{what}: {result.reason}"
        measured.update(verdict="error" if ours else "rejected", reason=outcome.reason, failing_codes=outcome.codes)
    return measured


def errored_outcome(base_spec: ParsedSpec, overrides: Overrides, session: TrackingSession | None,
                    error: str) -> CandidateOutcome:
    """The outcome of a candidate tunegate failed to evaluate, logged (if it can be) as an error."""
    reason = f"tunegate error while evaluating the candidate (not a verdict on it): {error}"[:2000]
    outcome = CandidateOutcome(overrides=overrides, spec_path="", approved=False, errored=True, reason=reason)
    if session is not None:
        try:
            from tunegate.tracking.session import log_error

            outcome.run_id = log_error(session, base_spec.require(), overrides, reason, name=run_name(overrides))
        except Exception:  # noqa: BLE001  (the store is what broke: the outcome still says why)
            pass
    return outcome


def _log(session: TrackingSession, report: GateReport, spec: Spec | None, base: Spec, overrides: Overrides,
         measured: dict[str, Any]):
    from tunegate.tracking.session import log_rejected_spec, log_report

    if spec is None:
        return log_rejected_spec(session, report, base, overrides, name=measured["name"], kind=measured["kind"])
    return log_report(session, report, spec, **measured)


def _logged_before(session: TrackingSession | None, parsed: ParsedSpec, base: GateReport,
                   own: list[str], digest: str) -> dict[str, Any] | None:
    """The candidate's complete run from an earlier attempt, found by its id before any work.

    The id depends only on the spec's params and the data/spec digests, all known before gating: a
    candidate on its own data is fingerprinted here (a file that cannot be read has no earlier run).
    `digest` is the candidate spec's, as written in the project (`candidate_digest`).
    """
    from tunegate.tracking.record import record_from_report
    from tunegate.tracking.session import finished_candidate

    if session is None or parsed.spec is None:
        return None
    prints = {**base.fingerprints, "spec": {"digest": parsed.digest}}
    if own:
        try:
            prints.update(_own_fingerprints(parsed.spec))
        except Exception:  # noqa: BLE001  (the dataset stage will report what is wrong with the file)
            return None
    probe = GateReport.from_stages([parsed.result], fingerprints=prints)
    record = record_from_report(probe, parsed.spec, kind="sweep candidate", spec_digest=digest)
    return finished_candidate(session, record.candidate_id)


def _own_fingerprints(spec: Spec) -> dict[str, Any]:
    from tunegate.dataset.fingerprint import fingerprint_file

    return {role: fingerprint_file(spec.data.files(role)).model_dump() for role in ("train", "validation")}


def _train(spec: Spec, path: Path, budget: Budget, parallel: int):
    from tunegate.fullrun.launcher import torch_threads, train_apart

    output = path.parent / f"{path.stem}-train"
    output.mkdir(parents=True, exist_ok=True)
    with (output / "train.log").open("w", encoding="utf-8") as out, progress.step(f"training {path.stem}"):

        def log(line: str) -> None:  # the trainer's lines, for the user; the terminal shows the latest
            print(line, file=out, flush=True)
            progress.note(line)

        # the sweep's folder, where its candidates' trainers encode the data once (tunegate.fullrun.token_cache)
        tokens = Path(budget.token_cache) if budget.token_cache else None
        return train_apart(spec, path, output, budget.train_steps, threads=torch_threads(parallel), log=log,
                           eval_every=budget.eval_every, pruning=budget.pruning, token_cache=tokens)


def _train_fields(result: Any) -> dict[str, Any]:
    return {k: v for k, v in result.record_fields().items() if v is not None}


def _memory(report: GateReport) -> dict[str, Any]:
    memory = (report.facts.estimate or {}).get("memory") or {}
    return {"predicted_peak_gib": memory.get("peak_gib"), "gpu_memory_gib": memory.get("capacity_gib")}


def _reason(report: GateReport) -> str:
    failed = next((s for s in report.stages if s.status == "failed"), None)
    if failed is None:
        return ""
    first = next((f for f in failed.findings if f.severity == "error"), None)
    return f"rejected at stage '{failed.name}'" + (f": {first.code} {first.message}" if first else "")

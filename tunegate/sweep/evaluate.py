"""Evaluate one sweep candidate: gate it, train it briefly, score it on the frozen validation set.

Every candidate passes the spec, estimate and mini-run stages before it may spend a training
budget (the source's rule). The data stages ran once for the whole sweep; the validation set is
re-fingerprinted before each candidate, and a change stops that candidate: scores on different
validation data are not comparable.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from tunegate.gate import check
from tunegate.report import FindingCollector, GateReport
from tunegate.spec.check import ParsedSpec, parse_spec
from tunegate.spec.model import Spec
from tunegate.sweep.candidates import Overrides, write_candidate_spec
from tunegate.tracking.session import TrackingSession

CANDIDATE_STAGES = frozenset({"estimate", "mini-run"})


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


def evaluate_candidate(base_spec: ParsedSpec, overrides: Overrides, base: GateReport,
                       session: TrackingSession | None, train_steps: int) -> CandidateOutcome:
    """Gate, train and log one candidate; never raises for a bad candidate (it is rejected)."""
    path = write_candidate_spec(base_spec, overrides)
    parsed = parse_spec(path)  # the candidate's one parse; parsed.spec is None when it is invalid
    spec = parsed.spec
    done = _logged_before(session, parsed, base)
    if done is not None:
        return CandidateOutcome(overrides=overrides, spec_path=str(path), reused=True, **done)
    report = _gate(parsed, base)
    measured: dict[str, Any] = {}
    outcome = CandidateOutcome(overrides=overrides, spec_path=str(path), approved=report.approved_for_full_run,
                               codes=sorted({f.code for f in report.findings if f.severity == "error"}),
                               **_memory(report))
    if outcome.approved:
        result = _train(spec, path, train_steps)
        measured = _train_fields(result)
        outcome.final_train_loss, outcome.val_loss = measured.get("final_train_loss"), measured.get("val_loss")
        if result.status != "completed":
            outcome.approved = False
            outcome.codes = sorted(set(outcome.codes) | set(result.codes))
            measured.update(verdict="rejected", reason=f"short training {result.status}: {result.reason}",
                            failing_codes=outcome.codes)
    if not outcome.approved and not outcome.reason:
        outcome.reason = measured.get("reason") or _reason(report)
    if session is not None and spec is not None:
        from tunegate.tracking.session import log_report

        logged = log_report(session, report, spec, **measured)
        outcome.run_id, outcome.reused = logged.run_id, logged.reused
    return outcome


def _logged_before(session: TrackingSession | None, parsed: ParsedSpec, base: GateReport) -> dict[str, Any] | None:
    """The candidate's complete run from an earlier attempt, found by its id before any work."""
    from tunegate.tracking.session import finished_candidate

    if session is None or parsed.spec is None:
        return None
    # The id depends only on the spec's params and the data/spec digests, all known before gating.
    probe = GateReport.from_stages([parsed.result], fingerprints={**base.fingerprints, "spec": {"digest": parsed.digest}})
    return finished_candidate(session, probe, parsed.spec)


def _gate(parsed: ParsedSpec, base: GateReport) -> GateReport:
    """The candidate's own stages, merged under the sweep's data stages and fingerprints."""
    report = check(parsed, only=CANDIDATE_STAGES)
    frozen = _validation_changed(parsed.spec, base)
    merged = GateReport.merge([base, report])
    if frozen is None:
        return merged
    return GateReport.from_stages(merged.stages + [frozen], spec=merged.spec,
                                  fingerprints=merged.fingerprints, facts=merged.facts)


def _validation_changed(spec: Spec | None, base: GateReport):
    """A failed 'frozen-validation' stage when the validation file changed since the sweep began."""
    from tunegate.dataset.fingerprint import fingerprint_file

    if spec is None:
        return None
    frozen = (base.fingerprints.get("validation") or {}).get("digest")
    now = fingerprint_file(spec.data.validation).digest
    if frozen is None or now == frozen:
        return None
    out = FindingCollector("frozen-validation")
    out.add("TG390", "error", f"the validation set {spec.data.validation.name} changed during the sweep "
            f"(digest {frozen[:12]} -> {now[:12]})",
            "Restore the validation file and rerun the sweep: scores on different validation data "
            "cannot be compared.", file=str(spec.data.validation))
    return out.result(0.0)


def _train(spec: Spec, path: Path, steps: int):
    from tunegate.fullrun.trainer import train
    from tunegate.training.runtime import set_short_run_threads

    set_short_run_threads()  # deliberate, not torch's thread-per-core default (see the function)
    output = path.parent / f"{path.stem}-train"
    return train(spec, output_dir=output, max_steps=steps)


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

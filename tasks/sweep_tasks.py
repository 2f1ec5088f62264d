"""Sweep steps as Prefect tasks: propose candidates, evaluate one (gate, short training, log)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import task

from tunegate.candidates import propose
from tunegate.report import GateReport
from tunegate.spec_check import load_spec
from tunegate.sweep_eval import CandidateOutcome, evaluate_candidate
from tunegate.tracking_session import TrackingSession


@task(name="propose-candidates", tags=["tunegate"])
def propose_task(spec_path: str, strategy: str | None = None) -> list[dict[str, Any]]:
    """List the sweep's candidates (explicit list or grid) as dotted-key overrides."""
    return propose(load_spec(Path(spec_path)), strategy)


@task(name="evaluate-candidate", tags=["tunegate", "gpu"], task_run_name="candidate {overrides}")
def evaluate_candidate_task(spec_path: str, overrides: dict[str, Any], base: GateReport,
                            session: TrackingSession | None, train_steps: int) -> CandidateOutcome:
    """Gate one candidate (spec, estimate, mini-run), train it briefly, score it, log it."""
    return evaluate_candidate(spec_path, overrides, base, session, train_steps)

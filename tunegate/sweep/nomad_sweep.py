"""A NOMAD sweep over gated candidates: NOMAD proposes, the gate and a short training score.

Every point NOMAD proposes becomes a candidate spec that passes spec, estimate and mini-run before
it may train; a rejected one is an infeasible point with its reason, never a crash.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tunegate.spec.check import ParsedSpec
from tunegate.spec.nomad_points import start_from
from tunegate.sweep.evaluate import CandidateOutcome
from tunegate.sweep.nomad_outcome import Outcome
from tunegate.sweep.nomad_search import NomadResult, run_nomad

EvaluateMany = Callable[[list[dict[str, Any]]], list[CandidateOutcome]]


def to_outcome(candidate: CandidateOutcome) -> Outcome:
    """How NOMAD reads a candidate: its validation loss, its memory excess, or its rejection."""
    excess = None
    if candidate.predicted_peak_gib is not None and candidate.gpu_memory_gib is not None:
        excess = round(candidate.predicted_peak_gib - candidate.gpu_memory_gib, 4)
    details = {"run_id": candidate.run_id, "spec_path": candidate.spec_path}
    loss = candidate.val_loss
    if candidate.approved and loss is not None and math.isfinite(loss) and (excess is None or excess <= 0):
        return Outcome(feasible=True, objective=loss, memory_excess_gib=excess, details=details)
    reason = candidate.reason or ("validation loss is not finite" if candidate.approved else "rejected")
    return Outcome.rejected(reason, candidate.codes, memory_excess_gib=excess, details=details)


def nomad_sweep(parsed: ParsedSpec, evaluate_many: EvaluateMany) -> tuple[list[CandidateOutcome], NomadResult]:
    """Run NOMAD over `sweep.space` with `evaluate_many` scoring each block of candidates."""
    spec, spec_path = parsed.require(), Path(parsed.path)
    sweep = spec.sweep
    outcomes: list[CandidateOutcome] = []

    def many(block: list[dict[str, Any]]) -> list[Outcome]:
        scored = evaluate_many(block)
        outcomes.extend(scored)
        return [to_outcome(c) for c in scored]

    history = spec_path.resolve().parent / ".tunegate" / f"{spec_path.stem}.nomad.jsonl"
    history.parent.mkdir(parents=True, exist_ok=True)
    result = run_nomad(start_from(sweep.space, spec), lambda o: many([o])[0], max_evals=sweep.max_evals,
                       seed=sweep.seed, max_block_size=sweep.max_parallel, evaluate_many=many,
                       history_path=history)
    return outcomes, result

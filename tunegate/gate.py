"""The gate: run the stages cheapest first, stop at the first that fails, and decide.

    from tunegate import check
    report = check("examples/quickstart.yaml")
    report.approved_for_full_run

Stages before the mini-run import neither torch, prefect nor mlflow, so a static check answers in
well under a second. Heavy stages are imported only when they run.
"""
from __future__ import annotations

import hashlib
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tunegate.report import GateReport, StageResult
from tunegate.spec import Spec

ORDER = ["spec", "dataset", "overlap", "estimate", "mini-run", "advisor"]


@dataclass
class GateContext:
    """What the stages share: the inputs and what earlier stages learned."""

    spec_path: Path | None
    spec: Spec | None
    files: dict[str, Path]
    cap: int
    mini_run: bool = False
    advisor: bool = False
    observers: list[Any] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)  # e.g. token counts for the estimate


Stage = Callable[[GateContext], StageResult]


def check(spec_path: str | Path | None = None, *, train: str | Path | None = None,
          validation: str | Path | None = None, mini_run: bool = False, advisor: bool = False,
          max_findings: int | None = None, only: Collection[str] | None = None,
          facts: dict[str, Any] | None = None) -> GateReport:
    """Run the gate on a spec (or on bare data files) and return the report.

    `only` runs a subset of the stages after the spec (a Prefect flow runs each as its own task),
    and `facts` seeds what earlier runs learned (token counts, the estimate, mini-run speed).
    Raises UsageError when the spec cannot be read at all; every problem inside the files is a
    finding in the report.
    """
    from tunegate.spec_check import read_spec

    spec_file = Path(spec_path) if spec_path is not None else None
    results: list[StageResult] = []
    spec = None
    if spec_file is not None:
        spec_result, spec = read_spec(spec_file, cap=max_findings or 20)
        results.append(spec_result)
    else:
        results.append(StageResult.skipped("spec", "no spec given: hyperparameters were not checked"))
    files = _data_files(spec, train, validation)
    cap = max_findings or (spec.gate.max_findings_per_code if spec else 20)
    if only is not None:
        mini_run, advisor = mini_run or "mini-run" in only, advisor or "advisor" in only
    ctx = GateContext(spec_file, spec, files, cap, mini_run=mini_run, advisor=advisor,
                      facts=dict(facts or {}))
    failed = results[0].status == "failed"
    for name, stage in _stages(ctx):
        if only is not None and name not in only:
            continue
        if failed:
            results.append(StageResult.skipped(name, "an earlier stage failed"))
            continue
        result = stage(ctx)
        results.append(result)
        failed = result.status == "failed"
    fingerprints = dict(ctx.facts.get("fingerprints", {}))
    if spec_file is not None and spec is not None:
        fingerprints["spec"] = {"digest": spec_digest(spec_file)}
    facts_out = {k: v for k, v in ctx.facts.items() if k != "fingerprints"}
    return GateReport.from_stages(results, spec=str(spec_file) if spec_file else None,
                                  fingerprints=fingerprints, facts=facts_out)


def spec_digest(path: Path) -> str:
    """SHA-256 of the spec file's bytes: an approval is valid only for this exact spec."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _data_files(spec: Spec | None, train: Any, validation: Any) -> dict[str, Path]:
    files: dict[str, Path] = {}
    if spec is not None:
        files = {"train": spec.data.train, "validation": spec.data.validation}
    if train is not None:
        files["train"] = Path(train)
    if validation is not None:
        files["validation"] = Path(validation)
    return files


def _stages(ctx: GateContext) -> list[tuple[str, Stage]]:
    """The stages that apply to this run, in order; each is imported only when it will run."""
    stages: list[tuple[str, Stage]] = [("dataset", _dataset)]
    stages.append(("overlap", _overlap(ctx)))
    if ctx.spec is not None:
        stages.append(("estimate", _estimate))
    if ctx.mini_run:
        stages.append(("mini-run", _mini_run))
    if ctx.spec is not None and ctx.advisor:
        stages.append(("advisor", _advisor))
    return stages


def _dataset(ctx: GateContext) -> StageResult:
    from tunegate.dataset import dataset_stage

    return dataset_stage(ctx.files, cap=ctx.cap, observers=ctx.observers)


def _overlap(ctx: GateContext) -> Stage:
    """Hook the fingerprint and overlap observers into the dataset read; return the overlap stage."""
    from tunegate.overlap_stage import attach

    return attach(ctx)


def _estimate(ctx: GateContext) -> StageResult:
    from tunegate.estimate_stage import estimate_stage

    return estimate_stage(ctx)


def _advisor(ctx: GateContext) -> StageResult:
    from tunegate.advisor_stage import advisor_stage

    return advisor_stage(ctx)


def _mini_run(ctx: GateContext) -> StageResult:
    from tunegate.minirun import minirun_stage

    return minirun_stage(ctx)

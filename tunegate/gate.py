"""The gate: run the stages cheapest first, stop at the first that fails, and decide.

    from tunegate import check
    report = check("examples/quickstart.yaml")
    report.approved_for_full_run

This module only runs stages; which stages there are, in what order and when each applies are
the rows of `tunegate.stages`, and what each one checks lives in its own folder, behind the front
door `tunegate/<stage>/stage.py` (`run_stage(ctx)`, see `tunegate.stage`). Stages before the
mini-run import neither torch, prefect nor mlflow, so a static check of the quickstart answers in
about 0.4 s as a whole command (docs/benchmarks.md); each stage is imported only when it will run.
"""
from __future__ import annotations

import importlib
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tunegate import progress, stages
from tunegate.errors import UsageError
from tunegate.facts import GateFacts
from tunegate.report import LAUNCH, GateReport, StageResult
from tunegate.spec.path_names import split_files
from tunegate.stage import GateContext

if TYPE_CHECKING:  # the spec's reader and models load when a spec is read: bare data files need neither
    from tunegate.spec.check import ParsedSpec

DEFAULT_CAP = 20  # findings kept per code when neither the caller nor the spec says
DataFiles = str | Path | Sequence[str | Path] | None  # a split given to `check`: a file, or its files in order


def check(spec: ParsedSpec | str | Path | None = None, *, train: DataFiles = None,
          validation: DataFiles = None, mini_run: bool = False, advisor: bool = False,
          max_findings: int | None = None, only: Collection[str] | None = None,
          facts: GateFacts | None = None, data_format: str | None = None) -> GateReport:
    """Run the gate on a spec (a path, or one already parsed) or on bare data files; return the report.

    `train` and `validation` are a file each, or a list of files read in order as one split (as a
    spec's data.train may be); they replace the spec's (or a config's) data for that split.
    `only` runs a subset of the stages after the spec (a Prefect flow runs each as its own task),
    and `facts` seeds what earlier runs learned (token counts, the estimate, mini-run speed).
    `data_format` overrides the spec's `data.format` (auto, messages, sharegpt, alpaca, prompt_completion).
    Raises UsageError when the spec cannot be read at all; every problem inside the files is a
    finding in the report.
    """
    given = {role: given_split(p) for role, p in (("train", train), ("validation", validation)) if p is not None}
    # A config's own datasets give way to the files given here (TG157), as a spec's data.* do.
    parsed = _parsed(spec, max_findings or DEFAULT_CAP, given) if isinstance(spec, (str, Path)) else spec
    results = [parsed.result if parsed is not None else
               StageResult.skipped("spec", "no spec given: hyperparameters were not checked")]
    valid = parsed.spec if parsed is not None else None
    cap = max_findings or (valid.gate.max_findings_per_code if valid else DEFAULT_CAP)
    if only is not None:
        mini_run, advisor = mini_run or "mini-run" in only, advisor or "advisor" in only
    if valid is not None and data_format:
        valid = valid.model_copy(update={"data": valid.data.model_copy(update={"format": data_format})})
    unavailable = {r: f for r, f in (parsed.unavailable if parsed is not None else {}).items() if r not in given}
    files = {r: p for r, p in _data_files(valid, given).items() if r not in unavailable}
    ctx = GateContext(Path(parsed.path) if parsed else None, valid, files, cap,
                      mini_run=mini_run, advisor=advisor, facts=facts or GateFacts(),
                      data_format=data_format or "auto", unavailable=unavailable, **_trainer_facts(parsed))
    names = [n for n in stages.applicable(ctx) if only is None or n in only]
    later = _run_stages(ctx, names, spec_failed=results[0].status == "failed")
    results += [_named_as_written(r, parsed) for r in later] if parsed is not None and parsed.kind != "tunegate" else later
    fingerprints = dict(ctx.fingerprints)
    if parsed is not None and valid is not None:
        fingerprints["spec"] = {"digest": parsed.digest}
    return GateReport.from_stages(results, spec=parsed.path if parsed else None,
                                  fingerprints=fingerprints, facts=ctx.facts)


def _run_stages(ctx: GateContext, names: list[str], spec_failed: bool) -> list[StageResult]:
    """Run the stages in order. A failed stage skips every later one, except that where the data cannot
    be had here (`ctx.unavailable`) the data stages' failure skips only the stages that read data: the
    estimate and the advisor still run, so every finding that needs no data is reported at once."""
    failed, no_data = spec_failed, ""
    # A rejected spec skips every stage: their modules (~20 ms of imports) are not even loaded.
    doors = {} if failed else {name: importlib.import_module(stages.front_door(name)) for name in names}
    for door in doors.values():  # observers join the dataset read before it starts
        if hasattr(door, "prepare"):
            door.prepare(ctx)
    results = []
    for name in names:
        reads_data = stages.row(name).reads_data
        if failed:
            result = StageResult.skipped(name, "an earlier stage failed")
            if name == "dataset" and ctx.unavailable:  # the missing data is said even so
                result = _unavailable(result, ctx.unavailable)
        elif no_data and reads_data:
            result = StageResult.skipped(name, no_data)
        else:
            with progress.step(name):
                result = doors[name].run_stage(ctx)
            if name == "dataset" and ctx.unavailable:
                result = _unavailable(result, ctx.unavailable)
        results.append(result)
        if result.status == "failed" and ctx.unavailable and reads_data:
            no_data = f"the {' and '.join(ctx.unavailable)} data cannot be had here (the dataset stage says why)"
        elif result.status == "failed" and reads_data and _ours_only(result):
            no_data = f"the {name} stage cannot gate this data, which the config's trainer trains (it says why)"
        elif result.status == "failed":
            failed = True
    return results


def _ours_only(result: StageResult) -> bool:
    """Whether every error of a failed stage concerns tunegate's run only (its `launch_only` codes: data
    the config's trainer trains and tunegate does not gate), so the checks that need no data still run."""
    ours = result.stats.get("launch_only")
    errors = {f.code for f in result.findings if f.severity == "error"}
    return bool(errors) and isinstance(ours, list) and errors <= set(ours)


def _parsed(path: str | Path, cap: int, given: dict[str, Path | list[Path]]) -> ParsedSpec:
    from tunegate.spec.check import parse_spec

    return parse_spec(path, cap=cap, data=given)


def _named_as_written(result: StageResult, parsed: ParsedSpec) -> StageResult:
    """A later stage's findings about an imported config's keys at the original key, line and column."""
    if not result.findings:
        return result
    from tunegate.spec.check import in_config_words

    return result.model_copy(update={"findings": [in_config_words(f, parsed) for f in result.findings]})


def _unavailable(result: StageResult, unavailable: dict[str, Any]) -> StageResult:
    """The dataset stage's result with the findings saying why a split's data cannot be had, each once.

    They fail the gate (the data was not checked) but are no reason the config's own trainer refuses
    the run: it downloads a Hub dataset (TG142) and trains with a random validation split or none
    (TG141, TG143), which only tunegate's run refuses. So they are listed as tunegate's run's only
    (`launch_only`, read by the report's two verdicts)."""
    said = list({(f.code, f.line, f.column, f.message): f for f in unavailable.values()}.values())
    totals = dict(result.totals_by_code)
    for f in said:
        totals[f.code] = totals.get(f.code, 0) + 1
    ours = result.stats.get("launch_only")
    launch_only = [*(ours if isinstance(ours, list) else []), *dict.fromkeys(f.code for f in said)]
    return result.model_copy(update={"status": "failed", "findings": [*said, *result.findings], "reason": "",
                                     "totals_by_code": totals, "stats": {**result.stats, "launch_only": launch_only}})


def _trainer_facts(parsed: ParsedSpec | None) -> dict[str, Any]:
    """What the spec stage found tunegate's trainer cannot run, and what the run machine needs."""
    stats = parsed.result.stats if parsed is not None else {}
    return {"launch_refusals": list(stats.get("tunegate_launch", [])), "trainer": stats.get("trainer", LAUNCH),
            "requirements": list(stats.get("requirements", [])), "trains_text": dict(stats.get("trains_text") or {}),
            "memory_savers": [s for s in stats.get("memory_savers") or [] if isinstance(s, str)]}


def given_split(value: str | Path | Sequence[str | Path]) -> Path | list[Path]:
    """A split given to `check`: one path as a path (as a config's override has always been), several as a list."""
    files = split_files(value)
    if not files:
        raise UsageError("an empty list of data files: give at least one file for the split")
    return files[0] if len(files) == 1 else files


def _data_files(spec: Any, given: dict[str, Path | list[Path]]) -> dict[str, list[Path]]:
    """Each split's files: the spec's, replaced by those given to `check`."""
    files = {"train": spec.data.files("train"), "validation": spec.data.files("validation")} if spec is not None else {}
    return {**files, **{role: split_files(value) for role, value in given.items()}}


"""Gate one sweep candidate: its own data stages when its data differ, the frozen validation set,
then the mini-run.

    report = gate_candidate(parsed, base_parsed, base_report)

The sweep's data stages ran once, on the base spec's files. A candidate inherits their verdict
only when everything those stages and the mini-run's token audit depend on is the base's: the data
files, `training.max_seq_len`, the model (its tokenizer). Otherwise (issue 11: a candidate
`{data.train: leaky_train.jsonl}` was approved on the base's verdict) the dataset and overlap
stages run on its own files, and its report carries its own digests and record counts.

The frozen-validation check (TG390, TG391) runs before the mini-run: a candidate scored on other
validation data is never trained.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from tunegate import stages
from tunegate.report import FindingCollector, GateReport, StageResult
from tunegate.spec.check import ParsedSpec
from tunegate.spec.model import Spec

FROZEN = "frozen-validation"
# What the data stages and the mini-run's token audit read, beyond the spec's hyperparameters
# (training.loss_on: under `all` a conversation whose every reply has weight 0 is no TG265).
DATA_INPUTS = ("data.train", "data.validation", "training.max_seq_len", "model.id", "model.revision",
               "training.loss_on")


def changed_data_inputs(spec: Spec, base: Spec) -> list[str]:
    """The DATA_INPUTS a candidate changes from the base spec (paths compared resolved)."""
    def value(s: Spec, dotted: str) -> Any:
        section, field = dotted.split(".")
        if section == "data":
            return [path.resolve() for path in s.data.files(field)]
        return getattr(getattr(s, section), field)

    return [key for key in DATA_INPUTS if value(spec, key) != value(base, key)]


def gate_candidate(parsed: ParsedSpec, base_parsed: ParsedSpec, base: GateReport, token_cache: str | None = None,
                   before_mini_run: Callable[[], None] | None = None) -> GateReport:
    """The candidate's report: spec, data (inherited or its own), estimate, frozen validation, mini-run;
    `token_cache` is the sweep's token folder, where its candidates share their token audit;
    `before_mini_run` is called just before the mini-run starts (the sweep's job slot is taken there)."""
    from tunegate.gate import check
    from tunegate.sweep.mini_run_apart import mini_run_report

    if parsed.spec is None:
        return _spec_rejected(parsed, base)
    own = changed_data_inputs(parsed.spec, base_parsed.require())
    # With the base's data the data stages' verdicts are inherited; the estimate reads the candidate's spec.
    static = check(parsed, only=stages.static() if own else {"estimate"})
    merged = GateReport.merge([base, static])
    frozen = frozen_validation(parsed.spec, base, merged if own else None)
    if not merged.gates_passed or frozen.status == "failed":
        why = "an earlier stage failed" if not merged.gates_passed else "the validation set is not the sweep's"
        return _with(merged, frozen, StageResult.skipped("mini-run", why))
    if before_mini_run is not None:
        before_mini_run()
    mini = mini_run_report(parsed, merged.facts.model_copy(deep=True), token_cache)  # in a forked child
    return GateReport.merge([_with(merged, frozen), _said_if_no_gpu(parsed.spec, mini)])


def _said_if_no_gpu(spec: Spec, mini: GateReport) -> GateReport:
    """TG392 (warning) on a candidate that asked for a GPU of its own but whose mini-run found none
    where it ran: a worker without a GPU would otherwise run it on the CPU without a word (issue 31)."""
    from tunegate.spec.runner_support import gpu_per_candidate

    stage = next((r for r in mini.stages if r.name == "mini-run"), None)
    device = (stage.stats.get("device") or "") if stage is not None else ""
    if stage is None or not gpu_per_candidate(spec) or not device or device.startswith("cuda"):
        return mini
    out = FindingCollector("mini-run")
    out.add("TG392", "warning", f"this candidate asked for a GPU of its own (sweep.gpu_per_candidate) but its "
            f"mini-run ran on the {device}: the worker that ran it has no CUDA device, so its speed and memory "
            "are not a GPU's", "Run the sweep's workers on GPU machines (a Dask worker per GPU with --resources "
            "GPU=1, a Ray node with GPUs), or set sweep.gpu_per_candidate: false.", key="sweep.gpu_per_candidate")
    told = stage.model_copy(update={"findings": [*stage.findings, *out.kept],
                                    "totals_by_code": {**stage.totals_by_code, "TG392": 1}})
    return GateReport.from_stages([told if r is stage else r for r in mini.stages], spec=mini.spec,
                                  fingerprints=mini.fingerprints, facts=mini.facts)


def frozen_validation(spec: Spec, base: GateReport, own: GateReport | None) -> StageResult:
    """Passed when the candidate's validation data is the sweep's frozen set, by content digest.

    `own` is the candidate's report when its data stages ran (its validation digest is in it);
    otherwise the file is fingerprinted again here, so a change during the sweep is caught.
    """
    from tunegate.dataset.fingerprint import algorithm_of, fingerprint_file, short_digest

    out = FindingCollector(FROZEN)
    frozen_print = base.fingerprints.get("validation") or {}
    frozen = frozen_print.get("digest")
    files = spec.data.files("validation")
    if frozen is None:  # nothing frozen to compare with: the file need not be read again
        now = None
    elif own:
        now = (own.fingerprints.get("validation") or {}).get("digest")
    else:
        now = fingerprint_file(files, algorithm_of(frozen)).digest
    if frozen is None or now is None or now == frozen:
        return out.result(0.0, {"digest": short_digest(frozen or ""), "summary": "the sweep's frozen validation set"})
    base_files = frozen_print.get("files") or [frozen_print.get("file")]
    if base_files == [None] or [p.resolve() for p in files] == [Path(f).resolve() for f in base_files]:
        out.add("TG390", "error", f"the validation set {spec.data.names('validation')} changed during the sweep "
                f"(digest {short_digest(frozen)} -> {short_digest(now)})",
                "Restore the validation file and rerun the sweep: scores on different validation data "
                "cannot be compared.", file=str(files[0]))
    else:
        out.add("TG391", "error", f"this candidate is scored on another validation set "
                f"({spec.data.names('validation')}, digest {short_digest(now)}) than the sweep's frozen one (digest "
                f"{short_digest(frozen)})", "Do not override data.validation in a sweep: every candidate must be "
                "scored on the same frozen validation set, or its score is not comparable.", file=str(files[0]),
                key="data.validation")
    return out.result(0.0, {"digest": short_digest(now)})


def _with(report: GateReport, *stages: StageResult) -> GateReport:
    return GateReport.from_stages(report.stages + list(stages), spec=report.spec,
                                  fingerprints=report.fingerprints, facts=report.facts)


def _spec_rejected(parsed: ParsedSpec, base: GateReport) -> GateReport:
    """A candidate whose spec failed: its spec stage, every later stage skipped, no inherited verdicts."""
    later = [StageResult.skipped(name, "the candidate's spec was rejected")
             for name in stages.required() if name != "spec"]
    return GateReport.from_stages([parsed.result, *later], spec=parsed.path, fingerprints=base.fingerprints)

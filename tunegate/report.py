"""The gate's report: findings, stage results and the verdict.

Every stage returns a `StageResult`; `GateReport` gathers them and decides. The JSON shape is the
contract other tools (CI, Prefect artifacts, MLflow) read, so fields are only ever added.
"""
# Annotations are real types here, not `from __future__ import annotations` strings: pydantic
# would compile and evaluate each field's type from its text when the models are built, at every
# start-up (~2 % of a rejection's instructions over the report, facts and spec models; issue 15).

from collections import Counter
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_serializer, field_validator, model_validator

from tunegate import stages
from tunegate.facts import GateFacts
from tunegate.pathguard import shown

Severity = Literal["error", "warning", "info"]
LAUNCH = "tunegate launch"  # tunegate's own full run: the trainer of a tunegate spec
Status = Literal["passed", "failed", "skipped"]

# The gates a full run needs, each ran and passed (the source: a separate validation set and a
# passed mini-run before a full run): the stage table's required rows. The advisor is optional:
# it never blocks nor approves.
REQUIRED_GATES = stages.required()
# What passing the gate does not prove, from the source: it says so beside every verdict.
CAVEATS = (
    "the gates check shape, not quality: review representative samples of the training data by hand",
    "approval says nothing about how good the model will be: evaluate it on the frozen validation set",
)


# The mutable defaults' factories are plain functions, not the builtins dict and list: pydantic reads
# a factory's signature when it builds a model, and a builtin's is parsed from its text by the
# tokenizer, whose first use compiles its regexes (~5 ms of a 0.2 s rejection; issue 15).
def new_dict() -> dict:
    """A new empty dict (a `default_factory`)."""
    return {}


def new_list() -> list:
    """A new empty list (a `default_factory`)."""
    return []


class Finding(BaseModel):
    """One problem, with its exact place and the fix."""

    model_config = ConfigDict(extra="forbid")

    code: str = Field(description="Stable finding code, documented in docs/checks.md (TG1xx spec, TG2xx dataset, ...).")
    severity: Severity
    stage: str
    message: str = Field(description="What is wrong, with the offending value.")
    hint: str = Field(default="", description="How to fix it.")
    file: str | None = None
    line: int | None = Field(default=None, description="1-based physical line.")
    column: int | None = Field(default=None, description="1-based column.")
    record: int | None = Field(default=None, description="0-based index of the record among the file's records.")
    key: str | None = Field(default=None, description="Spec key path, e.g. training.learning_rate.")

    @field_validator("file")
    @classmethod
    def _printable(cls, file: str | None) -> str | None:
        # A file name need not be UTF-8 nor free of newlines; the report is JSON and terminal lines.
        return None if file is None else shown(file)

    @field_validator("line")
    @classmethod
    def _no_line_zero(cls, line: int | None) -> int | None:
        return line or None  # line 0 is how readers mark a record without lines (a parquet row)

    def place(self) -> str:
        """`file:line:col` (or `file:key`, or `file:row N` for a parquet row), as much of it as is known."""
        parts = [self.file or ("spec" if self.key else "")]
        if self.line is not None:
            parts.append(str(self.line))
            if self.column is not None:
                parts.append(str(self.column))
        elif self.key and self.file:
            parts.append(self.key)
        elif self.record is not None and self.file:
            parts.append(f"row {self.record}")
        place = ":".join(p for p in parts if p)
        if self.key and self.line is not None:
            place += f" ({self.key})"
        return place or self.stage


class FindingCollector:
    """Collects findings for one stage, keeping at most `cap` per code but counting them all.

    A 2 GB file with the same defect on every line must not produce a 2 GB report, yet the user
    needs the true total to judge the damage.
    """

    def __init__(self, stage: str, cap: int = 20):
        self.stage = stage
        self.cap = cap
        self.kept: list[Finding] = []
        self.totals: Counter[str] = Counter()
        self.severities: dict[str, Severity] = {}

    def add(self, code: str, severity: Severity, message: str, hint: str = "", **place: Any) -> None:
        self.totals[code] += 1
        self.severities[code] = severity
        if self.totals[code] <= self.cap:
            self.kept.append(Finding(code=code, severity=severity, stage=self.stage,
                                     message=message, hint=hint, **place))

    def full(self, code: str) -> bool:
        """Whether `code` is at its cap: a caller may then skip building the message and `count` it.

        Explaining costs far more than counting; 10 million broken lines must not be explained
        10 million times when 20 are shown.
        """
        return self.totals[code] >= self.cap

    def count(self, code: str, severity: Severity) -> None:
        """Count one more `code` past its cap, without a message (see `full`)."""
        self.totals[code] += 1
        self.severities[code] = severity

    def extend(self, findings: list[Finding]) -> None:
        for f in findings:
            self.totals[f.code] += 1
            self.severities[f.code] = f.severity
            if self.totals[f.code] <= self.cap:
                self.kept.append(f)

    def absorb(self, later: "FindingCollector") -> None:
        """Take the findings `later` collected as if they had been added here after this one's.

        A stage that collects per file or per part of a file, in any order, merges them in the
        files' order with this, and keeps exactly the findings one collector would have kept.
        """
        shown = Counter({code: min(n, self.cap) for code, n in self.totals.items()})
        for f in later.kept:
            if shown[f.code] < self.cap:
                shown[f.code] += 1
                self.kept.append(f)
        self.totals.update(later.totals)
        self.severities.update(later.severities)

    def has_errors(self) -> bool:
        return any(self.severities[c] == "error" for c in self.totals)

    def result(self, duration_s: float, stats: dict[str, Any] | None = None) -> "StageResult":
        return StageResult(
            name=self.stage,
            status="failed" if self.has_errors() else "passed",
            duration_s=round(duration_s, 4),
            stats=stats or {},
            findings=self.kept,
            totals_by_code=dict(self.totals),
        )


class StageResult(BaseModel):
    """What one stage of the gate concluded."""

    model_config = ConfigDict(extra="forbid")

    name: str
    status: Status
    duration_s: float = 0.0
    reason: str = Field(default="", description="Why the stage was skipped.")
    stats: dict[str, Any] = Field(default_factory=new_dict)
    findings: list[Finding] = Field(default_factory=new_list)
    totals_by_code: dict[str, int] = Field(
        default_factory=new_dict, description="Every finding counted, including those past the per-code cap.")

    @classmethod
    def skipped(cls, name: str, reason: str) -> "StageResult":
        return cls(name=name, status="skipped", reason=reason)


class Requirement(BaseModel):
    """Something the run needs where it must hold: a package or hardware of the machine that trains."""

    model_config = ConfigDict(extra="forbid")

    need: str = Field(description="What is needed: a package (bitsandbytes, flash-attn) or hardware (a CUDA GPU, "
                                  "the GPUs and their memory).")
    kind: Literal["package", "hardware"]
    reason: str = Field(description="The setting that needs it, in the config's own keys.")
    key: str | None = None
    where: str = Field(description="Where it must hold: 'run machine', the machine that runs the training.")
    met_here: bool | None = Field(description="Whether the machine that made this report has it (None: not "
                                              "judged here); only the run machine must.")
    install: str | None = None


class TrainerVerdict(BaseModel):
    """Whether one trainer can run the config, by every check that ran."""

    model_config = ConfigDict(extra="forbid")

    trainer: str = Field(description="axolotl, trl sft, or tunegate launch.")
    passed: bool = Field(description="No check that ran found a reason this trainer refuses or fails the run.")
    reasons: list[str] = Field(default_factory=new_list, description="Why not: each refusing finding, as "
                                                                     "`place CODE message`.")


class GateReport(BaseModel):
    """The verdict and everything behind it.

    Two verdicts, never confused: `gates_passed` (every gate that ran passed: exit code 0, and a
    flow may go on to its next step) and `approved_for_full_run` (every gate in REQUIRED_GATES ran
    and passed). Both are derived from the stages whenever a report is built or read back, so a
    report cannot claim an approval its stages do not hold.
    """

    model_config = ConfigDict(extra="forbid")

    approved_for_full_run: bool = Field(
        False, description="Every required gate (spec, dataset, overlap against a separate validation set, "
                           "estimate, mini-run) ran and passed. Still review samples and evaluate on the "
                           "frozen validation set (`caveats`).")
    gates_passed: bool = Field(
        False, description="Every gate that ran passed; says nothing about the gates that did not run.")
    not_run: dict[str, str] = Field(
        default_factory=new_dict, description="Required gates that did not run, with the reason: why the report "
                                          "does not approve a full run although its gates passed.")
    caveats: list[str] = Field(default_factory=new_list, description="What the verdict does not prove.")
    stages: list[StageResult]
    findings: list[Finding]
    counts: dict[str, int]
    spec: str | None = Field(default=None, description="Path of the spec that was checked.")
    fingerprints: dict[str, Any] = Field(
        default_factory=new_dict, description="Content digests of spec and data, keyed by role.")
    facts: GateFacts = Field(
        default_factory=GateFacts, description="What the stages measured for later ones: tokens, estimate, mini-run, advice.")
    config_trainer: TrainerVerdict | None = Field(
        default=None, description="The config judged for the trainer it is written for (axolotl, trl sft, or "
                                  "tunegate launch for a tunegate spec), by every check that ran.")
    tunegate_launch: TrainerVerdict | None = Field(
        default=None, description="Whether `tunegate launch` can run it: what tunegate's own trainer refuses is a "
                                  "warning of `check` and an error of the mini-run and `launch`.")
    requirements: list[Requirement] = Field(
        default_factory=new_list, description="What the run machine needs (packages, a CUDA GPU, the GPUs and "
                                          "their memory), with whether this machine has it: never a failure here.")

    @field_validator("spec")
    @classmethod
    def _printable_spec(cls, spec: str | None) -> str | None:
        return None if spec is None else shown(spec)

    @field_serializer("facts")
    def _facts_json(self, facts: GateFacts) -> dict[str, Any]:
        return facts.as_json()

    @model_validator(mode="after")
    def _decide(self) -> "GateReport":
        failed = any(s.status == "failed" for s in self.stages) or self.counts.get("error", 0) > 0
        by_name = {s.name: s for s in self.stages}
        self.not_run = {g: _why_not_run(by_name.get(g)) for g in REQUIRED_GATES
                        if g not in by_name or by_name[g].status == "skipped"}
        self.gates_passed = not failed
        self.approved_for_full_run = self.gates_passed and not self.not_run
        extra = [c for s in self.stages for c in s.stats.get("caveats", []) if isinstance(c, str)]
        self.caveats = [*CAVEATS, *dict.fromkeys(extra)]
        self.config_trainer, self.tunegate_launch = _verdicts(self.stages)
        self.requirements = _requirements(self.stages)
        return self

    def passed_gates(self) -> list[str]:
        """Names of the stages that ran and passed, in order."""
        return [s.name for s in self.stages if s.status == "passed"]

    @classmethod
    def from_stages(cls, stages: list[StageResult], **extra: Any) -> "GateReport":
        findings = [f for s in stages for f in s.findings]
        counts = {"error": 0, "warning": 0, "info": 0}
        for stage in stages:
            for code, n in stage.totals_by_code.items():
                sev = next((f.severity for f in stage.findings if f.code == code), "error")
                counts[sev] += n
        return cls(stages=stages, findings=findings, counts=counts, **extra)

    @classmethod
    def merge(cls, reports: list["GateReport"]) -> "GateReport":
        """One report from partial ones run as separate steps (a flow's tasks), in order.

        A stage that appears in several keeps its last result; facts and fingerprints are merged.
        """
        stages: dict[str, StageResult] = {}
        facts = GateFacts()
        fingerprints: dict[str, Any] = {}
        for r in reports:
            for s in r.stages:
                stages[s.name] = s
            facts = facts.merged(r.facts)
            fingerprints.update(r.fingerprints)
        return cls.from_stages(list(stages.values()), spec=reports[0].spec if reports else None,
                               fingerprints=fingerprints, facts=facts)

    def stage(self, name: str) -> StageResult | None:
        return next((s for s in self.stages if s.name == name), None)

    def codes(self) -> set[str]:
        return {f.code for f in self.findings}


def _why_not_run(stage: StageResult | None) -> str:
    if stage is None:
        return "not run"
    return f"skipped: {stage.reason}" if stage.reason else "skipped"


# The spec stage names the config's own trainer (stats "trainer") and what tunegate launch cannot run
# ("tunegate_launch"); a stage whose error concerns tunegate's own run only lists its code ("launch_only").


def _verdicts(stages: list[StageResult]) -> tuple[TrainerVerdict | None, TrainerVerdict | None]:
    """(the config's own trainer, tunegate launch): the errors of every stage but those a stage lists as
    tunegate's run's only, and for tunegate launch also those and what it refuses. Every code past its
    cap still has a kept finding, so the kept findings decide."""
    spec = next((s for s in stages if s.name == "spec"), None)
    if spec is None or not isinstance(spec.stats.get("trainer"), str):
        return None, None
    errors = [(f, f.code in s.stats.get("launch_only", ())) for s in stages for f in s.findings if f.severity == "error"]
    refusals = [r for s in stages for r in s.stats.get("tunegate_launch", []) if isinstance(r, str)]
    launch = TrainerVerdict(trainer=LAUNCH, passed=not errors and not refusals,
                            reasons=list(dict.fromkeys([*refusals, *(_said(f) for f, _ in errors)])))
    if spec.stats["trainer"] == LAUNCH:  # a tunegate spec: its own trainer is tunegate launch
        return launch, launch.model_copy()
    own = [_said(f) for f, ours_only in errors if not ours_only]
    return TrainerVerdict(trainer=spec.stats["trainer"], passed=not own, reasons=own), launch


def _said(f: Finding) -> str:
    return f"{f.place()} {f.code} {f.message}"


def _requirements(stages: list[StageResult]) -> list[Requirement]:
    found: dict[tuple[str, str], Requirement] = {}
    for stage in stages:
        for need in stage.stats.get("requirements", []):
            try:
                req = Requirement.model_validate(need)
            except ValueError:  # a report written by another version: its requirements are its own
                continue
            found[(req.need, req.where)] = req
    return list(found.values())


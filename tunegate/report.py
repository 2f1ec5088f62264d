"""The gate's report: findings, stage results and the verdict.

Every stage returns a `StageResult`; `GateReport` gathers them and decides. The JSON shape is the
contract other tools (CI, Prefect artifacts, MLflow) read, so fields are only ever added.
"""
# Dataclasses, not pydantic models: a check writes a report without importing pydantic, which
# validates one only where it is read back (tunegate.plain_record; issue 33). Annotations are real
# types, not `from __future__ import annotations` strings, so reading back resolves none from text.

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal

from tunegate import stages
from tunegate.facts import GateFacts
from tunegate.pathguard import shown
from tunegate.plain_record import PlainRecord, dumped, new_dict, new_list

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


@dataclass(kw_only=True)
class Finding(PlainRecord):
    """One problem, with its exact place and the fix."""

    code: str  # stable finding code, documented in docs/checks.md (TG1xx spec, TG2xx dataset, ...)
    severity: Severity
    stage: str
    message: str  # what is wrong, with the offending value
    hint: str = ""  # how to fix it
    file: str | None = None
    line: int | None = None  # 1-based physical line
    column: int | None = None  # 1-based column
    record: int | None = None  # 0-based index of the record among the file's records
    key: str | None = None  # spec key path, e.g. training.learning_rate

    def __post_init__(self) -> None:
        # A file name need not be UTF-8 nor free of newlines; the report is JSON and terminal lines.
        if self.file is not None:
            self.file = shown(self.file)
        self.line = self.line or None  # line 0 is how readers mark a record without lines (a parquet row)

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
            findings=list(self.kept),
            totals_by_code=dict(self.totals),
        )


@dataclass(kw_only=True)
class StageResult(PlainRecord):
    """What one stage of the gate concluded."""

    name: str
    status: Status
    duration_s: float = 0.0
    reason: str = ""  # why the stage was skipped
    stats: dict[str, Any] = field(default_factory=new_dict)
    findings: list[Finding] = field(default_factory=new_list)
    totals_by_code: dict[str, int] = field(default_factory=new_dict)  # every finding counted, those past the cap too

    @classmethod
    def skipped(cls, name: str, reason: str) -> "StageResult":
        return cls(name=name, status="skipped", reason=reason)


@dataclass(kw_only=True)
class Requirement(PlainRecord):
    """Something the run needs where it must hold: a package or hardware of the machine that trains."""

    need: str  # a package (bitsandbytes, flash-attn) or hardware (a CUDA GPU, the GPUs and their memory)
    kind: Literal["package", "hardware"]
    reason: str  # the setting that needs it, in the config's own keys
    key: str | None = None
    where: str  # where it must hold: 'run machine', the machine that runs the training
    met_here: bool | None  # whether the machine that made this report has it (None: not judged here)
    install: str | None = None


@dataclass(kw_only=True)
class TrainerVerdict(PlainRecord):
    """Whether one trainer can run the config, by every check that ran."""

    trainer: str  # axolotl, trl sft, or tunegate launch
    passed: bool  # no check that ran found a reason this trainer refuses or fails the run
    reasons: list[str] = field(default_factory=new_list)  # why not: each refusing finding, as `place CODE message`


@dataclass(kw_only=True)
class GateReport(PlainRecord):
    """The verdict and everything behind it.

    Two verdicts, never confused: `gates_passed` (every gate that ran passed: exit code 0, and a
    flow may go on to its next step) and `approved_for_full_run` (every gate in REQUIRED_GATES ran
    and passed). Both are derived from the stages whenever a report is built or read back, so a
    report cannot claim an approval its stages do not hold.
    """

    # Every required gate (spec, dataset, overlap against a separate validation set, estimate,
    # mini-run) ran and passed. Still review samples and evaluate on the frozen validation set (`caveats`).
    approved_for_full_run: bool = False
    gates_passed: bool = False  # every gate that ran passed; says nothing about the gates that did not run
    # Required gates that did not run, with the reason: why the report does not approve a full run
    # although its gates passed.
    not_run: dict[str, str] = field(default_factory=new_dict)
    caveats: list[str] = field(default_factory=new_list)  # what the verdict does not prove
    stages: list[StageResult]
    findings: list[Finding]
    counts: dict[str, int]
    spec: str | None = None  # path of the spec that was checked
    fingerprints: dict[str, Any] = field(default_factory=new_dict)  # content digests of spec and data, by role
    # What the stages measured for later ones: tokens, estimate, mini-run, advice (written as
    # `GateFacts.as_json`: the facts learned, nothing else).
    facts: GateFacts = field(default_factory=GateFacts)
    # The config judged for the trainer it is written for (axolotl, trl sft, or tunegate launch for a
    # tunegate spec), by every check that ran.
    config_trainer: TrainerVerdict | None = None
    # Whether `tunegate launch` can run it: what tunegate's own trainer refuses is a warning of
    # `check` and an error of the mini-run and `launch`.
    tunegate_launch: TrainerVerdict | None = None
    # What the run machine needs (packages, a CUDA GPU, the GPUs and their memory), with whether this
    # machine has it: never a failure here.
    requirements: list[Requirement] = field(default_factory=new_list)

    def __post_init__(self) -> None:
        if self.spec is not None:
            self.spec = shown(self.spec)
        if isinstance(self.facts, dict):  # facts given as their JSON, as the pydantic model took them
            self.facts = GateFacts.model_validate(self.facts)
        failed = any(s.status == "failed" for s in self.stages) or self.counts.get("error", 0) > 0
        by_name = {s.name: s for s in self.stages}
        self.not_run = {g: _why_not_run(by_name.get(g)) for g in REQUIRED_GATES
                        if g not in by_name or by_name[g].status == "skipped"}
        self.gates_passed = not failed
        self.approved_for_full_run = self.gates_passed and not self.not_run
        extra = [c for s in self.stages for c in _listed(s.stats, "caveats") if isinstance(c, str)]
        self.caveats = [*CAVEATS, *dict.fromkeys(extra)]
        self.config_trainer, self.tunegate_launch = _verdicts(self.stages)
        self.requirements = _requirements(self.stages)

    def model_dump(self, *, mode: Literal["python", "json"] = "python", exclude: set[str] | None = None,
                   exclude_none: bool = False, exclude_defaults: bool = False) -> dict[str, Any]:
        data = super().model_dump(mode=mode, exclude=exclude, exclude_none=exclude_none,
                                  exclude_defaults=exclude_defaults)
        if "facts" in data:  # what the stages learned, nothing else (as the pydantic schema writes them)
            data["facts"] = dumped(self.facts.as_json(), mode == "json")
        return data

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


def _listed(stats: dict[str, Any], key: str) -> list[Any]:
    """A list a stage's stats hold under `key`; none where a report read back holds something else there
    (a report file is input: what another writer put in it must not break reading it)."""
    value = stats.get(key)
    return value if isinstance(value, (list, tuple)) else []


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
    errors = [(f, f.code in _listed(s.stats, "launch_only")) for s in stages for f in s.findings if f.severity == "error"]
    refusals = [r for s in stages for r in _listed(s.stats, "tunegate_launch") if isinstance(r, str)]
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
        for need in _listed(stage.stats, "requirements"):
            try:
                req = need if isinstance(need, Requirement) else Requirement(**need)
            except TypeError:  # a report written by another version: its requirements are its own
                continue
            if req.kind in ("package", "hardware") and isinstance(req.need, str) and isinstance(req.where, str):
                found[(req.need, req.where)] = req
    return list(found.values())


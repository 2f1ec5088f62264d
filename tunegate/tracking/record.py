"""What the tracking layer is told about one candidate: a pydantic record, safe to pass around.

The record is built from a `GateReport` and the candidate's `Spec`, and it travels as a Prefect
task parameter, which Prefect stores in its database in plain text. So it holds only allowlisted,
non-secret fields: params come from `PARAM_ALLOWLIST` (the advisor section, where a key could be
pasted by mistake, is never read), and secrets are named, never carried (`secret_env_names`).

    record = record_from_report(report, spec, mini_run_steps=steps, val_loss=1.92)
    record.candidate_id      # sha256 of the canonical params + data digests: stable across processes
"""
from __future__ import annotations

import hashlib
import json
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from tunegate.report import GateReport
from tunegate.spec.model import Spec

Scalar = str | int | float | bool
# approved: every required gate passed; passed: every gate that ran passed, some required did not run;
# pruned: approved, then stopped early by its sweep's pruning rule (sweep.prune).
Verdict = Literal["approved", "passed", "rejected", "error", "pruned"]

# Spec fields logged as MLflow params, as "<section>.<field>". An allowlist, never a dump of the
# spec: a dumped config is how keys end up in tracking stores (everycure-org/matrix#407).
PARAM_ALLOWLIST: tuple[str, ...] = (
    "model.id", "model.revision", "data.version",
    "lora.r", "lora.alpha", "lora.dropout", "lora.target_modules",
    "training.learning_rate", "training.micro_batch_size", "training.grad_accum_steps",
    "training.epochs", "training.max_steps", "training.max_seq_len", "training.precision",
    "training.seed", "hardware.gpu", "hardware.count",
)
# Params filled from the report's fingerprints rather than the spec.
DIGEST_PARAMS: tuple[str, ...] = ("data.train_digest", "data.validation_digest",
                                  "data.train_records", "data.validation_records", "spec.digest")
# What the run is and what it actually trained: a sweep candidate trains sweep.train_steps, not the
# spec's max_steps; a preflight trains only the mini-run's steps.
RUN_PARAMS: tuple[str, ...] = ("run.kind", "run.trained_steps")
ALLOWED_PARAMS = frozenset(PARAM_ALLOWLIST + DIGEST_PARAMS + RUN_PARAMS)
RunKind = Literal["preflight", "sweep candidate", "full run"]
# What a validation loss was measured on: the whole frozen validation set, or the mini-run's one
# evaluation batch (a preflight's). Only the first is ranked.
ValScope = Literal["validation set", "mini-run eval batch"]
# An environment variable NAME; anything else in advisor.api_key_env may be a pasted key.
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
# Keys commonly present in the environment of an LLM tool, redacted even if the spec names another.
# ... and the credentials of a team's tracking server and its database (deployments/README.md).
DEFAULT_SECRET_ENV = ("OPENAI_API_KEY", "OXLO_API_KEY", "PGPASSWORD", "MLFLOW_TRACKING_PASSWORD",
                      "MLFLOW_TRACKING_TOKEN")


class StepMetrics(BaseModel):
    """One optimizer step's numbers. NaN/Inf are allowed: a diverging candidate must be logged as it was."""

    model_config = ConfigDict(extra="forbid")

    step: int = Field(ge=0)
    loss: float | None = None
    grad_norm: float | None = None


class DatasetRef(BaseModel):
    """A dataset the candidate used, identified by OUR content digest (MLflow's collides on chat data)."""

    model_config = ConfigDict(extra="forbid")

    role: Literal["train", "validation"]
    path: str
    digest: str = Field(description="Content digest from the overlap stage, e.g. 'sha256:<hex>' or '<hex>'.")
    records: int | None = None
    version: str | None = None


class CandidateRecord(BaseModel):
    """Everything logged for one candidate; the input of `log_candidate`."""

    # hide_input_in_errors: a validation error must not echo a value that may be a pasted key.
    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)

    candidate_id: str = Field(min_length=8, max_length=128)
    name: str | None = Field(None, description="Human-friendly run name; default candidate-<id[:8]>.")
    params: dict[str, Scalar]
    datasets: list[DatasetRef] = Field(default_factory=list)
    verdict: Verdict
    failing_codes: list[str] = Field(default_factory=list)
    reason: str = Field("", description="Why the candidate failed (empty when approved).")
    mini_run_steps: list[StepMetrics] = Field(default_factory=list)
    train_steps: list[StepMetrics] = Field(default_factory=list, description="The short training budget's steps.")
    val_steps: list[StepMetrics] = Field(default_factory=list, description="Validation losses during training "
                                                                           "(every sweep.eval_every steps).")
    pruned_at_step: int | None = Field(None, description="The step its sweep's pruning rule stopped it at.")
    steps_saved: int | None = Field(None, ge=0, description="Steps of its budget pruning left untrained.")
    warnings: dict[str, int] | None = Field(None, description="Its report's warnings per code, in the order shown "
                                                             "(truncation first); None: not counted.")
    tokens_per_s: float | None = None
    peak_memory_gib: float | None = None
    predicted_hours: float | None = None
    final_train_loss: float | None = None
    val_loss: float | None = None
    val_scope: ValScope = Field("validation set", description="What val_loss was measured on.")
    mini_run_eval_loss: float | None = Field(None, description="The mini-run's loss on one validation batch.")
    kind: RunKind | None = Field(None, description="preflight, sweep candidate or full run (param run.kind).")
    trained_steps: int | None = Field(None, description="Optimizer steps this run trained (param run.trained_steps).")
    lineage: str | None = Field(None, description="The id without its attempt: the same spec, data and kind. "
                                                  "A newer run of the lineage supersedes the older ones.")
    train_seconds: float | None = Field(None, ge=0, description="Wall seconds of what the run trained (the short "
                                                                "training, the mini-run, the full run): its duration.")
    trained_until: float | None = Field(None, description="When that training ended (epoch seconds); default: "
                                                          "when the run is logged.")
    report: GateReport | None = None
    report_markdown: str | None = None
    advice: dict[str, Any] | None = None
    secret_env_names: list[str] = Field(default_factory=list,
                                        description="NAMES of env vars whose values must never be written.")

    @field_validator("params")
    @classmethod
    def _only_allowlisted(cls, params: dict[str, Scalar]) -> dict[str, Scalar]:
        unknown = sorted(set(params) - ALLOWED_PARAMS)
        if unknown:
            raise ValueError(f"params not in the allowlist: {unknown}; allowed: {sorted(ALLOWED_PARAMS)}")
        return params

    @field_validator("secret_env_names")
    @classmethod
    def _names_only(cls, names: list[str]) -> list[str]:
        # Never echo the bad value in the error: it may be the key itself.
        if any(not _ENV_NAME.match(n) for n in names):
            raise ValueError("secret_env_names must hold environment variable NAMES only")
        return names

    def dataset(self, role: str) -> DatasetRef | None:
        return next((d for d in self.datasets if d.role == role), None)

    @property
    def validation_digest(self) -> str | None:
        ref = self.dataset("validation")
        return ref.digest if ref else None


def params_from_spec(spec: Spec) -> dict[str, Scalar]:
    """The allowlisted spec fields as flat MLflow params; unset (None) fields are left out."""
    params: dict[str, Scalar] = {}
    for dotted in PARAM_ALLOWLIST:
        section, field = dotted.split(".")
        value = getattr(getattr(spec, section), field)
        if value is None:
            continue
        params[dotted] = ",".join(value) if isinstance(value, list) else value
    return params


def candidate_id(params: dict[str, Scalar], digests: dict[str, str], salt: str = "") -> str:
    """sha256 over canonical JSON of params, data digests and an optional salt.

    Canonical (sorted keys, fixed separators) so the id is the same in every process and Python
    run; `hash()` would change with PYTHONHASHSEED. `salt` scopes ids further (e.g. a code version).
    """
    canonical = json.dumps({"params": params, "digests": digests, "salt": salt},
                           sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)
    return hashlib.sha256(canonical.encode("ascii")).hexdigest()


def secret_env_names(spec: Spec) -> list[str]:
    """The env var names whose values must never be written: the spec's advisor key (if it is a
    name at all; a pasted key is simply not carried) plus the usual provider names."""
    names = list(DEFAULT_SECRET_ENV)
    if _ENV_NAME.match(spec.advisor.api_key_env) and spec.advisor.api_key_env not in names:
        names.append(spec.advisor.api_key_env)
    return names


def record_from_report(report: GateReport, spec: Spec, *, salt: str = "", attempt: str = "",
                       spec_digest: str | None = None, **measured: Any) -> CandidateRecord:
    """Build the record of the candidate `spec` from its gate report.

    `measured` takes the record's measurement fields (mini_run_steps, train_steps, tokens_per_s,
    peak_memory_gib, predicted_hours, final_train_loss, val_loss, advice, name, verdict, reason).
    The verdict defaults to the report's; failing codes are the codes of its error findings.
    `attempt` scopes the id to one attempt (a preflight's or a full run's flow run: each is a new
    run, the earlier ones of its lineage superseded); `spec_digest` replaces the report's digest of
    the spec file (a sweep candidate's file names absolute paths: its digest would change with the
    project's place).
    """
    params = params_from_spec(spec)
    datasets = _datasets(report, spec)
    for ref in datasets:
        params[f"data.{ref.role}_digest"] = ref.digest
        if ref.records is not None:
            params[f"data.{ref.role}_records"] = ref.records
    spec_fp = report.fingerprints.get("spec")
    if spec_digest or (isinstance(spec_fp, dict) and spec_fp.get("digest")):
        params["spec.digest"] = spec_digest or str(spec_fp["digest"])
    digests = {d.role: d.digest for d in datasets}
    codes = sorted({f.code for f in report.findings if f.severity == "error"})
    fields: dict[str, Any] = {
        "verdict": _verdict(report), "failing_codes": codes, "report": report,
        "reason": "" if report.gates_passed else _reason(report, codes),
    }
    fields.update(measured)
    cid = _identity(params, fields, digests, salt, attempt)
    return CandidateRecord(candidate_id=cid, params=params, datasets=datasets,
                           secret_env_names=secret_env_names(spec), **fields)


def record_from_overrides(report: GateReport, base: Spec, overrides: dict[str, Any], *, salt: str = "",
                          **measured: Any) -> CandidateRecord:
    """The record of a sweep candidate whose spec the spec stage rejected, so there is no Spec of it.

    Params are the base spec's with the candidate's allowlisted overrides on top, as written; a value
    that looks like an API key (TG124) is never logged. Data digests come from the report, which
    holds them only when the overrides did not touch the data.
    """
    from tunegate.spec.pasted_keys import looks_like_key

    params = params_from_spec(base)
    for key, value in overrides.items():
        if key in PARAM_ALLOWLIST:
            shown = value if isinstance(value, (bool, int, float)) else str(value)[:200]
            params[key] = "[not logged: looks like a key]" if isinstance(shown, str) and looks_like_key(shown) else shown
    datasets = [d for d in _datasets(report, base) if not any(k.startswith("data.") for k in overrides)]
    for ref in datasets:
        params[f"data.{ref.role}_digest"] = ref.digest
    codes = sorted({f.code for f in report.findings if f.severity == "error"})
    fields: dict[str, Any] = {"verdict": "rejected", "failing_codes": codes, "report": report,
                              "reason": _reason(report, codes), **measured}
    canonical = json.dumps(overrides, sort_keys=True, default=str)
    cid = _identity(params, fields, {d.role: d.digest for d in datasets}, f"{salt}spec-rejected:{canonical}")
    return CandidateRecord(candidate_id=cid, params=params, datasets=datasets,
                           secret_env_names=secret_env_names(base), **fields)


def _identity(params: dict[str, Scalar], fields: dict[str, Any], digests: dict[str, str], salt: str,
              attempt: str = "") -> str:
    """Add the run params; return the candidate id. The kind is part of the identity (a preflight
    and a sweep candidate of the same spec are different runs); what it trained is an outcome, not.
    With an `attempt`, the id is that attempt's and the id without it is the run's lineage."""
    if fields.get("kind"):
        params["run.kind"] = fields["kind"]
    cid = candidate_id(params, digests, salt)
    if attempt:
        fields["lineage"], cid = cid, candidate_id(params, digests, f"{salt}attempt:{attempt}")
    if fields.get("trained_steps") is not None:
        params["run.trained_steps"] = int(fields["trained_steps"])
    return cid


def _datasets(report: GateReport, spec: Spec) -> list[DatasetRef]:
    refs = []
    for role in ("train", "validation"):
        fp = report.fingerprints.get(role)
        path = " + ".join(str(p) for p in spec.data.files(role))  # a split of several files names each
        if isinstance(fp, dict) and fp.get("digest"):
            refs.append(DatasetRef(role=role, path=path, digest=str(fp["digest"]),
                                   records=fp.get("records"), version=spec.data.version))
    return refs


def _verdict(report: GateReport) -> Verdict:
    """approved: a full run may start; passed: every gate that ran passed, but not all required ran."""
    if report.approved_for_full_run:
        return "approved"
    return "passed" if report.gates_passed else "rejected"


def _reason(report: GateReport, codes: list[str]) -> str:
    failed = next((s.name for s in report.stages if s.status == "failed"), None)
    where = f" at stage '{failed}'" if failed else ""
    return f"rejected by the gate{where}: {', '.join(codes) or 'no error code'}"

"""What a full run (or a sweep candidate's short training) reports: a pydantic result, written as JSON.

    result = TrainResult.read(Path("runs/full/result.json"))
    if result.status == "completed": print(result.final_train_loss, result.val_loss, result.adapter_dir)
    record = record_from_report(report, spec, **result.record_fields())   # tunegate.tracking.record

Plain pydantic, no torch: the flows read results without importing the training stack. NaN and
Inf losses are kept as they were (JSON `NaN`/`Infinity`, which Python's json and pydantic read
back): a diverged run must be logged as it diverged, not as a missing value.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from tunegate.tracking.record import StepMetrics

# pruned: a sweep's pruning rule stopped the candidate early (sweep.prune; `reason` says why)
Status = Literal["completed", "unhealthy", "failed", "pruned"]

# The full-run finding codes (docs/checks.md, "Full-run health (TG7xx)").
NONFINITE_LOSS = "TG701"
NONFINITE_GRAD = "TG702"
ZERO_GRAD = "TG703"
NONFINITE_VAL = "TG704"
CRASHED = "TG705"
OUT_OF_MEMORY = "TG706"
NO_RESULT = "TG707"
BAD_ADAPTER = "TG708"
CANNOT_START = "TG709"
NO_RECORDS = "TG710"
TIMED_OUT = "TG711"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="constants")


class TrainStep(_Model):
    """One logged optimizer step (or the mean of a logging window on long runs)."""

    step: int = Field(ge=0)
    loss: float | None = None
    grad_norm: float | None = None
    learning_rate: float | None = None


class EvalPoint(_Model):
    """The loss on the frozen validation set at one step."""

    step: int = Field(ge=0)
    val_loss: float


class TrainProblem(_Model):
    """A health problem that stopped the run."""

    code: str
    step: int
    metric: str  # loss | grad_norm | eval_loss
    value: str  # "nan", "inf", "-inf", or "0.0" for a dead gradient


class TrainResult(_Model):
    """The outcome of one `tunegate.fullrun.trainer` run; only the main process writes it."""

    status: Status
    reason: str = Field("", description="Why the run is not completed (empty when it is), or why it was pruned.")
    codes: list[str] = Field(default_factory=list, description="TG7xx codes of what went wrong.")
    problems: list[TrainProblem] = Field(default_factory=list)
    steps: list[TrainStep] = Field(default_factory=list)
    evals: list[EvalPoint] = Field(default_factory=list)
    global_step: int = 0
    max_steps: int | None = Field(None, description="Optimizer steps the run was planned for.")
    final_train_loss: float | None = Field(None, description="Loss of the last logged step (or window).")
    mean_train_loss: float | None = Field(None, description="Mean loss over the whole run (the Trainer's).")
    val_loss: float | None = Field(None, description="Loss on the whole frozen validation set at the end.")
    adapter_dir: str | None = Field(None, description="The saved adapter + tokenizer, with a COMPLETE marker.")
    train_runtime_s: float | None = None
    tokens_per_s: float | None = Field(None, description="Non-padding tokens per second, all processes together.")
    peak_memory_bytes: int | None = Field(None, description="Main process: CUDA allocator peak, else peak RSS.")
    peak_memory_source: str | None = None
    peak_reserved_bytes: int | None = Field(None, description="Main process on CUDA: the allocator's peak reserved bytes.")
    cuda_context_bytes: int | None = Field(None, description="Main process on CUDA: device memory held beyond what "
                                                             "the allocator reserved (context, cuBLAS, kernels).")
    device: str | None = None
    precision: str | None = None
    attention: str | None = None
    num_processes: int = 1
    train_records: int = 0
    validation_records: int = 0
    dropped_records: int = Field(0, description="Records left out: zero trainable tokens or unrenderable.")
    resumed_from: str | None = Field(None, description="The checkpoint a --resume run continued from.")

    @property
    def ok(self) -> bool:
        """It did what it was asked: trained its budget, or was stopped by the sweep's pruning rule."""
        return self.status in ("completed", "pruned")

    def step_metrics(self) -> list[StepMetrics]:
        """The steps in the tracking layer's shape."""
        return [StepMetrics(step=s.step, loss=s.loss, grad_norm=s.grad_norm) for s in self.steps]

    def record_fields(self) -> dict[str, Any]:
        """The measurement fields of a `CandidateRecord` (`record_from_report(report, spec, **these)`)."""
        gib = self.peak_memory_bytes / 2**30 if self.peak_memory_bytes is not None else None
        return {"train_steps": self.step_metrics(), "tokens_per_s": self.tokens_per_s,
                "val_steps": [StepMetrics(step=e.step, loss=e.val_loss) for e in self.evals],
                "peak_memory_gib": gib, "final_train_loss": self.final_train_loss, "val_loss": self.val_loss}

    def write(self, path: Path) -> Path:
        """Write atomically: a reader (the launcher) never sees half a file."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(self.model_dump_json(indent=2))
        os.replace(tmp, path)
        return path

    @classmethod
    def read(cls, path: Path) -> TrainResult:
        return cls.model_validate_json(Path(path).read_text(encoding="utf-8"))


def rank_result_path(result_path: Path, rank: int) -> Path:
    """Where a process of rank > 0 writes its result when it failed (only rank 0 writes the run's)."""
    path = Path(result_path)
    return path.with_name(f"{path.stem}.rank{rank}{path.suffix}")


def failed_ranks(result_path: Path) -> list[tuple[int, TrainResult]]:
    """The failed results other ranks wrote beside the run's, by rank (unreadable ones left out)."""
    path = Path(result_path)
    found = []
    for other in sorted(path.parent.glob(f"{path.stem}.rank*{path.suffix}")):
        rank = other.name[len(path.stem) + len(".rank"):-len(path.suffix) or None]
        try:
            found.append((int(rank), TrainResult.read(other)))
        except (ValueError, OSError):
            continue
    return sorted(found, key=lambda pair: pair[0])


def failed(code: str, reason: str, **fields: Any) -> TrainResult:
    return TrainResult(status="failed", reason=reason, codes=[code], **fields)

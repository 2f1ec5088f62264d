"""The advisor's output: suggestions to run a job faster on the same hardware, each checked.

A `Suggestion` changes one spec setting (plus companion settings it needs, e.g. a higher micro
batch with a lower gradient accumulation). Whether it came from the rule engine or an LLM, it is
only `verified` after the estimate has re-run with it applied (fits memory, keeps the hardware,
keeps the global batch or says openly that it changes it); otherwise `rejected_reason` says why.
"""
from __future__ import annotations

import re
from typing import Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, field_validator

Scalar = Union[bool, int, float, str, list[str]]

# The only settings a suggestion may touch: no paths, URLs, remote code or advisor settings.
ALLOWED_SETTINGS = {
    "training.micro_batch_size", "training.grad_accum_steps", "training.gradient_checkpointing",
    "training.attention", "training.precision", "training.compile", "training.compile_mode", "training.max_seq_len",
    "training.sharding", "lora.r", "lora.alpha", "lora.dropout", "lora.target_modules",
    "model.quantization", "hardware.gpu", "hardware.count",
}
HARDWARE_SETTINGS = {"hardware.gpu", "hardware.count"}
# Strings an LLM may propose are short identifiers (bf16, sdpa, q_proj, A100-80GB), never text
# that could be a path, a URL or a command.
_IDENT = re.compile(r"^[A-Za-z0-9_.\-]{1,40}$")
# Controls (all but tab and newline), C1, lone surrogates (they cannot be written as UTF-8), zero-width
# and bidi controls, the line/paragraph separators and the BOM. The terminal folds the rest to one line.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff"
                      r"\ud800-\udfff]")


def clean_text(text: str, limit: int = 800) -> str:
    """Untrusted prose made safe to print: control and bidi characters removed, length capped."""
    return _CONTROL.sub("", str(text)).strip()[:limit]


def check_value(value: Any) -> Any:
    """A proposed value if it is a bounded scalar or identifier list; raises ValueError otherwise."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, float)):
        if not -1e12 < value < 1e12 or value != value:
            raise ValueError(f"number out of range: {value!r}")
        return value
    if isinstance(value, str):
        if not _IDENT.match(value):
            raise ValueError("strings must be short identifiers (no paths, URLs or spaces)")
        return value
    if isinstance(value, list) and len(value) <= 16:
        return [check_value(v) for v in value if isinstance(v, str)]
    raise ValueError(f"unsupported value type {type(value).__name__}")


class Suggestion(BaseModel):
    """One proposed change, why, what it should save, what to watch, and whether it checks out."""

    model_config = ConfigDict(extra="forbid")

    setting: str = Field(description="Dotted spec key, e.g. training.micro_batch_size.")
    current: Any = None
    proposed: Any
    companions: dict[str, Any] = Field(
        default_factory=dict, description="Settings changed together with this one.")
    changes_global_batch: bool = Field(
        False, description="Says openly that the global batch (micro x accum x GPUs) changes.")
    rationale: str = Field("", description="Why; for an LLM suggestion, the LLM's own words (figures not ours removed).")
    expected_time_saving: float | None = Field(
        None, ge=-1.0, le=1.0, description="Fraction of wall-clock time saved by OUR estimate; set only when verified.")
    claimed_time_saving: float | None = Field(
        None, description="What the LLM claimed it saves: its words, never shown as ours.")
    purpose: Literal["speed", "memory", "stability"] | None = Field(
        None, description="speed: verified faster; memory: needed to fit GPU memory (may cost time); "
                          "stability: fp16 -> bf16 at no cost in time.")
    risks: str = ""
    monitor: str = ""
    source: Literal["rules", "llm", "rules+llm"] = "rules"
    verified: bool = False
    new_hardware: bool = Field(
        False, description="Changes the GPUs: offered only when the run is physically impossible on the declared "
                           "ones (the source's rule), as an alternative that is never applied to the other advice.")
    rejected_reason: str | None = None
    predicted_hours: float | None = Field(None, description="Our estimate's hours with this applied.")
    predicted_peak_gib: float | None = None

    @field_validator("setting")
    @classmethod
    def _allowed(cls, value: str) -> str:
        if value not in ALLOWED_SETTINGS:
            raise ValueError(f"setting '{value}' may not be changed by the advisor")
        return value

    @field_validator("proposed", "current")
    @classmethod
    def _bounded(cls, value: Any) -> Any:
        return check_value(value)

    @field_validator("companions")
    @classmethod
    def _companions(cls, value: dict[str, Any]) -> dict[str, Any]:
        for key in value:
            if key not in ALLOWED_SETTINGS:
                raise ValueError(f"setting '{key}' may not be changed by the advisor")
        return {k: check_value(v) for k, v in value.items()}

    @field_validator("rationale", "risks", "monitor")
    @classmethod
    def _text(cls, value: str) -> str:
        return clean_text(value)

    def changes(self) -> dict[str, Any]:
        """Every setting this suggestion sets, the main one first."""
        return {self.setting: self.proposed, **self.companions}


class Advice(BaseModel):
    """What the advisor recommends, with our predicted hours before and after."""

    model_config = ConfigDict(extra="forbid")

    source: Literal["rules", "rules+llm"] = "rules"
    summary: str = Field("", description="Ours: the verified changes and our predicted hours before and after.")
    llm_summary: str = Field("", description="The LLM's own summary, its figures that are not ours removed.")
    suggestions: list[Suggestion] = Field(default_factory=list)
    hours_before: float | None = None
    hours_after: float | None = None
    peak_gib_before: float | None = None
    peak_gib_after: float | None = None
    notes: list[str] = Field(default_factory=list)
    readings: list[dict[str, Any]] = Field(
        default_factory=list, description="The stated run read as each method it may mean, with every "
                                          "claimed time's implied MFU (tunegate.estimate.readings).")

    def verified(self) -> list[Suggestion]:
        return [s for s in self.suggestions if s.verified]


def fmt_hours(hours: float) -> str:
    """Hours as people read them: '335.8 h', '0.52 h', and seconds for a run under six minutes."""
    if hours >= 10:
        return f"{hours:,.1f} h"
    if hours >= 0.1:
        return f"{hours:.2f} h"
    return f"{hours * 3600:.2g} s"


def fraction(value: float) -> float:
    """A fraction rounded to 0.1 % with no negative zero (a saving of -0.0004 is 0, not '-0 %')."""
    return round(value, 3) + 0.0

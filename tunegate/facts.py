"""What the stages learn for later ones: typed, so a stage reads a field, not a guessed dict key.

    facts.content["train"].content_chars   # counted by the dataset stage, read by the estimate
    facts.tokens.train_tokens              # the mini-run's token audit, read by the estimate
    facts.mini_run.tokens_per_s            # measured, read by the estimate and the advisor
    facts.mini_run.profile.matmul          # the profiled split of the mini-run's time, device-labelled

A report carries its facts; a flow hands them from one task to the next. The JSON keys are the
report's `facts` keys (`tokens`, `estimate`, `mini_run`, `advice`, `content`); facts a run did
not learn are left out of the JSON rather than written as null.
"""
# Dataclasses, not pydantic models, as the report's (tunegate.plain_record; issue 33); annotations
# are real types, so reading facts back resolves none from text.

from dataclasses import dataclass, field
from typing import Any

from tunegate.plain_record import PlainRecord, field_names, new_dict


class _Facts(PlainRecord):
    # ignore: a report written by a newer tunegate (more facts) still loads in this one.
    __pydantic_config__ = {"extra": "ignore"}


@dataclass(kw_only=True)
class SplitContent(_Facts):
    """One split as the dataset stage read it."""

    records: int
    content_chars: int  # characters of message text, every role


@dataclass(kw_only=True)
class TokenFacts(_Facts):
    """The training split's real token counts, from the mini-run's token audit."""

    train_tokens: int
    trainable_tokens: int
    records: int
    sampled: bool
    max_seq_len: int
    mean_tokens_per_record: float


@dataclass(kw_only=True)
class ProfileFacts(_Facts):
    """Where the mini-run's profiled steps spent their time (torch.profiler), as shares of wall time.

    Labelled with the device that ran them: a CPU split is reported as a CPU's, never mixed with
    GPU priors.
    """

    device: str                # "cuda" or "cpu"
    gpu: str | None = None     # the CUDA device name
    steps: int
    wall_s: float
    matmul: float
    attention: float
    optimizer: float
    data: float
    other: float
    idle: float
    peak_memory_bytes: int | None = None


@dataclass(kw_only=True)
class MiniRunFacts(_Facts):
    """What the mini-run measured, with the device and model it measured them on."""

    device: str | None = None
    precision: str | None = None
    tokens_per_s: float | None = None
    tokens_per_s_steady: float | None = None
    step_s: float | None = None
    train_peak_memory_bytes: int | None = None
    peak_memory_bytes: int | None = None
    peak_memory_source: str | None = None
    model: str | None = None
    gpu: str | None = None  # the CUDA device name; None off a GPU, so no prior is ever replaced by CPU speed
    micro_batch_size: int | None = None
    batch_seq_len: int | None = None  # the longest padded batch, the one the peak memory was reached at
    final_loss: float | None = None
    grad_norm_max: float | None = None
    profile: ProfileFacts | None = None

    def __post_init__(self) -> None:
        if isinstance(self.profile, dict):  # the mini-run's stats hold the profile as its dict
            self.profile = ProfileFacts.model_validate(self.profile)

    def tokens_steady_or_mean(self) -> float | None:
        """Tokens/s without the warm-up step when measured, else over every step."""
        return self.tokens_per_s_steady or self.tokens_per_s

    def as_measured(self) -> dict[str, Any]:
        """What the estimate and the advisor show as measured: numbers with their device, no paths."""
        keep = ("device", "gpu", "precision", "tokens_per_s", "tokens_per_s_steady", "step_s",
                "micro_batch_size", "batch_seq_len", "final_loss", "grad_norm_max")
        out: dict[str, Any] = {k: getattr(self, k) for k in keep if getattr(self, k) is not None}
        if self.train_peak_memory_bytes:
            out["train_peak_memory_gib"] = round(self.train_peak_memory_bytes / 2**30, 3)
        if self.profile is not None:
            out["profile"] = self.profile.model_dump(exclude_none=True)
        return out


@dataclass(kw_only=True)
class GateFacts(_Facts):
    """Everything the stages of one gate run learned for the stages after them."""

    content: dict[str, SplitContent] = field(default_factory=new_dict)
    tokens: TokenFacts | None = None
    estimate: dict[str, Any] | None = None  # `Estimate.summary()`
    mini_run: MiniRunFacts | None = None
    advice: dict[str, Any] | None = None  # `Advice` as JSON

    def merged(self, later: "GateFacts") -> "GateFacts":
        """These facts updated by what a later step learned (a later value wins; a fact it did not
        learn, None, keeps the earlier value)."""
        update = {name: getattr(later, name) for name in field_names(GateFacts) if getattr(later, name) is not None}
        content = {**self.content, **later.content}
        return self.model_copy(update={**update, "content": content})

    def as_json(self) -> dict[str, Any]:
        """The report's `facts` object: learned facts only."""
        return self.model_dump(mode="json", exclude_none=True, exclude_defaults=True)

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        """Facts in a pydantic model (a report in a candidate's record) are written as `as_json`."""
        from pydantic_core import core_schema

        schema = handler(source)
        schema["serialization"] = core_schema.plain_serializer_function_ser_schema(lambda facts: facts.as_json())
        return schema

"""The full run's data: both splits tokenised exactly as the mini-run's token audit does it.

Chat template, truncation to `training.max_seq_len`, loss on assistant tokens only
(`tunegate.training.chat_tokens`). Records the audit finds unusable (zero trainable tokens after
truncation, zero characters, a template that rejects them) are left out and counted: training on
them gives NaN or a silent 0.0 loss. The validation split is the frozen one the spec names, used
whole.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tunegate.report import FindingCollector
from tunegate.spec.model import Spec
from tunegate.training.chat_tokens import EncodedChat
from tunegate.training.runtime import shown_path
from tunegate.training.token_audit import audit_split

STAGE = "full-run"


@dataclass
class TrainData:
    """Both splits, encoded, with what was left out."""

    train: list[EncodedChat]
    validation: list[EncodedChat]
    dropped: int  # records of either split left out as unusable
    rows: list[list[EncodedChat]] | None = None  # the training records packed into rows, when the spec packs

    @property
    def max_token_id(self) -> int:
        return max((max(c.input_ids) for c in self.train + self.validation if c.input_ids), default=-1)


def load_splits(spec: Spec, tokenizer: Any, log: Callable[[str], None]) -> TrainData:
    """Tokenise the whole training and validation splits (each a file, or several read in order as one);
    log the audit's findings by code."""
    out = FindingCollector(STAGE, cap=3)
    kept: dict[str, list[EncodedChat]] = {}
    dropped = 0
    for role in ("train", "validation"):
        shown = [shown_path(path) for path in spec.data.files(role)]
        _, audited = audit_split(spec.data.files(role), shown, tokenizer, spec.training.max_seq_len, out,
                                 limit=None, seed=spec.training.seed, fmt=spec.data.format,
                                 loss_on=spec.training.loss_on)
        kept[role] = [a.encoded for a in audited if a.usable and a.encoded is not None]
        dropped += len(audited) - len(kept[role])
        log(f"{role}: {len(audited)} records read from {' + '.join(shown)}, {len(kept[role])} usable")
    _log_findings(out, log)
    return TrainData(kept["train"], kept["validation"], dropped)


def _log_findings(out: FindingCollector, log: Callable[[str], None]) -> None:
    """One line per finding code of the token audit, with its count and first example."""
    for code, total in sorted(out.totals.items()):
        first = next(f for f in out.kept if f.code == code)
        where = f"{first.file}:{first.line}: " if first.file and first.line else ""
        log(f"token audit {code} ({out.severities[code]}) x{total}, e.g. {where}{first.message}")

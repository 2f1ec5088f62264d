"""Representative records, rendered as the model will see them, with the trained tokens marked.

    picked = representative(audited, n=5, seed=0)     # shortest, median, longest, then seeded random
    segments(tokenizer, picked[0].encoded)           # [(text, trained?), ...] in token order

The source asks users to review representative samples by hand before a full run; axolotl's
`preprocess --debug` shows its labels the same way. Records come from the token audit, so the
rendering, the masks and the truncation are exactly the full run's.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from tunegate.training.chat_tokens import IGNORE, EncodedChat
from tunegate.training.token_audit import AuditedRecord


@dataclass(frozen=True)
class Sample:
    """One record picked for review, and why it was picked."""

    why: str  # "shortest", "median", "longest" or "random"
    audited: AuditedRecord


def representative(audited: list[AuditedRecord], n: int = 5, seed: int = 0) -> list[Sample]:
    """The shortest, median and longest record by tokens, then a seeded random draw of the rest."""
    usable = sorted((a for a in audited if a.encoded is not None),
                    key=lambda a: (a.encoded.full_length, a.record.index))
    if not usable or n <= 0:
        return []
    picks = [("shortest", usable[0]), ("median", usable[(len(usable) - 1) // 2]), ("longest", usable[-1])]
    chosen: list[Sample] = []
    for why, item in picks[:n]:
        if all(s.audited is not item for s in chosen):
            chosen.append(Sample(why, item))
    rest = [a for a in usable if all(s.audited is not a for s in chosen)]
    rest.sort(key=lambda a: a.record.index)
    for item in random.Random(seed).sample(rest, min(len(rest), n - len(chosen))):
        chosen.append(Sample("random", item))
    return chosen


def segments(tokenizer: Any, enc: EncodedChat) -> list[tuple[str, bool]]:
    """The kept tokens decoded in runs that are all trained or all masked."""
    runs: list[tuple[list[int], bool]] = []
    for token, label in zip(enc.input_ids, enc.labels):
        trained = label != IGNORE
        if runs and runs[-1][1] == trained:
            runs[-1][0].append(token)
        else:
            runs.append(([token], trained))
    return [(tokenizer.decode(ids), trained) for ids, trained in runs]


def cut_text(tokenizer: Any, enc: EncodedChat, chars: int = 160) -> str:
    """The start of what truncation dropped ("" when nothing was)."""
    if not enc.cut:
        return ""
    text = tokenizer.decode(list(enc.cut))
    return text if len(text) <= chars else text[:chars] + "…"

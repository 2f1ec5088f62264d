"""The token audit's checks over a whole split, judged one encoded record at a time.

    judge = SplitJudge(tokenizer, ["train.jsonl"], out)
    for item in audited_batch:
        judge.judge(item)          # then the record's tokens may be let go
    judge.report(out)              # TG539, TG543, TG544, TG548, TG541, in that order

Each of these findings counts records across the split and names the first: a trained reply with no
end-of-turn token (TG539), a record starting with two BOS tokens (TG541), and the chat template's
tools and reasoning (tunegate.training.template_fields). Judging as the records are encoded lets the
audit keep counts instead of every record's tokens, which a sample of long records cannot afford
(~50 bytes a token as Python lists); the findings and their order are the same as judging the
whole list at the end.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tunegate.report import FindingCollector
from tunegate.training import template_fields
from tunegate.training.chat_tokens import IGNORE, EncodedChat


class _Count:
    """How many records a check found, and the first of them."""

    def __init__(self) -> None:
        self.n = 0
        self.first: Any = None

    def add(self, item: Any) -> bool:
        self.n += 1
        if self.first is None:
            self.first = item
            return True
        return False


class SplitJudge:
    """Judges each audited record of one split as it comes; `report` says the split's findings."""

    def __init__(self, tokenizer: Any, names: Sequence[str], out: FindingCollector):
        self.tokenizer, self.names = tokenizer, names
        self.stops = stop_ids(tokenizer)
        self.seen = 0
        self.no_stop, self.double_bos, self.unshown, self.dropped = _Count(), _Count(), _Count(), _Count()
        self.first_unstopped_text = ""
        self.tool_calls = FindingCollector(out.stage, out.cap)  # TG543, record by record

    def judge(self, item: Any) -> None:
        self.seen += 1
        enc = item.encoded
        if enc is None:
            return
        if self.stops and _reply_without_stop(enc, self.stops) and self.no_stop.add(item):
            self.first_unstopped_text = _last_trained_text(self.tokenizer, enc, self.stops)
        if template_fields.tool_calls_unrendered(item, self.tokenizer, self.tool_calls, self.names):
            self.unshown.add(item)
        if template_fields.reasoning_dropped(item, self.tokenizer):
            self.dropped.add(item)
        bos = self.tokenizer.bos_token_id
        if bos is not None and list(enc.input_ids[:2]) == [bos, bos]:
            self.double_bos.add(item)

    def report(self, out: FindingCollector) -> None:
        names, tokenizer = self.names, self.tokenizer
        if self.no_stop.n:
            out.add("TG539", "warning", f"{self.no_stop.n} of {self.seen} records have a trained reply that ends "
                    f"with no EOS ({tokenizer.eos_token!r}) or other special token, e.g. "
                    f"{self.first_unstopped_text!r}: the chat template writes no end-of-turn token after replies, "
                    "so the model never learns to stop", "End the assistant turn in the chat template with "
                    "{{ eos_token }} (or the model's end-of-turn token), as the model's own template does.",
                    **self.no_stop.first.record.place(names))
        out.absorb(self.tool_calls)
        template_fields.say_unshown_tools(self.unshown.n, self.unshown.first and self.unshown.first.record, out,
                                          names)
        template_fields.say_dropped_reasoning(self.dropped.n, self.seen, self.dropped.first and
                                              self.dropped.first.record, out, names)
        if self.double_bos.n:
            out.add("TG541", "warning", f"{self.double_bos.n} of {self.seen} records start with the BOS token "
                    f"{tokenizer.bos_token!r} twice: the chat template writes it twice", "Write the BOS once in the "
                    "chat template ({{ bos_token }} or its literal text, not both); tunegate tokenises the rendered "
                    "text without adding another.", **self.double_bos.first.record.place(names))


def stop_ids(tokenizer: Any) -> set[int]:
    """The tokens that may end a trained reply: EOS and every special token but the pad."""
    ids = set(getattr(tokenizer, "all_special_ids", None) or [])
    for token_id, token in (getattr(tokenizer, "added_tokens_decoder", None) or {}).items():
        if getattr(token, "special", False):
            ids.add(token_id)
    if tokenizer.eos_token_id is not None:
        ids.add(tokenizer.eos_token_id)
    if tokenizer.pad_token_id is not None and tokenizer.pad_token_id != tokenizer.eos_token_id:
        ids.discard(tokenizer.pad_token_id)  # a pad token never ends a reply
    return ids


def _trained_runs(enc: EncodedChat) -> list[tuple[int, int]]:
    runs: list[tuple[int, int]] = []
    for i, label in enumerate(enc.labels):
        if label == IGNORE:
            continue
        if runs and runs[-1][1] == i:
            runs[-1] = (runs[-1][0], i + 1)
        else:
            runs.append((i, i + 1))
    return runs


def _reply_without_stop(enc: EncodedChat, stops: set[int]) -> bool:
    """A trained reply ends with what the template writes after it; a reply cut by truncation is not
    counted: its end is TG512's."""
    for start, stop in _trained_runs(enc):
        if stop == len(enc.input_ids) and enc.final_reply_cut:
            continue
        if not any(enc.labels[i] in stops for i in range(start, stop)):
            return True
    return False


def _last_trained_text(tokenizer: Any, enc: EncodedChat, stops: set[int]) -> str:
    runs = [r for r in _trained_runs(enc) if not any(enc.labels[i] in stops for i in range(*r))]
    start, stop = runs[0]
    return tokenizer.decode(enc.input_ids[max(start, stop - 6):stop])

"""Token audit: tokenise a whole split as the full run will, and report what truncation does to it.

Records of every format come in chat form through the one lenient reader; TRL's plain
prompt-completion text is tokenised without a chat template, as TRL does (`encode_plain`), and
replies with weight 0 (a TRL prompt's, or OpenAI's) are masked.

Counts per record: tokens before truncation, trainable (assistant) tokens after it, and whether
the final reply was cut. A record left with zero trainable tokens gives a NaN or a silent 0.0
loss in the full run (huggingface/trl#6668), so it is an error naming its line.
"""
from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tunegate.dataset.records import ChatRecord, read_chats
from tunegate.facts import TokenFacts
from tunegate.report import FindingCollector
from tunegate.training.chat_tokens import EncodedChat, TokenCounts, bounded_runs, encode_chats, encode_plain
from tunegate.training.split_judge import SplitJudge

# Records tokenised per file. Rendering and tokenising ~20k chats takes a few seconds on one core;
# beyond that a uniform sample of this size gives percentiles within a fraction of a percent.
AUDIT_LIMIT = 20_000
HISTOGRAM_BINS = 40  # enough to see a tail past max_seq_len, few enough to read in a report
BATCH, BATCH_CHARS = 256, 262_144  # conversations per batch of the audit, and their characters
# Message characters of the sample an audit that lets tokens go keeps (samples, the mini-run): ~8-32 MB
# of text however long the records are; 20,000 records of 5,000 characters would be 100 MB.
AUDIT_CHARS = 8_000_000
# Truncation's two warnings: a record cut at max_seq_len, its final reply cut. A sweep's table and
# its MLflow runs list them first among a candidate's warnings (tunegate.tracking.warning_counts).
RECORD_TRUNCATED, FINAL_REPLY_CUT = "TG511", "TG512"
TRUNCATION_CODES = (RECORD_TRUNCATED, FINAL_REPLY_CUT)


@dataclass(frozen=True)
class AuditedRecord:
    record: ChatRecord
    # None when the record is empty or the template rejects it; its counts alone when the audit let its tokens go
    encoded: EncodedChat | TokenCounts | None

    @property
    def usable(self) -> bool:
        return (self.encoded is not None and self.encoded.trainable_tokens > 0
                and self.record.char_count() > 0)


def audit_split(path: Path | Sequence[Path], shown: str | Sequence[str], tokenizer: Any, max_seq_len: int,
                out: FindingCollector, limit: int = AUDIT_LIMIT, seed: int = 0, fmt: str = "auto",
                loss_on: str = "replies", keep_tokens: bool = True, budget_chars: int | None = None,
                each: Callable[[AuditedRecord], Any] | None = None) -> tuple[dict[str, Any], list[AuditedRecord]]:
    """Audit one split (a file, or several read in order); add findings to `out` and return its stats
    and the audited records.

    `shown` is how findings name the file (one name per file for several): each record's findings
    name its own file. `loss_on` is training.loss_on: "all" trains every token of a conversation
    (never of a prompt-completion record, whose prompt stays masked). Records are encoded and judged a
    batch at a time; with `keep_tokens` False each audited record keeps only its counts
    (`TokenCounts`: `encoded_again` gives any of them its tokens back), and `budget_chars` bounds the
    message characters of the sample kept (`read_chats`): together they bound the audit's memory
    whatever the records' length. Findings and stats are the same either way. `each` is called with
    every audited record while it still has its tokens."""
    names = [shown] if isinstance(shown, str) else list(shown)
    sample = read_chats(path, limit=limit, seed=seed, fmt=fmt, budget_chars=budget_chars)
    # Each kind of finding collected apart and merged in the order one pass over the whole list made them.
    encoding, per_record = FindingCollector(out.stage, out.cap), FindingCollector(out.stage, out.cap)
    judge = SplitJudge(tokenizer, names, out)
    audited: list[AuditedRecord] = []
    for batch in _batches(sample.records):
        for item in encode_batch(batch, tokenizer, max_seq_len, encoding, names, loss_on == "all"):
            _record_findings(item, max_seq_len, per_record, names)
            judge.judge(item)
            if each is not None:
                each(item)
            whole = keep_tokens or item.encoded is None
            audited.append(item if whole else AuditedRecord(item.record, item.encoded.counts()))
    out.absorb(encoding)
    out.absorb(per_record)
    if loss_on == "all":
        _check_weights_kept(sample.records, out, names)
    judge.report(out)
    if sample.sampled:
        out.add("TG531", "info", f"{' + '.join(names)} has {sample.total} records; the token audit tokenised a "
                f"uniform sample of {len(sample.records)}, so counts below are for the sample",
                "Nothing to fix; findings name records of the sample only.", file=names[0])
    stats = _stats(audited, sample.total, sample.sampled, max_seq_len)
    return stats, audited


def encoded_again(items: Sequence[AuditedRecord], tokenizer: Any, max_seq_len: int,
                  loss_on: str = "replies") -> list[AuditedRecord]:
    """`items` of an audit that let their tokens go, with their tokens, in order: encoded again, exactly
    as audited, since a record's encoding depends on it alone (tunegate.training.chat_tokens._pairs)."""
    again: list[AuditedRecord] = []
    for batch in _batches([a.record for a in items]):
        again.extend(encode_batch(batch, tokenizer, max_seq_len, FindingCollector("again"), ["again"],
                                  loss_on == "all"))
    return again


def _batches(records: list[ChatRecord]) -> Iterator[list[ChatRecord]]:
    """Runs of at most BATCH records and BATCH_CHARS characters (`bounded_runs`): what one batch holds
    encoded (~50 bytes a token) stays bounded however long the records are."""
    for start, stop in bounded_runs((r.char_count() for r in records), BATCH, BATCH_CHARS):
        yield records[start:stop]


def _render_errors() -> tuple[type[BaseException], ...]:
    """What a chat template raises on a record: jinja's own errors, and the Python errors its
    expressions raise at render time ('text' + 1 is a TypeError)."""
    from jinja2 import TemplateError

    return (TemplateError, TypeError, ValueError, ArithmeticError, LookupError)


def encode_batch(records: list[ChatRecord], tokenizer: Any, max_seq_len: int, out: FindingCollector,
                 names: Sequence[str], train_all: bool = False) -> list[AuditedRecord]:
    """One batch of records (at most BATCH) encoded, in their order; a record the template rejects is TG530."""
    chunk = [r for r in records if not r.plain]
    every = [train_all and not r.completion_only for r in chunk]
    try:
        encoded: list[EncodedChat | None] = list(encode_chats(tokenizer, [r.messages for r in chunk],
                                                              max_seq_len, every, [r.tools for r in chunk]))
    except _render_errors():
        encoded = [_encode_one(tokenizer, r, max_seq_len, out, names, e) for r, e in zip(chunk, every)]
    plain = [r for r in records if r.plain]
    pairs = [(r.messages[0]["content"], r.messages[1]["content"]) for r in plain]
    done = dict(zip(((r.file, r.index) for r in chunk + plain),
                    encoded + list(encode_plain(tokenizer, pairs, max_seq_len))))
    return [AuditedRecord(r, done[r.file, r.index]) for r in records]


def _encode_one(tokenizer: Any, record: ChatRecord, max_seq_len: int, out: FindingCollector,
                names: Sequence[str], train_all: bool = False) -> EncodedChat | None:
    from jinja2 import TemplateError

    try:
        return encode_chats(tokenizer, [record.messages], max_seq_len, [train_all], [record.tools])[0]
    except _render_errors() as exc:
        said = str(exc) if isinstance(exc, TemplateError) else f"{type(exc).__name__}: {exc}"
        out.add("TG530", "error", f"the chat template cannot render this record: {said}", _render_fix(said),
                **record.place(names))
        return None


def _render_fix(said: str) -> str:
    """The fix for the two rejections shipped templates raise most (Gemma's, Mistral v0.1's)."""
    text = said.lower()
    if "system" in text:
        return ("This template has no system role: put the system message's text at the start of the first "
                "user message (tunegate convert and TRL do not do it for you), or use a template with one.")
    if "alternate" in text:
        return ("This template needs user and assistant turns in strict alternation, starting with the user: "
                "merge consecutive turns of the same role into one, or use a template that accepts them.")
    return ("Reorder or merge the messages the way the template expects, or use a template that accepts them.")


def _record_findings(item: AuditedRecord, max_seq_len: int, out: FindingCollector, names: Sequence[str]) -> None:
    rec, enc = item.record, item.encoded
    place = rec.place(names)
    if rec.char_count() == 0:
        out.add("TG502", "error", "every message of this record has zero characters of content",
                "Remove the record or fill in its messages; an empty record trains on nothing.", **place)
        return
    if enc is None:
        return
    for index in enc.unplaced_replies:
        out.add("TG538", "warning", f"the assistant reply at message {index + 1} of {len(rec.messages)} is not in "
                "the text the chat template renders for the whole conversation (it rewrites or drops earlier "
                "replies), so it is not trained", "Mark the reply in the template with {% generation %} ... "
                "{% endgeneration %}, or give each reply its own record (the conversation up to it).", **place)
    if enc.trainable_tokens == 0:
        out.add("TG510", "error", _zero_trainable_message(enc, max_seq_len),
                "Shorten the earlier turns, drop the record, or raise training.max_seq_len; a record with "
                "no trainable tokens gives a NaN or a silent 0.0 loss.", **place)
        return
    if enc.full_length > max_seq_len:
        out.add(RECORD_TRUNCATED, "warning", f"record has {enc.full_length} tokens; truncation to max_seq_len "
                f"{max_seq_len} drops {enc.full_length - max_seq_len}", "Raise training.max_seq_len or "
                "shorten the record; the tokens past the limit are never trained on.", **place)
    if enc.final_reply_cut:
        out.add(FINAL_REPLY_CUT, "warning", f"the final assistant reply is cut by truncation to max_seq_len "
                f"{max_seq_len}, so the model never sees how it ends (nor learns to stop there)",
                "Raise training.max_seq_len or shorten the conversation before the last reply.", **place)


def _check_weights_kept(records: list[ChatRecord], out: FindingCollector, names: Sequence[str]) -> None:
    """TG542: loss_on all trains every token of a conversation, the replies a record weights 0 too."""
    weighted = [r for r in records if not r.plain and not r.completion_only
                and any(m.get("weight") == 0 for m in r.messages)]
    if weighted:
        out.add("TG542", "warning", f"{len(weighted)} of {len(records)} records have replies with weight: 0, but "
                "training.loss_on: all trains every token, those replies too", "Use training.loss_on: replies "
                "(axolotl: train_on_inputs: false) to honour the weights, or drop weight: 0 where the reply "
                "should be trained.", **weighted[0].place(names), key="training.loss_on")


def _zero_trainable_message(enc: EncodedChat, max_seq_len: int) -> str:
    if enc.first_reply_token is None:
        return "the chat template marks no token of this record as the assistant's: 0 trainable tokens"
    return (f"0 trainable tokens after truncation: the record has {enc.full_length} tokens and the "
            f"assistant's reply starts at token {enc.first_reply_token}, past max_seq_len {max_seq_len}")


def _stats(audited: list[AuditedRecord], total: int, sampled: bool, max_seq_len: int) -> dict[str, Any]:
    encoded = [a.encoded for a in audited if a.encoded is not None]
    lengths = sorted(e.full_length for e in encoded)
    kept = sum(e.kept for e in encoded)
    trainable = sum(e.trainable_tokens for e in encoded)
    scale = total / len(audited) if audited else 0.0  # extrapolate a sample to the whole file
    return {
        "records": total, "audited": len(audited), "sampled": sampled, "max_seq_len": max_seq_len,
        "tokens_min": lengths[0] if lengths else 0, "tokens_p50": _pct(lengths, 50),
        "tokens_p90": _pct(lengths, 90), "tokens_p99": _pct(lengths, 99),
        "tokens_max": lengths[-1] if lengths else 0,
        "tokens_mean": round(sum(lengths) / len(lengths), 2) if lengths else 0.0,
        "over_max_seq_len": sum(1 for n in lengths if n > max_seq_len),
        "final_reply_cut": sum(1 for e in encoded if e.final_reply_cut),
        "zero_trainable": sum(1 for e in encoded if e.trainable_tokens == 0),
        "train_tokens": round(kept * scale), "trainable_tokens": round(trainable * scale),
        "length_histogram": length_histogram(lengths, max_seq_len),
    }


def length_histogram(sorted_lengths: list[int], max_seq_len: int, bins: int = HISTOGRAM_BINS) -> dict[str, list[float]]:
    """Bins (a, b] over [0, the longest record or max_seq_len], one edge exactly at max_seq_len, so every bin
    is wholly kept or wholly truncated (the chart colours them so)."""
    if not sorted_lengths:
        return {"edges": [], "counts": []}
    top = max(sorted_lengths[-1] + 1, max_seq_len)
    below = max(1, min(bins, round(bins * max_seq_len / top)))
    edges = [max_seq_len * i / below for i in range(below + 1)]
    if top > max_seq_len:
        above = max(1, bins - below)
        edges += [max_seq_len + (top - max_seq_len) * i / above for i in range(1, above + 1)]
    counts = [0] * (len(edges) - 1)
    for n in sorted_lengths:
        counts[min(len(counts) - 1, max(0, bisect.bisect_left(edges, n) - 1))] += 1  # bins are (a, b]
    return {"edges": [round(e, 1) for e in edges], "counts": counts}


def _pct(sorted_values: list[int], q: float) -> int:
    if not sorted_values:
        return 0
    return sorted_values[min(len(sorted_values) - 1, math.ceil(q / 100 * len(sorted_values)) - 1)]


def token_facts(stats: dict[str, Any]) -> TokenFacts:
    """The training split's real token counts, as the estimate stage reads them."""
    records = stats["records"]
    return TokenFacts(train_tokens=stats["train_tokens"], trainable_tokens=stats["trainable_tokens"],
                      records=records, sampled=stats["sampled"], max_seq_len=stats["max_seq_len"],
                      mean_tokens_per_record=round(stats["train_tokens"] / records, 2) if records else 0.0)

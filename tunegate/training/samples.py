"""Representative records, rendered as the model will see them, with the trained tokens marked.

    print(render_samples(spec, split="train", n=5, seed=0), end="")   # what `tunegate samples` prints
    picked = representative(audited, n=5, seed=0)     # shortest, median, longest, then seeded random
    segments(tokenizer, picked[0].encoded)           # [(text, trained?), ...] in token order

The source asks users to review representative samples by hand before a full run; axolotl's
`preprocess --debug` shows its labels the same way. Records come from the token audit, so the
rendering, the masks and the truncation are exactly the full run's.
"""
from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any

from tunegate import progress
from tunegate.errors import UsageError
from tunegate.pathguard import shown
from tunegate.report import FindingCollector
from tunegate.spec.model import Spec
from tunegate.training.chat_tokens import IGNORE, EncodedChat
from tunegate.training.token_audit import AUDIT_CHARS, AuditedRecord, audit_split, encoded_again
from tunegate.training.tokenizer import TokenizerProblem, prepare_tokenizer


@dataclass(frozen=True)
class Sample:
    """One record picked for review, and why it was picked."""

    why: str  # "shortest", "median", "longest" or "random"
    audited: AuditedRecord


def representative(audited: list[AuditedRecord], n: int = 5, seed: int = 0) -> list[Sample]:
    """The shortest, median and longest record by tokens, then a seeded random draw of the rest."""
    usable = sorted((a for a in audited if a.encoded is not None),
                    key=lambda a: (a.encoded.full_length, a.record.file, a.record.index))
    if not usable or n <= 0:
        return []
    picks = [("shortest", usable[0]), ("median", usable[(len(usable) - 1) // 2]), ("longest", usable[-1])]
    chosen: list[Sample] = []
    for why, item in picks[:n]:
        if all(s.audited is not item for s in chosen):
            chosen.append(Sample(why, item))
    rest = [a for a in usable if all(s.audited is not a for s in chosen)]
    rest.sort(key=lambda a: (a.record.file, a.record.index))
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


def render_samples(spec: Spec, split: str = "train", n: int = 5, seed: int = 0, as_json: bool = False,
                   colour: bool = False, torch_free: bool = False) -> str:
    """`n` representative records of the spec's `split` (its file, or files) as text (or one JSON document).
    `torch_free`: the caller's process is its own and only tokenises, so the tokenizer loads without
    torch (tunegate.training.torch_free).

    Raises:
        UsageError: the spec's tokenizer cannot be loaded, has no chat template, or cannot pad.
    """
    tokenizer = _tokenizer(spec, torch_free)
    picked, stats = pick_samples(spec, tokenizer, split, n, seed)
    max_seq_len = spec.training.max_seq_len
    files = spec.data.files(split)
    names = [path.name for path in files] if len(files) > 1 else None
    if as_json:
        return json.dumps(samples_json(picked, tokenizer, max_seq_len, names), indent=2, ensure_ascii=False) + "\n"
    head = (f"{len(picked)} of {stats['records']} records of {' + '.join(map(shown, files))} (tokens p50 "
            f"{stats['tokens_p50']}, max {stats['tokens_max']}; {stats['over_max_seq_len']} over max_seq_len "
            f"{max_seq_len})\n")
    return head + "".join(sample_text(sample, tokenizer, max_seq_len, colour, names) for sample in picked)



def _tokenizer(spec: Spec, torch_free: bool = False) -> Any:
    """The spec's tokenizer prepared as the trainers prepare it; a problem is a usage error here."""
    prepared = prepare_tokenizer(spec, torch_free=torch_free)
    if not isinstance(prepared, TokenizerProblem):
        return prepared.tokenizer
    if prepared.kind == "cannot_load":
        raise UsageError(f"the tokenizer of model.id {spec.model.id!r} cannot be loaded: {prepared.error}")
    if prepared.kind == "no_chat_template":
        raise UsageError(f"the tokenizer of {spec.model.id!r} has no chat template: nothing to render")
    raise UsageError(str(prepared.error))


def pick_samples(spec: Spec, tokenizer: Any, split: str, n: int, seed: int) -> tuple[list[Sample], dict[str, Any]]:
    """The token audit of the split's files (its stats) and `n` representative records of it.

    The audit keeps each record's counts, not its tokens, and a sample of at most AUDIT_CHARS
    characters; only the picked records are encoded again with their tokens: `samples` stays in
    bounded memory however long the records are (1,088 MB for 25,000 records of ~1,000 tokens before)."""
    paths = spec.data.files(split)
    # Every record is read (a uniform sample of token_audit.AUDIT_LIMIT is kept and tokenised): minutes on
    # millions of records, so the step shows how long it has run.
    with progress.step(f"token audit of {' + '.join(shown(p.name) for p in paths)}"):
        stats, audited = audit_split(paths, [str(p) for p in paths], tokenizer, spec.training.max_seq_len,
                                     FindingCollector("samples"), seed=seed, fmt=spec.data.format,
                                     loss_on=spec.training.loss_on, keep_tokens=False, budget_chars=AUDIT_CHARS)
    picked = representative(audited, n, seed)
    again = encoded_again([s.audited for s in picked], tokenizer, spec.training.max_seq_len, spec.training.loss_on)
    return [Sample(s.why, item) for s, item in zip(picked, again)], stats


def sample_text(sample: Sample, tokenizer: Any, max_seq_len: int, colour: bool,
                names: list[str] | None = None) -> str:
    """One record: a header with its counts, its text with trained tokens marked, and what truncation cut.
    `names`: the split's file names when it has several (the header then says the record's file)."""
    enc, rec = sample.audited.encoded, sample.audited.record
    where = f"line {rec.line}" if rec.line else f"row {rec.index}"
    where = f"{names[rec.file]} {where}" if names else where
    head = (f"\n── record {rec.index} ({where}, {sample.why}): {enc.full_length} tokens / max_seq_len {max_seq_len}, "
            f"{enc.trainable_tokens} trained ──\n")
    body = "".join(f"\x1b[32m{text}\x1b[0m" if colour and trained else f"⟦{text}⟧" if trained else text
                   for text, trained in segments(tokenizer, enc))
    cut = cut_text(tokenizer, enc)
    tail = ""
    if cut:
        final = " (the final reply is cut)" if enc.final_reply_cut else ""
        tail = f"\n  truncation cut {len(enc.cut)} tokens{final}: {cut!r}"
    return head + body + tail + "\n"


def samples_json(picked: list[Sample], tokenizer: Any, max_seq_len: int,
                 names: list[str] | None = None) -> dict[str, Any]:
    """The picked records as `tunegate samples --json` writes them (with each one's `file` when the split
    has several, `names`)."""
    return {"max_seq_len": max_seq_len, "samples": [{
        "why": s.why, **({"file": names[s.audited.record.file]} if names else {}),
        "record": s.audited.record.index, "line": s.audited.record.line or None,
        "tokens": s.audited.encoded.full_length, "trained_tokens": s.audited.encoded.trainable_tokens,
        "segments": [{"text": t, "trained": tr} for t, tr in segments(tokenizer, s.audited.encoded)],
        "cut_tokens": len(s.audited.encoded.cut), "cut": cut_text(tokenizer, s.audited.encoded),
        "final_reply_cut": s.audited.encoded.final_reply_cut} for s in picked]}

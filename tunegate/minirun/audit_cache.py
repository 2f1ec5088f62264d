"""A sweep's token audit done once: each candidate's mini-run reads back what an earlier one audited.

    with audit_cache.kept_in(folder):        # the sweep, around a candidate's mini-run (its token folder)
        check(parsed, only={"mini-run"}, facts=facts)
    audited = audit_cache.read(key)          # tunegate.minirun.session: None -> audit, then keep(key, audited)

Why: every candidate's mini-run tokenised both splits' audit sample again (up to 20,000 records or 8
M characters a split: seconds a candidate on real data, 0.05 CPU s on the tiny model's 105 records),
though candidates that change only hyperparameters audit the same records with the same tokenizer
to the same counts and findings. Issue 33 asks for the data tokenised once; the trainers already
share their encoding (tunegate.fullrun.token_cache), and this does the same for the audit.

What is kept, per split: the stats, every audited record (its place, messages and tools, its token
counts), and once the findings the audit added (those kept, the totals per code, their severities)
and the EOS labels lost to padding (TG505), as JSON, under the key of everything the encoding
depends on (`tunegate.training.data_key`) and the audit's own settings: the files as the mini-run
reads them, the sample's bounds, the findings' cap. A copy that does not read back whole is ignored
(the candidate audits), as is a record that would not survive JSON (the candidate audits, and keeps
nothing). The folder is the sweep's token folder (`audits/` in it), removed with it when the
candidates are done; it keeps the KEEP most recently used copies meanwhile (`kept_copies`).
"""
from __future__ import annotations

import contextlib
import contextvars
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from tunegate.dataset.records import ChatRecord
from tunegate.processes.held_collections import collections_paused
from tunegate.report import Finding, FindingCollector
from tunegate.training.chat_tokens import TokenCounts
from tunegate.training.kept_copies import keep_whole, recently_used
from tunegate.training.token_audit import AuditedRecord

KEEP = 2  # audits kept in the folder: a sweep's, and one of another max_seq_len (or an edit of the data)
ROLES = ("train", "validation")

_FOLDER: contextvars.ContextVar[Path | None] = contextvars.ContextVar("tunegate_audit_folder", default=None)


@dataclass
class Audited:
    """Both splits' token audit: what the mini-run goes on with."""

    stats: dict[str, dict[str, Any]]  # per split, the report's token_audit
    found: dict[str, list[AuditedRecord]]  # per split, the audited records (their counts, not their tokens)
    findings: FindingCollector  # what the audit added, to be absorbed into the stage's findings
    lost: int  # EOS labels equal to the pad id (TG505)


@contextlib.contextmanager
def kept_in(folder: str | Path | None) -> Iterator[None]:
    """Within it (this thread), a mini-run keeps and reads its audit in `folder`/audits (None: nowhere)."""
    token = _FOLDER.set(Path(folder) / "audits" if folder else None)
    try:
        yield
    finally:
        _FOLDER.reset(token)


def active() -> bool:
    """Whether a mini-run here keeps its audit (a sweep's candidate)."""
    return _FOLDER.get() is not None


def read(key: str) -> Audited | None:
    """The audit kept under `key`, or None (none kept, or it does not read back whole)."""
    folder = _FOLDER.get()
    if folder is None:
        return None
    path = recently_used(folder, key)
    try:
        with collections_paused():  # records are dicts and lists, never a cycle
            body = orjson.loads(path.read_bytes())
            if body["key"] != key:
                return None
            found = {role: [_record(r) for r in body["found"][role]] for role in ROLES}
            audited = Audited(stats=body["stats"], found=found, findings=_collector(body["findings"]),
                              lost=int(body["lost"]))
    except (OSError, orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        return None
    return audited


def keep(key: str, audited: Audited) -> None:
    """Keep the audit under `key` for the next candidate (nothing is kept where it cannot be)."""
    folder = _FOLDER.get()
    if folder is None:
        return
    try:
        with collections_paused():
            body = orjson.dumps({"key": key, "stats": audited.stats, "lost": audited.lost,
                                 "found": {role: [_row(a) for a in audited.found[role]] for role in ROLES},
                                 "findings": _rows(audited.findings)})
    except TypeError:  # a value JSON cannot hold as it is: the next candidate audits its own
        return
    keep_whole(folder, key, body, most=KEEP)


def _row(item: AuditedRecord) -> list[Any]:
    r, counts = item.record, item.encoded
    if counts is not None and not isinstance(counts, TokenCounts):
        counts = counts.counts()  # an audit that kept tokens: its counts are what the mini-run reads
    return [r.line, r.index, r.messages, r.plain, r.completion_only, r.tools, r.file,
            None if counts is None else [counts.full_length, counts.kept, counts.trainable_tokens,
                                         counts.final_reply_cut]]


def _record(row: list[Any]) -> AuditedRecord:
    line, index, messages, plain, completion_only, tools, file, counts = row
    record = ChatRecord(int(line), int(index), list(messages), plain=bool(plain),
                        completion_only=bool(completion_only), tools=tools, file=int(file))
    return AuditedRecord(record, None if counts is None else TokenCounts(int(counts[0]), int(counts[1]),
                                                                         int(counts[2]), bool(counts[3])))


def _rows(findings: FindingCollector) -> dict[str, Any]:
    return {"stage": findings.stage, "cap": findings.cap, "totals": dict(findings.totals),
            "severities": findings.severities, "kept": [f.model_dump(mode="json") for f in findings.kept]}


def _collector(rows: dict[str, Any]) -> FindingCollector:
    findings = FindingCollector(str(rows["stage"]), int(rows["cap"]))
    findings.kept = [Finding.model_validate(f) for f in rows["kept"]]
    findings.totals = Counter({str(code): int(n) for code, n in rows["totals"].items()})
    findings.severities = dict(rows["severities"])
    return findings

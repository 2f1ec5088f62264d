"""The dataset contract in the stage's hot loop: a fast scan of OpenAI chat records, and findings.

The contract itself, per format and in each format's own field names, lives in
`tunegate.formats` (one code per rule, documented in docs/checks.md). This module holds what the
dataset stage needs around it:
- `scan`, the hot path for the commonest case, `{"messages": [{"role", "content"}, ...]}`: one pass
  over the messages that both checks and gathers the per-role character counts, without raising
  for any shape. Anything it is not sure of (another role, extra message keys, content parts,
  a `{{`) goes to the format's full check;
- `Explainer`, which turns a record's problems into findings with their line, column and fix.
"""
from __future__ import annotations

from typing import Any

from tunegate import formats
from tunegate.dataset.json_line import locate, shift
from tunegate.formats import other_types, shape
from tunegate.formats.turns import NOTHING_TRAINED, ends_early
from tunegate.native import compiled
from tunegate.report import FindingCollector

ROLES = ("system", "user", "assistant")

# What `scan` concludes about a record's messages, worst first. ENDS_EARLY: the only problem is
# that the last message is not the assistant's (TG204), the commonest defect, so it skips the full check.
BROKEN, SHAPED, ENDS_EARLY, CLEAN = 0, 1, 2, 3


def python_scan(msgs: Any, lengths: dict[str, list[int]]) -> int:
    """CLEAN when `msgs` meets the contract's rules on roles and text (warnings included) and has a
    user turn; ENDS_EARLY when only the last turn is wrong; SHAPED when every message is an object
    with a string role and content but the full check must look; BROKEN otherwise. The caller
    sends a CLEAN record whose messages have other keys, or whose line holds a `{{`, to the full
    check too (one count over the line instead of a test per message).

    Appends each system/user/assistant message's content length to `lengths[role]` either way.
    """
    if type(msgs) is not list:
        return BROKEN
    ok, shaped, prev, user = True, True, "", False
    for m in msgs:
        if type(m) is not dict:
            ok = shaped = False
            prev = ""
            continue
        role, content = m.get("role"), m.get("content")
        if type(role) is not str or type(content) is not str:
            ok = shaped = False
            prev = ""
            continue
        sink = lengths.get(role)
        if sink is None:
            ok, prev = False, ""
            continue
        sink.append(len(content))
        if not content or content.isspace() or (role == "system" and prev) or role == prev == "assistant":
            ok = False
        elif role == "user":
            user = True
        prev = role
    if ok and user and len(msgs) >= 2:
        return CLEAN if prev == "assistant" else ENDS_EARLY
    return SHAPED if shaped else BROKEN


# The same verdicts and appends, a message at a time in compiled code (tunegate/native/scan.c).
scan = compiled.scan if compiled is not None else python_scan

class Explainer:
    """Turns a record's contract problems into findings with their place and fix."""

    def __init__(self, out: FindingCollector, file: str, trains_all: bool = False, stats: Any = None):
        self.out = out
        self.file = file
        self.trains_all = trains_all
        self.stats = stats  # the file's SplitStats: counts the records refused as language-modeling text

    def explain(self, raw: bytes, record: dict, line: int, index: int, fmt: str) -> None:
        """Report every contract problem of one record read as `fmt`."""
        for p in formats.problems(record, fmt):
            # A record that trains its completion only, whatever loss_on says, keeps its TG265.
            if p.code == NOTHING_TRAINED and self.trains_all and formats.INFO[fmt].trains_every_token:
                continue  # every reply weighted 0, but training.loss_on: all trains it anyway (TG542 warns)
            self._report(p, raw, line, index)

    def last_turn(self, raw: bytes, msgs: list, line: int, index: int) -> None:
        """Report TG204 when the last of two or more messages is a user or system turn."""
        last = msgs[-1] if len(msgs) >= 2 else None
        if type(last) is not dict or last.get("role") not in ("user", "system"):
            return
        self._report(ends_early(("messages", len(msgs) - 1, "role"), "message", last["role"]), raw, line, index)

    def no_format(self, raw: bytes, record: dict, line: int, index: int, fmt: str | None) -> None:
        """TG200: the record has the keys of no format tunegate reads (TG271: those of a type it does not gate)."""
        other = other_types.not_sft(record)
        if other is not None:
            self._report(other, raw, line, index)
            return
        if self.out.full(shape.NO_FORMAT):  # past the cap: count, do not explain (10M `{}` lines show 20)
            self.out.count(shape.NO_FORMAT, "error")
            return
        known = "; ".join(formats.LABELS[f] for f in formats.FORMATS)
        expected = f"the file is {formats.LABELS[fmt]}" if fmt else f"tunegate reads {known}"
        self._report(shape.not_in_format(record, "is in no format tunegate reads", "Give the record the keys of its "
                                         "format (e.g. \"messages\": [{\"role\", \"content\"}, ...]), or drop it; "
                                         "set data.format when the file's keys are named differently.",
                                         after=f"; {expected}"), raw, line, index)

    def mixed(self, raw: bytes, line: int, index: int, own: str, fmt: str | None, file_format: Any) -> None:
        """TG260: the record is in another format than the file."""
        since = (f"data.format is {fmt!r}" if file_format.declared != formats.AUTO
                 else f"the file is {formats.LABELS[fmt or '']} from line {file_format.first_line}")
        self._add("TG260", "error", raw, (), line, index, f"record is {formats.LABELS[own]} but {since}: a file holds "
                  "one format", "Convert the odd records (`tunegate convert IN OUT --to messages` writes any format "
                  "as OpenAI chat), or split the file by format; a trainer reads every record the one way.")

    def report(self, p: formats.Problem, raw: bytes, line: int, index: int) -> None:
        """Report one problem of the record on `line` at its place."""
        self._report(p, raw, line, index)

    def _report(self, p: formats.Problem, raw: bytes, line: int, index: int) -> None:
        if p.path == other_types.TEXT_PATH and p.code == other_types.OTHER_TYPE and self.stats is not None:
            self.stats.text_records += 1  # past the cap too: the stage compares it with TG271's total
        self._add(p.code, p.severity, raw, p.path, line, index, p.message, p.hint)

    def _add(self, code: str, severity: Any, raw: bytes, path: tuple, line: int, index: int, message: str,
             hint: str) -> None:
        # Placing a finding re-scans the line (its column, its line in a pretty-printed file): only
        # for findings that will be shown. A record with 100,000 bad turns is counted, not placed
        # 100,000 times (that took 30 s for one 1.3 MB line).
        if self.out.full(code):
            self.out.count(code, severity)
            return
        column = locate(raw, path) if path else 1
        if line:
            line, column = shift(raw, line, column)
        self.out.add(code, severity, message, hint, file=self.file, line=line or None, column=column if line else None,
                     record=index)

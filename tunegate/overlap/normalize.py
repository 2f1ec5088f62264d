"""The normalised text of a chat record, the form the overlap stage compares.

Two records are "the same" when they differ only in Unicode compatibility forms (NFKC: full-width
letters, ligatures, non-breaking spaces), letter case (casefold) or whitespace (runs collapsed to
one space, ends stripped). Roles are kept: the same words said by the user and by the assistant
are different records.

The normalised record is one message per line, `role<TAB>text`. Both separators are whitespace,
which normalisation removes from roles and texts, so the form is unambiguous.
"""
from __future__ import annotations

import unicodedata
from typing import Any, NamedTuple


class NormalRecord(NamedTuple):
    """A record cut at its final assistant turn, normalised.

    `prompt` is every message before the final assistant message ("" when there is none), and
    `answer` is that message's text. When the record does not end with an assistant message (the
    dataset stage reports that), `prompt` holds every message and `answer` is None.
    """

    prompt: str
    answer: str | None

    @property
    def text(self) -> str:
        """The whole record, normalised (what exact and near-duplicate checks compare)."""
        last = "" if self.answer is None else f"assistant\t{self.answer}"
        return f"{self.prompt}\n{last}" if self.prompt and last else self.prompt or last


def normal_text(text: str) -> str:
    """NFKC, casefold, and collapse every whitespace run to one space."""
    if not text.isascii():
        return " ".join(unicodedata.normalize("NFKC", text).casefold().split())
    text = text.lower()  # ASCII: NFKC is the identity and casefold is lower()
    # Most texts have normal spacing already; a few C-speed scans are ~3x cheaper than split/join.
    if ("  " in text or "\n" in text or "\t" in text or "\r" in text or "\x0b" in text or "\x0c" in text
            or "\x1c" in text or "\x1d" in text or "\x1e" in text or "\x1f" in text
            or text[:1] == " " or text[-1:] == " "):
        return " ".join(text.split())
    return text


def normalise_record(record: Any) -> NormalRecord | None:
    """The normalised form of a chat record, or None when it has no readable `messages`.

    Records reach the overlap stage before anyone guarantees the chat contract, so anything
    unexpected (no list, a message that is not an object, content that is not text) gives None
    instead of an exception.
    """
    messages = record.get("messages") if isinstance(record, dict) else None
    if not isinstance(messages, list) or not messages:
        return None
    lines: list[str] = []
    for message in messages:
        line = _message_line(message)
        if line is None:
            return None
        lines.append(line)
    role, _, answer = lines[-1].partition("\t")
    if role != "assistant":
        return NormalRecord("\n".join(lines), None)
    return NormalRecord("\n".join(lines[:-1]), answer)


_ROLES = {r: r for r in ("system", "user", "assistant", "tool")}  # skip normalising the usual roles


def _message_line(message: Any) -> str | None:
    if not isinstance(message, dict):
        return None
    role, content = message.get("role"), message.get("content")
    if not isinstance(role, str):
        return None
    text = content if isinstance(content, str) else _content_text(content)
    if text is None:
        return None
    return f"{_ROLES.get(role) or normal_text(role)}\t{normal_text(text)}"


def _content_text(content: Any) -> str | None:
    """Plain text of a message: a string, or the text parts of an OpenAI-style parts list."""
    if isinstance(content, str):
        return content
    if content is None:
        return ""
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, dict)]
        return " ".join(p for p in parts if isinstance(p, str))
    return None


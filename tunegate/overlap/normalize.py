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


# Whitespace that str.split() cuts on and that survives NFKC + casefold: these ASCII controls and,
# beyond ASCII, only U+0085, U+1680, U+2028 and U+2029 (NFKC turns every other Unicode space into
# U+0020; tests/overlap/test_normalize.py checks both lists against the Unicode database).
_ASCII_SPACES = "\t\n\r\x0b\x0c\x1c\x1d\x1e\x1f"
_OTHER_SPACES = ("\x85", "\u1680", "\u2028", "\u2029")


def normal_text(text: str) -> str:
    """NFKC, casefold, and collapse every whitespace run to one space (as " ".join(text.split()))."""
    if text.isascii():
        text = text.lower()  # ASCII: NFKC is the identity and casefold is lower()
    else:
        text = unicodedata.normalize("NFKC", text).casefold()
        if not text.isprintable() and any(c in text for c in _OTHER_SPACES):
            return " ".join(text.split())
    # Cheaper than split/join (which builds a string per word): only the space is printable
    # whitespace, so a printable text needs only its double spaces and ends fixed.
    if not text.isprintable():
        for c in _ASCII_SPACES:
            if c in text:
                text = text.replace(c, " ")
    while "  " in text:
        text = text.replace("  ", " ")
    return text.strip(" ")


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
    for message in messages:  # one loop, no call per message: this runs for every message of both splits
        if not isinstance(message, dict):
            return None
        role, content = message.get("role"), message.get("content")
        if not isinstance(role, str):
            return None
        text = content if isinstance(content, str) else _content_text(content)
        if text is None:
            return None
        lines.append(f"{_ROLES.get(role) or normal_text(role)}\t{normal_text(text)}")
    role, _, answer = lines[-1].partition("\t")
    if role != "assistant":
        return NormalRecord("\n".join(lines), None)
    return NormalRecord("\n".join(lines[:-1]), answer)


_ROLES = {r: r for r in ("system", "user", "assistant", "tool")}  # skip normalising the usual roles


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


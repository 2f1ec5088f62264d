"""The normalised text of a chat record, the form the overlap stage compares.

Two records are "the same" when they differ only in Unicode compatibility forms (NFKC: full-width
letters, ligatures, non-breaking spaces), letter case (casefold) or whitespace (runs collapsed to
one space, ends stripped). Roles are kept: the same words said by the user and by the assistant
are different records.

The normalised record is one message per line, `role<TAB>text`. Both separators are whitespace,
which normalisation removes from roles and texts, so the form is unambiguous.
"""
from __future__ import annotations

import re
import unicodedata
from typing import Any, NamedTuple

from tunegate.native import compiled


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


class NormalBytes(NamedTuple):
    """A NormalRecord as UTF-8 bytes (lone surrogates kept, "surrogatepass"): what the hashes and
    the near-duplicate pass take, built without a str of the whole record."""

    prompt: bytes
    answer: bytes | None

    @property
    def text(self) -> bytes:
        """The whole record, normalised: `NormalRecord.text`, encoded."""
        if self.answer is None:
            return self.prompt
        return self.prompt + b"\nassistant\t" + self.answer if self.prompt else b"assistant\t" + self.answer


# Whitespace that str.split() cuts on and that survives NFKC + casefold: these ASCII controls and,
# beyond ASCII, only U+0085, U+1680, U+2028 and U+2029 (NFKC turns every other Unicode space into
# U+0020; tests/overlap/test_normalize.py checks both lists against the Unicode database).
_ASCII_SPACES = "\t\n\r\x0b\x0c\x1c\x1d\x1e\x1f"
_OTHER_SPACES = ("\x85", "\u1680", "\u2028", "\u2029")
# The ASCII ones to a space, in one pass over the UTF-8 bytes (bytes below 0x80 are never part of
# a longer character's encoding, so no other character is touched).
_TO_SPACE = bytes.maketrans(_ASCII_SPACES.encode(), b" " * len(_ASCII_SPACES))
_SPACE_RUNS = re.compile(b"  +")


def normal_text(text: str) -> str:
    """NFKC, casefold, and collapse every whitespace run to one space (as " ".join(text.split()))."""
    return normal_bytes(text).decode("utf-8", "surrogatepass")


def normal_bytes(text: str) -> bytes:
    """`normal_text(text)` as UTF-8 bytes (lone surrogates pass through rather than raise)."""
    if compiled is not None:  # the same bytes, in one compiled pass (tunegate/native/normalise.c)
        return compiled.normal_bytes(text, unicodedata.normalize)
    return python_normal_bytes(text)


def python_normal_bytes(text: str) -> bytes:
    """The definition of `normal_bytes`, in Python: what runs where the extension is not built."""
    if text.isascii():
        text = text.lower()  # ASCII: NFKC is the identity and casefold is lower()
    else:
        text = unicodedata.normalize("NFKC", text).casefold()
    if text.isprintable():  # only the space is printable whitespace: no control to replace
        data = text.encode("utf-8", "surrogatepass")
    elif any(c in text for c in _OTHER_SPACES):  # rare: a space only str.split() knows
        return " ".join(text.split()).encode("utf-8", "surrogatepass")
    else:
        data = text.encode("utf-8", "surrogatepass").translate(_TO_SPACE)
    # One regex pass over the runs: cheaper than split/join (an object per word) and than replacing
    # double spaces until none is left (a pass per halving; paragraph breaks make most texts need 2-3).
    if b"  " in data:
        data = _SPACE_RUNS.sub(b" ", data)
    return data.strip(b" ")


def normalise_record(record: Any) -> NormalRecord | None:
    """The normalised form of a chat record, or None when it has no readable `messages`.

    Records reach the overlap stage before anyone guarantees the chat contract, so anything
    unexpected (no list, a message that is not an object, content that is not text) gives None
    instead of an exception.
    """
    norm = normalise_record_bytes(record)
    if norm is None:
        return None
    answer = None if norm.answer is None else norm.answer.decode("utf-8", "surrogatepass")
    return NormalRecord(norm.prompt.decode("utf-8", "surrogatepass"), answer)


def normalise_record_bytes(record: Any) -> NormalBytes | None:
    """`normalise_record(record)`, encoded: the form the overlap observers hash (see NormalBytes)."""
    if compiled is not None:  # the same bytes, the record in one compiled call (tunegate/native/normalise.c)
        pair = compiled.normalise_record(record, unicodedata.normalize)
        return None if pair is None else NormalBytes(*pair)
    return python_normalise_record_bytes(record)


def normal_parts(record: Any) -> tuple[bytes, int, int] | None:
    """`normalise_record_bytes(record)` in one piece: (its `text`, where its prompt ends, where its
    answer starts or -1 without one), so text[:prompt_end] is the prompt and text[answer_start:]
    the answer. What the overlap observer hashes and sketches: no answer copied out, no whole
    record put back together (None when the record has no readable messages)."""
    if _parts is not None:  # tunegate/native/normalise.c
        return _parts(record, unicodedata.normalize)  # type: ignore[no-any-return]
    norm = normalise_record_bytes(record)
    if norm is None:
        return None
    if norm.answer is None:
        return norm.prompt, len(norm.prompt), -1
    text = norm.text
    return text, len(norm.prompt), len(text) - len(norm.answer)


# An extension built before normalise_parts existed: the parts are taken from normalise_record's pair.
_parts = getattr(compiled, "normalise_parts", None)


def python_normalise_record_bytes(record: Any) -> NormalBytes | None:
    """The definition of `normalise_record_bytes`, in Python (see python_normal_bytes)."""
    messages = record.get("messages") if isinstance(record, dict) else None
    if not isinstance(messages, list) or not messages:
        return None
    lines: list[bytes] = []
    for message in messages:  # one loop, no call per message: this runs for every message of both splits
        if not isinstance(message, dict):
            return None
        role, content = message.get("role"), message.get("content")
        if not isinstance(role, str):
            return None
        text = content if isinstance(content, str) else _content_text(content)
        if text is None:
            return None
        lines.append((_ROLES.get(role) or python_normal_bytes(role) + b"\t") + python_normal_bytes(text))
    role, _, answer = lines[-1].partition(b"\t")
    if role != b"assistant":
        return NormalBytes(b"\n".join(lines), None)
    return NormalBytes(b"\n".join(lines[:-1]), answer)


# The usual roles, already normal, with their tab: not normalised again for every message.
_ROLES = {r: f"{r}\t".encode() for r in ("system", "user", "assistant", "tool")}


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


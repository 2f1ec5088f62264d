"""Regenerate this folder's files (each has exactly one documented defect; see README.md).

    python tests/data/dataset/make_corpus.py

The files are committed; this script only documents how each byte sequence was made.
"""
from __future__ import annotations

import bz2
import gzip
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
BAD, GOOD = HERE / "bad", HERE / "good"


def rec(question: str, answer: str, **extra) -> dict:
    return {"messages": [{"role": "user", "content": question},
                         {"role": "assistant", "content": answer}], **extra}


def line(record: dict) -> bytes:
    return json.dumps(record, ensure_ascii=False).encode() + b"\n"


def good(n: int) -> bytes:
    """A distinct valid record (so no file trips the duplicate-record warning by accident)."""
    return line(rec(f"How do I reset password number {n}?", f"Open Settings > Security, step {n}."))


def msgs(*pairs: tuple[str, object]) -> dict:
    return {"messages": [{"role": r, "content": c} for r, c in pairs]}


BAD_FILES: dict[str, bytes] = {
    "missing_messages.jsonl": good(1) + line({"question": "hi", "answer": "hello"}),
    "mixed_formats.jsonl": good(1) + line({"conversations": [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "hello"}]}),
    "messages_not_list.jsonl": good(1) + b'{"messages": "user: hi / assistant: hello"}\n',
    "one_message.jsonl": good(1) + good(2) + line(msgs(("assistant", "Hello!"))),
    "message_not_object.jsonl": b'{"messages": [{"role": "user", "content": "hi"}, "hello"]}\n' + good(1),
    "last_from_user.jsonl": good(1) + line(msgs(("user", "hi"), ("assistant", "hello"), ("user", "thanks"))),
    "unknown_role.jsonl": good(1) + line(msgs(("human", "hi"), ("assistant", "hello"))),
    "missing_role.jsonl": good(1) + b'{"messages": [{"content": "hi"}, {"role": "assistant", "content": "hello"}]}\n',
    "content_not_string.jsonl": good(1) + line(msgs(("user", {"text": "hi"}), ("assistant", "hello"))),
    "missing_content.jsonl": good(1) + b'{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant"}]}\n',
    "empty_content.jsonl": good(1) + line(msgs(("user", "hi"), ("assistant", ""))),
    "whitespace_content.jsonl": good(1) + line(msgs(("user", " \n\t "), ("assistant", "hello"))),
    "system_not_first.jsonl": good(1) + line(msgs(("user", "hi"), ("system", "Be brief."), ("assistant", "hello"))),
    "two_assistant_turns.jsonl": good(1) + line(msgs(("user", "hi"), ("assistant", "hello"), ("assistant", "anyone?"))),
    "duplicate_record.jsonl": good(1) + good(2) + good(1),
    "unread_message_key.jsonl": good(1) + b'{"messages": [{"role": "user", "content": "hi", "foo": "bar"}, '
                                           b'{"role": "assistant", "content": "hello"}]}\n',
    "trailing_comma.jsonl": good(1) + b'{"messages": [{"role": "user", "content": "hi"},]}\n',
    "pretty_printed.jsonl": json.dumps(rec("hi", "hello"), indent=2).encode() + b"\n",
    "two_records_one_line.jsonl": good(1).rstrip(b"\n") + b" " + good(2),
    "python_repr.jsonl": good(1) + repr(rec("hi", "hello")).encode() + b"\n",
    "invalid_utf8.jsonl": good(1) + b'{"messages": [{"role": "user", "content": "caf\xe9"}, {"role": "assistant", "content": "ok"}]}\n',
    "nul_byte.jsonl": good(1) + b'{"messages": [{"role": "user", "content": "hi\x00"}, {"role": "assistant", "content": "ok"}]}\n',
    "nan_literal.jsonl": good(1) + b'{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"}], "score": NaN}\n',
    "negative_infinity.jsonl": good(1) + b'{"messages": [], "score": -Infinity}\n',
    "number_overflow.jsonl": good(1) + b'{"messages": [], "score": 1e400}\n',
    "exponent_past_range.jsonl": good(1) + line(rec("hi", "ok", score=0)).replace(b'"score": 0', b'"score": 1e-400000000000000000000'),
    "deep_nesting.jsonl": good(1) + b'{"messages": ' + b"[" * 2000 + b"]" * 2000 + b"}\n",
    "lone_surrogate.jsonl": good(1) + b'{"messages": [{"role": "user", "content": "cut emoji \\ud83d"}, {"role": "assistant", "content": "ok"}]}\n',
    "duplicate_key.jsonl": good(1) + b'{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Yes.", "content": "No."}]}\n',
    "not_object.jsonl": good(1) + b'"user: hi"\n',
    "empty.jsonl": b"",
    "blank_only.jsonl": b"\n  \n\r\n\t\n",
    "json_array.jsonl": b"[\n" + json.dumps(rec("hi", "hello")).encode() + b",\n" + json.dumps(rec("yo", "hey")).encode() + b"\n]\n",
    "json_array_one_line.jsonl": json.dumps([rec("hi", "hello"), rec("yo", "hey")]).encode() + b"\n",
    "bom.jsonl": b"\xef\xbb\xbf" + good(1) + good(2),
    "utf16.jsonl": (good(1) + good(2)).decode().encode("utf-16"),
    "bzip2.jsonl": bz2.compress(good(1) + good(2)),
    "truncated.jsonl.gz": gzip.compress(good(1) + good(2) + good(3), mtime=0)[:-12],
    "blank_run.jsonl.gz": gzip.compress(good(1) + b"\n" * 10_001 + good(2), mtime=0),
}

LONG = "This paragraph explains the refund policy in detail. " * 400  # ~21 kB per turn
GOOD_FILES: dict[str, bytes] = {
    "persian_rtl.jsonl": line(msgs(("user", "سلام، سفارشم کی می‌رسد؟"), ("assistant", "سلام! سفارش شما فردا تحویل داده می‌شود."))) +
    line(msgs(("user", "رمز عبورم را فراموش کرده‌ام."), ("assistant", "از صفحهٔ ورود گزینهٔ «فراموشی رمز» را بزنید."))),
    "emoji.jsonl": line(msgs(("user", "Is my order 📦 on its way? 🙏"), ("assistant", "Yes! 🚚 It arrives tomorrow 🎉"))) +
    line(msgs(("user", "Family emoji 👨‍👩‍👧 and flags 🇮🇷🇯🇵 ok?"), ("assistant", "All fine ✅"))),
    "crlf.jsonl": good(1).replace(b"\n", b"\r\n") + good(2).replace(b"\n", b"\r\n"),
    "blank_lines.jsonl": b"\n" + good(1) + b"\n   \n" + good(2) + b"\r\n",
    "extra_fields.jsonl": line(rec("hi", "hello", id="a-1", source="web", tags=["billing"], meta={"lang": "en"})) +
    b'{"messages": [{"role": "user", "content": "hi", "name": "Sam"}, {"role": "assistant", "content": "hey", "weight": 1}], "id": 2}\n',
    "system_turn.jsonl": line(msgs(("system", "You are a support agent."), ("user", "hi"), ("assistant", "hello"))),
    "long_records.jsonl": line(msgs(("user", "Explain the refund policy. " + LONG), ("assistant", LONG + "Done."))) +
    line(msgs(("user", "Again, in full?"), ("assistant", LONG * 2))),
    "unicode_line_separators.jsonl": line(msgs(("user", "line\u2028separator and\u2029paragraph and\x85next"), ("assistant", "ok"))) + good(1),
    "no_final_newline.jsonl": good(1) + good(2).rstrip(b"\n"),
    "escaped_quotes.jsonl": line(msgs(("user", 'Click "Save" then type {"a": 1}'), ("assistant", 'Done: "Saved" \\ path C:\\'))),
    "compressed.jsonl.gz": gzip.compress(good(1) + good(2), mtime=0),
    "exact_numbers.jsonl": line(rec("hi", "hello", id=123456789012345678901234567890, weight=0.1)) +
    b'{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}], '
    b'"score": 0.10000000000000000000001, "tiny": 1e-400, "neg": -9223372036854775809}\n',
    "text_parts.jsonl": line(msgs(("user", [{"type": "text", "text": "hi, "}, {"type": "text", "text": "help?"}]),
                                  ("assistant", "hello"))),
}


def main() -> None:
    for folder, files in ((BAD, BAD_FILES), (GOOD, GOOD_FILES)):
        folder.mkdir(exist_ok=True)
        for name, data in files.items():
            (folder / name).write_bytes(data)
    print(f"{len(BAD_FILES)} bad, {len(GOOD_FILES)} good files written")


if __name__ == "__main__":
    main()

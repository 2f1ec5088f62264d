"""The normalised form the overlap stage compares: case, whitespace and Unicode forms fold; roles stay."""
from __future__ import annotations

import sys
import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from tunegate.overlap import normalize
from tunegate.overlap.normalize import NormalRecord, normal_bytes, normal_text, normalise_record, normalise_record_bytes


def msg(role: str, content: object) -> dict:
    return {"role": role, "content": content}


def test_case_and_whitespace_runs_fold():
    assert normal_text("  Hello\t\tWORLD\n again ") == "hello world again"


def test_unicode_compatibility_forms_fold():
    # full-width letters, the "fi" ligature, a no-break space, German sharp s
    assert normal_text("\uff28\uff49 \ufb01ne\u00a0Stra\u00dfe") == normal_text("hi fine STRASSE")


def test_roles_are_kept():
    as_user = normalise_record({"messages": [msg("user", "same words"), msg("assistant", "ok")]})
    as_system = normalise_record({"messages": [msg("system", "same words"), msg("assistant", "ok")]})
    assert as_user.text != as_system.text


def test_prompt_is_everything_before_the_final_assistant_turn():
    record = {"messages": [msg("system", "Be brief."), msg("user", "Hi"), msg("assistant", "Hello"),
                           msg("user", "Bye?"), msg("assistant", "  Bye! ")]}
    norm = normalise_record(record)
    assert norm == NormalRecord("system\tbe brief.\nuser\thi\nassistant\thello\nuser\tbye?", "bye!")
    assert norm.text == norm.prompt + "\nassistant\tbye!"


def test_record_not_ending_with_the_assistant_has_no_answer():
    norm = normalise_record({"messages": [msg("user", "Hi"), msg("assistant", "Hello"), msg("user", "And?")]})
    assert norm.answer is None
    assert norm.text == "user\thi\nassistant\thello\nuser\tand?"


def test_text_parts_of_a_content_list_are_joined():
    parts = [{"type": "text", "text": "Look"}, {"type": "image_url", "image_url": {"url": "x"}},
             {"type": "text", "text": "here"}]
    norm = normalise_record({"messages": [msg("user", parts), msg("assistant", "ok")]})
    assert norm.prompt == "user\tlook here"


def test_records_without_messages_have_no_normal_form():
    for record in (None, [], {}, {"messages": {}}, {"messages": [msg("user", 5)]}, {"messages": ["hi"]}):
        assert normalise_record(record) is None


def reference_normal_text(text: str) -> str:
    """The definition, written plainly (the fast path must agree with it on every text)."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


SPACES = [chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace()]


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.one_of(st.sampled_from(SPACES + list("aAßİﬁＡ\u0301")), st.characters()), max_size=40))
def test_the_fast_path_agrees_with_the_definition_on_any_text(text):
    assert normal_text(text) == reference_normal_text(text)


def test_the_whitespace_the_fast_path_looks_for_is_all_that_survives_nfkc_and_casefold():
    survivors = set()
    for code in range(sys.maxunicode + 1):
        if 0xD800 <= code <= 0xDFFF:
            continue
        survivors.update(c for c in unicodedata.normalize("NFKC", chr(code)).casefold() if c.isspace())
    assert survivors == {" ", *normalize._ASCII_SPACES, *normalize._OTHER_SPACES}
    assert [c for c in SPACES if c.isprintable()] == [" "]  # so a printable text has no other space


# Text that takes every branch of the fast path: ASCII and not, printable or with controls, the
# spaces only str.split() knows, runs of every length, and what NFKC and casefold change.
HOSTILE = [
    "Hello  World", "  lead and trail  ", "para one.\n\npara two\n\n\n- item\r\n- item", "tab\t\t\tcol",
    "a\x1c\x1d\x1e\x1fb", "nul\x00inside \x7f del", "Straße STRASSE", "İstanbul ıi Iİ", "ΣΊΣΥΦΟΣ σίσυφος",
    "ﬁne ﬂow ﬀ", "ＦＵＬＬ－ｗｉｄｔｈ　ｓｐａｃｅ", "nbsp\u00a0here\u202fand\u2007there", "line\u2028sep\u2029para",
    "next\x85line", "ogham\u1680space", "e\u0301 é e\u0301\u0327", "\u0301 a mark first", "ends with a mark \u0301",
    "한국어 \u1100\u1161\u11a8", "emoji 😀👍🏽 🇫🇷 👨‍👩‍👧", "mixed عربي and 中文 and русский  текст",
    "ｶﾀｶﾅ ㍿ ① ℌ ㎒", "zero\u200bwidth\ufeffbom", "lone \ud800 surrogate", "", "   ", "\n\n\n",
]


def reference_record(record: dict) -> NormalRecord:
    """The record form written plainly from the definition, message by message."""
    lines = [f"{reference_normal_text(m['role'])}\t{reference_normal_text(m['content'])}" for m in record["messages"]]
    role, _, answer = lines[-1].partition("\t")
    return NormalRecord("\n".join(lines[:-1]), answer) if role == "assistant" else NormalRecord("\n".join(lines), None)


def encoded(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def test_the_bytes_fast_path_agrees_with_the_definition_on_hostile_text():
    for text in HOSTILE + [a + b for a in HOSTILE for b in HOSTILE[:6]]:
        assert normal_bytes(text) == encoded(reference_normal_text(text)), repr(text)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["user", "assistant", "system", "tool", " User ", "ASSISTANT", "Ａｓｓｉｓｔａｎｔ"]),
                          st.one_of(st.sampled_from(HOSTILE), st.text(max_size=30))), min_size=1, max_size=5))
def test_a_records_bytes_form_is_the_definition_encoded(messages):
    record = {"messages": [msg(role, text) for role, text in messages]}
    want = reference_record(record)
    got = normalise_record_bytes(record)
    assert (got.prompt, got.answer) == (encoded(want.prompt), None if want.answer is None else encoded(want.answer))
    assert got.text == encoded(want.text)
    assert normalise_record(record) == want


def test_the_parts_without_the_extension_are_those_of_the_bytes_form(monkeypatch):
    # normal_parts (what the overlap observer hashes) falls back to normalise_record_bytes' pair.
    records = [{"messages": [{"role": "user", "content": "Q  1"}, {"role": "Assistant", "content": "A"}]},
               {"messages": [{"role": "assistant", "content": "only"}]}, {"messages": [{"role": "user", "content": "q"}]},
               {"messages": []}]
    compiled = [normalize.normal_parts(r) for r in records]
    monkeypatch.setattr(normalize, "_parts", None)
    assert [normalize.normal_parts(r) for r in records] == compiled == [
        (b"user\tq 1\nassistant\ta", 8, 19), (b"assistant\tonly", 0, 10), (b"user\tq", 6, -1), None]

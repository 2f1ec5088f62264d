"""The normalised form the overlap stage compares: case, whitespace and Unicode forms fold; roles stay."""
from __future__ import annotations

from tunegate.overlap.normalize import NormalRecord, normal_text, normalise_record


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

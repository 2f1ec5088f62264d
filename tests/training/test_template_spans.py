"""Which tokens are a reply's, for templates in the manner of real models' (tests/data/minirun/templates)."""
from __future__ import annotations

import pytest

from tests.support.minirun import DATA
from tunegate.training.chat_tokens import IGNORE, encode_chats

TEMPLATES = DATA / "templates"
# The user's turn quotes the first reply's text, so a search for that text from the start finds the user's.
QUOTED = [{"role": "user", "content": "Reply Yes. if you agree"},
          {"role": "assistant", "content": "Yes."},
          {"role": "user", "content": "Sure?"},
          {"role": "assistant", "content": "<think>check</think>Yes, sure."}]


def with_template(tokenizer, name: str):
    tokenizer.chat_template = (TEMPLATES / f"{name}.jinja").read_text(encoding="utf-8")
    return tokenizer


def trained_runs(tokenizer, encoded) -> list[str]:
    """The trained tokens, decoded in runs: one run per reply."""
    runs, run = [], []
    for token, label in zip(encoded.input_ids, encoded.labels):
        if label != IGNORE:
            run.append(token)
        elif run:
            runs.append(tokenizer.decode(run))
            run = []
    return runs + ([tokenizer.decode(run)] if run else [])


def test_an_earlier_reply_a_template_renders_differently_is_found_after_its_own_header(tokenizer):
    tok = with_template(tokenizer, "reasoning_dropped")
    [enc] = encode_chats(tok, [QUOTED], max_seq_len=512)
    runs = trained_runs(tok, enc)
    assert runs[0] == "Yes.</s>\n"  # the reply and its EOS, not the "Yes." the user quoted
    assert runs[1] == "<think>\ncheck\n</think>\n\nYes, sure.</s>\n"
    assert len(runs) == 2


def test_a_reply_whose_reasoning_the_template_drops_is_trained_as_rendered(tokenizer):
    tok = with_template(tokenizer, "reasoning_dropped")
    chat = [{"role": "user", "content": "What is 2+2?"},
            {"role": "assistant", "content": "<think>2 and 2 make 4</think>\n4  "},
            {"role": "user", "content": "And 3+3?"},
            {"role": "assistant", "content": "<think>3 and 3</think>6"}]
    assert "2 and 2 make 4" not in tok.apply_chat_template(chat, tokenize=False)
    [enc] = encode_chats(tok, [chat], max_seq_len=512)
    assert trained_runs(tok, enc) == ["4</s>\n", "<think>\n3 and 3\n</think>\n\n6</s>\n"]
    assert enc.unplaced_replies == ()


def test_tool_calls_and_a_default_system_prompt_stay_out_of_the_labels(tokenizer):
    tok = with_template(tokenizer, "default_system")
    chat = [{"role": "user", "content": "Weather in Oslo?"},
            {"role": "assistant", "content": "", "tool_calls": [
                {"type": "function", "function": {"name": "weather", "arguments": {"city": "Oslo"}}}]},
            {"role": "tool", "content": "3C"},
            {"role": "assistant", "content": "It is 3C in Oslo."}]
    tools = [{"type": "function", "function": {"name": "weather", "parameters": {"type": "object"}}}]
    [enc] = encode_chats(tok, [chat], max_seq_len=512, tools=[tools])
    assert trained_runs(tok, enc) == ['<call>{"name": "weather", "arguments": {"city": "Oslo"}}</call></s>\n',
                                      "It is 3C in Oslo.</s>\n"]


def audit(tokenizer, name: str, template: str):
    from tunegate.report import FindingCollector
    from tunegate.training.token_audit import audit_split

    tokenizer.chat_template = template
    out = FindingCollector("mini-run")
    _, audited = audit_split(DATA / name, name, tokenizer, 512, out)
    return out, audited


def test_the_audit_places_every_reply_of_reasoning_chats_and_says_nothing(tokenizer):
    out, audited = audit(tokenizer, "train_reasoning.jsonl", (TEMPLATES / "reasoning_dropped.jinja").read_text())
    assert not out.kept
    assert [len(trained_runs(tokenizer, a.encoded)) for a in audited] == [2, 1, 2]


def test_a_reply_the_template_leaves_out_of_the_conversation_is_named_as_untrained(tokenizer):
    # Only the final reply is rendered: earlier replies are nowhere in the trained text.
    last_reply_only = ("{% for m in messages %}{% if m['role'] != 'assistant' or loop.last %}"
                       "<|{{ m['role'] }}|>\n{{ m['content'] }}"
                       "{{ eos_token if m['role'] == 'assistant' else '<|end|>' }}\n"
                       "{% endif %}{% endfor %}{% if add_generation_prompt %}<|assistant|>\n{% endif %}")
    out, _ = audit(tokenizer, "train_reasoning.jsonl", last_reply_only)
    named = [(f.code, f.severity, f.line) for f in out.kept]
    assert named == [("TG538", "warning", 1), ("TG538", "warning", 3)]
    assert "message 2 of 4" in out.kept[0].message and "not trained" in out.kept[0].message


def test_replies_that_end_without_an_end_of_turn_token_are_said_once_per_file(tokenizer):
    out, _ = audit(tokenizer, "train_reasoning.jsonl", (TEMPLATES / "no_eos.jinja").read_text())
    [end] = out.kept
    assert (end.code, end.severity, end.file, end.line) == ("TG539", "warning", "train_reasoning.jsonl", 1)
    assert end.message.startswith("3 of 3 records have a trained reply that ends with no EOS ('</s>')")
    assert "never learns to stop" in end.message and "{{ eos_token }}" in end.hint


def bos_adding(tokenizer):
    """The tokenizer as Llama's and Mistral's are: tokenizer(text) puts a BOS in front."""
    from tokenizers import processors

    tokenizer.backend_tokenizer.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", tokenizer.bos_token_id)])
    return tokenizer


@pytest.mark.parametrize("template", ["tiny (generation markers)", "double_bos"])
def test_a_template_that_writes_the_bos_gets_one_even_from_a_tokenizer_that_adds_one(tokenizer, template):
    tok = bos_adding(tokenizer)
    if template == "double_bos":
        with_template(tok, template)
    text = tok.apply_chat_template(QUOTED, tokenize=False)
    assert tok(text)["input_ids"][:2] == [tok.bos_token_id] * 2  # what rendering then tokenising naively gives
    [enc] = encode_chats(tok, [QUOTED], max_seq_len=512)
    assert enc.input_ids[0] == tok.bos_token_id != enc.input_ids[1]


def test_a_template_that_writes_the_bos_twice_is_said(tokenizer):
    out, _ = audit(tokenizer, "train_reasoning.jsonl",
                   "{{ bos_token }}" + (TEMPLATES / "double_bos.jinja").read_text())
    [bos] = out.kept
    assert (bos.code, bos.severity, bos.line) == ("TG541", "warning", 1)
    assert bos.message.startswith("3 of 3 records start with the BOS token '<s>' twice")


REALWORLD = DATA.parent / "realworld"


def audit_file(tokenizer, path, template: str | None = None):
    from tunegate.report import FindingCollector
    from tunegate.training.token_audit import audit_split

    if template is not None:
        tokenizer.chat_template = template
    out = FindingCollector("mini-run")
    _, audited = audit_split(path, path.name, tokenizer, 4096, out)
    return out, audited


def test_a_template_that_drops_tool_calls_is_rejected_naming_the_reply(tokenizer):
    out, _ = audit_file(tokenizer, REALWORLD / "openai_tools.jsonl", (TEMPLATES / "no_tools.jinja").read_text())
    calls = [f for f in out.kept if f.code == "TG543"]
    assert calls and all(f.severity == "error" for f in calls)
    assert (calls[0].file, calls[0].line) == ("openai_tools.jsonl", 1)
    assert "tool call get_weather of the reply at message 3" in calls[0].message
    assert "trained as a reply without it" in calls[0].message


def test_a_template_that_drops_tool_definitions_is_said_once_per_file(tokenizer):
    out, _ = audit_file(tokenizer, REALWORLD / "openai_tools.jsonl", (TEMPLATES / "no_tools.jinja").read_text())
    [schemas] = [f for f in out.kept if f.code == "TG544"]
    assert (schemas.severity, schemas.line) == ("warning", 1)
    assert "never sees the tools it is taught to call" in schemas.message


def test_a_template_that_renders_tools_and_calls_says_nothing(tokenizer):
    template = (TEMPLATES / "default_system.jinja").read_text()
    out, audited = audit_file(tokenizer, REALWORLD / "openai_tools.jsonl", template)
    assert not [f for f in out.kept if f.code in {"TG543", "TG544"}], out.kept
    assert "get_weather" in "".join(trained_runs(tokenizer, audited[0].encoded))


def test_the_built_in_tiny_template_renders_tools_and_tool_calls(tokenizer):
    out, audited = audit_file(tokenizer, REALWORLD / "openai_tools.jsonl")
    assert not out.kept
    text = tokenizer.decode(audited[0].encoded.input_ids)
    assert "Current weather for a city." in text
    assert "get_weather" in "".join(trained_runs(tokenizer, audited[0].encoded))


def test_a_template_that_fails_with_a_python_error_on_a_record_names_the_record(tokenizer):
    # A home-made template adding a number to the text: jinja raises TypeError, not a TemplateError.
    counted = ("{% for m in messages %}<|{{ m['role'] }}|>\n"
               "{{ m['content'] if m['role'] != 'system' else m['content'] + loop.index }}<|end|>\n{% endfor %}")
    out, audited = audit(tokenizer, "train_reasoning.jsonl", counted)
    [bad] = [f for f in out.kept if f.code == "TG530"]
    assert (bad.severity, bad.line) == ("error", 3)  # the one record with a system message
    assert "TypeError: can only concatenate str" in bad.message
    assert audited[2].encoded is None and audited[0].encoded is not None


def test_a_system_prompt_moved_to_the_last_user_turn_leaves_every_reply_found(tokenizer):
    tok = with_template(tokenizer, "system_on_last_user")
    chat = [{"role": "system", "content": "Answer Yes. or No."}, *QUOTED]
    [enc] = encode_chats(tok, [chat], max_seq_len=512)
    assert trained_runs(tok, enc) == ["Yes.</s>", "<think>check</think>Yes, sure.</s>"]
    assert enc.unplaced_replies == ()


def test_an_earlier_reply_keeps_its_eos_when_the_template_moves_the_system_prompt(tokenizer):
    tok = with_template(tokenizer, "system_on_last_user")
    chat = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "How do I reset my password?"},
            {"role": "assistant", "content": "Open Settings."}, {"role": "user", "content": "And then?"},
            {"role": "assistant", "content": "Press Reset."}]
    [enc] = encode_chats(tok, [chat], max_seq_len=512)
    assert trained_runs(tok, enc) == ["Open Settings.</s>", "Press Reset.</s>"]


def test_a_template_without_a_system_role_says_where_the_system_text_goes(tokenizer):
    out, _ = audit(tokenizer, "train_reasoning.jsonl", (TEMPLATES / "system_raises.jinja").read_text())
    [system] = out.kept
    assert (system.code, system.line) == ("TG530", 3) and "System role not supported" in system.message
    assert "first user message" in system.hint


def test_a_template_that_needs_alternating_roles_says_to_merge_the_turns(tokenizer):
    out, _ = audit(tokenizer, "train_two_users.jsonl", (TEMPLATES / "system_raises.jinja").read_text())
    [turns] = [f for f in out.kept if f.code == "TG530"]
    assert "roles must alternate" in turns.message and "merge consecutive turns" in turns.hint


def test_generation_markers_that_leave_the_eos_outside_are_said(tokenizer):
    from tunegate.training.tiny_model import CHAT_TEMPLATE

    outside = CHAT_TEMPLATE.replace("{{ eos_token }}{% endgeneration %}", "{% endgeneration %}{{ eos_token }}")
    assert outside != CHAT_TEMPLATE
    out, _ = audit(tokenizer, "train_reasoning.jsonl", outside)
    assert [f.code for f in out.kept] == ["TG539"]


def test_reasoning_a_template_does_not_render_is_said_once_per_file(tokenizer):
    out, _ = audit(tokenizer, "train_reasoning_field.jsonl", (TEMPLATES / "no_tools.jinja").read_text())
    [dropped] = out.kept
    assert (dropped.code, dropped.severity, dropped.line) == ("TG548", "warning", 1)
    assert dropped.message.startswith("2 of 3 records carry reasoning (reasoning_content or thinking)")
    assert "trained on the answers without it" in dropped.message


def test_reasoning_a_template_renders_is_trained_and_says_nothing(tokenizer):
    out, audited = audit(tokenizer, "train_reasoning_field.jsonl", (TEMPLATES / "reasoning_field.jinja").read_text())
    assert not out.kept
    assert "91 = 7 * 13" in "".join(trained_runs(tokenizer, audited[0].encoded))


def test_the_built_in_tiny_template_renders_reasoning(tokenizer):
    out, audited = audit_file(tokenizer, REALWORLD / "openai_reasoning.jsonl")
    assert not out.kept
    assert "<think>\nRecall the fact, check it once.\n</think>" in "".join(trained_runs(tokenizer, audited[0].encoded))

"""Does the chat template render what a record carries beside its text: tools, tool calls, reasoning?
Templates without tool support (Llama 2's, Mistral v0.1's, Gemma 2's) render no tools, and most render
no `reasoning_content`, and say nothing.

    unshown = tool_calls_unrendered(item, tokenizer, out, ["train.jsonl"])   # TG543 per call, as each record
    say_unshown_tools(count, first, out, ["train.jsonl"])                    # is judged; TG544 once per split
    if reasoning_dropped(item, tokenizer): ...                               # TG548 once per split:
    say_dropped_reasoning(count, total, first, out, ["train.jsonl"])         # say_dropped_reasoning

(`names`: the split's files as findings show them, one per file; each record is placed in its own.
Records are judged one at a time as the token audit encodes them, so their tokens need not be kept:
tunegate.training.split_judge.)

A reply that only calls a tool then renders as an empty reply and its EOS: the full run would teach
the model to stop where the data shows a call (TG543, an error). Tool definitions a template leaves
out are never in the prompt, so the model is taught to call tools it is never shown (TG544). Both
are judged on the tokens as trained: a call's function name must be in its reply's trained text, a
definition's name in the record's text. A final reply's reasoning (OpenAI-style `reasoning_content`,
or `thinking`) must be in the trained text too; earlier replies' reasoning is not judged, as Qwen3's
template drops it by design.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tunegate.report import FindingCollector
from tunegate.training.chat_tokens import IGNORE


def tool_calls_unrendered(item: Any, tokenizer: Any, out: FindingCollector, names: Sequence[str]) -> bool:
    """TG543 into `out` for each tool call of the record's replies the template does not render; whether
    the record defines tools the template does not render (TG544's, said once per split by `say_unshown_tools`)."""
    rec, enc = item.record, item.encoded
    if enc is None or rec.plain or enc.final_reply_cut:  # a cut reply's end is TG512's
        return False
    calls = [(i, name) for i, m in enumerate(rec.messages) if m.get("role") == "assistant"
             and m.get("weight") != 0 for name in _call_names(m)]
    schemas = [n for n in (_schema_name(t) for t in rec.tools or []) if n]
    if not calls and not schemas:
        return False
    trained = tokenizer.decode([t for t in enc.labels if t != IGNORE])
    for index, name in calls:
        if name not in trained:
            out.add("TG543", "error", f"the chat template does not render the tool call {name} of the reply at "
                    f"message {index + 1}: it is trained as a reply without it, and the model learns to answer "
                    "where the data calls a tool", "Use the model's tool-use chat template (one that renders "
                    "tool_calls and the tool role), or write the call into the reply's content in the "
                    "format the model is served with.", **rec.place(names))
    return bool(schemas) and not any(n in tokenizer.decode(list(enc.input_ids) + list(enc.cut)) for n in schemas)


def say_unshown_tools(unshown: int, first: Any, out: FindingCollector, names: Sequence[str]) -> None:
    """TG544 once for the split: `unshown` records (the first of them `first`) define tools never rendered."""
    if unshown:
        out.add("TG544", "warning", f"{unshown} records define tools the chat template does not render: the "
                "model never sees the tools it is taught to call", "Use the model's tool-use chat template (one "
                "that renders `tools`), or write the definitions into the system prompt.", **first.place(names))


def _call_names(message: dict[str, Any]) -> list[str]:
    names = []
    for call in message.get("tool_calls") or []:
        if isinstance(call, dict):
            fn = call.get("function") if isinstance(call.get("function"), dict) else call
            if isinstance(fn.get("name"), str) and fn["name"]:
                names.append(fn["name"])
    return names


def _schema_name(tool: Any) -> str | None:
    if not isinstance(tool, dict):
        return None
    fn = tool.get("function") if isinstance(tool.get("function"), dict) else tool
    name = fn.get("name")
    return name if isinstance(name, str) and name else None


REASONING_KEYS = ("reasoning_content", "thinking")


def reasoning_dropped(item: Any, tokenizer: Any) -> bool:
    """Whether the record's final reply carries reasoning the chat template does not render (never trained)."""
    rec, enc = item.record, item.encoded
    replies = [m for m in rec.messages if m.get("role") == "assistant"]
    if enc is None or rec.plain or enc.final_reply_cut or not replies or replies[-1].get("weight") == 0:
        return False
    texts = (replies[-1].get(k) for k in REASONING_KEYS)
    thought = next((t.strip() for t in texts if isinstance(t, str) and t.strip()), "")
    return bool(thought) and thought not in tokenizer.decode([t for t in enc.labels if t != IGNORE])


def say_dropped_reasoning(dropped: int, total: int, first: Any, out: FindingCollector, names: Sequence[str]) -> None:
    """TG548 once for the split: `dropped` of `total` records (the first of them `first`) lose their reasoning."""
    if dropped:
        out.add("TG548", "warning", f"{dropped} of {total} records carry reasoning (reasoning_content or "
                "thinking) on their final reply that the chat template does not render: the model is trained on "
                "the answers without it", "Use a chat template that renders the reasoning (Qwen3's, DeepSeek-R1's), "
                "or write it into the reply's content as <think>...</think> if the model is served that way.",
                **first.place(names))

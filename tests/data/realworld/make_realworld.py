"""Write the real-world shape corpus: records in the exact shapes public datasets and tools use.

    python tests/data/realworld/make_realworld.py

Each file copies the SHAPE (keys, nesting, value types) of a public dataset or of a tool's
documented format, with our own short texts; README.md names each source and what the gate
must say. tests/formats/test_realworld.py asserts it.
"""
from __future__ import annotations

import gzip
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent

TOPICS = [
    ("What is the boiling point of water at sea level?", "100 °C (212 °F) at standard pressure."),
    ("Name a prime number between 20 and 30.", "23 (29 is another)."),
    ("Translate 'good morning' into Spanish.", "Buenos días."),
    ("How many legs does a spider have?", "Eight."),
    ("Give a synonym for 'rapid'.", "Quick."),
    ("What does HTTP status 404 mean?", "Not Found: the server has no resource at that URL."),
    ("Convert 5 km to miles.", "About 3.11 miles."),
    ("Who wrote 'Pride and Prejudice'?", "Jane Austen, in 1813."),
    ("What is the chemical symbol for gold?", "Au."),
    ("Summarise photosynthesis in one sentence.",
     "Plants turn light, water and CO2 into glucose and oxygen."),
    ("What is 12 squared?", "144."),
    ("Which planet is closest to the sun?", "Mercury."),
]


def write_jsonl(name: str, records: list[dict], *, gz: bool = False) -> None:
    data = b"".join(json.dumps(r, ensure_ascii=False).encode() + b"\n" for r in records)
    (HERE / name).write_bytes(gzip.compress(data, mtime=0) if gz else data)


def pairs(start: int = 0, n: int = 12):
    for i in range(n):
        q, a = TOPICS[(start + i) % len(TOPICS)]
        yield i, f"{q} (#{start + i})", a


# -- ShareGPT ---------------------------------------------------------------------------------
def fastchat() -> list[dict]:  # FastChat / ShareGPT dump: id + conversations, multi-turn
    out = []
    for i, q, a in pairs():
        conv = [{"from": "human", "value": q}, {"from": "gpt", "value": a}]
        if i % 3 == 0:
            conv += [{"from": "human", "value": "Thanks, and why?"}, {"from": "gpt", "value": "It follows from the definition."}]
        out.append({"id": f"QWJhYvA_{i}", "conversations": conv})
    return out


def openhermes() -> list[dict]:  # teknium/OpenHermes-2.5: weight null on every turn, many top-level keys
    out = []
    for i, q, a in pairs(3):
        conv = ([{"from": "system", "value": "You are an AI assistant. Answer concisely.", "weight": None}] if i % 2 else [])
        conv += [{"from": "human", "value": q, "weight": None}, {"from": "gpt", "value": a, "weight": None}]
        out.append({"custom_instruction": None, "topic": None, "model_name": None, "model": None,
                    "skip_prompt_formatting": False, "category": "general", "conversations": conv,
                    "views": None, "language": None, "id": None, "title": None, "idx": None, "hash": None,
                    "avatarUrl": None, "system_prompt": None, "source": "airoboros2.2"})
    return out


def slimorca() -> list[dict]:  # Open-Orca/SlimOrca: weight null (system), 0.0 (human), 1.0 (gpt)
    return [{"conversations": [
        {"from": "system", "value": "You are an AI assistant. Provide a detailed answer.", "weight": None},
        {"from": "human", "value": q, "weight": 0.0},
        {"from": "gpt", "value": a, "weight": 1.0}]} for _, q, a in pairs(5)]


def sharegpt_roles_user_assistant() -> list[dict]:
    return [{"conversations": [{"from": "user", "value": q}, {"from": "assistant", "value": a}],
             "source": "synthetic"} for _, q, a in pairs(1)]


def sharegpt_system_field() -> list[dict]:  # LLaMA-Factory sharegpt with a record-level system
    return [{"conversations": [{"from": "human", "value": q}, {"from": "gpt", "value": a}],
             "system": "Reply in one short sentence."} for _, q, a in pairs(2)]


TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Current weather for a city.",
                                            "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                                           "required": ["city"]}}}]
CITIES = ["Lisbon", "Oslo", "Nairobi", "Lima", "Hanoi", "Perth", "Quito", "Tunis", "Riga", "Accra", "Porto", "Bern"]


def hermes_tools() -> list[dict]:  # NousResearch/hermes-function-calling-v1: system/human/gpt/tool
    system = ("You are a function calling AI model. You are provided with function signatures within "
              "<tools></tools> XML tags.\n<tools>\n" + json.dumps(TOOLS) + "\n</tools>\nFor each function call "
              "return a json object within <tool_call></tool_call> XML tags.")
    out = []
    for i, city in enumerate(CITIES):
        out.append({"id": f"0a1b2c3d-{i:04d}", "conversations": [
            {"from": "system", "value": system},
            {"from": "human", "value": f"What's the weather in {city} right now?"},
            {"from": "gpt", "value": "<tool_call>\n" + json.dumps({"name": "get_weather", "arguments": {"city": city}})
             + "\n</tool_call>"},
            {"from": "tool", "value": "<tool_response>\n" + json.dumps({"name": "get_weather",
                                                                         "content": {"temp_c": 18 + i, "sky": "clear"}})
             + "\n</tool_response>"},
            {"from": "gpt", "value": f"It is {18 + i} °C and clear in {city}."}],
            "category": "Weather", "subcategory": "Current", "task": "Get the weather"})
    return out


def glaive_toolcall() -> list[dict]:  # LLaMA-Factory data/glaive_toolcall_en_demo.json: function_call/observation
    out = []
    for i, city in enumerate(CITIES):
        out.append({"conversations": [
            {"from": "human", "value": f"Is it raining in {city}?"},
            {"from": "function_call", "value": json.dumps({"name": "get_weather", "arguments": {"city": city}})},
            {"from": "observation", "value": json.dumps({"temp_c": 11 + i, "sky": "rain"})},
            {"from": "gpt", "value": f"Yes, it is raining in {city} ({11 + i} °C)."}],
            "tools": json.dumps([t["function"] for t in TOOLS])})
    return out


# -- OpenAI / TRL messages ----------------------------------------------------------------------
def trl_tools() -> list[dict]:
    """TRL's documented tool-calling shape (docs: dataset_formats, "Tool calling"): calls with no
    id, arguments as an object, the tool reply carrying the function's name, a `tools` column."""
    out = []
    for i, city in enumerate(CITIES):
        out.append({"messages": [
            {"role": "user", "content": f"Weather in {city}?"},
            {"role": "assistant", "tool_calls": [{"type": "function", "function": {
                "name": "get_weather", "arguments": {"city": city}}}]},
            {"role": "tool", "name": "get_weather", "content": f"{15 + i} °C, clear"},
            {"role": "assistant", "content": f"{15 + i} °C and clear in {city}."}], "tools": TOOLS})
    return out


def openai_tools() -> list[dict]:
    """OpenAI's fine-tuning format: content null beside tool_calls, ids, arguments a JSON string."""
    out = []
    for i, city in enumerate(CITIES):
        cid = f"call_{i:03d}"
        out.append({"messages": [
            {"role": "developer", "content": "Use the tools when asked about weather."},
            {"role": "user", "content": [{"type": "text", "text": f"Weather in {city}"}, {"type": "text", "text": "?"}]},
            {"role": "assistant", "content": None, "tool_calls": [{"id": cid, "type": "function", "function": {
                "name": "get_weather", "arguments": json.dumps({"city": city})}}]},
            {"role": "tool", "tool_call_id": cid, "name": "get_weather", "content": json.dumps({"temp_c": 9 + i})},
            {"role": "assistant", "content": f"{9 + i} °C in {city}."}],
            "tools": TOOLS, "parallel_tool_calls": False})
    return out


def reasoning() -> list[dict]:  # reasoning traces: reasoning_content (DeepSeek / Qwen3) and thinking (gpt-oss)
    out = []
    for i, q, a in pairs(4):
        key = "reasoning_content" if i % 2 else "thinking"
        out.append({"messages": [{"role": "system", "content": "Think, then answer."}, {"role": "user", "content": q},
                                 {"role": "assistant", key: "Recall the fact, check it once.", "content": a}]})
    return out


def to_json_artefacts() -> list[dict]:
    """A messages file written by `Dataset.to_json()` / pandas: every message has every struct field,
    null where unset, and weights as floats."""
    return [{"messages": [
        {"role": "user", "content": q, "weight": None, "name": None},
        {"role": "assistant", "content": "Let me answer step by step.", "weight": 0.0, "name": None},
        {"role": "user", "content": "Just the answer, please.", "weight": None, "name": None},
        {"role": "assistant", "content": a, "weight": 1.0, "name": None}]} for _, q, a in pairs(6)]


# -- TRL types tunegate does not fine-tune ------------------------------------------------------
def trl_text() -> list[dict]:
    return [{"text": f"### Question: {q}\n### Answer: {a}"} for _, q, a in pairs()]


def dpo_plain() -> list[dict]:
    return [{"prompt": q, "chosen": " " + a, "rejected": " I don't know."} for _, q, a in pairs()]


def dpo_chat() -> list[dict]:
    return [{"prompt": [{"role": "user", "content": q}], "chosen": [{"role": "assistant", "content": a}],
             "rejected": [{"role": "assistant", "content": "No idea."}]} for _, q, a in pairs()]


def dpo_implicit() -> list[dict]:  # trl-lib/ultrafeedback_binarized style: whole conversations
    return [{"chosen": [{"role": "user", "content": q}, {"role": "assistant", "content": a}],
             "rejected": [{"role": "user", "content": q}, {"role": "assistant", "content": "No idea."}],
             "score_chosen": 8.0, "score_rejected": 2.0} for _, q, a in pairs()]


def kto() -> list[dict]:  # TRL unpaired preference: prompt/completion/label
    return [{"prompt": q, "completion": " " + (a if i % 2 == 0 else "Wrong answer."), "label": i % 2 == 0}
            for i, q, a in pairs()]


def alpaca_dpo() -> list[dict]:  # LLaMA-Factory's dpo_en_demo.json (alpaca): instruction/input/chosen/rejected
    return [{"instruction": q, "input": "", "chosen": a, "rejected": "No idea."} for _, q, a in pairs()]


# -- Alpaca ----------------------------------------------------------------------------------
def alpaca_history() -> list[dict]:
    return [{"instruction": q, "input": "" if i % 2 else "Answer briefly.", "output": a,
             "history": [["Hi!", "Hello, how can I help?"]] if i % 3 == 0 else []} for i, q, a in pairs(7)]


FILES = {
    "sharegpt_fastchat.jsonl": fastchat, "sharegpt_openhermes.jsonl": openhermes,
    "sharegpt_slimorca.jsonl": slimorca, "sharegpt_user_assistant.jsonl": sharegpt_roles_user_assistant,
    "sharegpt_system_field.jsonl": sharegpt_system_field, "sharegpt_hermes_tools.jsonl": hermes_tools,
    "sharegpt_glaive_toolcall.jsonl": glaive_toolcall,
    "openai_trl_tools.jsonl": trl_tools, "openai_tools.jsonl": openai_tools, "openai_reasoning.jsonl": reasoning,
    "openai_to_json_artefacts.jsonl": to_json_artefacts,
    "trl_text.jsonl": trl_text, "dpo_plain.jsonl": dpo_plain, "dpo_chat.jsonl": dpo_chat,
    "dpo_implicit.jsonl": dpo_implicit, "kto.jsonl": kto, "alpaca_dpo.jsonl": alpaca_dpo,
    "alpaca_history.jsonl": alpaca_history,
}


def main() -> None:
    for name, make in FILES.items():
        write_jsonl(name, make())
    write_jsonl("sharegpt_fastchat.jsonl.gz", fastchat())
    (HERE / "alpaca_history.json").write_text(json.dumps(alpaca_history(), ensure_ascii=False, indent=2) + "\n",
                                              encoding="utf-8")


if __name__ == "__main__":
    main()

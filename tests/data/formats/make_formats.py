"""Write the format corpus: one good file and files with one documented defect each, per format.

    python tests/data/formats/make_formats.py      # needs pyarrow for the parquet files

The records are modelled on real public data: OpenAI's function-calling fine-tuning examples,
ShareGPT dumps (FastChat), LLaMA-Factory's `alpaca_en_demo.json` and `identity.json` (its
`{{name}}`/`{{author}}` placeholders), and TRL's prompt-completion datasets. README.md lists
each defect with its code and place; tests/formats/test_corpus.py asserts exactly those.
"""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent


def jsonl(*records: dict) -> bytes:
    return b"".join(json.dumps(r, ensure_ascii=False).encode() + b"\n" for r in records)


def csv_text(header: list[str], *rows: list[str], excel: bool = False) -> bytes:
    """Rows as csv.writer writes them (CRLF, quoted where needed); `excel`: with Excel's UTF-8 BOM."""
    out = io.StringIO()
    csv.writer(out).writerows([header, *rows])
    return ("\ufeff" if excel else "").encode() + out.getvalue().encode()


def call(cid: str, name: str, **args) -> dict:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


WEATHER = {"messages": [
    {"role": "developer", "content": "You are a weather assistant. Use the tools."},
    {"role": "user", "content": "What's the weather in Lisbon tomorrow?"},
    {"role": "assistant", "content": None, "tool_calls": [call("call_1", "get_forecast", city="Lisbon", days=1)]},
    {"role": "tool", "tool_call_id": "call_1", "content": "{\"high_c\": 24, \"low_c\": 16, \"sky\": \"sunny\"}"},
    {"role": "assistant", "content": "Tomorrow in Lisbon: sunny, 16-24 °C."}]}
ORDER = {"messages": [
    {"role": "system", "content": "You are Acme's support agent."},
    {"role": "user", "content": "Hi"},
    {"role": "assistant", "content": "Hello! How can I help?", "weight": 0},
    {"role": "user", "name": "dana", "content": [{"type": "text", "text": "Where is order "},
                                                 {"type": "text", "text": "#88412?"}]},
    {"role": "assistant", "tool_calls": [call("call_a", "order_status", order_id="88412")]},
    {"role": "tool", "tool_call_id": "call_a", "content": "shipped 2024-05-02, DHL 00340434161"},
    {"role": "assistant", "content": "It shipped on 2 May with DHL (tracking 00340434161).", "weight": 1}]}
PLAIN = {"messages": [{"role": "user", "content": "Can I change my delivery address?"},
                      {"role": "assistant", "content": "Yes, until the parcel ships: Orders > Edit address."}]}


def sharegpt(human: str, gpt: str, **extra) -> dict:
    return {"conversations": [{"from": "human", "value": human}, {"from": "gpt", "value": gpt}], **extra}


ALPACA = [
    {"instruction": "Describe a process of making crepes.", "input": "",
     "output": "Whisk flour, eggs, milk and a pinch of salt into a thin batter, rest it 30 minutes, then "
               "cook ladlefuls in a hot buttered pan for about a minute a side."},
    {"instruction": "Translate the sentence into French.", "input": "The library opens at nine.",
     "output": "La bibliothèque ouvre à neuf heures."},
    {"instruction": "Give three tips for staying healthy.", "input": "", "system": "Answer briefly.",
     "output": "1. Eat vegetables daily.\n2. Sleep 7-9 hours.\n3. Walk 30 minutes a day."},
]
# LLaMA-Factory's Alpaca records as a spreadsheet export holds them: a quoted reply over several
# lines, commas and doubled quotes inside fields, an empty input.
ALPACA_ROWS = [[r["instruction"], r["input"], r["output"]] for r in ALPACA] + [
    ["Punctuate the quote.", 'he said "wait, what"', 'He said, "Wait, what?"']]
IDENTITY = [
    {"instruction": "hi", "input": "", "output": "Hello! I am {{name}}, an AI assistant developed by {{author}}. "
                                                 "How can I assist you today?"},
    {"instruction": "Who are you?", "input": "", "output": "I am {{name}}, an AI assistant developed by {{author}}."},
]
PROMPT_COMPLETION = [
    {"prompt": "The capital of Portugal is", "completion": " Lisbon."},
    {"prompt": "Q: What is 12 x 12?\nA:", "completion": " 144"},
]
PC_CHAT = [
    {"prompt": [{"role": "user", "content": "Summarise: the meeting moved to Thursday 3 pm."}],
     "completion": [{"role": "assistant", "content": "The meeting is now on Thursday at 3 pm."}]},
    {"prompt": [{"role": "system", "content": "Be terse."}, {"role": "user", "content": "2+2?"},
                {"role": "assistant", "content": "4."}, {"role": "user", "content": "And times 3?"}],
     "completion": [{"role": "assistant", "content": "12."}]},
]

FILES: dict[str, bytes] = {
    "good/openai_tools.jsonl": jsonl(WEATHER, ORDER, PLAIN),
    "bad/openai_tool_reply_unknown_id.jsonl": jsonl(PLAIN, {"messages": [
        *WEATHER["messages"][:3], {**WEATHER["messages"][3], "tool_call_id": "call_9"}, WEATHER["messages"][4]]}),
    "bad/openai_arguments_not_json.jsonl": jsonl(PLAIN, PLAIN | {"id": 2}, {"messages": [
        WEATHER["messages"][1], {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "get_forecast", "arguments": "{city: Lisbon}"}}]}]}),
    "bad/openai_all_weights_zero.jsonl": jsonl(PLAIN, {"messages": [
        PLAIN["messages"][0], {**PLAIN["messages"][1], "weight": 0}]}),
    "bad/openai_weight_two.jsonl": jsonl(PLAIN, {"messages": [PLAIN["messages"][0],
                                                             {**PLAIN["messages"][1], "weight": 2}]}),
    "bad/openai_no_user_turn.jsonl": jsonl(PLAIN, PLAIN | {"id": "b"}, {"messages": [
        {"role": "system", "content": "You are Acme's support agent."},
        {"role": "assistant", "content": "Thanks for contacting Acme! Your ticket is closed."}]}),
    "bad/openai_image_part.jsonl": jsonl({"messages": [
        {"role": "user", "content": [{"type": "text", "text": "What is this?"},
                                     {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}]},
        {"role": "assistant", "content": "A cat."}]}),
    "bad/openai_unknown_message_key.jsonl": jsonl(PLAIN, {"messages": [
        PLAIN["messages"][0], {**PLAIN["messages"][1], "timestamp": "2024-05-02T10:00:00Z"}]}),
    "good/sharegpt.jsonl": jsonl(
        sharegpt("How do I reverse a list in Python?", "Use `items[::-1]` for a copy, or `items.reverse()` in place."),
        {"conversations": [{"from": "system", "value": "You are a helpful assistant."},
                           {"from": "human", "value": "Name a prime above 100."}, {"from": "gpt", "value": "101."},
                           {"from": "human", "value": "And the next?"}, {"from": "gpt", "value": "103."}]},
        sharegpt("Write a Jinja loop.", "```jinja\n{% for u in users %}{{ u.name }}{% endfor %}\n```"),
        sharegpt("Greet me in Persian.", "سلام! روز خوبی داشته باشید.", system="Reply in the language asked for.")),
    "bad/sharegpt_robot.jsonl": jsonl(
        sharegpt("Hi!", "Hello! How can I help?"), sharegpt("Thanks", "Any time."),
        {"conversations": [{"from": "human", "value": "Who won?"}, {"from": "gpt", "value": "Which match?"},
                           {"from": "robot", "value": "Beep."}]}),
    "bad/sharegpt_ends_with_human.jsonl": jsonl(sharegpt("Hi!", "Hello!"), {"conversations": [
        {"from": "human", "value": "Hi!"}, {"from": "gpt", "value": "Hello!"}, {"from": "human", "value": "Bye"}]}),
    "bad/mixed_sharegpt_alpaca.jsonl": jsonl(sharegpt("Hi!", "Hello!"), sharegpt("Yo", "Hey"), ALPACA[1]),
    "good/alpaca.json": json.dumps(ALPACA, indent=2, ensure_ascii=False).encode() + b"\n",
    "bad/alpaca_missing_comma.json": json.dumps(ALPACA, indent=2, ensure_ascii=False).encode().replace(
        b"},\n  {", b"}\n  {", 1),
    "bad/identity_placeholders.json": json.dumps(IDENTITY[:1], indent=2).encode() + b"\n",
    "bad/alpaca_no_output.jsonl": jsonl(ALPACA[0], {"instruction": "Name a colour.", "input": ""}),
    "good/alpaca.csv": csv_text(["instruction", "input", "output"], *ALPACA_ROWS),
    "good/prompt_completion_excel.csv": csv_text(["prompt", "completion"], *(
        [r["prompt"], r["completion"]] for r in PROMPT_COMPLETION), excel=True),
    "bad/alpaca_unquoted_comma.csv": b"instruction,input,output\n" + b"Name a colour.,,Blue.\n"
                                     b"List two fruits.,,Apples, pears.\n",
    "bad/alpaca_open_quote.csv": csv_text(["instruction", "input", "output"], *ALPACA_ROWS[:2])
    + b'Quote Hamlet.,,"To be, or not to be\r\n',
    "bad/alpaca_repeated_column.csv": csv_text(["instruction", "output", "output"],
                                               ["Name a colour.", "Blue.", "Red."], ["Name a fruit.", "Pear.", "Fig."]),
    "bad/alpaca_na_input.csv": csv_text(["instruction", "input", "output"], ALPACA_ROWS[0],
                                        ["Name the largest planet.", "N/A", "Jupiter."]),
    "good/prompt_completion.jsonl": jsonl(*PROMPT_COMPLETION),
    "good/prompt_completion_chat.jsonl": jsonl(*PC_CHAT),
    "bad/prompt_completion_kinds_differ.jsonl": jsonl(PROMPT_COMPLETION[0], {
        "prompt": "Summarise the meeting note.", "completion": [{"role": "assistant", "content": "Thursday 3 pm."}]}),
    "bad/prompt_completion_empty.jsonl": jsonl(PROMPT_COMPLETION[0], PROMPT_COMPLETION[1], {
        "prompt": "The capital of Spain is", "completion": ""}),
}


def parquet_files() -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    good = [sharegpt(f"Question {i}: what is {i} squared?", f"{i * i}.") for i in range(1, 6)]
    pq.write_table(pa.Table.from_pylist(good), HERE / "good" / "sharegpt.parquet")
    rows = [*map(dict, ALPACA), {"instruction": "Say nothing.", "input": "", "output": ""}]
    pq.write_table(pa.Table.from_pylist(rows), HERE / "bad" / "alpaca_empty_output.parquet")
    typed_columns()
    binary_text()
    binary_reply()


def typed_columns() -> None:
    """Chats with the columns an exported table carries beside them: types JSON has no form for."""
    import datetime
    from decimal import Decimal

    import pyarrow as pa
    import pyarrow.parquet as pq

    chats = [[{"role": "user", "content": f"Is order {i} shipped?"},
              {"role": "assistant", "content": f"Order {i} left the warehouse on day {i}."}] for i in range(1, 5)]
    utc = datetime.timezone.utc
    pq.write_table(pa.table({
        "messages": chats,
        "created": pa.array([datetime.datetime(2026, 1, i, 9, 30, 0, 250000 * (i - 1), tzinfo=utc)
                             for i in range(1, 5)], pa.timestamp("us", tz="UTC")),
        "handled_in": pa.array([datetime.timedelta(minutes=90, seconds=0.5), datetime.timedelta(0),
                                datetime.timedelta(days=2, microseconds=7), None], pa.duration("us")),
        "day": pa.array([datetime.date(2026, 1, i) for i in range(1, 5)], pa.date32()),
        "rating": pa.array([Decimal("0.9"), Decimal("4"), Decimal("0.1234567890123456789012345678901"), None],
                           pa.decimal128(38, 31)),
        "thumbnail": pa.array([b"\x89PNG\r\n\x1a\n\x00\x00", None, b"\xff\xd8\xff\xe0", b""], pa.binary()),
    }), HERE / "good" / "openai_typed_columns.parquet")


def binary_reply() -> None:
    """A reply stored as binary that is not UTF-8 text (Latin-1 bytes): no text to train on."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    message = pa.struct([("role", pa.string()), ("content", pa.binary())])
    rows = [[{"role": "user", "content": f"Where is parcel {i}?".encode()},
             {"role": "assistant", "content": f"Parcel {i} is in Lisbon.".encode()}] for i in range(3)]
    rows[2][1]["content"] = "Le colis est à Lyon.".encode("latin-1")
    pq.write_table(pa.table({"messages": pa.array(rows, pa.list_(message))}),
                   HERE / "bad" / "openai_binary_reply.parquet")


def binary_text() -> None:
    """ShareGPT written as Spark and Hive write strings: plain binary, no UTF-8 annotation."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    turn = pa.struct([("from", pa.binary()), ("value", pa.binary())])
    rows = [[{"from": b"human", "value": f"Translate 'thank you' into language {i}.".encode()},
             {"from": b"gpt", "value": "Merci — danke — ありがとう".encode()}] for i in range(1, 4)]
    pq.write_table(pa.table({"conversations": pa.array(rows, pa.list_(turn))}),
                   HERE / "good" / "sharegpt_binary_text.parquet")


def main() -> None:
    for name, data in FILES.items():
        (HERE / name).parent.mkdir(exist_ok=True)
        (HERE / name).write_bytes(data)
    parquet_files()
    print(f"{len(FILES) + 5} files written")


if __name__ == "__main__":
    main()

"""How a LLaMA-Factory dataset_info.json entry lays its records out, mapped onto tunegate's formats.

    "my_chat": {"file_name": "chat.json", "formatting": "sharegpt", "columns": {"messages": "messages"},
                "tags": {"role_tag": "role", "content_tag": "content", "user_tag": "user",
                         "assistant_tag": "assistant"}}
    # entry_format(...) == "messages": OpenAI chat, the same records read the same way

LLaMA-Factory reads an entry's records through its `columns` (which field holds what) and, for
sharegpt (and openai) formatting, its `tags` (a turn's role and text keys, the role names), with
the defaults of its DatasetAttr (src/llamafactory/data/parser.py). An entry laid out as one of
tunegate's formats maps onto it: alpaca's instruction/input/output, sharegpt's conversations with
from/value and human/gpt, and messages with role/content and user/assistant (OpenAI chat). Any
other layout is TG145 at its key, naming the fields tunegate reads instead. An entry of another
kind of data is named for what it is: preference pairs (`ranking`), KTO feedback (`kto_tag`),
images, videos or audio (multimodal), pre-training text (`columns: {prompt: text}`).
"""
from __future__ import annotations

from typing import Any

from tunegate.spec.importers.config_data import unusable_data
from tunegate.spec.importers.config_keys import refused_by_tool, wrong_type
from tunegate.spec.importers.config_map import ConfigMap

# DatasetAttr's column defaults; None: the column is not read unless the entry names it.
_ALPACA_COLUMNS = {"prompt": "instruction", "query": "input", "response": "output", "history": None, "system": None,
                   "tools": None}
_CHAT_COLUMNS = {"messages": "conversations", "system": None, "tools": None}
# What tunegate's readers call the same fields: a column may be left unset or named so.
_READ_AS = {"prompt": "instruction", "query": "input", "response": "output", "history": "history",
            "system": "system", "tools": "tools"}
# DatasetAttr's tag defaults, and the tags that make a chat entry one of tunegate's chat formats.
_TAGS = {"role_tag": "from", "content_tag": "value", "user_tag": "human", "assistant_tag": "gpt",
         "observation_tag": "observation", "function_tag": "function_call", "system_tag": "system"}
_CHAT_FORMATS = {("conversations", "from", "value", "human", "gpt", "system"): "sharegpt",
                 ("messages", "role", "content", "user", "assistant", "system"): "messages"}
_MEDIA = ("images", "videos", "audios")


def entry_format(cmap: ConfigMap, name: str, attrs: dict[str, Any], stage: str) -> str | None:
    """The tunegate format that reads entry `name`'s records as LLaMA-Factory does; None (with the
    finding that says why, at the entry's key) when no format does."""
    columns, tags = _mapping(cmap, name, attrs, "columns"), _mapping(cmap, name, attrs, "tags")
    if columns is None or tags is None or not _sft_data(cmap, name, attrs, columns, stage):
        return None
    formatting = attrs.get("formatting") or "alpaca"
    if formatting == "alpaca":
        return _alpaca(cmap, name, columns, stage)
    if formatting in ("sharegpt", "openai"):
        return _chat(cmap, name, columns, tags)
    refused_by_tool(cmap, f"{name}.formatting", f"formatting {formatting!r}: LLaMA-Factory has no such converter "
                    f"(\"Dataset converter {formatting} not found.\")", "Use formatting: alpaca or sharegpt.")
    return None


def _mapping(cmap: ConfigMap, name: str, attrs: dict[str, Any], key: str) -> dict[str, Any] | None:
    value = attrs.get(key) or {}
    if isinstance(value, dict):
        return value
    wrong_type(cmap, f"{name}.{key}", value, "a mapping of names", f"Write {key} as an object, e.g. "
               "{\"messages\": \"conversations\"}.")
    return None


def _sft_data(cmap: ConfigMap, name: str, attrs: dict[str, Any], columns: dict[str, Any], stage: str) -> bool:
    """Whether the entry is supervised fine-tuning data; else TG145 or TG154 names what it is."""
    media = [c for c in _MEDIA if columns.get(c)]
    if media:
        unusable_data(cmap, f"{name}.columns.{media[0]}", f"{name} is multimodal ({', '.join(media)}: "
                      f"{', '.join(repr(columns[c]) for c in media)}): LLaMA-Factory feeds them to a vision or audio "
                      "language model; tunegate gates text fine-tuning only", "Check the text-only records (without "
                      f"the {media[0]} column and its <image>/<video>/<audio> placeholders), or check this dataset "
                      "with LLaMA-Factory itself.")
        return False
    if stage != "sft":  # the stage finding already says the run is not supervised fine-tuning
        return True
    if attrs.get("ranking") is True:
        refused_by_tool(cmap, f"{name}.ranking", f"{name} is preference data (ranking: true, chosen/rejected "
                        "answers): LLaMA-Factory refuses it for stage sft (\"The dataset is not applicable in the "
                        "current training stage.\")", "Name a supervised fine-tuning dataset (instruction/output or "
                        "conversations ending with the reply); to train on the chosen answers, write them as "
                        "outputs and register that file without ranking.")
        return False
    if columns.get("kto_tag"):
        unusable_data(cmap, f"{name}.columns.kto_tag", f"{name} is KTO feedback data (kto_tag: "
                      f"{columns['kto_tag']!r}): LLaMA-Factory's sft stage drops every record whose tag is true or "
                      "false (\"Dropped invalid example\"), so nothing of it trains", "For supervised fine-tuning, "
                      "register the records tagged true without kto_tag (leave out the false ones: undesirable "
                      "answers); KTO runs (stage: kto) are not gated by tunegate.")
        return False
    return True


def _alpaca(cmap: ConfigMap, name: str, columns: dict[str, Any], stage: str) -> str | None:
    if set(columns) == {"prompt"} and columns["prompt"] != "instruction":
        if stage != "sft":  # the stage finding already says so
            return None
        unusable_data(cmap, f"{name}.columns.prompt", f"{name} maps prompt alone to {columns['prompt']!r}: "
                      "LLaMA-Factory's pre-training layout ({\"text\": ...} documents, read by stage pt), not "
                      "supervised fine-tuning examples", "Name a supervised fine-tuning dataset "
                      "(instruction/input/output records).")
        return None
    odd = _renamed(columns, _ALPACA_COLUMNS)
    if odd:
        _other_fields(cmap, name, odd, "Alpaca records as 'instruction', 'input', 'output' (with 'system', "
                      "'history', 'tools')")
        return None
    return "alpaca"


def _chat(cmap: ConfigMap, name: str, columns: dict[str, Any], tags: dict[str, Any]) -> str | None:
    said = {**_TAGS, **{k: v for k, v in tags.items() if v is not None}}
    layout = (columns.get("messages") or "conversations", said["role_tag"], said["content_tag"], said["user_tag"],
              said["assistant_tag"], said["system_tag"])
    fmt = _CHAT_FORMATS.get(layout)
    odd = _renamed(columns, _CHAT_COLUMNS)
    if fmt is None:
        turns, role, text, user, reply, _ = layout
        unusable_data(cmap, f"{name}.{'tags' if tags else 'columns'}", f"{name} holds its turns in {turns!r} with "
                      f"{role!r}/{text!r} and roles {user!r}/{reply!r}: tunegate reads 'conversations' with "
                      "'from'/'value' (human/gpt) or 'messages' with 'role'/'content' (user/assistant)",
                      "Rename the fields to one of those layouts (a jq one-liner over the file), set the entry's "
                      "columns and tags to match, and check it again.")
        return None
    if odd:
        _other_fields(cmap, name, odd, "'system' and 'tools' by those names")
        return None
    return fmt


def _renamed(columns: dict[str, Any], defaults: dict[str, str | None]) -> list[str]:
    """The columns the entry maps to other fields than tunegate's readers read."""
    return [c for c, field in columns.items() if c in _READ_AS and field is not None
            and field != (defaults.get(c) or _READ_AS[c])]


def _other_fields(cmap: ConfigMap, name: str, odd: list[str], reads: str) -> None:
    unusable_data(cmap, f"{name}.columns.{odd[0]}", f"{name} maps {', '.join(odd)} to other fields than tunegate "
                  f"reads: it reads {reads}", "Rename the fields in the file to those names (a jq one-liner) and "
                  "drop them from the entry's columns.")

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
other layout LLaMA-Factory trains as well (its converters rename the columns and tags), and so do
multimodal records (images, videos, audio) where the config's template takes their media: tunegate
does not read those (`Unread`: TG145 by the dataset stage, no reason LLaMA-Factory refuses the run).
Media the template does not take stop LLaMA-Factory (TG154). An entry of another kind of data is
named for what it is: preference pairs (`ranking`), KTO feedback (`kto_tag`), pre-training text
(`columns: {prompt: text}`).
"""
from __future__ import annotations

from typing import Any, NamedTuple

from tunegate.spec.importers.config_data import unusable_data
from tunegate.spec.importers.config_keys import refused_by_tool, wrong_type
from tunegate.spec.importers.config_map import ConfigMap
from tunegate.spec.importers.llamafactory_tables import MEDIA_TEMPLATES, TEXT_TEMPLATES

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
_MEDIA = {"images": "image", "videos": "video", "audios": "audio"}  # column -> the medium a template takes
# said of every entry LLaMA-Factory trains and tunegate does not read here
NOT_READ = "so the data stages cannot check it (every other check runs)"


class Unread(NamedTuple):
    """An entry LLaMA-Factory trains that tunegate does not read here: the key that says so, why, the fix."""

    key: str
    message: str
    hint: str


def entry_format(cmap: ConfigMap, name: str, attrs: dict[str, Any], stage: str) -> str | Unread | None:
    """The tunegate format that reads entry `name`'s records as LLaMA-Factory does; `Unread` when LLaMA-Factory
    trains them and tunegate does not read them; None (with the finding that says why, at the entry's key)
    when LLaMA-Factory refuses them or they are no supervised fine-tuning data."""
    columns, tags = _mapping(cmap, name, attrs, "columns"), _mapping(cmap, name, attrs, "tags")
    if columns is None or tags is None or not _sft_data(cmap, name, attrs, columns, stage):
        return None
    formatting = attrs.get("formatting") or "alpaca"
    if formatting not in ("alpaca", "sharegpt", "openai"):
        refused_by_tool(cmap, f"{name}.formatting", f"formatting {formatting!r}: LLaMA-Factory has no such converter "
                        f"(\"Dataset converter {formatting} not found.\")", "Use formatting: alpaca or sharegpt.")
        return None
    if any(columns.get(c) for c in _MEDIA):
        return _media(cmap, name, columns)
    return _alpaca(cmap, name, columns, stage) if formatting == "alpaca" else _chat(cmap, name, columns, tags)


def _mapping(cmap: ConfigMap, name: str, attrs: dict[str, Any], key: str) -> dict[str, Any] | None:
    value = attrs.get(key) or {}
    if isinstance(value, dict):
        return value
    wrong_type(cmap, f"{name}.{key}", value, "a mapping of names", f"Write {key} as an object, e.g. "
               "{\"messages\": \"conversations\"}.")
    return None


def _sft_data(cmap: ConfigMap, name: str, attrs: dict[str, Any], columns: dict[str, Any], stage: str) -> bool:
    """Whether the entry is supervised fine-tuning data; else TG145 or TG154 names what it is."""
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


def _media(cmap: ConfigMap, name: str, columns: dict[str, Any]) -> Unread | None:
    """Multimodal records: data LLaMA-Factory trains and tunegate does not read, where the config's template
    takes their media; TG154 (and None) where it takes none of one of them, as LLaMA-Factory then stops."""
    media = [c for c in _MEDIA if columns.get(c)]
    shown = f"{', '.join(media)}: {', '.join(repr(columns[c]) for c in media)}"
    template = cmap.source.get("template")
    takes = MEDIA_TEMPLATES.get(template, ()) if isinstance(template, str) else ()
    refused = next((c for c in media if _MEDIA[c] not in takes), None)
    if refused and (template is None or template in TEXT_TEMPLATES or template in MEDIA_TEMPLATES):
        medium = _MEDIA[refused]
        which = f"template {template!r} takes" if template is not None else "no template is set, so LLaMA-Factory " \
            "parses the tokenizer's chat template, which takes"
        refused_by_tool(cmap, f"{name}.columns.{refused}", f"{name} is multimodal ({shown}) and {which} no {medium}: "
                        f"LLaMA-Factory stops at the first record that holds one (\"This model does not support "
                        f"{medium} input. Please check whether the correct `template` is used.\")", "Set template to "
                        "the model's multimodal template (qwen2_vl, qwen3_vl, llava, ...), or register the records "
                        f"without the {refused} column and their <{medium}> placeholders.")
        return None
    return Unread(f"{name}.columns.{media[0]}", f"{name} is multimodal ({shown}): LLaMA-Factory feeds the media to "
                  f"the vision or audio model its template {template!r} serves, and tunegate does not read them (it "
                  f"gates text fine-tuning), {NOT_READ}", "To gate the text, check the text-only records (without "
                  f"the {media[0]} column and their <{_MEDIA[media[0]]}> placeholders) with --train FILE --validation "
                  "FILE; otherwise the run is checked without its data.")


def _alpaca(cmap: ConfigMap, name: str, columns: dict[str, Any], stage: str) -> str | Unread | None:
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
        return _other_fields(name, odd, "Alpaca records as 'instruction', 'input', 'output' (with 'system', "
                             "'history', 'tools')")
    return "alpaca"


def _chat(cmap: ConfigMap, name: str, columns: dict[str, Any], tags: dict[str, Any]) -> str | Unread | None:
    said = {**_TAGS, **{k: v for k, v in tags.items() if v is not None}}
    layout = (columns.get("messages") or "conversations", said["role_tag"], said["content_tag"], said["user_tag"],
              said["assistant_tag"], said["system_tag"])
    fmt = _CHAT_FORMATS.get(layout)
    odd = _renamed(columns, _CHAT_COLUMNS)
    if fmt is None:
        turns, role, text, user, reply, _ = layout
        return Unread(f"{name}.{'tags' if tags else 'columns'}", f"{name} holds its turns in {turns!r} with "
                      f"{role!r}/{text!r} and roles {user!r}/{reply!r}, which LLaMA-Factory reads as its columns and "
                      "tags say; tunegate reads 'conversations' with 'from'/'value' (human/gpt) or 'messages' with "
                      f"'role'/'content' (user/assistant), {NOT_READ}", "To gate the data, rename the fields to one "
                      "of those layouts (a jq one-liner over the file) and set the entry's columns and tags to match; "
                      "otherwise the run is checked without its data.")
    if odd:
        return _other_fields(name, odd, "'system' and 'tools' by those names")
    return fmt


def _renamed(columns: dict[str, Any], defaults: dict[str, str | None]) -> list[str]:
    """The columns the entry maps to other fields than tunegate's readers read."""
    return [c for c, field in columns.items() if c in _READ_AS and field is not None
            and field != (defaults.get(c) or _READ_AS[c])]


def _other_fields(name: str, odd: list[str], reads: str) -> Unread:
    """Columns LLaMA-Factory renames as the entry says, which tunegate's readers read by other names."""
    return Unread(f"{name}.columns.{odd[0]}", f"{name} maps {', '.join(odd)} to other fields, which LLaMA-Factory "
                  f"reads as the entry says and tunegate does not (it reads {reads}), {NOT_READ}", "To gate the "
                  "data, rename the fields in the file to those names (a jq one-liner) and drop them from the entry's "
                  "columns; otherwise the run is checked without its data.")

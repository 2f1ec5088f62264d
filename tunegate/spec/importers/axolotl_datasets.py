"""axolotl's dataset entries (`datasets`, `test_datasets`) mapped onto the spec's data files and format.

    datasets:
      - path: data/chat.jsonl        # a local file or folder, or a Hub dataset id in the local cache
        type: chat_template          # OpenAI chat fields; field_messages: conversations + from/value: ShareGPT
        roles_to_train: [assistant]  # axolotl's default, what tunegate's run trains
      - path: data/more_chat.jsonl   # several entries: one split, their files read in order (axolotl
        type: chat_template          # concatenates them), all in one format

Part of the axolotl dialect (`tunegate.spec.importers.axolotl_dialect`): an entry is read as
axolotl's loaders read it (ds_type, data_files, split, a folder's split files), and an entry
tunegate would read another way is refused at its key (TG145).
"""
from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from tunegate.errors import UsageError
from tunegate.file_kinds import KINDS, kind_of
from tunegate.spec.importers.config_data import (
    Source,
    map_data_file,
    set_data,
    not_read_here,
    source_files,
    unusable_data,
)
from tunegate.spec.importers.config_keys import refused_by_tool, text, wrong_type
from tunegate.spec.importers.config_map import ConfigMap
from tunegate.spec.importers.unhonoured import not_honoured, own_template

_ENTRY_KEYS = {"path", "type", "split", "data_files", "field_messages", "message_property_mappings",
               "message_field_role", "message_field_content", "ds_type", "dataset_type", "roles_to_train",
               "train_on_eos"}
# roles_to_train as axolotl names the reply roles (its default is [assistant]; `gpt` maps onto it)
_REPLY_ROLES = {"assistant", "gpt"}


def dataset(cmap: ConfigMap, role: str, key: str) -> str | None:
    """Map the entries of `datasets` / `test_datasets` onto data.<role> (several: their files concatenated in
    order, as axolotl concatenates the datasets); their one format, or None when they cannot be used."""
    entries = cmap.get(key)
    if role in cmap.overrides:  # the file given on the command line, read in the entry's format
        first = entries[0] if isinstance(entries, list) and entries and isinstance(entries[0], dict) else None
        fmt = _entry_format(cmap, role, first, f"{key}.0") if first is not None else None
        if fmt:
            _split_format(cmap, role, fmt, key)
        map_data_file(cmap, role, first.get("path") if first else None, f"{key}.0.path" if first else key,
                      from_disk=True)
        return fmt or None
    cmap.explained.add(f"data.{role}")
    if not isinstance(entries, list) or not entries or not all(isinstance(e, dict) for e in entries):
        what = "not set" if entries is None else repr(entries)
        unusable_data(cmap, key if cmap.has(key) else None, f"{key} is {what}: no {role} data",
                      f"List the {role} file: {key}: [{{path: data/{role}.jsonl, type: chat_template}}].")
        return None
    read = [_entry(cmap, role, entry, f"{key}.{n}") for n, entry in enumerate(entries)]
    fmt = _one_format(cmap, role, key, [r.fmt for r in read if r is not None])
    if fmt:
        _split_format(cmap, role, fmt, key)
    if any(r is None or r.files is None for r in read):
        return None
    set_data(cmap, role, [path for r in read for path in r.files or []], f"{key}.0.path" if len(read) == 1 else key)
    return fmt if fmt and all(r.usable for r in read if r is not None) else None


def _split_format(cmap: ConfigMap, role: str, fmt: str, key: str) -> None:
    """data.format from the training split's entries; from test_datasets' only when the training split names
    none (another format there leaves the validation split unread: `axolotl_dialect._data`)."""
    if role == "train" or not cmap.data.get("data", {}).get("format"):
        cmap.set("data.format", fmt, f"{key}.0.type")


class _Read(NamedTuple):
    """One dataset entry as read: its format ("" when it names none tunegate reads), its files (None when
    they cannot be had), whether axolotl reads them as tunegate does."""

    fmt: str
    files: list[Path] | None
    usable: bool = True


def _entry(cmap: ConfigMap, role: str, entry: dict, at: str) -> _Read | None:
    """One dataset entry; None (said) when it names no split to read at all."""
    cmap.unchecked += [f"{at}.{k}" for k, v in entry.items() if k not in _ENTRY_KEYS and v not in (None, "", [], {})]
    fmt = _entry_format(cmap, role, entry, at)
    if fmt == "":  # not read here (TG145): its files are not looked for
        return _Read("", None)
    fmt = fmt or ""
    ref = entry.get("path")
    if entry.get("data_files") is not None and isinstance(ref, str) and _not_a_repo(cmap, ref):
        unusable_data(cmap, f"{at}.path", f"path {ref!r} with data_files: axolotl reads data_files as "
                      f"files of the Hub dataset repo {ref!r}, and {ref!r} is neither that nor a local file or folder",
                      "For a local file, give it as path (path: data/train.jsonl, ds_type: json) and drop "
                      "data_files; keep data_files only for files inside a Hub dataset repo.")
        return None
    if entry.get("data_files") is not None and isinstance(ref, str):
        files = entry["data_files"]
        ref = f"{ref}/{files}" if isinstance(files, str) else ref
    split = text(cmap, f"{at}.split", entry.get("split") or None, "train" if role == "train" else "test")
    if split is None:
        return None
    found = source_files(cmap, role, Source(ref, f"{at}.path", split), from_disk=True)
    usable = found is None or not isinstance(ref, str) or _loader_reads(cmap, entry, at, found, ref)
    return _Read(fmt, found, usable)


def _one_format(cmap: ConfigMap, role: str, key: str, formats: list[str]) -> str | None:
    """The entries' one format ("" when none names one tunegate reads: TG145 said so). None when two entries
    differ: axolotl tokenises each dataset by its own type and concatenates them, tunegate reads a split in
    one format, so the split is not read here (TG145 by the dataset stage, no reason axolotl refuses it)."""
    named = [(n, fmt) for n, fmt in enumerate(formats) if fmt]
    other = next(((n, fmt) for n, fmt in named if fmt != named[0][1]), None)
    if other is None:
        return named[0][1] if named else ""
    not_read_here(cmap, role, f"{key}.{other[0]}.type", f"{key}.{other[0]} is {other[1]} but {key}.{named[0][0]} is "
                  f"{named[0][1]}: axolotl tokenises each dataset by its own type and concatenates them, tunegate "
                  "reads a split in one format, so the split is not checked here", "To gate the split, give every "
                  "dataset of it the same type and fields (or convert one with `tunegate convert`); otherwise the "
                  "run is checked without its data.")
    return None


def _loader_reads(cmap: ConfigMap, entry: dict, at: str, files: list[Path], ref: str) -> bool:
    """A `ds_type` (newer axolotl: `dataset_type`) is the `load_dataset` builder axolotl reads the file with;
    one that is not what the file is fails there, so it is an error here (TG145), not a silent other read."""
    key = next((k for k in ("ds_type", "dataset_type") if entry.get(k) is not None), None)
    path = files[0]
    if len(files) > 1 or path not in (_absolute(cmap.base / ref), _absolute(Path(ref))):  # a folder's split
        return True  # files, or a Hub file: load_from_disk or load_dataset(folder) reads them by their names
    if path.name.lower().removesuffix(".gz").endswith(".tsv"):
        unusable_data(cmap, f"{at}.path", f"{path.name} is tab-separated, and axolotl reads no local .tsv "
                      "file as such: without ds_type it uses load_dataset('json'), and ds_type: csv splits on commas",
                      "Write it as CSV (DataFrame.to_csv(..., index=False)) or JSONL, or put the split files in a "
                      "folder and give the folder as path (load_dataset reads a folder's .tsv files with tabs).")
        return False
    if key is None:
        return True
    try:
        actual = kind_of(path)
    except UsageError:  # unreadable: the dataset stage says why (TG240)
        return True
    declared, builder = entry[key], "json" if actual == "jsonl" else actual
    if declared == builder:
        return True
    unusable_data(cmap, f"{at}.{key}", f"{key} is {declared!r}, but {path.name} is {KINDS[actual]}: axolotl "
                  f"reads it with load_dataset({declared!r}, data_files=...), which fails on it or reads other records",
                  f"Set {key}: {builder}, or drop it (axolotl then chooses by the file's name, as tunegate does).")
    return False


def _absolute(path: Path) -> Path | None:
    try:
        return path.resolve()
    except (OSError, RuntimeError, ValueError):  # a symlink loop, a NUL byte: never the file resolved
        return None


def _not_a_repo(cmap: ConfigMap, ref: str) -> bool:
    """`path` names no Hub repo (owner/name) and no local file or folder (as `path: json` does)."""
    try:
        local = (cmap.base / ref).exists() or Path(ref).exists()
    except (OSError, ValueError):  # a NUL byte or an over-long name: no local file
        local = False
    return not local and "/" not in ref.strip("/")


# axolotl's `type: alpaca:STYLE` (its prompters.PromptStyle): the same Alpaca records in another prompt layout
ALPACA_STYLES = ("instruct", "chat", "chatml", "phi")


# The dataset types axolotl trains that tunegate does not read (src/axolotl/prompt_strategies' modules,
# those of its rl packages, and utils/data/wrappers.py's DATASET_HANDLERS, at 067b021c); a dotted type names
# a loader function or a module of the user's. axolotl stops on any other ("unhandled prompt tokenization
# strategy"). completion and pretrain read each record's plain text.
AXOLOTL_TYPES = frozenset({
    "alpaca_chat", "alpaca_instruct", "alpaca_w_system", "bradley_terry", "completion", "context_qa",
    "creative_acr", "input_output", "llama2_chat", "messages", "metharme", "orcamini", "pretrain", "pygmalion",
    "stepwise_supervised", "user_defined", "chatml", "llama3", "passthrough", "zephyr", "explainchoice",
    "concisechoice", "summarizetldr", "jeopardy", "oasst", "gpteacher", "reflection"})
TEXT_TYPES = ("completion", "pretrain")


def _entry_format(cmap: ConfigMap, role: str, entry: dict, at: str) -> str | None:
    """The tunegate format that reads the entry's records as axolotl does; "" (TG145 said by the dataset stage)
    when axolotl trains them and tunegate does not read them; None (said) when axolotl refuses them."""
    kind = entry.get("type")
    if kind == "alpaca" or (isinstance(kind, str) and kind.startswith("alpaca:")
                            and kind.partition(":")[2] in ALPACA_STYLES):
        return "alpaca"
    if isinstance(kind, str) and kind.startswith("sharegpt"):
        refused_by_tool(cmap, f"{at}.type", f"type: {kind} is refused by axolotl (\"`type: sharegpt.*` is "
                        "deprecated. Please use `type: chat_template` instead.\")", "Write type: chat_template with "
                        "field_messages: conversations and message_property_mappings: {role: from, content: value} "
                        "(the same ShareGPT records, read the same way).")
        return "sharegpt"
    if kind == "chat_template":
        _loss_roles(cmap, entry, at)
        if entry.get("chat_template") is not None or entry.get("chat_template_jinja") is not None:
            template(cmap, entry.get("chat_template") or "jinja", f"{at}.chat_template")
        field = entry.get("field_messages", "messages")
        props = entry.get("message_property_mappings") or {
            "role": entry.get("message_field_role", "role"), "content": entry.get("message_field_content", "content")}
        if not isinstance(field, str):
            wrong_type(cmap, f"{at}.field_messages", field, "the name of the records' messages field",
                       "Write the field's name: field_messages: conversations.")
            return None
        if not isinstance(props, dict) or not all(isinstance(name, str) for name in props.values()):
            wrong_type(cmap, f"{at}.message_property_mappings", props, "a mapping of message fields",
                       "Write it as a mapping: message_property_mappings: {role: from, content: value}.")
            return None
        names = (field, props.get("role", "role"), props.get("content", "content"))
        if names == ("messages", "role", "content"):
            return "messages"
        if names == ("conversations", "from", "value"):
            return "sharegpt"
        not_read_here(cmap, role, f"{at}.field_messages", f"chat_template with messages in {names[0]!r} and fields "
                      f"{names[1]!r}/{names[2]!r}, which axolotl reads as field_messages and message_property_mappings "
                      "say; tunegate reads 'messages' with role/content and 'conversations' with from/value, so the "
                      "data stages cannot check it (every other check runs)", "To gate the data, rename the fields "
                      "(`jq`) or convert the file (`tunegate convert`), and drop the mappings; otherwise the run is "
                      "checked without its data.")
        return ""
    if _axolotl_trains(kind):
        _not_read(cmap, role, entry, at)
        return ""
    unusable_data(cmap, f"{at}.type", f"dataset type {kind!r} is not one axolotl knows: it stops (\"unhandled "
                  "prompt tokenization strategy\")", "Use type: chat_template (OpenAI chat or ShareGPT fields) "
                  "or alpaca, or another of axolotl's dataset types.")
    return None


def _axolotl_trains(kind: object) -> bool:
    """Whether axolotl reads data of dataset type `kind` (a mapping is its user-defined prompt format; no
    type, pre-tokenized records)."""
    if kind is None or isinstance(kind, dict):
        return True
    return isinstance(kind, str) and ("." in kind or kind.partition(":")[0] in AXOLOTL_TYPES)


def _not_read(cmap: ConfigMap, role: str, entry: dict, at: str) -> None:
    """A dataset type axolotl trains and tunegate does not read: the split cannot be checked here (the gate
    fails; axolotl is not said to refuse it). completion and pretrain read plain text records, which a
    file given for the split (--train, --validation) is checked to be."""
    kind = entry.get("type")
    shown_kind = "a user-defined prompt format" if isinstance(kind, dict) else repr(kind)
    if kind in TEXT_TYPES and entry.get("field") in (None, "text"):
        cmap.trains_text[role] = "only"
    what = (f"dataset type {shown_kind} is data axolotl trains" if kind is not None else "no dataset type: axolotl "
            "trains pre-tokenized records (input_ids, attention_mask, labels) as they are (and stops on others)")
    not_read_here(cmap, role, f"{at}.type" if "type" in entry else at, f"{what} and tunegate does "
                  "not read, so the data stages cannot check it (every other check runs)", "To gate the data, write "
                  "it in a format tunegate reads (type: chat_template with OpenAI chat or ShareGPT fields, or alpaca; "
                  "`tunegate convert` writes any of them as OpenAI chat); otherwise the run is checked without its "
                  "data.")


def _loss_roles(cmap: ConfigMap, entry: dict, at: str) -> None:
    """TG147 for roles_to_train or train_on_eos away from axolotl's defaults (the replies, each reply's
    end token): tunegate trains the replies, or every token with train_on_inputs."""
    roles = entry.get("roles_to_train")
    replies_only = isinstance(roles, list) and roles and all(isinstance(r, str) and r in _REPLY_ROLES for r in roles)
    if roles is not None and not replies_only:
        not_honoured(cmap, f"{at}.roles_to_train", f"roles_to_train {roles!r} trains other turns than the replies; "
                     "tunegate's run trains the assistant's replies only (or every token with train_on_inputs: "
                     "true)", "Remove roles_to_train (axolotl's default is [assistant]), or set train_on_inputs: "
                     "true to train every token.")
    eos = entry.get("train_on_eos")
    if eos not in (None, "turn"):
        not_honoured(cmap, f"{at}.train_on_eos", f"train_on_eos: {eos} changes which end-of-turn tokens train; "
                     "tunegate's run trains each reply's own end token (axolotl's default, turn)",
                     "Remove train_on_eos, or set it to turn.")


def template(cmap: ConfigMap, name: object, key: str) -> None:
    """TG156: axolotl renders chats with its own template, tunegate with the tokenizer's."""
    if name in (None, "tokenizer_default"):
        return
    own_template(cmap, key, f"{key}: {name} makes axolotl render every chat with "
                 f"{'the jinja template in chat_template_jinja' if name == 'jinja' else f'its {name} template'}; "
                 "tunegate's token audit, mini-run and full run render with the base model tokenizer's own chat "
                 "template, so where the two differ the checked and trained prompts are not axolotl's",
                 "If the tokenizer's template is the same format, set chat_template: tokenizer_default. Otherwise "
                 "save the template into the tokenizer (tokenizer.chat_template = ...; save_pretrained(folder)) "
                 "and point base_model at that folder.")

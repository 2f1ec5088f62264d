"""An axolotl YAML config mapped onto the spec, with axolotl's own defaults for what it leaves out.

Read from axolotl's config schema (src/axolotl/utils/schemas): micro_batch_size 1,
gradient_accumulation_steps 1, num_epochs 1, sequence_len 512, lora_dropout 0.0, lr_scheduler
cosine, optimizer adamw_torch_fused, weight_decay 0.0, bf16 auto, val_set_size 0.0; seed and
max_grad_norm unset (the HF Trainer's 42 and 1.0). Mapped keys are listed in docs/axolotl.md;
every other key with a value is listed once as not checked (TG140).
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from tunegate.errors import UsageError
from tunegate.file_kinds import KINDS, kind_of
from tunegate.spec import config_keys
from tunegate.spec.config_data import map_data_file
from tunegate.spec.config_map import OPTIMIZERS, SCHEDULERS, ConfigMap

_ATTENTION = {"flash_attention_2": "flash_attention_2", "sdpa": "sdpa", "eager": "eager"}
# (key, spec key, axolotl's default when the key is absent)
_PLAIN = [("sequence_len", "training.max_seq_len", 512), ("micro_batch_size", "training.micro_batch_size", 1),
          ("gradient_accumulation_steps", "training.grad_accum_steps", 1),
          ("num_epochs", "training.epochs", 1.0), ("max_steps", "training.max_steps", None),
          ("learning_rate", "training.learning_rate", None), ("weight_decay", "training.weight_decay", 0.0),
          ("max_grad_norm", "training.max_grad_norm", 1.0), ("seed", "training.seed", 42),
          ("adam_beta1", "training.adam_beta1", None), ("adam_beta2", "training.adam_beta2", None),
          ("adam_epsilon", "training.adam_epsilon", None),
          ("warmup_steps", "training.warmup_steps", 0), ("warmup_ratio", "training.warmup_ratio", 0.0),
          ("lora_r", "lora.r", None), ("lora_alpha", "lora.alpha", None), ("lora_dropout", "lora.dropout", 0.0),
          ("lora_modules_to_save", "lora.modules_to_save", None), ("output_dir", "full_run.output_dir", None),
          ("revision_of_model", "model.revision", None), ("trust_remote_code", "model.trust_remote_code", None),
          ("base_model", "model.id", None)]
# Keys axolotl reads that change nothing tunegate checks or runs (logging, saving, the prepared-data cache).
_NO_EFFECT = {"strict", "dataset_prepared_path", "logging_steps", "evals_per_epoch", "saves_per_epoch", "eval_steps",
              "save_steps", "save_strategy", "eval_strategy", "wandb_project", "wandb_entity", "wandb_watch",
              "wandb_name", "wandb_log_model", "tokenizer_type", "model_type", "eval_max_new_tokens",
              "eval_table_size", "debug", "local_rank"}


_REQUIRED = ("base_model", "learning_rate", "lora_r", "lora_alpha")  # axolotl (or PEFT under it) fails without;
# lora_* only with an adapter
_ENTRY_KEYS = {"path", "type", "split", "data_files", "field_messages", "message_property_mappings",
               "message_field_role", "message_field_content", "ds_type", "dataset_type", "roles_to_train",
               "train_on_eos"}
# roles_to_train as axolotl names the reply roles (its default is [assistant]; `gpt` maps onto it)
_REPLY_ROLES = {"assistant", "gpt"}


def map_config(cmap: ConfigMap) -> None:
    """Fill `cmap` from an axolotl config."""
    for key, spec_key, default in _PLAIN:
        value = cmap.get(key, default)
        if value is not None:
            cmap.set(spec_key, _number(value) if key in ("learning_rate", "adam_epsilon") else value, key)
    cmap.used |= {k for k in _NO_EFFECT if k in cmap.source}
    _batch_size(cmap)
    _adapter(cmap)
    _targets(cmap)
    _precision(cmap)
    _training(cmap)
    _data(cmap)
    tokens = cmap.get("special_tokens")
    pad = tokens.get("pad_token") if isinstance(tokens, dict) else None
    if pad is not None:
        cmap.set("model.pad_token", pad, "special_tokens.pad_token")
    if isinstance(tokens, dict):  # bos/eos/unk overrides: not applied by tunegate's run, so listed
        cmap.unchecked += [f"special_tokens.{k}" for k, v in tokens.items() if k != "pad_token" and v is not None]
    cmap.used.add("chat_template_jinja")  # the template TG156 names
    _template(cmap, cmap.get("chat_template") or ("jinja" if cmap.get("chat_template_jinja") else None),
              "chat_template" if cmap.has("chat_template") else "chat_template_jinja")
    config_keys.unhonoured(cmap)
    meant = config_keys.typos(cmap, cmap.used | _NO_EFFECT)
    lora = cmap.get("adapter") in ("lora", "qlora")  # a full fine-tune needs no lora_* keys (TG144 names it)
    for key in _REQUIRED:
        if not cmap.has(key) and key not in meant and (lora or not key.startswith("lora_")):
            cmap.note("TG152", "error", None, f"{key} is not set; axolotl cannot train without it",
                      f"Set {key} (see the axolotl examples, e.g. examples/llama-3/lora-1b.yml).")


def _template(cmap: ConfigMap, name: object, key: str) -> None:
    """TG156: axolotl renders chats with its own template, tunegate with the tokenizer's."""
    if name in (None, "tokenizer_default"):
        return
    cmap.note("TG156", "warning", key, f"{key}: {name} makes axolotl render every chat with "
              f"{'the jinja template in chat_template_jinja' if name == 'jinja' else f'its {name} template'}; "
              "tunegate's token audit, mini-run and full run render with the base model tokenizer's own chat "
              "template, so where the two differ the checked and trained prompts are not axolotl's",
              "If the tokenizer's template is the same format, set chat_template: tokenizer_default. Otherwise "
              "save the template into the tokenizer (tokenizer.chat_template = ...; save_pretrained(folder)) "
              "and point base_model at that folder.")


def _batch_size(cmap: ConfigMap) -> None:
    """axolotl's older `batch_size` (the global batch): gradient_accumulation_steps is batch_size //
    micro_batch_size when not set itself (axolotl's normalize_config)."""
    total, micro = cmap.get("batch_size"), cmap.get("micro_batch_size", 1)
    if total is None or cmap.has("gradient_accumulation_steps"):
        return
    if isinstance(total, int) and isinstance(micro, int) and not isinstance(total, bool) and micro > 0 \
            and total >= micro:
        cmap.set("training.grad_accum_steps", total // micro, "batch_size")
        return
    cmap.note("TG103", "error", "batch_size", f"batch_size {total!r} with micro_batch_size {micro!r}: axolotl "
              "sets gradient_accumulation_steps to batch_size // micro_batch_size, which must be a whole number "
              "of at least 1", "Set gradient_accumulation_steps instead (and drop batch_size).")


def _number(value: Any) -> Any:
    """axolotl reads learning_rate as a string or a number (`learning_rate: "2e-4"`)."""
    try:
        return float(value) if isinstance(value, str) else value
    except ValueError:
        return value


def _adapter(cmap: ConfigMap) -> None:
    adapter, four, eight = cmap.get("adapter"), cmap.get("load_in_4bit", False), cmap.get("load_in_8bit", False)
    if adapter not in ("lora", "qlora"):
        what = "not set, so axolotl fine-tunes every weight" if adapter is None else f"{adapter!r}"
        cmap.note("TG144", "error", "adapter" if adapter is not None else None, f"adapter is {what}; tunegate "
                  "gates LoRA and QLoRA runs only", "Set adapter: lora (or qlora with load_in_4bit: true).")
    if four and eight:
        cmap.note("TG149", "error", "load_in_8bit", "load_in_4bit and load_in_8bit are both true",
                  "Keep one: load_in_4bit for QLoRA, load_in_8bit for LoRA on an 8-bit base.")
    if adapter == "qlora" and (eight or not four):
        cmap.note("TG154", "error", "load_in_8bit" if eight else "adapter", "adapter: qlora "
                  f"{'with load_in_8bit: true' if eight else 'without load_in_4bit: true'}: axolotl refuses it "
                  "(\"Require cfg.load_in_4bit to be True for qlora\")", "Set load_in_4bit: true and "
                  "load_in_8bit: false for QLoRA, or adapter: lora for LoRA on a 16-bit or 8-bit base.")
    quant = "4bit" if four or adapter == "qlora" else "8bit" if eight else "none"
    cmap.set("model.quantization", quant, "load_in_4bit" if four else "load_in_8bit" if eight else "adapter")


def _targets(cmap: ConfigMap) -> None:
    if cmap.get("lora_target_linear", False):
        cmap.set("lora.target_modules", "all-linear", "lora_target_linear")
        cmap.used.add("lora_target_modules")
        return
    targets = cmap.get("lora_target_modules")
    if targets is None:
        cmap.set("lora.target_modules", ["q_proj", "v_proj"])
        cmap.note("TG150", "info", None, "neither lora_target_modules nor lora_target_linear is set: PEFT's default "
                  "for Llama-style models applies, q_proj and v_proj", "Set lora_target_modules (or "
                  "lora_target_linear: true) to say which modules get adapters.")
        return
    if targets == "all-linear":  # PEFT's own name for every linear layer but the output head
        cmap.set("lora.target_modules", "all-linear", "lora_target_modules")
    elif isinstance(targets, str):
        config_keys.regex_targets(cmap, targets)
    else:
        cmap.set("lora.target_modules", targets, "lora_target_modules")


def _precision(cmap: ConfigMap) -> None:
    # bf16/fp16 are the Trainer's mixed-precision flags; bfloat16/float16 load and train the model in
    # that dtype without them (axolotl's "no AMP" keys). Either way the weights tunegate's run loads
    # are in that half precision, as its training.precision loads them.
    bf16, fp16 = cmap.get("bf16", "auto"), cmap.get("fp16", False)
    pure_bf16, pure_fp16 = bool(cmap.get("bfloat16", False)), bool(cmap.get("float16", False))
    cmap.used.add("tf32")  # tf32 speeds fp32 matmuls only; it changes no memory and no result tunegate checks
    half_bf16, half_fp16 = bf16 not in (False, "auto", None) or pure_bf16, bool(fp16) or pure_fp16
    bf16_key, fp16_key = "bf16" if bf16 not in (False, "auto", None) else "bfloat16", "fp16" if fp16 else "float16"
    if half_bf16 and half_fp16:
        cmap.note("TG149", "error", fp16_key, f"{bf16_key} and {fp16_key} are both true", "Keep one of them.")
    precision = "fp16" if half_fp16 else "bf16" if half_bf16 or bf16 == "auto" else "fp32"
    cmap.set("training.precision", precision, fp16_key if half_fp16 else bf16_key if half_bf16 else "bf16")
    checkpointing = cmap.get("gradient_checkpointing", False)
    cmap.set("training.gradient_checkpointing", bool(checkpointing), "gradient_checkpointing")


def _training(cmap: ConfigMap) -> None:
    cmap.choose("optimizer", "training.optimizer", "adamw_torch_fused", OPTIMIZERS)
    cmap.choose("lr_scheduler", "training.lr_scheduler", "cosine", SCHEDULERS)
    if cmap.has("warmup_steps") and cmap.has("warmup_ratio"):
        cmap.note("TG149", "error", "warmup_ratio", "warmup_steps and warmup_ratio are both set", "Keep one of them "
                  "(axolotl refuses both).")
    cmap.set("training.packing", bool(cmap.get("sample_packing", False)), "sample_packing")
    cmap.set("training.loss_on", "all" if cmap.get("train_on_inputs", False) else "replies", "train_on_inputs")
    _attention(cmap)
    if cmap.get("fsdp") or cmap.get("fsdp_config") or cmap.get("deepspeed"):
        sharding = "fsdp" if cmap.has("fsdp") or cmap.has("fsdp_config") else (
            "zero3" if "zero3" in str(cmap.get("deepspeed")) else "zero2")
        cmap.set("training.sharding", sharding, "deepspeed" if sharding != "fsdp" else
                 "fsdp" if cmap.has("fsdp") else "fsdp_config")


def _attention(cmap: ConfigMap) -> None:
    impl = cmap.get("attn_implementation")
    flags = {"flash_attention": "flash_attention_2", "sdp_attention": "sdpa", "eager_attention": "eager"}
    for key, name in flags.items():
        if cmap.get(key, False):
            impl = impl or name
    if impl is not None and not isinstance(impl, str):  # no name: the spec's TG102 lists the kernels
        cmap.set("training.attention", impl, "attn_implementation")
        return
    if impl is not None and impl not in _ATTENTION:
        cmap.note("TG147", "error", "attn_implementation", f"attention {impl!r} is not one tunegate's full run can "
                  "use", "Use attn_implementation: flash_attention_2, sdpa or eager.")
        return
    key = next((k for k in ("attn_implementation", *flags) if cmap.has(k)), None)
    cmap.set("training.attention", _ATTENTION.get(impl or "sdpa", "sdpa"), key)


def _data(cmap: ConfigMap) -> None:
    fmt = _dataset(cmap, "train", "datasets")
    if "validation" in cmap.overrides:  # --validation: the frozen file is given, whatever the config splits
        cmap.used.add("val_set_size")
        _dataset(cmap, "validation", "test_datasets")
        return
    size = _share(cmap, "val_set_size")
    if size is None:  # TG102 said so: not a share, so no split to judge either
        cmap.explained.add("data.validation")
        return
    if size > 0:
        cmap.explained.add("data.validation")
        share = f"{size:.0%}" if size <= 1 else f"{size:g} records"  # axolotl reads above 1 as a count
        cmap.note("TG141", "error", "val_set_size", f"val_set_size {cmap.source['val_set_size']} makes axolotl "
                  f"split a random {share} of the training data off for evaluation at each preprocessing: not a frozen "
                  "validation file, so scores of different runs are not comparable",
                  "Freeze the split once: write the held-out records to their own file (e.g. `tail -n 200 "
                  "train.jsonl > val.jsonl` and `head -n -200 train.jsonl > train_only.jsonl`), list it under "
                  "test_datasets, point datasets at the rest, and set val_set_size: 0.")
        return
    if not cmap.has("test_datasets"):
        cmap.explained.add("data.validation")
        cmap.note("TG143", "error", None, "no validation data: val_set_size is 0 and test_datasets is not set",
                  "The source requires a separate, frozen validation set: list its file under test_datasets.")
        return
    val_fmt = _dataset(cmap, "validation", "test_datasets")
    if fmt and val_fmt and fmt != val_fmt:
        cmap.note("TG145", "error", "test_datasets.0.type", f"test_datasets is {val_fmt} but datasets is {fmt}",
                  "Give both splits the same format, as tunegate reads both one way.")


def _loss_roles(cmap: ConfigMap, entry: dict, at: str) -> None:
    """TG147 for roles_to_train or train_on_eos away from axolotl's defaults (the replies, each reply's
    end token): tunegate trains the replies, or every token with train_on_inputs."""
    roles = entry.get("roles_to_train")
    if roles is not None and not (isinstance(roles, list) and roles and all(isinstance(r, str) and r in _REPLY_ROLES for r in roles)):
        cmap.note("TG147", "error", f"{at}.roles_to_train", f"roles_to_train {roles!r} trains other turns than "
                  "the replies; tunegate's run trains the assistant's replies only (or every token with "
                  "train_on_inputs: true)", "Remove roles_to_train (axolotl's default is [assistant]), or set "
                  "train_on_inputs: true to train every token.")
    eos = entry.get("train_on_eos")
    if eos not in (None, "turn"):
        cmap.note("TG147", "error", f"{at}.train_on_eos", f"train_on_eos: {eos} changes which end-of-turn tokens "
                  "train; tunegate's run trains each reply's own end token (axolotl's default, turn)",
                  "Remove train_on_eos, or set it to turn.")


def _dataset(cmap: ConfigMap, role: str, key: str) -> str | None:
    """Map the one entry of `datasets` / `test_datasets`; its format, or None when it cannot be used."""
    entries = cmap.get(key)
    if role in cmap.overrides:  # the file given on the command line, read in the entry's format
        first = entries[0] if isinstance(entries, list) and entries and isinstance(entries[0], dict) else None
        fmt = _entry_format(cmap, first, f"{key}.0") if first is not None else None
        if fmt is not None:
            cmap.set("data.format", fmt, f"{key}.0.type")
        map_data_file(cmap, role, first.get("path") if first else None, f"{key}.0.path" if first else key)
        return fmt
    if not isinstance(entries, list) or not entries or not all(isinstance(e, dict) for e in entries):
        cmap.explained.add(f"data.{role}")
        what = "not set" if entries is None else repr(entries)
        cmap.note("TG145", "error", key if cmap.has(key) else None, f"{key} is {what}: no {role} data",
                  f"List the {role} file: {key}: [{{path: data/{role}.jsonl, type: chat_template}}].")
        return None
    if len(entries) > 1:
        cmap.explained.add(f"data.{role}")
        cmap.note("TG146", "error", f"{key}.1", f"{key} lists {len(entries)} datasets; tunegate checks one file per "
                  "split", "Concatenate them into one file (axolotl mixes them the same way) and list that.")
        return None
    entry, at = entries[0], f"{key}.0"
    cmap.unchecked += [f"{at}.{k}" for k, v in entry.items() if k not in _ENTRY_KEYS and v not in (None, "", [], {})]
    fmt = _entry_format(cmap, entry, at)
    ref = entry.get("path")
    if entry.get("data_files") is not None and isinstance(ref, str) and _not_a_repo(cmap, ref):
        cmap.explained.add(f"data.{role}")
        cmap.note("TG145", "error", f"{at}.path", f"path {ref!r} with data_files: axolotl reads data_files as "
                  f"files of the Hub dataset repo {ref!r}, and {ref!r} is neither that nor a local file or folder",
                  "For a local file, give it as path (path: data/train.jsonl, ds_type: json) and drop "
                  "data_files; keep data_files only for files inside a Hub dataset repo.")
        return None
    if entry.get("data_files") is not None and isinstance(ref, str):
        files = entry["data_files"]
        ref = f"{ref}/{files}" if isinstance(files, str) else ref
    split = cmap.text(f"{at}.split", entry.get("split") or None, "train" if role == "train" else "test")
    if split is None:
        cmap.explained.add(f"data.{role}")
        return None
    if fmt is not None:
        cmap.set("data.format", fmt, f"{at}.type")
    if not map_data_file(cmap, role, ref, f"{at}.path", split):
        return None
    if isinstance(ref, str) and not _loader_reads(cmap, entry, at, Path(cmap.data["data"][role]), ref):
        cmap.explained.add(f"data.{role}")
        return None
    return fmt


def _loader_reads(cmap: ConfigMap, entry: dict, at: str, path: Path, ref: str) -> bool:
    """A `ds_type` (newer axolotl: `dataset_type`) is the `load_dataset` builder axolotl reads the file with;
    one that is not what the file is fails there, so it is an error here (TG145), not a silent other read."""
    key = next((k for k in ("ds_type", "dataset_type") if entry.get(k) is not None), None)
    if path not in (_absolute(cmap.base / ref), _absolute(Path(ref))):  # a folder's split file, or a Hub file:
        return True  # load_from_disk or load_dataset(folder) reads it by its name
    if path.name.lower().removesuffix(".gz").endswith(".tsv"):
        cmap.note("TG145", "error", f"{at}.path", f"{path.name} is tab-separated, and axolotl reads no local .tsv "
                  "file as such: without ds_type it uses load_dataset('json'), and ds_type: csv splits on commas",
                  "Write it as CSV (DataFrame.to_csv(..., index=False)) or JSONL, or put the split files in a folder "
                  "and give the folder as path (load_dataset reads a folder's .tsv files with tabs).")
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
    cmap.note("TG145", "error", f"{at}.{key}", f"{key} is {declared!r}, but {path.name} is {KINDS[actual]}: axolotl "
              f"reads it with load_dataset({declared!r}, data_files=...), which fails on it or reads other records",
              f"Set {key}: {builder}, or drop it (axolotl then chooses by the file's name, as tunegate does).")
    return False


def _absolute(path: Path) -> Path | None:
    try:
        return path.resolve()
    except (OSError, RuntimeError, ValueError):  # a symlink loop, a NUL byte: never the file resolved
        return None


def _share(cmap: ConfigMap, key: str) -> float | None:
    """A number at `key` (0 when absent; text that reads as a number counts, as axolotl's schema reads
    it); TG102 and None for anything else."""
    value = cmap.get(key, 0)
    try:
        share = float(value) if isinstance(value, (str, int, float)) and not isinstance(value, bool) else None
    except ValueError:
        share = None
    if share is None or not math.isfinite(share):
        cmap.note("TG102", "error", key, f"{key} is {value!r}; axolotl reads it as a number (a share of the "
                  "training data, or a record count)", f"Set {key}: 0 and list the frozen validation file under "
                  "test_datasets.")
        return None
    return share


def _not_a_repo(cmap: ConfigMap, ref: str) -> bool:
    """`path` names no Hub repo (owner/name) and no local file or folder (as `path: json` does)."""
    try:
        local = (cmap.base / ref).exists() or Path(ref).exists()
    except (OSError, ValueError):  # a NUL byte or an over-long name: no local file
        local = False
    return not local and "/" not in ref.strip("/")


def _entry_format(cmap: ConfigMap, entry: dict, at: str) -> str | None:
    kind = entry.get("type")
    if kind == "alpaca":
        return kind
    if isinstance(kind, str) and kind.startswith("sharegpt"):
        cmap.note("TG154", "error", f"{at}.type", f"type: {kind} is refused by axolotl (\"`type: sharegpt.*` is "
                  "deprecated. Please use `type: chat_template` instead.\")", "Write type: chat_template with "
                  "field_messages: conversations and message_property_mappings: {role: from, content: value} "
                  "(the same ShareGPT records, read the same way).")
        return "sharegpt"
    if kind == "chat_template":
        _loss_roles(cmap, entry, at)
        if entry.get("chat_template") is not None or entry.get("chat_template_jinja") is not None:
            _template(cmap, entry.get("chat_template") or "jinja", f"{at}.chat_template")
        field = entry.get("field_messages", "messages")
        props = entry.get("message_property_mappings") or {
            "role": entry.get("message_field_role", "role"), "content": entry.get("message_field_content", "content")}
        if not isinstance(props, dict):
            cmap.note("TG102", "error", f"{at}.message_property_mappings", f"message_property_mappings is "
                      f"{props!r}; axolotl reads it as a mapping of message fields",
                      "Write it as a mapping: message_property_mappings: {role: from, content: value}.")
            return None
        names = (field, props.get("role", "role"), props.get("content", "content"))
        if names == ("messages", "role", "content"):
            return "messages"
        if names == ("conversations", "from", "value"):
            return "sharegpt"
        cmap.note("TG145", "error", f"{at}.field_messages", f"chat_template with messages in {names[0]!r} and "
                  f"fields {names[1]!r}/{names[2]!r}: tunegate reads 'messages' with role/content and "
                  "'conversations' with from/value", "Rename the fields (`jq`), or convert the file with "
                  "`tunegate convert`.")
        return None
    cmap.note("TG145", "error", f"{at}.type", f"dataset type {kind!r} is not one tunegate reads",
              "Use type: chat_template (OpenAI chat or ShareGPT fields), sharegpt or alpaca.")
    return None

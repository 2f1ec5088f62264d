"""A TRL `trl sft --config` YAML mapped onto the spec, with TRL's own defaults for what it leaves out.
A config of another `trl` command (dpo, kto, reward, grpo, rloo: by its keys or its training data) is
another objective, TG147 (`tunegate.spec.importers.trl_objectives`).

    tunegate check tests/data/configs/trl/sft.yaml   # detected by its keys (model_name_or_path, ...)

Read from TRL's ScriptArguments, ModelConfig and SFTConfig (over transformers' TrainingArguments), where
TRL is installed (tool_defaults), else the copies below, of the version tool_defaults.COPIED_FROM names:
learning_rate 2e-5, per_device_train_batch_size 8, gradient_accumulation_steps 1,
num_train_epochs 3, max_length 1024, bf16 on unless fp16, gradient_checkpointing on, packing off,
lora r 16 / alpha 32 / dropout 0.05, optim adamw_torch_fused, lr_scheduler_type linear, seed 42,
splits "train" and "test". Conversations are trained on every token unless assistant_only_loss
(TRL's default: training.loss_on all), prompt-completion records on the completion only.
docs/trl.md lists what is mapped.
"""
from __future__ import annotations

import math
from typing import Any

from tunegate.spec.importers.config_data import (
    Source,
    map_data_file,
    map_data_files,
    no_validation,
    random_split,
    unavailable,
    unusable_data,
)
from tunegate.spec.importers.config_keys import conflicting, refused_by_tool, required, text, typos
from tunegate.spec.importers.config_map import ConfigMap, Dialect
from tunegate.spec.importers.memory_savers import Savers, memory_savers
from tunegate.spec.importers.tool_defaults import accepted_optimizers, tool_default
from tunegate.spec.importers.trl_objectives import read_as
from tunegate.spec.importers.unhonoured import (
    OPTIMIZERS,
    SCHEDULERS,
    Unhonoured,
    choose,
    compile_settings,
    not_honoured,
    not_lora,
    peft_default_targets,
    regex_targets,
    unhonoured,
)

_PLAIN = [("model_name_or_path", "model.id", None), ("trust_remote_code", "model.trust_remote_code", None),
          ("lora_r", "lora.r", 16), ("lora_alpha", "lora.alpha", 32), ("lora_dropout", "lora.dropout", 0.05),
          ("lora_modules_to_save", "lora.modules_to_save", None), ("learning_rate", "training.learning_rate", 2e-5),
          ("per_device_train_batch_size", "training.micro_batch_size", 8),
          ("gradient_accumulation_steps", "training.grad_accum_steps", 1),
          ("num_train_epochs", "training.epochs", 3.0), ("weight_decay", "training.weight_decay", 0.0),
          ("max_grad_norm", "training.max_grad_norm", 1.0), ("seed", "training.seed", 42),
          ("adam_beta1", "training.adam_beta1", None), ("adam_beta2", "training.adam_beta2", None),
          ("adam_epsilon", "training.adam_epsilon", None),
          ("gradient_checkpointing", "training.gradient_checkpointing", True), ("packing", "training.packing", False),
          ("output_dir", "full_run.output_dir", None), ("pad_token", "model.pad_token", None)]
_NO_EFFECT = {"report_to", "logging_steps", "save_steps", "save_strategy", "eval_steps", "logging_dir", "run_name",
              "push_to_hub", "hub_model_id", "overwrite_output_dir", "save_total_limit", "logging_first_step",
              "dataset_num_proc", "dataloader_num_workers", "lora_task_type", "eval_packing"}
# Settings TRL applies that lower GPU memory and the estimate does not model (TG429): key -> (the value that
# saves nothing, what it does). From SFTConfig and transformers' TrainingArguments.
MEMORY_SAVERS: Savers = {
    "use_liger_kernel": (False, "Liger kernels, whose fused linear cross-entropy never holds the logits whole"),
    "activation_offloading": (False, "activations offloaded to the CPU"),
}
# Keys TRL applies that change what trains and tunegate's run does not apply (TG147): key -> (the value
# that changes nothing, what the key does). Defaults from TRL's ModelConfig and SFTConfig and
# transformers' TrainingArguments.
UNHONOURED: Unhonoured = {
    "use_dora": (False, "DoRA (a magnitude vector trained beside each LoRA pair)"),
    "use_rslora": (False, "rank-stabilised LoRA (updates scaled by alpha / sqrt(r), not alpha / r)"),
    "neftune_noise_alpha": (None, "NEFTune noise on the embeddings"),
    "resume_from_checkpoint": (None, "resuming from a checkpoint"),
    "lr_scheduler_kwargs": (None, "arguments of the learning-rate schedule (e.g. min_lr_rate)"),
    "loss_type": ("nll", "another loss than cross-entropy"),
}
# Real TRL keys close to a key tunegate maps, so they are not typos (TG155). Computed by running
# difflib.get_close_matches(key, mapped, cutoff=0.8) over every field name in TRL's ScriptArguments,
# SFTConfig, ModelConfig and transformers' TrainingArguments.
_REAL_NEAR = frozenset({"dataloader_in_order", "eval_accumulation_steps", "gradient_checkpointing_kwargs",
                        "optim_target_modules", "per_device_eval_batch_size", "torch_dtype", "dtype"})


def map_config(cmap: ConfigMap) -> None:
    """Fill `cmap` from a TRL SFT config (or another command's: TG147)."""
    read_as(cmap)  # first: the findings below name the command that runs the config
    if not cmap.has("model_name_or_path"):
        required(cmap, "model_name_or_path", f"{cmap.dialect.runs_with} cannot start without it",
                 "Set model_name_or_path to the base model's Hub id or local folder.")
    for key, spec_key, default in _PLAIN:
        value = cmap.get(key, tool_default("trl", key, default))
        if value is not None:
            cmap.set(spec_key, value, key)
    cmap.used |= {k for k in _NO_EFFECT if k in cmap.source}
    revision = cmap.get("model_revision", "main")
    if revision != "main":
        cmap.set("model.revision", revision, "model_revision")
    _peft(cmap)
    _lengths(cmap)
    _precision(cmap)
    _schedule(cmap)
    compile_settings(cmap)
    _data(cmap)
    # SFTTrainer trains records of plain text in dataset_text_field (language modeling) as well
    if cmap.source.get("dataset_text_field") in (None, "text"):
        cmap.trains_text = {"train": "also", "validation": "also"}
    _launch(cmap)
    unhonoured(cmap, UNHONOURED)
    memory_savers(cmap, MEMORY_SAVERS)
    typos(cmap, cmap.used | _NO_EFFECT, _REAL_NEAR)


DIALECT = Dialect(
    name="trl", map_config=map_config, docs="docs/trl.md", runs_with="trl sft",
    model_key="model_name_or_path",
    # Keys only TRL writes at the top level (a tunegate spec has sections: model, data, ...).
    markers=frozenset({"model_name_or_path", "dataset_name", "per_device_train_batch_size", "num_train_epochs",
                       "use_peft", "max_length", "dataset_train_split", "dataset_test_split"}),
    ignores_unknown="trl sft refuses keys it does not know (it hands them to accelerate launch, which stops)",
    # The spec stage's fixes in TRL's own keys.
    fixes={"use model.quantization: none and training.optimizer: adamw_torch": "use load_in_4bit: false, "
           "load_in_8bit: false and optim: adamw_torch",
           "Set training.sharding: none (data parallel, one full copy of the base per GPU)": "Drop the FSDP or "
           "DeepSpeed settings (tunegate runs data parallel, one full copy of the base per GPU)",
           "load it in 4 bit (model.quantization: 4bit, QLoRA)": "load it in 4 bit (load_in_4bit: true, QLoRA)"},
)


def _peft(cmap: ConfigMap) -> None:
    if not cmap.get("use_peft", False):
        not_lora(cmap, "use_peft" if cmap.has("use_peft") else None, "use_peft is not true, so TRL fine-tunes every "
                 "weight", "Set use_peft: true (with lora_r, lora_alpha and lora_target_modules) to launch it with "
                 "tunegate.", full=True)
    four, eight = cmap.get("load_in_4bit", False), cmap.get("load_in_8bit", False)
    if four and eight:
        conflicting(cmap, "load_in_8bit", "load_in_4bit and load_in_8bit are both true", "Keep one.")
    cmap.set("model.quantization", "4bit" if four else "8bit" if eight else "none",
             "load_in_4bit" if four else "load_in_8bit" if eight else None)
    targets = cmap.get("lora_target_modules")
    if targets is None and not cmap.get("use_peft", False):
        cmap.set("lora.target_modules", ["q_proj", "v_proj"])
    elif targets is None:
        peft_default_targets(cmap, "lora_target_modules is not set",
                             "Set lora_target_modules (e.g. all-linear) to say which modules get adapters.")
    elif isinstance(targets, str) and targets != "all-linear":
        regex_targets(cmap, targets)
    else:
        cmap.set("lora.target_modules", "all-linear" if targets in ("all-linear", ["all-linear"]) else targets,
                 "lora_target_modules")


# `accelerate_config` names TRL ships (trl/accelerate_configs): the sharding each one runs. ZeRO-1 shards the
# optimizer states only, read as zero2 (the nearest the spec has: for LoRA both are a few MB).
_ACCELERATE = {"zero1": "zero2", "zero2": "zero2", "zero3": "zero3", "fsdp1": "fsdp", "fsdp2": "fsdp"}


def _launch(cmap: ConfigMap) -> None:
    """What `trl sft` hands to `accelerate launch`: `num_processes` (one process per GPU: the GPU count, as
    the hardware the run needs; --gpus replaces it) and `accelerate_config` (its sharding, refused by
    tunegate launch: TG160). `multi_gpu` and a config file of one's own are not read (TG140)."""
    processes = cmap.get("num_processes")
    if processes is not None and "count" not in cmap.hardware:
        cmap.set("hardware.count", processes, "num_processes")
    named = cmap.get("accelerate_config")
    if isinstance(named, str) and named in _ACCELERATE:
        cmap.set("training.sharding", _ACCELERATE[named], "accelerate_config")
    elif named is not None:
        cmap.used.discard("accelerate_config")  # a file of one's own: listed as not checked


def _lengths(cmap: ConfigMap) -> None:
    if cmap.has("max_seq_length"):  # SFTConfig's name until TRL 0.20, which removed it
        cmap.used.add("max_seq_length")
        refused_by_tool(cmap, "max_seq_length", "max_seq_length is SFTConfig's old name (TRL 0.16-0.19 "
                        "read it beside max_length; TRL 0.20 removed it, so trl sft refuses the key)"
                        + ("" if cmap.has("max_length") else f", and without max_length TRL truncates at 1024 tokens, "
                           f"not {cmap.source['max_seq_length']}"),
                        f"Rename it: max_length: {cmap.source['max_seq_length']}.")
    if "max_length" in cmap.source and cmap.source["max_length"] is None:
        not_honoured(cmap, "max_length", "max_length is null, so TRL never truncates: the longest record sets the "
                     "memory peak", "Set max_length to the longest sequence to train on (e.g. 2048).")
    cmap.set("training.max_seq_len", cmap.get("max_length", tool_default("trl", "max_length", 1024)), "max_length")
    steps = cmap.get("max_steps", -1)
    if not _real(steps) or steps > 0:  # not a number: the spec's TG102 says so at max_steps
        cmap.set("training.max_steps", steps, "max_steps")


def _precision(cmap: ConfigMap) -> None:
    fp16, bf16 = cmap.get("fp16", False), cmap.get("bf16")
    if fp16 and bf16:
        conflicting(cmap, "fp16", "bf16 and fp16 are both true", "Keep one of them.")
    precision = "fp16" if fp16 else "fp32" if bf16 is False else "bf16"  # SFTConfig: bf16 unless fp16
    cmap.set("training.precision", precision, "fp16" if fp16 else "bf16")
    cmap.used.add("tf32")
    attention = cmap.get("attn_implementation")
    if attention is not None and attention not in ("sdpa", "eager", "flash_attention_2"):
        not_honoured(cmap, "attn_implementation", f"attn_implementation {attention!r} is not one tunegate's full "
                     "run can use", "Use flash_attention_2, sdpa or eager.")
    if attention is not None:  # unset: transformers chooses (sdpa, else eager), as the spec's default
        cmap.set("training.attention", attention if attention in ("eager", "flash_attention_2") else "sdpa",
                 "attn_implementation")


def _schedule(cmap: ConfigMap) -> None:
    choose(cmap, "optim", "training.optimizer", tool_default("trl", "optim", "adamw_torch_fused"), OPTIMIZERS,
           accepted_optimizers("trl"))
    choose(cmap, "lr_scheduler_type", "training.lr_scheduler", tool_default("trl", "lr_scheduler_type", "linear"),
           SCHEDULERS)
    warmup, ratio = cmap.get("warmup_steps", 0), cmap.get("warmup_ratio", 0.0)
    if warmup and ratio:
        conflicting(cmap, "warmup_ratio", "warmup_steps and warmup_ratio are both set", "Keep one.")
    if isinstance(warmup, float) and 0 < warmup < 1:  # transformers 5 reads a warmup_steps below 1 as a ratio
        warmup, ratio = 0, warmup
    # transformers casts warmup_steps to int; anything but a finite number goes on as written, for the
    # spec's TG102 (or TG107) at warmup_steps
    # (an int is finite however large: the spec's bound says so at warmup_steps, float() would overflow)
    whole = _real(warmup) and (isinstance(warmup, int) or math.isfinite(warmup))
    cmap.set("training.warmup_steps", int(warmup) if whole else warmup, "warmup_steps")
    cmap.set("training.warmup_ratio", ratio, "warmup_ratio" if cmap.has("warmup_ratio") else "warmup_steps")


def _real(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _data(cmap: ConfigMap) -> None:
    mixture = cmap.get("datasets")
    if {"train", "validation"} <= cmap.overrides.keys():  # --train and --validation: both files given
        entry = mixture[0] if isinstance(mixture, list) and mixture and isinstance(mixture[0], dict) else None
        ref, key = (entry.get("path"), "datasets.0.path") if entry else (cmap.get("dataset_name"), "dataset_name")
        cmap.used.update({"dataset_train_split", "dataset_test_split", "test_split_size"})
        map_data_file(cmap, "train", ref, key if ref is not None else None)
        map_data_file(cmap, "validation", ref, key if ref is not None else None)
        _never_evaluated(cmap, cmap.get("dataset_test_split", "test"))  # a name only in a message
        _loss(cmap)
        return
    if isinstance(mixture, list) and len(mixture) > 1:  # every entry, concatenated in order into the train split
        _mixture(cmap, mixture)
        return
    entry = mixture[0] if isinstance(mixture, list) and mixture and isinstance(mixture[0], dict) else None
    ref, key = (entry.get("path"), "datasets.0.path") if entry else (cmap.get("dataset_name"), "dataset_name")
    if ref is None:
        cmap.explained |= {"data.train", "data.validation"}
        unusable_data(cmap, None, "neither dataset_name nor datasets is set: no training data",
                      "Set dataset_name to a local file or folder (or a Hub id in the local cache).")
        return
    if entry is not None:
        _mixture(cmap, [entry])
        return
    train_split = text(cmap, "dataset_train_split", cmap.get("dataset_train_split"), "train")
    test_split = text(cmap, "dataset_test_split", cmap.get("dataset_test_split"), "test")
    if train_split is None or test_split is None:  # TG102 said so: which files they mean is unknown
        cmap.explained |= {"data.train", "data.validation"}
        return
    if not map_data_file(cmap, "train", ref, key, train_split) and "train" in cmap.unavailable:
        # the same Hub dataset holds both splits: the same reason for both, said once
        unavailable(cmap, "validation", cmap.unavailable["train"])
        return
    if not map_data_file(cmap, "validation", ref, key, test_split) and "validation" not in cmap.unavailable:
        unreadable = cmap.findings.pop()  # said again as what it means for the run: no validation data
        no_validation(cmap, unreadable.key, unreadable.message, f"Give the dataset a {test_split!r} split file "
                      "(frozen, held out from train), or set dataset_test_split to the split that has it.")
    else:
        _never_evaluated(cmap, test_split)
    _loss(cmap)


def _never_evaluated(cmap: ConfigMap, test_split: str) -> None:
    if cmap.get("eval_strategy", "no") == "no":
        cmap.note("TG151", "warning", "eval_strategy" if cmap.has("eval_strategy") else None, "eval_strategy is 'no' "
                  f"(TRL's default), so {cmap.dialect.runs_with} never scores the {test_split!r} split", "Set "
                  "eval_strategy: steps (with eval_steps) to evaluate on the frozen validation split; tunegate's full "
                  "run does.")


def _mixture(cmap: ConfigMap, entries: list[Any]) -> None:
    """A `datasets` mixture: TRL loads each entry's `split` (train) and concatenates them, in order, into one
    train split; its test split exists only as a random `test_split_size` share of it (trl/scripts/utils.py)."""
    cmap.used.update({"test_split_size", "dataset_test_split", "dataset_train_split", "eval_strategy"})
    sources = [_source(cmap, entry, at) for at, entry in enumerate(entries)]
    readable = [source for source in sources if source is not None]
    if len(readable) == len(entries):
        map_data_files(cmap, "train", readable, "datasets" if len(readable) > 1 else readable[0].key)
    else:
        cmap.explained.add("data.train")
    cmap.explained.add("data.validation")
    size = cmap.get("test_split_size")
    if size is not None:
        random_split(cmap, "test_split_size", f"test_split_size {size} makes TRL split a random share of the "
                     "training data off for evaluation at every start", "Freeze the split once into its own file "
                     "and give dataset_name a folder with train and test split files (train.jsonl, test.jsonl) "
                     "instead of the datasets mixture.")
    else:
        no_validation(cmap, "datasets", f"a datasets mixture gives {cmap.dialect.runs_with} only a train split (the "
                      "entries concatenated), so there is no frozen test split to evaluate on",
                      "Give dataset_name a folder with train and test split files (train.jsonl, test.jsonl), "
                      "frozen and held out from train.")
    _loss(cmap)


def _source(cmap: ConfigMap, entry: Any, at: int) -> Source | None:
    """One entry of a `datasets` mixture as the dataset reference TRL loads; a finding (and None) when none."""
    if not isinstance(entry, dict):
        unusable_data(cmap, f"datasets.{at}", f"datasets.{at} is {entry!r}, not a dataset entry",
                      "Write it as a mapping: datasets: [{path: data/train.jsonl}].")
        return None
    ref, key = entry.get("path"), f"datasets.{at}.path"
    files = entry.get("data_files")
    if ref in ("json", "parquet", "csv") and files is not None:  # load_dataset's builder names: the files are the data
        ref, key = (files if isinstance(files, str) else files[0] if isinstance(files, list) and len(files) == 1
                    else None), f"datasets.{at}.data_files"
    split = text(cmap, f"datasets.{at}.split", entry.get("split") or None, "train")
    return Source(ref, key, split) if split is not None else None


def _loss(cmap: ConfigMap) -> None:
    """TRL trains conversations on every token unless assistant_only_loss; prompt-completion records on
    the completion only (tunegate's rule for that format too, so completion_only_loss: false is not honoured)."""
    if cmap.get("completion_only_loss") is False:
        not_honoured(cmap, "completion_only_loss", "completion_only_loss: false trains prompt-completion records "
                     "on their prompts too; tunegate's full run trains the completion only",
                     "Drop the key (TRL's default trains the completion only).")
    only = cmap.get("assistant_only_loss", False)
    cmap.set("training.loss_on", "replies" if only else "all", "assistant_only_loss")

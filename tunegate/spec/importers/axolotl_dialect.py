"""An axolotl YAML config mapped onto the spec, with axolotl's own defaults for what it leaves out.

    tunegate check tests/data/configs/axolotl/lora-1b.yml   # detected by its keys (base_model, datasets, ...)

Read from axolotl's config schema (src/axolotl/utils/schemas, where axolotl is installed: tool_defaults;
else the copies below, of the version tool_defaults.COPIED_FROM names): micro_batch_size 1,
gradient_accumulation_steps 1, num_epochs 1, sequence_len 512, lora_dropout 0.0, lr_scheduler
cosine, optimizer adamw_torch_fused, weight_decay 0.0, bf16 auto, val_set_size 0.0; seed and
max_grad_norm unset (the HF Trainer's 42 and 1.0). Mapped keys are listed in docs/axolotl.md;
every other key with a value is listed once as not checked (TG140). Its dataset entries are read
by `tunegate.spec.importers.axolotl_datasets`.
"""
from __future__ import annotations

import difflib
import math
from typing import Any

from tunegate.spec.importers.axolotl_datasets import dataset, template
from tunegate.spec.importers.config_data import no_validation, not_read_here, random_split
from tunegate.spec.importers.config_keys import conflicting, refused_by_tool, required, typos, wrong_type
from tunegate.spec.importers.config_map import ConfigMap, Dialect
from tunegate.spec.importers.memory_savers import Savers, deepspeed_offload, fsdp_offload, memory_savers, plugin_savers
from tunegate.spec.importers.tool_defaults import accepted_optimizers, tool_default
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
from tunegate.spec.schema_errors import OUT_OF_RANGE

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
# Keys axolotl applies that change what trains and tunegate's run does not apply (TG147): key -> (the value
# that changes nothing, what the key does). Defaults from axolotl's schemas (src/axolotl/utils/schemas/peft.py,
# training.py).
UNHONOURED: Unhonoured = {
    "peft_use_dora": (False, "DoRA (a magnitude vector trained beside each LoRA pair)"),
    "peft_use_rslora": (False, "rank-stabilised LoRA (updates scaled by alpha / sqrt(r), not alpha / r)"),
    "loraplus_lr_ratio": (None, "LoRA+ (B matrices trained at a higher learning rate)"),
    "lora_model_dir": (None, "training on from an existing adapter"),
    "resume_from_checkpoint": (None, "resuming from a checkpoint"),
    "tokens": (None, "new tokens added to the tokenizer (and rows to the embeddings)"),
    "added_tokens_overrides": (None, "tokenizer tokens replaced"),
    "neftune_noise_alpha": (None, "NEFTune noise on the embeddings"),
    "cosine_min_lr_ratio": (None, "a cosine schedule that ends above 0"),
    "cosine_constant_lr_ratio": (None, "a cosine schedule held constant for a share of the run"),
    "peft_layers_to_transform": (None, "adapters on some layers only"),
    "unfrozen_parameters": (None, "base weights trained beside the adapters"),
    # Another objective than supervised fine-tuning on the chat datasets: axolotl hands these to
    # other trainers (TRL's DPO/KTO/ORPO/GRPO..., its reward-model trainers, a pretraining stream).
    "rl": (None, "a preference or reinforcement-learning objective (axolotl's DPO, IPO, KTO, ORPO, SimPO, "
                 "GRPO trainers), not supervised fine-tuning"),
    "reward_model": (False, "a reward model (a scalar head trained on preference pairs)"),
    "process_reward_model": (False, "a process reward model (a classification head on step labels)"),
    "pretraining_dataset": (None, "pretraining on a streamed raw-text dataset instead of the chat datasets"),
}
# The keys above that train another objective than supervised fine-tuning: errors (TG147), not warnings.
OBJECTIVES = frozenset({"rl", "reward_model", "process_reward_model", "pretraining_dataset"})
# Settings axolotl applies that lower GPU memory and the estimate does not model (TG429): key -> (the value
# that saves nothing, what it does). From its schemas and integrations (liger, cut_cross_entropy) at 067b021c.
MEMORY_SAVERS: Savers = {
    "liger_fused_linear_cross_entropy": (False, "Liger's fused linear cross-entropy: the logits are never held whole"),
    "cut_cross_entropy": (False, "Cut Cross-Entropy: the logits are never held whole"),
    "activation_offloading": (False, "activations offloaded to the CPU"),
    "tiled_mlp": (False, "the MLP computed in tiles along the sequence"),
    "context_parallel_size": (1, "each sequence split over that many GPUs"),
    "sequence_parallel_degree": (1, "each sequence split over that many GPUs"),
    "tensor_parallel_size": (1, "each layer's weights split over that many GPUs"),
    "lisa_n_layers": (None, "LISA: a few layers trained at a time"),
}
# Plugins that lower GPU memory by being listed (their key defaults to on): tail -> (that key, what it does)
PLUGIN_SAVERS: Savers = {"CutCrossEntropyPlugin": ("cut_cross_entropy", "Cut Cross-Entropy: the logits are never held "
                                                                         "whole")}
# The rl trainers axolotl knows (its schemas' RLType, src/axolotl/utils/schemas/enums.py at 067b021c); its
# config validation refuses any other value.
RL_TYPES = ("dpo", "gdpo", "grpo", "ipo", "orpo", "kto", "simpo", "ebft")
# Real axolotl keys close to a key tunegate maps, so they are not typos (TG155). Computed by running
# difflib.get_close_matches(key, mapped, cutoff=0.8) over every field name in axolotl's schemas
# (axolotl-ai-cloud/axolotl src/axolotl/utils/schemas, integrations).
_REAL_NEAR = frozenset({
    "a_bf16", "chat_template_jinja", "eval_batch_size", "eval_sample_packing", "eval_sequence_len",
    "evaluation_strategy", "flex_attention", "gradient_checkpointing_kwargs", "gradio_max_new_tokens", "lora_rank",
    "optim_target_modules", "orpo_alpha", "s2_attention", "sage_attention", "sequence_length", "swanlab_log_model",
    "swanlab_project", "wandb_mode", "warmup_iterations", "xformers_attention", "eager_attention"})


def map_config(cmap: ConfigMap) -> None:
    """Fill `cmap` from an axolotl config."""
    for key, spec_key, default in _PLAIN:
        value = cmap.get(key, tool_default("axolotl", key, default))
        if value is not None:
            cmap.set(spec_key, _number(value) if key in ("learning_rate", "adam_epsilon") else value, key)
    cmap.used |= {k for k in _NO_EFFECT if k in cmap.source}
    _batch_size(cmap)
    _adapter(cmap)
    _targets(cmap)
    _precision(cmap)
    _training(cmap)
    _master_weights(cmap)
    compile_settings(cmap)
    _data(cmap)
    tokens = cmap.get("special_tokens")
    pad = tokens.get("pad_token") if isinstance(tokens, dict) else None
    if pad is not None:
        cmap.set("model.pad_token", pad, "special_tokens.pad_token")
    if isinstance(tokens, dict):  # bos/eos/unk overrides: not applied by tunegate's run, so listed
        cmap.unchecked += [f"special_tokens.{k}" for k, v in tokens.items() if k != "pad_token" and v is not None]
    cmap.used.add("chat_template_jinja")  # the template TG156 names
    template(cmap, cmap.get("chat_template") or ("jinja" if cmap.get("chat_template_jinja") else None),
             "chat_template" if cmap.has("chat_template") else "chat_template_jinja")
    _rl_type(cmap)
    unhonoured(cmap, UNHONOURED, OBJECTIVES)
    memory_savers(cmap, MEMORY_SAVERS)
    plugin_savers(cmap, PLUGIN_SAVERS)
    deepspeed_offload(cmap, "deepspeed")
    fsdp_offload(cmap, "fsdp_config")
    meant = typos(cmap, cmap.used | _NO_EFFECT, _REAL_NEAR)
    lora = cmap.get("adapter") in ("lora", "qlora")  # a full fine-tune needs no lora_* keys (TG144 names it)
    for key in _REQUIRED:
        if not cmap.has(key) and key not in meant and (lora or not key.startswith("lora_")):
            required(cmap, key, "axolotl cannot train without it",
                     f"Set {key} (see the axolotl examples, e.g. examples/llama-3/lora-1b.yml).")


DIALECT = Dialect(
    name="axolotl", map_config=map_config, docs="docs/axolotl.md", runs_with="axolotl",
    model_key="base_model",
    # Keys only axolotl writes at the top level (a tunegate spec has sections: model, data, ...).
    markers=frozenset({"base_model", "datasets", "sequence_len", "micro_batch_size", "num_epochs", "adapter",
                       "lora_target_linear", "sample_packing", "val_set_size", "test_datasets"}),
    ignores_unknown="axolotl ignores keys it does not know, so this value is never used",
    # The spec stage's fixes in axolotl's own keys.
    fixes={"use model.quantization: none and training.optimizer: adamw_torch": "use adapter: lora without "
           "load_in_4bit or load_in_8bit, and optimizer: adamw_torch",
           "Set training.sharding: none (data parallel, one full copy of the base per GPU)": "Remove deepspeed "
           "and fsdp/fsdp_config (tunegate runs data parallel, one full copy of the base per GPU)",
           "load it in 4 bit (model.quantization: 4bit, QLoRA)": "load it in 4 bit (adapter: qlora, "
           "load_in_4bit: true)"},
)


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
    cmap.note(OUT_OF_RANGE, "error", "batch_size", f"batch_size {total!r} with micro_batch_size {micro!r}: axolotl "
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
        not_lora(cmap, "adapter" if adapter is not None else None, f"adapter is {what}",
                 "Set adapter: lora (or qlora with load_in_4bit: true) to launch it with tunegate.", full=adapter is None)
    if four and eight:
        conflicting(cmap, "load_in_8bit", "load_in_4bit and load_in_8bit are both true",
                    "Keep one: load_in_4bit for QLoRA, load_in_8bit for LoRA on an 8-bit base.")
    if adapter == "qlora" and (eight or not four):
        refused_by_tool(cmap, "load_in_8bit" if eight else "adapter", "adapter: qlora "
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
    if targets is None and cmap.get("adapter") is None:  # a full fine-tune: no adapters, no targets to name
        cmap.set("lora.target_modules", ["q_proj", "v_proj"])
        return
    if targets is None:
        peft_default_targets(cmap, "neither lora_target_modules nor lora_target_linear is set",
                             "Set lora_target_modules (or lora_target_linear: true) to say which modules get adapters.")
        return
    if targets == "all-linear":  # PEFT's own name for every linear layer but the output head
        cmap.set("lora.target_modules", "all-linear", "lora_target_modules")
    elif isinstance(targets, str):
        regex_targets(cmap, targets, " (or lora_target_linear: true)")
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
        conflicting(cmap, fp16_key, f"{bf16_key} and {fp16_key} are both true", "Keep one of them.")
    # bf16: auto is bf16 where the GPU has it, else fp16 (axolotl's normalize_config): the GPU --gpu names decides
    auto = "bf16" if _has_bf16(cmap.hardware.get("gpu")) else "fp16"
    precision = "fp16" if half_fp16 else "bf16" if half_bf16 else auto if bf16 == "auto" else "fp32"
    cmap.set("training.precision", precision, fp16_key if half_fp16 else bf16_key if half_bf16 else "bf16")
    checkpointing = cmap.get("gradient_checkpointing", False)
    cmap.set("training.gradient_checkpointing", bool(checkpointing), "gradient_checkpointing")


def _has_bf16(name: str | None) -> bool:
    """Whether the GPU `name` (a catalog name; None: not named) runs bf16; an unnamed GPU is taken to."""
    from tunegate.spec import gpus

    found = gpus.lookup(name) if name else None
    return found is None or found.supports_bf16


def _training(cmap: ConfigMap) -> None:
    choose(cmap, "optimizer", "training.optimizer", tool_default("axolotl", "optimizer", "adamw_torch_fused"),
           OPTIMIZERS, accepted_optimizers("axolotl"))
    choose(cmap, "lr_scheduler", "training.lr_scheduler", tool_default("axolotl", "lr_scheduler", "cosine"), SCHEDULERS)
    if cmap.has("warmup_steps") and cmap.has("warmup_ratio"):
        conflicting(cmap, "warmup_ratio", "warmup_steps and warmup_ratio are both set",
                    "Keep one of them (axolotl refuses both).")
    cmap.set("training.packing", bool(cmap.get("sample_packing", False)), "sample_packing")
    cmap.set("training.loss_on", "all" if cmap.get("train_on_inputs", False) else "replies", "train_on_inputs")
    _attention(cmap)
    if cmap.get("fsdp") or cmap.get("fsdp_config") or cmap.get("deepspeed"):
        sharding = "fsdp" if cmap.has("fsdp") or cmap.has("fsdp_config") else (
            "zero3" if "zero3" in str(cmap.get("deepspeed")) else "zero2")
        cmap.set("training.sharding", sharding, "deepspeed" if sharding != "fsdp" else
                 "fsdp" if cmap.has("fsdp") else "fsdp_config")


def _master_weights(cmap: ConfigMap) -> None:
    """A full fine-tune in bf16 or fp16 keeps no fp32 copy: axolotl loads the model in that dtype (its
    torch_dtype; only the embeddings and norms are upcast to fp32), so gradients and AdamW's moments are
    in it too. DeepSpeed and FSDP keep fp32 master weights of their own: left at the spec's fp32."""
    training = cmap.data.get("training", {})
    if (training.get("method") == "full" and training.get("precision") in ("bf16", "fp16")
            and training.get("sharding", "none") == "none"):
        cmap.set("training.master_weights", "none", cmap.origin.get("training.precision"))


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
        not_honoured(cmap, "attn_implementation", f"attention {impl!r} is not one tunegate's full run can use",
                     "Use attn_implementation: flash_attention_2, sdpa or eager.")
        return
    key = next((k for k in ("attn_implementation", *flags) if cmap.has(k)), None)
    if key is not None:  # none set: axolotl leaves the choice to transformers (sdpa, else eager), as the spec's default
        cmap.set("training.attention", _ATTENTION.get(impl or "sdpa", "sdpa"), key)


def _rl_type(cmap: ConfigMap) -> None:
    """TG154 for an `rl` trainer axolotl does not know: its schema refuses the config before anything loads (a
    known one is another objective than supervised fine-tuning, which axolotl runs: TG147)."""
    rl = cmap.source.get("rl")
    if rl is None or rl is False or rl in RL_TYPES:
        return
    close = difflib.get_close_matches(str(rl), RL_TYPES, n=1)
    refused_by_tool(cmap, "rl", f"rl: {rl!r} is not a trainer axolotl knows ({', '.join(RL_TYPES)}): its config "
                    "validation refuses it", f"Did you mean rl: {close[0]}? " if close else
                    "Remove rl for supervised fine-tuning, or set one of axolotl's rl trainers.")


def _data(cmap: ConfigMap) -> None:
    fmt = dataset(cmap, "train", "datasets")
    if "validation" in cmap.overrides:  # --validation: the frozen file is given, whatever the config splits
        cmap.used.add("val_set_size")
        dataset(cmap, "validation", "test_datasets")
        if not cmap.has("test_datasets") and "train" in cmap.trains_text:  # read as the split it stands for
            cmap.trains_text["validation"] = cmap.trains_text["train"]
        return
    size = _share(cmap, "val_set_size")
    if size is None:  # TG102 said so: not a share, so no split to judge either
        cmap.explained.add("data.validation")
        return
    if size > 0:
        cmap.explained.add("data.validation")
        share = f"{size:.0%}" if size <= 1 else f"{size:g} records"  # axolotl reads above 1 as a count
        random_split(cmap, "val_set_size", f"val_set_size {cmap.source['val_set_size']} makes axolotl split a random "
                     f"{share} of the training data off for evaluation at each preprocessing",
                     "Freeze the split once: write the held-out records to their own file (e.g. `tail -n 200 "
                     "train.jsonl > val.jsonl` and `head -n -200 train.jsonl > train_only.jsonl`), list it under "
                     "test_datasets, point datasets at the rest, and set val_set_size: 0.")
        return
    if not cmap.has("test_datasets"):
        cmap.explained.add("data.validation")
        no_validation(cmap, None, "val_set_size is 0 and test_datasets is not set",
                      "The source requires a separate, frozen validation set: list its file under test_datasets.")
        return
    val_fmt = dataset(cmap, "validation", "test_datasets")
    if fmt and val_fmt and fmt != val_fmt:
        not_read_here(cmap, "validation", "test_datasets.0.type", f"test_datasets is {val_fmt} but datasets is "
                      f"{fmt}: axolotl tokenises each split by its own type, tunegate reads both splits in one "
                      "format, so the validation split is not checked here", "To gate both, give them the same "
                      "format (`tunegate convert` writes either as OpenAI chat); otherwise the run is checked "
                      "without its validation data.")


def _share(cmap: ConfigMap, key: str) -> float | None:
    """A number at `key` (0 when absent; text that reads as a number counts, as axolotl's schema reads
    it); TG102 and None for anything else."""
    value = cmap.get(key, 0)
    try:
        share = float(value) if isinstance(value, (str, int, float)) and not isinstance(value, bool) else None
    except (ValueError, OverflowError):  # text that is no number, an integer past any float (10**4000)
        share = None
    if share is None or not math.isfinite(share):
        wrong_type(cmap, key, value, "a number (a share of the training data, or a record count)",
                   f"Set {key}: 0 and list the frozen validation file under test_datasets.")
        return None
    return share

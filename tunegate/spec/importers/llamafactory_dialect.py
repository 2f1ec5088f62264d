"""A LLaMA-Factory training YAML (`llamafactory-cli train CONFIG`) mapped onto the spec, with its own defaults.

    tunegate check examples/train_lora/qwen3_lora_sft.yaml   # detected by its keys (stage, finetuning_type, ...)

Defaults read from LLaMA-Factory's hparams dataclasses (src/llamafactory/hparams: FinetuningArguments,
DataArguments, ModelArguments) over transformers' Seq2SeqTrainingArguments, at the commit
`llamafactory_tables.COPIED_FROM` names: stage sft, finetuning_type lora, lora_rank 8, lora_alpha
lora_rank * 2, lora_dropout 0.0, lora_target all (every linear layer), cutoff_len 2048, dataset_dir
data, val_size 0, gradient checkpointing on, quantization_method bnb (NF4, double quantisation);
learning_rate 5e-5, per_device_train_batch_size 8, gradient_accumulation_steps 1, num_train_epochs 3,
lr_scheduler_type linear, seed 42. Its datasets are resolved by
`tunegate.spec.importers.llamafactory_datasets`; docs/llamafactory.md lists what is mapped.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tunegate.spec.importers.config_keys import conflicting, refused_by_tool, required, text, typos, wrong_type
from tunegate.spec.importers.config_map import ConfigMap, Dialect
from tunegate.spec.importers.llamafactory_datasets import map_datasets
from tunegate.spec.importers.llamafactory_tables import (
    DEFAULTS,
    MEMORY_SAVERS,
    NO_EFFECT,
    REAL_NEAR,
    STAGES,
    UNHONOURED,
)
from tunegate.spec.importers.memory_savers import deepspeed_offload, memory_savers
from tunegate.spec.importers.unhonoured import (
    OPTIMIZERS,
    SCHEDULERS,
    choose,
    compile_settings,
    not_honoured,
    not_lora,
    own_template,
    unhonoured,
)

# (key, spec key): taken as written, LLaMA-Factory's default (DEFAULTS) when absent
_PLAIN = [("model_name_or_path", "model.id"), ("trust_remote_code", "model.trust_remote_code"),
          ("lora_rank", "lora.r"), ("lora_dropout", "lora.dropout"), ("cutoff_len", "training.max_seq_len"),
          ("per_device_train_batch_size", "training.micro_batch_size"),
          ("gradient_accumulation_steps", "training.grad_accum_steps"), ("learning_rate", "training.learning_rate"),
          ("num_train_epochs", "training.epochs"), ("weight_decay", "training.weight_decay"),
          ("max_grad_norm", "training.max_grad_norm"), ("seed", "training.seed"),
          ("adam_beta1", "training.adam_beta1"), ("adam_beta2", "training.adam_beta2"),
          ("adam_epsilon", "training.adam_epsilon"), ("output_dir", "full_run.output_dir")]
_ATTENTION = {"disabled": "eager", "sdpa": "sdpa", "fa2": "flash_attention_2"}  # flash_attn -> the spec's kernel


def map_config(cmap: ConfigMap) -> None:
    """Fill `cmap` from a LLaMA-Factory training config."""
    if not cmap.has("model_name_or_path"):
        required(cmap, "model_name_or_path", "llamafactory-cli train cannot load a model without it",
                 "Set model_name_or_path to the base model's Hub id or local folder.")
    for key, spec_key in _PLAIN:
        value = cmap.get(key, DEFAULTS.get(key))
        if value is not None:
            cmap.set(spec_key, value, key)
    revision = cmap.get("model_revision", "main")
    if revision != "main":
        cmap.set("model.revision", revision, "model_revision")
    cmap.used |= {k for k in NO_EFFECT if k in cmap.source}
    stage = _stage(cmap)
    _method(cmap)
    _quantization(cmap)
    _training(cmap)
    compile_settings(cmap)
    _sharding(cmap)
    _master_weights(cmap)
    memory_savers(cmap, MEMORY_SAVERS)
    deepspeed_offload(cmap, "deepspeed")
    map_datasets(cmap, stage)
    template = text(cmap, "template", cmap.get("template"), "")
    if template:  # unset: LLaMA-Factory parses the tokenizer's own chat template, as tunegate renders
        own_template(cmap, "template", f"template: {template} makes LLaMA-Factory render every chat with its own "
                     f"{template!r} template; tunegate's token audit, mini-run and full run render with the base "
                     "model tokenizer's chat template, so where the two differ the checked and trained prompts are "
                     "not LLaMA-Factory's", "Drop template (LLaMA-Factory then parses the tokenizer's own chat "
                     "template), or save the template into the tokenizer and point model_name_or_path at that folder.")
    unhonoured(cmap, UNHONOURED)
    typos(cmap, cmap.used | NO_EFFECT, REAL_NEAR)


DIALECT = Dialect(
    name="llamafactory", map_config=map_config, docs="docs/llamafactory.md", runs_with="llamafactory-cli train",
    model_key="model_name_or_path",
    # Keys only LLaMA-Factory writes at the top level (model_name_or_path and the TrainingArguments are TRL's too).
    markers=frozenset({"stage", "finetuning_type", "template", "dataset", "dataset_dir", "eval_dataset", "cutoff_len",
                       "lora_rank", "lora_target", "quantization_bit", "val_size", "max_samples"}),
    ignores_unknown="llamafactory-cli train refuses keys it does not know (\"Some keys are not used by the "
                    "HfArgumentParser\")",
    fixes={"use model.quantization: none and training.optimizer: adamw_torch": "drop quantization_bit and use "
           "optim: adamw_torch",
           "Set training.sharding: none (data parallel, one full copy of the base per GPU)": "Remove deepspeed (and "
           "fsdp) (tunegate runs data parallel, one full copy of the base per GPU)",
           "load it in 4 bit (model.quantization: 4bit, QLoRA)": "load it in 4 bit (quantization_bit: 4, QLoRA)",
           "Pin model.revision": "Pin model_revision"},
)


def _stage(cmap: ConfigMap) -> str:
    stage = cmap.get("stage", "sft")
    if not isinstance(stage, str) or stage not in STAGES:
        wrong_type(cmap, "stage", stage, f"one of {', '.join(STAGES)}", "Set stage: sft (supervised fine-tuning).")
    elif stage != "sft":
        not_honoured(cmap, "stage", f"stage: {stage} is {STAGES[stage]}, not supervised fine-tuning; tunegate "
                     "gates supervised fine-tuning runs only", "Gate the supervised fine-tuning run (stage: sft on "
                     "chat or instruction data); run this stage with llamafactory-cli train itself.", objective=True)
    if not cmap.get("do_train", False):
        what = "not set" if not cmap.has("do_train") else "false"
        not_honoured(cmap, "do_train" if cmap.has("do_train") else None, f"do_train is {what}, so llamafactory-cli "
                     "train loads the model and data and trains nothing; tunegate gates a training run",
                     "Set do_train: true.")
    return stage if isinstance(stage, str) and stage in STAGES else "sft"


def _method(cmap: ConfigMap) -> None:
    method = cmap.get("finetuning_type", "lora")
    words = {"full": "full, so LLaMA-Factory fine-tunes every weight",
             "freeze": "freeze, so LLaMA-Factory trains every weight of the last freeze_trainable_layers layers "
                       "(2 by default), not adapters",
             "oft": "oft (orthogonal fine-tuning adapters), not LoRA"}
    if isinstance(method, str) and method in words:
        not_lora(cmap, "finetuning_type", f"finetuning_type is {words[method]}", "Set finetuning_type: lora (with "
                 "quantization_bit: 4 for QLoRA).", full=method == "full")
    elif method != "lora":
        wrong_type(cmap, "finetuning_type", method, "one of lora, oft, freeze, full", "Set finetuning_type: lora.")
    rank = cmap.get("lora_rank", DEFAULTS["lora_rank"])
    alpha = cmap.get("lora_alpha") or (rank * 2 if isinstance(rank, int) and not isinstance(rank, bool) else None)
    if alpha is not None:  # LLaMA-Factory: lora_alpha or lora_rank * 2
        cmap.set("lora.alpha", alpha, "lora_alpha" if cmap.has("lora_alpha") else "lora_rank")
    targets = cmap.get("lora_target", DEFAULTS["lora_target"])
    # split at commas, as FinetuningArguments' split_arg does (a YAML list passes as it is); `all`: every linear layer
    names = [t.strip() for t in targets.split(",")] if isinstance(targets, str) else targets
    if isinstance(names, list) and names and all(isinstance(t, str) for t in names):
        cmap.set("lora.target_modules", "all-linear" if names == ["all"] else names, "lora_target")
    else:
        wrong_type(cmap, "lora_target", targets, "module names joined by commas, or all", "Write lora_target: all "
                   "(every linear layer) or lora_target: q_proj,v_proj.")
    extra = cmap.get("additional_target")
    if extra is not None:  # modules trained in full beside the adapters and saved with them
        cmap.set("lora.modules_to_save", [t.strip() for t in extra.split(",")] if isinstance(extra, str) else extra,
                 "additional_target")


def _quantization(cmap: ConfigMap) -> None:
    bits, method = cmap.get("quantization_bit"), cmap.get("quantization_method", "bnb")
    quant = {4: "4bit", 8: "8bit"}.get(bits, "none") if type(bits) is int else "none"
    if bits is not None and cmap.get("finetuning_type") in ("full", "freeze"):
        refused_by_tool(cmap, "quantization_bit", f"quantization_bit {bits} with finetuning_type "
                        f"{cmap.get('finetuning_type')}: LLaMA-Factory refuses it (\"Quantization is only compatible "
                        "with the LoRA or OFT method.\")", "Use finetuning_type: lora for QLoRA, or drop "
                        "quantization_bit.")
    elif bits is not None and quant == "none":
        not_honoured(cmap, "quantization_bit", f"quantization_bit {bits!r}: tunegate's run loads the base in 4 or 8 "
                     "bits (bitsandbytes) only", "Set quantization_bit: 4 (QLoRA) or 8, or drop it.")
    elif bits is not None and method not in ("bnb", "bitsandbytes"):
        not_honoured(cmap, "quantization_method", f"quantization_method {method}: tunegate's run quantizes the base "
                     "with bitsandbytes", "Set quantization_method: bnb (the default), or drop it.")
    cmap.set("model.quantization", quant, "quantization_bit")


def _training(cmap: ConfigMap) -> None:
    choose(cmap, "optim", "training.optimizer", DEFAULTS["optim"], OPTIMIZERS)
    choose(cmap, "lr_scheduler_type", "training.lr_scheduler", DEFAULTS["lr_scheduler_type"], SCHEDULERS)
    steps, warmup, ratio = cmap.get("max_steps", -1), cmap.get("warmup_steps", 0), cmap.get("warmup_ratio", 0.0)
    if not isinstance(steps, int) or isinstance(steps, bool) or steps > 0:  # -1: epochs decide
        cmap.set("training.max_steps", steps, "max_steps")
    if warmup and ratio:
        conflicting(cmap, "warmup_ratio", "warmup_steps and warmup_ratio are both set", "Keep one.")
    cmap.set("training.warmup_steps", warmup, "warmup_steps")
    cmap.set("training.warmup_ratio", ratio, "warmup_ratio" if cmap.has("warmup_ratio") else "warmup_steps")
    fp16, bf16 = cmap.get("fp16", False), cmap.get("bf16", False) or cmap.get("pure_bf16", False)
    if fp16 and bf16:
        conflicting(cmap, "fp16", "bf16 and fp16 are both true", "Keep one of them.")
    # Neither set: LLaMA-Factory loads the weights in bf16 where the GPU has it (infer_optim_dtype), without AMP.
    cmap.set("training.precision", "fp16" if fp16 else "bf16", "fp16" if fp16 else "bf16")
    off = cmap.get("disable_gradient_checkpointing", False)
    cmap.set("training.gradient_checkpointing", not off, "disable_gradient_checkpointing")
    cmap.set("training.packing", bool(cmap.get("packing", False)), "packing")  # None: off, but for stage pt
    cmap.set("training.loss_on", "all" if cmap.get("train_on_prompt", False) else "replies", "train_on_prompt")
    attention = cmap.get("flash_attn", "auto")
    if isinstance(attention, str) and attention in _ATTENTION:
        cmap.set("training.attention", _ATTENTION[attention], "flash_attn")
    elif attention != "auto":
        not_honoured(cmap, "flash_attn", f"flash_attn {attention!r} is not a kernel tunegate's full run can use",
                     "Use flash_attn: auto, sdpa, fa2 or disabled.")


def _master_weights(cmap: ConfigMap) -> None:
    """A full fine-tune under pure_bf16 (or BAdam) keeps no fp32 copy: LLaMA-Factory upcasts the trained
    weights to fp32 otherwise (init_adapter's cast_trainable_params_to_fp32), but not then, so gradients and
    AdamW's moments are bf16 too. DeepSpeed and FSDP keep fp32 master weights of their own."""
    training = cmap.data.get("training", {})
    if (training.get("method") == "full" and (cmap.get("pure_bf16", False) or cmap.get("use_badam", False))
            and training.get("sharding", "none") == "none"):
        cmap.set("training.master_weights", "none", "pure_bf16" if cmap.has("pure_bf16") else "use_badam")


def _sharding(cmap: ConfigMap) -> None:
    """DeepSpeed's ZeRO stage from its JSON (by its name when unreadable); FSDP from the Trainer's fsdp."""
    if cmap.get("fsdp"):
        cmap.set("training.sharding", "fsdp", "fsdp")
        return
    config = cmap.get("deepspeed")
    if not config:
        return
    stage = _zero_stage(cmap, config)
    if stage:
        cmap.set("training.sharding", "zero3" if stage == 3 else "zero2", "deepspeed")


def _zero_stage(cmap: ConfigMap, config: Any) -> int:
    """The ZeRO stage of a deepspeed config (a dict, or a JSON file resolved as the datasets are)."""
    if isinstance(config, str):
        try:  # a name past the system's length, a NUL byte: no such file, the name alone says the stage
            found = next((p for p in (Path.cwd() / config, cmap.base / config, *(up / config for up in
                                                                                    cmap.base.parents[:2]))
                          if p.is_file()), None)
            config = json.loads(found.read_text(encoding="utf-8")) if found else config
        except (OSError, ValueError):
            pass
    if isinstance(config, dict):
        stage = (config.get("zero_optimization") or {}).get("stage", 0)
        return stage if isinstance(stage, int) else 0
    name = str(config).lower()
    return 3 if "z3" in name or "zero3" in name else 2

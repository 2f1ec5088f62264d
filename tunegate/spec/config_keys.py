"""Keys of an imported config that change what trains but that tunegate's run does not apply
(TG147), and unknown keys that look like typos of the keys tunegate maps (TG155).

Each tool applies these keys; tunegate's trainer would train without them, so a config setting
one to anything but the tool's default is refused rather than approved as if the run were the
same. Defaults read from axolotl's schemas (src/axolotl/utils/schemas/peft.py, training.py),
TRL's ModelConfig and SFTConfig and transformers' TrainingArguments.
"""
from __future__ import annotations

import difflib
from typing import Any

from tunegate.spec.config_map import ConfigMap

# key -> (the value that changes nothing, what the key does)
UNHONOURED = {
    "axolotl": {
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
    },
    "trl": {
        "use_dora": (False, "DoRA (a magnitude vector trained beside each LoRA pair)"),
        "use_rslora": (False, "rank-stabilised LoRA (updates scaled by alpha / sqrt(r), not alpha / r)"),
        "neftune_noise_alpha": (None, "NEFTune noise on the embeddings"),
        "resume_from_checkpoint": (None, "resuming from a checkpoint"),
        "lr_scheduler_kwargs": (None, "arguments of the learning-rate schedule (e.g. min_lr_rate)"),
        "loss_type": ("nll", "another loss than cross-entropy"),
    },
}
# Real keys of each tool that are close to a key tunegate maps, so they are not typos. Computed by
# running difflib.get_close_matches(key, mapped, cutoff=0.8) over every field name in axolotl's
# schemas (axolotl-ai-cloud/axolotl src/axolotl/utils/schemas, integrations) and in TRL's
# ScriptArguments, SFTConfig, ModelConfig and transformers' TrainingArguments.
_REAL_NEAR = {
    "axolotl": {"a_bf16", "chat_template_jinja", "eval_batch_size", "eval_sample_packing", "eval_sequence_len",
                "evaluation_strategy", "flex_attention", "gradient_checkpointing_kwargs", "gradio_max_new_tokens",
                "lora_rank", "optim_target_modules", "orpo_alpha", "s2_attention", "sage_attention",
                "sequence_length", "swanlab_log_model", "swanlab_project", "wandb_mode", "warmup_iterations",
                "xformers_attention", "eager_attention"},
    "trl": {"dataloader_in_order", "eval_accumulation_steps", "gradient_checkpointing_kwargs",
            "optim_target_modules", "per_device_eval_batch_size", "torch_dtype", "dtype"},
}
_IGNORES = {"axolotl": "axolotl ignores keys it does not know, so this value is never used",
            "trl": "trl sft refuses keys it does not know (it hands them to accelerate launch, which stops)"}


def unhonoured(cmap: ConfigMap) -> None:
    """TG147 for every key set away from its default that changes training and is not applied."""
    for key, (default, what) in UNHONOURED[cmap.kind].items():
        value = cmap.get(key)
        if value in (None, default, "", [], {}) or (default is False and value is False):
            continue
        cmap.note("TG147", "error", key, f"{key}: {_shown(value)} asks for {what}; tunegate's full run does "
                  f"not apply it, so it would train a different model than {cmap.kind} does",
                  f"Remove {key} (or set it to {_shown(default) if default is not None else 'null'}) to gate and "
                  "run this config with tunegate; otherwise run it with "
                  f"{'axolotl' if cmap.kind == 'axolotl' else 'trl sft'} itself.")


def regex_targets(cmap: ConfigMap, targets: str) -> None:
    """TG147 for lora_target_modules written as one string other than all-linear: PEFT (under axolotl
    and TRL alike) reads it as a regular expression over full module paths, tunegate's run as names."""
    cmap.note("TG147", "error", "lora_target_modules", f"lora_target_modules is the string {targets!r}, which PEFT "
              "reads as a regular expression over full module paths; tunegate's run takes module names",
              "List the module names (lora_target_modules: [q_proj, k_proj, v_proj, o_proj]) or use all-linear"
              + (" (or lora_target_linear: true)." if cmap.kind == "axolotl" else "."))


def typos(cmap: ConfigMap, mapped: set[str]) -> set[str]:
    """TG155 for each key no mapping read that is one edit or two from a key tunegate maps; the keys
    they were meant to be (a missing required key is then said once, here)."""
    meant: set[str] = set()
    for key in cmap.source:
        if key in cmap.used or key in _REAL_NEAR[cmap.kind] or not isinstance(key, str):
            continue
        close = difflib.get_close_matches(key, sorted(mapped), n=1, cutoff=0.8)
        if close and close[0] not in cmap.source:
            cmap.used.add(key)
            meant.add(close[0])
            cmap.note("TG155", "error", key, f"unknown key '{key}': {_IGNORES[cmap.kind]}",
                      f"Did you mean '{close[0]}'? Rename the key (docs/{cmap.kind}.md lists the keys tunegate "
                      "maps).")
    return meant


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    return repr(value) if isinstance(value, str) else str(value)

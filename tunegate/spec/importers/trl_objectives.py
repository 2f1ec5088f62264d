"""Which `trl` command a TRL config is for: `trl sft`, or a command of another objective (dpo, kto, reward, ...).

    read_as(cmap)   # loss_weights: [1.0, 0.5] -> TG147, and the config's trainer is `trl dpo`

The `trl` CLI runs one script per command (trl/cli/commands: dpo, grpo, kto, reward, rloo, sft), each
parsing the config into its own dataclasses and handing a key it does not know to `accelerate launch`,
which stops. So a key only another command's config has (OBJECTIVE_KEYS) makes the config that
command's; beside a key only `trl sft` reads (SFT_KEYS) it is one `trl sft` refuses (TG154). A config
with neither (the `model_name_or_path` + `dataset_name` blocks of TRL's docs/source/clis.md serve sft,
dpo, kto and reward alike) is read by its training data, as TRL's trainers read a dataset's type off its
first record: preference pairs (`chosen`/`rejected`) are what `trl dpo` and `trl reward` train and
SFTTrainer stops on (its tokenizer reads 'completion' or 'text'); unpaired preference
(`prompt`/`completion` with a true/false `label`) is what `trl kto` trains and SFTTrainer would train
whole, the undesirable completions too. Another objective is TG147, an error (tunegate gates supervised
fine-tuning) that is no reason the config's own trainer, named for its command, refuses the run.
"""
from __future__ import annotations

import dataclasses
import json
import zlib
from pathlib import Path
from typing import Any

from tunegate.errors import UsageError
from tunegate.file_kinds import kind_of
from tunegate.pathguard import open_regular, shown
from tunegate.spec.importers.config_keys import as_written, refused_by_tool
from tunegate.spec.importers.config_map import ConfigMap
from tunegate.spec.importers.data_source import resolve, unusable
from tunegate.spec.importers.unhonoured import not_honoured

COPIED_FROM = "TRL f2cd57710ae345ea6428ae95363267fcf38a3dc8, and v0.28.0 (DPOConfig's keys before its refactor)"
# SFTConfig's fields that no other command's config has (at either version).
SFT_KEYS = frozenset({"assistant_only_loss", "completion_only_loss", "dataset_kwargs", "dataset_text_field",
                      "eval_packing", "packing", "packing_strategy"})
# The fields of each command's config (and of grpo's and rloo's script arguments) that neither SFTConfig nor
# transformers' TrainingArguments has, at either version; ModelConfig's and ScriptArguments' are every command's.
_REFERENCE = frozenset({"beta", "disable_dropout", "precompute_ref_batch_size", "precompute_ref_log_probs",
                        "ref_model_mixup_alpha", "ref_model_sync_steps", "sync_ref_model"})  # dpo and kto
_ONLINE = frozenset({  # grpo and rloo: completions generated during training, scored by reward functions
    "beta", "cache_implementation", "chat_template_kwargs", "disable_dropout", "ds3_gather_for_generation",
    "epsilon", "epsilon_high", "generation_batch_size", "generation_kwargs", "log_completions", "log_multimodal",
    "log_unique_prompts", "mask_truncated_completions", "max_completion_length", "min_p", "num_completions_to_print",
    "num_generations", "num_generations_eval", "num_iterations", "ref_model_mixup_alpha", "ref_model_sync_steps",
    "repetition_penalty", "reward_funcs", "reward_model_name_or_path", "reward_weights", "steps_per_generation",
    "sync_ref_model", "temperature", "top_k", "top_p", "transformers_continuous_batching_config",
    "use_transformers_continuous_batching", "use_transformers_paged", "use_vllm", "vllm_enable_sleep_mode",
    "vllm_gpu_memory_utilization", "vllm_group_port", "vllm_max_model_length", "vllm_mode", "vllm_model_impl",
    "vllm_server_base_url", "vllm_server_host", "vllm_server_port", "vllm_server_timeout",
    "vllm_structured_outputs_regex", "vllm_tensor_parallel_size"})
OBJECTIVE_KEYS: dict[str, frozenset[str]] = {
    "dpo": _REFERENCE | {
        "base_model_attribute_name", "discopop_tau", "f_alpha_divergence_coef", "f_divergence_type",
        "force_use_ref_model", "generate_during_eval", "label_pad_token_id", "label_smoothing", "ld_alpha",
        "loss_weights", "max_completion_length", "max_prompt_length", "model_adapter_name", "ref_adapter_name",
        "ref_model_init_kwargs", "reference_free", "rpo_alpha", "use_logits_to_keep", "use_weighting"},
    "kto": _REFERENCE | {"desirable_weight", "undesirable_weight"},
    "reward": frozenset({"center_rewards_coefficient", "disable_dropout"}),
    "grpo": _ONLINE | {
        "cast_lm_head_to_fp32", "delta", "entropy_coef", "entropy_coef_delta", "entropy_coef_max", "entropy_coef_min",
        "entropy_target", "importance_sampling_level", "log_completions_hub_repo", "max_tool_calling_iterations",
        "multi_objective_aggregation", "off_policy_mask_threshold", "sapo_temperature_neg", "sapo_temperature_pos",
        "scale_rewards", "top_entropy_quantile", "use_adaptive_entropy", "use_bias_correction_kl", "vespo_k_neg",
        "vespo_k_pos", "vespo_lambda_neg", "vespo_lambda_pos", "vllm_importance_sampling_cap",
        "vllm_importance_sampling_clip_max", "vllm_importance_sampling_clip_min",
        "vllm_importance_sampling_correction", "vllm_importance_sampling_mode"},
    "rloo": _ONLINE | {"max_prompt_length", "normalize_advantages", "reward_clip_range"},
}
# What each command trains, in findings.
OBJECTIVES = {"dpo": "DPO on preference pairs", "kto": "KTO on completions labelled desirable or undesirable",
              "reward": "a reward model on preference pairs", "grpo": "GRPO on completions it generates",
              "rloo": "RLOO on completions it generates"}
_HEAD = 1 << 20  # bytes read for a first record: a longer one leaves the data undecided (read as trl sft's)


def read_as(cmap: ConfigMap) -> None:
    """TG147, and the config's trainer named for its command, where the config is another command's than
    `trl sft`: by the keys only that command's config has, else by its training data's first record.
    TG154 for such a key in a config that is `trl sft`'s by a key only it reads."""
    marks = [k for k in cmap.source if isinstance(k, str) and any(k in keys for keys in OBJECTIVE_KEYS.values())]
    sft = [k for k in cmap.source if k in SFT_KEYS]
    cmap.used.update(marks)  # said here, not listed as unchecked (TG140)
    if marks and sft:
        other = _named(_commands(marks[:1]))
        refused_by_tool(cmap, marks[0], f"{marks[0]} is a setting of {other}, not of trl sft, whose config this is "
                        f"({sft[0]} is trl sft's only): trl sft hands {marks[0]} to accelerate launch, which stops on "
                        "it", f"Remove {marks[0]} to run the config with trl sft (or {sft[0]}, to run it with "
                        f"{other}).")
        return
    data = None if marks or sft else _data_kind(cmap)
    if marks:
        commands = _commands(marks)
        not_honoured(cmap, marks[0], f"{marks[0]}: {as_written(cmap.source[marks[0]])} is a setting only "
                     f"{_named(commands)} reads, not trl sft: the config trains another objective than supervised "
                     f"fine-tuning ({'; '.join(OBJECTIVES[c] for c in commands)}), which tunegate does not gate",
                     f"Run it with {_named(commands)} itself (tunegate launch cannot). To gate a supervised fine-tune, "
                     f"write a trl sft config (without {marks[0]}).", objective=True)
    elif data is not None:
        commands, what, file = data
        key = next((k for k in ("datasets", "dataset_name") if cmap.has(k)), None)
        not_honoured(cmap, key, f"the first training record ({file}) is {what}; the config sets nothing only trl sft "
                     f"reads, so it is read as a {_named(commands)} config: another objective than supervised "
                     f"fine-tuning ({'; '.join(OBJECTIVES[c] for c in commands)}), which tunegate does not gate",
                     f"Run it with {_named(commands)} itself (tunegate launch cannot). To gate a supervised "
                     "fine-tune, give fine-tuning records (messages, or prompt/completion: the chosen answers as "
                     "completions); a config with a key only trl sft reads (packing, dataset_text_field) is checked "
                     "as trl sft's whatever its data.", objective=True)
    else:
        return
    cmap.dialect = dataclasses.replace(cmap.dialect, runs_with=_named(commands))


def _commands(marks: list[str]) -> list[str]:
    """The commands whose config has every key marked (else those that have the first)."""
    every = [c for c, keys in OBJECTIVE_KEYS.items() if all(k in keys for k in marks)]
    return every or [c for c, keys in OBJECTIVE_KEYS.items() if marks[0] in keys]


def _named(commands: list[str]) -> str:
    names = [f"trl {c}" for c in commands]
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


def _data_kind(cmap: ConfigMap) -> tuple[list[str], str, str] | None:
    """(the commands that train it, what it is, its file) when the first training record is another
    objective's data; None when it is not, or cannot be read here (the data stages say why)."""
    path = _first_file(cmap)
    record = first_record(path) if path is not None else None
    if record is None:
        return None
    if "chosen" in record and "rejected" in record:
        keys = "/".join(f"'{k}'" for k in ("prompt", "chosen", "rejected") if k in record)
        return ["dpo", "reward"], f"preference data ({keys}), which SFTTrainer stops on (it reads 'completion' or " \
            "'text')", shown(str(path))
    if type(record.get("label")) is bool and "completion" in record:
        return ["kto"], "unpaired preference data ('prompt'/'completion' with a true/false 'label'), whose " \
            "undesirable completions SFTTrainer would train too (it ignores the label)", shown(str(path))
    return None


def _first_file(cmap: ConfigMap) -> Path | None:
    """The training split's first file: the one given (--train), else the one the config names, as trl reads it."""
    given = cmap.overrides.get("train")
    if given is not None:
        return given[0] if isinstance(given, list) else given
    mixture = cmap.source.get("datasets")
    entry = mixture[0] if isinstance(mixture, list) and mixture and isinstance(mixture[0], dict) else {}
    ref = entry.get("path") if entry else cmap.source.get("dataset_name")
    split = (entry.get("split") if entry else cmap.source.get("dataset_train_split")) or "train"
    if not isinstance(ref, str) or not ref or not isinstance(split, str) or unusable(ref):
        return None
    files = resolve(ref, cmap.base, split).files
    return files[0] if files else None


def first_record(path: Path) -> dict[str, Any] | None:
    """The first record of a data file as `load_dataset` reads it (JSON Lines or a JSON array, gzipped or not;
    parquet); None when there is none to read here (another container, a broken file, no pyarrow)."""
    try:
        kind = kind_of(path)
        if kind == "parquet":
            return _first_row(path)
        if kind not in ("json", "jsonl"):  # CSV, Arrow: undecided, read as the config says
            return None
        with open_regular(path) as f:
            head = f.read(_HEAD)
    except (UsageError, OSError, ValueError, ImportError):  # pyarrow's errors are ValueErrors and OSErrors
        return None
    if head[:2] == b"\x1f\x8b":
        try:
            head = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head, _HEAD)
        except zlib.error:
            return None
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff \t\r\n")
    try:
        record, _ = json.JSONDecoder().raw_decode(text[1:].lstrip() if text.startswith("[") else text)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def _first_row(path: Path) -> dict[str, Any] | None:
    import pyarrow.parquet as pq  # optional (tunegate[parquet]): without it the data stays undecided

    batch = next(pq.ParquetFile(path).iter_batches(batch_size=1), None)
    rows = batch.to_pylist() if batch is not None else []
    return rows[0] if rows else None

"""LLaMA-Factory's own values that its dialect reads by: defaults, stages, keys that change what trains.

Copied from LLaMA-Factory's hparams dataclasses (src/llamafactory/hparams: FinetuningArguments,
DataArguments, ModelArguments) and transformers' Seq2SeqTrainingArguments under it, at COPIED_FROM;
tests/spec/importers/test_llamafactory_tables.py pins them to that commit (and compares them with the
installed package's dataclasses where llamafactory is installed).
"""
from __future__ import annotations

from tunegate.spec.importers.memory_savers import Savers
from tunegate.spec.importers.unhonoured import Unhonoured

COPIED_FROM = "LLaMA-Factory 0.9.6.dev0, hiyouga/LLaMA-Factory@ff6d4d12eeb035d6ce06805a5733dd7b29f2ac30"

# key -> LLaMA-Factory's default, for the keys the dialect maps
DEFAULTS = {
    "stage": "sft", "finetuning_type": "lora",  # FinetuningArguments
    "lora_rank": 8, "lora_alpha": None, "lora_dropout": 0.0, "lora_target": "all",  # alpha None: lora_rank * 2
    "template": None, "dataset_dir": "data", "cutoff_len": 2048, "val_size": 0.0,  # DataArguments
    "train_on_prompt": False, "mask_history": False, "packing": None,  # packing None: on for stage pt only
    "quantization_bit": None, "quantization_method": "bnb", "quantization_type": "nf4",  # ModelArguments
    "double_quantization": True, "flash_attn": "auto", "disable_gradient_checkpointing": False,
    "model_revision": "main", "trust_remote_code": False,
    # Seq2SeqTrainingArguments (transformers 5, as LLaMA-Factory 0.9.6 pins it: >=4.55, <=5.8)
    "per_device_train_batch_size": 8, "gradient_accumulation_steps": 1, "learning_rate": 5e-5,
    "num_train_epochs": 3.0, "max_steps": -1, "lr_scheduler_type": "linear", "warmup_steps": 0,
    "warmup_ratio": 0.0, "weight_decay": 0.0, "max_grad_norm": 1.0, "seed": 42, "optim": "adamw_torch_fused",
    "bf16": False, "fp16": False, "do_train": False,
}

# stage -> what it trains (FinetuningArguments.stage's choices)
STAGES = {"pt": "pre-training: a next-token loss on raw text documents",
          "sft": "supervised fine-tuning",
          "rm": "reward modelling: a scalar head trained on preference pairs",
          "ppo": "reinforcement learning with PPO against a reward model",
          "dpo": "preference optimisation on chosen/rejected pairs (DPO, or ORPO and SimPO by pref_loss)",
          "kto": "KTO: preference optimisation on answers tagged desirable or undesirable"}

# Settings LLaMA-Factory applies that lower GPU memory and the estimate does not model (TG429): key -> (the
# value that saves nothing, what it does). From its FinetuningArguments and ModelArguments at ff6d4d12.
MEMORY_SAVERS: Savers = {
    "use_galore": (False, "GaLore: optimizer states of low-rank gradient projections"),
    "use_apollo": (False, "APOLLO: optimizer states of low-rank projections"),
    "use_badam": (False, "BAdam: one block of layers trained at a time"),
    "use_adam_mini": (False, "Adam-mini: one second moment per block of weights"),
    "enable_liger_kernel": (False, "Liger kernels, whose fused linear cross-entropy never holds the logits whole"),
    "use_unsloth_gc": (False, "unsloth's gradient checkpointing, which offloads activations to the CPU"),
    "sequence_parallel_size": (1, "each sequence split over that many GPUs"),
}
# Keys LLaMA-Factory applies that change what trains and tunegate's run does not apply (TG147):
# key -> (the value that changes nothing, what the key does).
UNHONOURED: Unhonoured = {
    "use_dora": (False, "DoRA (a magnitude vector trained beside each LoRA pair)"),
    "use_rslora": (False, "rank-stabilised LoRA (updates scaled by alpha / sqrt(r), not alpha / r)"),
    "pissa_init": (False, "PiSSA (adapters initialised from the base's principal singular vectors)"),
    "loraplus_lr_ratio": (None, "LoRA+ (B matrices trained at a higher learning rate)"),
    "adapter_name_or_path": (None, "training on from an existing adapter"),
    "resume_from_checkpoint": (None, "resuming from a checkpoint"),
    "neftune_noise_alpha": (None, "NEFTune noise on the embeddings"),
    "mask_history": (False, "training on the last turn of each conversation only (tunegate trains every reply)"),
    "neat_packing": (False, "packing without attention across the packed records"),
    "use_llama_pro": (False, "LLaMA Pro (expanded blocks trained)"),
    "use_galore": (False, "the GaLore optimizer"), "use_apollo": (False, "the APOLLO optimizer"),
    "use_badam": (False, "the BAdam optimizer"), "use_adam_mini": (False, "the Adam-mini optimizer"),
    "use_muon": (False, "the Muon optimizer"),
    "use_dft_loss": (False, "the DFT loss"), "use_asft_loss": (False, "the ASFT loss"),
    "use_eaft_loss": (False, "the EAFT loss"),
    "rope_scaling": (None, "RoPE scaling (a longer context than the base model's)"),
    "shift_attn": (False, "LongLoRA's shifted sparse attention"),
    "resize_vocab": (False, "a resized vocabulary (and embeddings)"),
    "add_tokens": (None, "new tokens added to the tokenizer (and rows to the embeddings)"),
    "add_special_tokens": (None, "new special tokens added to the tokenizer (and rows to the embeddings)"),
    "new_special_tokens_config": (None, "new special tokens added to the tokenizer (and rows to the embeddings)"),
    "tokenized_path": (None, "a pre-tokenized dataset, read from there instead of the named datasets once it exists"),
    "train_from_scratch": (False, "a model trained from random weights"),
    "quantization_type": ("nf4", "4-bit FP4 instead of NF4"),
    "double_quantization": (True, "4-bit weights without double-quantised constants"),
}

# Keys LLaMA-Factory reads that change nothing tunegate checks or runs (logging, saving, caching, workers).
NO_EFFECT = frozenset({
    "report_to", "logging_steps", "logging_first_step", "logging_dir", "run_name", "save_steps", "save_strategy",
    "save_total_limit", "save_only_model", "plot_loss", "overwrite_output_dir", "overwrite_cache", "ddp_timeout",
    "preprocessing_num_workers", "preprocessing_batch_size", "dataloader_num_workers", "eval_steps",
    "eval_strategy", "per_device_eval_batch_size", "do_eval", "include_num_input_tokens_seen", "tf32",
    "print_param_status", "low_cpu_mem_usage", "use_swanlab", "swanlab_project", "swanlab_run_name",
})

# Real LLaMA-Factory keys close to a key tunegate maps, so they are not typos (TG155). Computed by running
# difflib.get_close_matches(key, mapped, cutoff=0.8) over every field name of LLaMA-Factory's hparams
# dataclasses and transformers' Seq2SeqTrainingArguments, at COPIED_FROM.
REAL_NEAR = frozenset({"dataloader_in_order", "eval_accumulation_steps", "export_quantization_bit", "galore_rank",
                       "galore_target", "gradient_checkpointing", "init_special_tokens", "local_rank", "pissa_iter",
                       "skip_special_tokens"})

# The chat templates LLaMA-Factory registers (src/llamafactory/data/template.py's register_template calls, at
# COPIED_FROM); any other name stops it ("Template ... does not exist."). Those with a multimodal plugin take
# the media listed (their plugin's image_token, video_token, audio_token); every other template, and no template
# (the tokenizer's chat template, parsed), takes none: a record with media stops LLaMA-Factory ("This model does
# not support image input. Please check whether the correct `template` is used.").
MEDIA_TEMPLATES: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(("dots_ocr", "ernie_vl", "gemma4", "glm4_5v", "glm4v", "glm_ocr", "intern_s1", "intern_vl",
                     "keye_vl", "llava_next_video", "llava_next_video_mistral", "llava_next_video_yi", "mimo_vl",
                     "minicpm_v", "minicpm_v_4_6", "moss_vl", "qwen2_vl", "qwen3_5", "qwen3_5_nothink", "qwen3_6",
                     "qwen3_vl", "qwen3_vl_nothink", "video_llava", "youtu_vl"), ("image", "video")),
    **dict.fromkeys(("gemma3", "granite3_vision", "kimi_vl", "lfm2_vl", "llama4", "llava", "llava_next",
                     "llava_next_llama3", "llava_next_mistral", "llava_next_qwen", "llava_next_yi", "ministral3",
                     "mistral_small", "mllama", "paligemma", "paligemma_chat", "pixtral", "yi_vl"), ("image",)),
    "gemma3n": ("image", "audio"), "qwen2_audio": ("audio",),
    **dict.fromkeys(("gemma4n", "minicpm_o", "qwen2_omni", "qwen3_omni", "qwen3_omni_nothink"),
                    ("image", "video", "audio")),
}
TEXT_TEMPLATES = frozenset({
    "aeva", "alpaca", "bailing", "bailing_v2", "breeze", "chatglm3", "chatml", "chatml_de", "cohere", "cpm4", "dbrx",
    "deepseek", "deepseek3", "deepseekcoder", "deepseekr1", "default", "empty", "ernie", "ernie_nothink", "exaone",
    "falcon", "falcon_h1", "fewshot", "gemma", "gemma2", "glm4", "glm4_7", "glm4_moe", "glmz1", "gpt_oss", "granite3",
    "granite4", "hunyuan", "hunyuan_small", "hy3", "hy_dense_1_8b", "hy_dense_7b", "index", "intern2", "lfm2",
    "llama2", "llama2_zh", "llama3", "mimo", "mimo_v2", "minimax1", "minimax2", "ministral", "mistral", "moonlight",
    "olmo", "openchat", "openchat-3.6", "opencoder", "phi", "phi4", "phi4_mini", "phi_small", "qwen", "qwen3",
    "qwen3_nothink", "sailor", "seed_coder", "seed_oss", "smollm", "smollm2", "solar", "starchat", "telechat2",
    "vicuna", "xuanyuan", "yi", "youtu", "yuan", "zephyr"})

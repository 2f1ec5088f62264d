"""Run the mini-run on a proxy of a real architecture and print its peak memory and tokens/s as JSON.

    python benchmarks/gpu_minirun_check.py                         # CUDA: Llama-3.1-8B config, 2 layers, bf16, sdpa
    python benchmarks/gpu_minirun_check.py --layers 4 --seq-len 4096 --micro-batch 2
    python benchmarks/gpu_minirun_check.py --device cpu --tiny     # the same path on a CPU, in seconds

The proxy is Llama-3.1-8B's published config (hidden 4096, 32 heads, 8 KV heads, MLP 14336,
vocab 128256) with fewer layers and random weights, built from a config dict: no hub. It is saved
with `save_pretrained` and checked by tunegate's real mini-run stage (`model.id` = that folder),
so the figures are those of the code path users run. The tokenizer is the built-in tiny one: its
ids are valid for any larger vocabulary, and throughput depends on token counts, not on which
tokens they are. The records are generated to overfill `--seq-len`, so every step runs full
sequences (the audit's TG511/TG512 truncation warnings are expected).
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# https://huggingface.co/meta-llama/Llama-3.1-8B/blob/main/config.json (public values)
LLAMA_31_8B = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
    "intermediate_size": 14336, "num_attention_heads": 32, "num_key_value_heads": 8,
    "num_hidden_layers": 32, "vocab_size": 128256, "max_position_embeddings": 131072,
    "rms_norm_eps": 1e-5, "rope_theta": 500000.0, "hidden_act": "silu", "tie_word_embeddings": False,
    "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                     "original_max_position_embeddings": 8192, "rope_type": "llama3"},
    "bos_token_id": 128000, "eos_token_id": 128001,
}
TINY = {"hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4, "num_key_value_heads": 2,
        "vocab_size": 1024, "rope_scaling": None}


def build_proxy(folder: Path, layers: int, tiny: bool, device: str) -> int:
    """Save a random-weight proxy model and the tiny tokenizer into `folder`; return its parameter count."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    from tunegate.training.tiny_model import ensure_tiny_model

    tokenizer = AutoTokenizer.from_pretrained(ensure_tiny_model())
    values = {**LLAMA_31_8B, **(TINY if tiny else {}), "num_hidden_layers": layers,
              "bos_token_id": tokenizer.bos_token_id, "eos_token_id": tokenizer.eos_token_id,
              "pad_token_id": tokenizer.pad_token_id}
    config = LlamaConfig(**{k: v for k, v in values.items() if k not in ("architectures", "model_type")})
    torch.manual_seed(0)
    with torch.device(device):  # initialise on the GPU: a 1.5B-parameter init on the CPU takes minutes
        model = LlamaForCausalLM(config).to(torch.bfloat16)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    count = sum(p.numel() for p in model.parameters())
    del model
    return count


def write_records(path: Path, count: int, seq_len: int) -> None:
    """Chats whose reply fills the sequence (~4 characters per token of the tiny tokenizer)."""
    words = "please check the order status and tell me when my parcel will arrive".split()
    reply = " ".join(words[i % len(words)] for i in range(seq_len))  # > seq_len tokens: truncation fills it
    line = json.dumps({"messages": [{"role": "user", "content": "Where is my parcel?"},
                                    {"role": "assistant", "content": reply}]})
    path.write_text((line + "\n") * count)


def write_spec(folder: Path, model: Path, args: argparse.Namespace) -> Path:
    spec = f"""
model: {{id: "{model}"}}
data: {{train: train.jsonl, validation: validation.jsonl}}
lora: {{r: 16, alpha: 32, dropout: 0.05, target_modules: [q_proj, k_proj, v_proj, o_proj]}}
training: {{learning_rate: 2e-4, micro_batch_size: {args.micro_batch}, grad_accum_steps: 1, max_steps: 100,
           max_seq_len: {args.seq_len}, precision: bf16, attention: sdpa,
           gradient_checkpointing: {str(args.gradient_checkpointing).lower()}}}
hardware: {{gpu: H200, count: 1}}
gate: {{mini_run: {{sample_size: {args.micro_batch * 2}, steps: {args.steps}, device: {args.device}}}}}
full_run: {{output_dir: "{folder / 'out'}"}}
"""
    path = folder / "spec.yaml"
    path.write_text(spec)
    return path


def run(args: argparse.Namespace) -> dict:
    from tunegate.minirun.stage import run_stage as minirun_stage
    from tunegate.spec.check import read_spec
    from tunegate.stage import GateContext

    work = Path(tempfile.mkdtemp(prefix="tunegate-gpu-check-"))
    try:
        start = time.perf_counter()
        params = build_proxy(work / "proxy", args.layers, args.tiny, args.device)
        build_s = time.perf_counter() - start
        write_records(work / "train.jsonl", args.micro_batch * 2, args.seq_len)
        write_records(work / "validation.jsonl", args.micro_batch, args.seq_len)
        spec_result, spec = read_spec(write_spec(work, work / "proxy", args))
        if spec is None:  # e.g. a GPU name this branch's catalog lacks: say so rather than crash
            return {"error": "spec rejected", "findings": [f.model_dump() for f in spec_result.findings]}
        ctx = GateContext(None, spec, {"train": spec.data.train, "validation": spec.data.validation}, 20,
                          mini_run=True)
        result = minirun_stage(ctx)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    stats = result.stats
    keep = ["device", "precision", "attention", "load_s", "step_s", "tokens_per_s", "tokens_per_s_steady",
            "train_peak_memory_bytes", "peak_memory_bytes", "peak_memory_source", "losses", "grad_norms",
            "eval_loss", "save_reload_s", "reload_max_logit_diff"]
    return {"status": result.status, "codes": sorted({f.code for f in result.findings}),
            "proxy": {"config": "Llama-3.1-8B" + (" (tiny widths)" if args.tiny else ""), "layers": args.layers,
                      "params": params, "weights_bytes_bf16": params * 2},
            "batch": {"micro_batch_size": args.micro_batch, "seq_len": args.seq_len, "steps": args.steps,
                      "gradient_checkpointing": args.gradient_checkpointing},
            "build_s": round(build_s, 2), **{k: stats.get(k) for k in keep},
            "train_peak_memory_gib": round((stats.get("train_peak_memory_bytes") or 0) / 2**30, 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    parser.add_argument("--tiny", action="store_true", help="tiny widths (for a CPU smoke run)")
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--seq-len", type=int, default=2048)
    parser.add_argument("--micro-batch", type=int, default=4)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--gradient-checkpointing", action="store_true")
    args = parser.parse_args()
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    if args.tiny and args.seq_len == 2048:
        args.seq_len = 256
    print(json.dumps(run(args), indent=2))


if __name__ == "__main__":
    main()

"""The GPU check: tunegate's whole GPU path on a proxy of a real model, measured against `tunegate estimate`.

    python benchmarks/gpu_check.py                          # CUDA: Llama-3.1-8B widths, 2 layers, bf16
    python benchmarks/gpu_check.py --layers 4 --seq-len 4096 --micro-batch 2
    python benchmarks/gpu_check.py --device cpu --tiny      # the same path on a CPU (make test runs it)

One call, a few minutes on a GPU, each part as a user runs it, offline (HF_HUB_OFFLINE=1, as most
GPU clusters are; hub kernels off, as tunegate's default):

1. `tunegate check SPEC --mini-run --json` through the CLI, in its own process;
2. the full run through the launcher (`tunegate.fullrun.launcher.launch`: accelerate launch, the
   real `from_pretrained` of the saved proxy), a few optimizer steps;
3. a QLoRA mini-run (`model.quantization: 4bit`) where bitsandbytes is installed and the device is CUDA;
4. a 2-process DDP full run where 2 GPUs are visible;
5. `tunegate preflight SPEC --json`: the same mini-run in a child of the fork server (Prefect's local
   API and a fresh MLflow store in the work folder);
6. `tunegate sweep SPEC --json`, one candidate: its mini-run and short training in one forked child
   (on CUDA the mini-run's allocator cache is emptied and the peaks reset before the training); the
   candidate's MLflow run then holds the training's measured peak (`mini_run/peak_memory_gib`, read
   back from the work folder's store beside the estimate's predicted peak).

Each part prints its status, finding codes, measured peak memory (allocated; on CUDA also reserved
and the CUDA context) and tokens/s beside the estimate's figures for the same spec (`tunegate estimate
--json`: peak_allocated_gib, peak_gib, tokens_per_s), with their ratios. Parts that cannot run here say
why ("skipped: ..."); nothing is claimed for them. The proxy is Llama-3.1-8B's published config
(hidden 4096, 32 heads, 8 KV heads, MLP 14336, vocab 128256) with fewer layers and random weights,
saved with `save_pretrained`: no hub. The tokenizer is the built-in tiny one (its ids are valid for any
larger vocabulary). Records overfill --seq-len, so every step runs full sequences (TG511/TG512
truncation warnings are expected). benchmarks/README.md says how to carry the wheels to a GPU box.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# https://huggingface.co/meta-llama/Llama-3.1-8B/blob/main/config.json (public values)
LLAMA_31_8B = {
    "hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32, "num_key_value_heads": 8,
    "num_hidden_layers": 32, "vocab_size": 128256, "max_position_embeddings": 131072,
    "rms_norm_eps": 1e-5, "rope_theta": 500000.0, "hidden_act": "silu", "tie_word_embeddings": False,
    "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                     "original_max_position_embeddings": 8192, "rope_type": "llama3"},
}
TINY = {"hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4, "num_key_value_heads": 2,
        "vocab_size": 1024, "rope_scaling": None}
GIB = 2**30


def build_proxy(folder: Path, layers: int, tiny: bool, device: str) -> int:
    """Save a random-weight proxy model and the tiny tokenizer into `folder`; return its parameter count."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    from tunegate.training.tiny_model import ensure_tiny_model

    tokenizer = AutoTokenizer.from_pretrained(ensure_tiny_model())
    config = LlamaConfig(**{**LLAMA_31_8B, **(TINY if tiny else {}), "num_hidden_layers": layers,
                            "bos_token_id": tokenizer.bos_token_id, "eos_token_id": tokenizer.eos_token_id,
                            "pad_token_id": tokenizer.pad_token_id})
    torch.manual_seed(0)
    with torch.device(device):  # initialise on the GPU: a 1.5B-parameter init on the CPU takes minutes
        model = LlamaForCausalLM(config).to(torch.bfloat16)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    count = sum(p.numel() for p in model.parameters())
    del model
    return count


WORDS = ("please check the order status and tell me when my parcel will arrive at the depot near our "
         "office before noon because the courier said tomorrow morning would work for every customer").split()


def write_records(path: Path, count: int, seq_len: int, seed: int) -> None:
    """Distinct chats (no duplicates across or within the splits, which the gate would refuse) whose
    reply fills the sequence (a word is at least one token of the tiny tokenizer)."""
    import random

    rng = random.Random(seed)
    lines = []
    for i in range(count):
        reply = " ".join(rng.choice(WORDS) for _ in range(seq_len))  # > seq_len tokens: truncation fills it
        lines.append(json.dumps({"messages": [{"role": "user", "content": f"Where is parcel {seed}-{i}?"},
                                              {"role": "assistant", "content": reply}]}))
    path.write_text("\n".join(lines) + "\n")


def write_spec(folder: Path, name: str, args: argparse.Namespace, *, quantization: str = "none",
               count: int = 1, sweep: bool = False) -> Path:
    spec = f"""
model: {{id: "{folder / 'proxy'}", quantization: {quantization}}}
data: {{train: train.jsonl, validation: validation.jsonl}}
lora: {{r: 16, alpha: 32, dropout: 0.05, target_modules: [q_proj, k_proj, v_proj, o_proj]}}
training: {{learning_rate: 2e-4, micro_batch_size: {args.micro_batch}, grad_accum_steps: 1, max_steps: {args.steps},
           max_seq_len: {args.seq_len}, precision: {args.precision}, attention: sdpa,
           gradient_checkpointing: {str(args.gradient_checkpointing).lower()}}}
hardware: {{gpu: {args.gpu}, count: {count}}}
estimate: {{dataset_tokens: {args.micro_batch * args.steps * args.seq_len * count}}}
gate: {{mini_run: {{sample_size: {args.micro_batch * 2}, steps: {args.steps}, device: {args.device}}}}}
full_run: {{output_dir: "{folder / ('out-' + name)}", save_steps: {args.steps}}}
tracking: {{mlflow_uri: "sqlite:///{folder / 'mlflow.db'}"}}
"""
    if sweep:
        spec += f"sweep: {{strategy: list, train_steps: {args.steps}, candidates: [{{lora.r: 8, lora.alpha: 16}}]}}\n"
    path = folder / f"{name}.yaml"
    path.write_text(spec)
    return path


def offline_env() -> dict[str, str]:
    return {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}


def tunegate(*argv: str, timeout: float) -> tuple[int, Any, str]:
    """Run the CLI as a user does; (exit code, its JSON output or None, the tail of stderr)."""
    done = subprocess.run([sys.executable, "-m", "tunegate", *argv], cwd=ROOT, env=offline_env(),
                          capture_output=True, text=True, timeout=timeout)
    try:
        out = json.loads(done.stdout)
    except json.JSONDecodeError:
        out = None
    return done.returncode, out, done.stderr[-1500:]


def estimate_of(spec_path: Path) -> dict[str, Any]:
    code, est, err = tunegate("estimate", str(spec_path), "--json", timeout=120)
    if est is None:
        return {"error": f"tunegate estimate exited {code}: {err}"}
    return {"peak_allocated_gib": est["memory"]["peak_allocated_gib"], "peak_gib": est["memory"]["peak_gib"],
            "tokens_per_s": est["throughput"]["tokens_per_s"], "verdict": est["memory"]["verdict"]}


def measured(stats: dict[str, Any], tokens_per_s: float | None) -> dict[str, Any]:
    """The GPU's own figures (allocated, reserved, CUDA context) in GiB, and tokens/s."""
    # peak_gib: the CUDA allocator's peak allocated bytes, or on a CPU the process's peak RSS (see source)
    keep = {"peak_gib": stats.get("peak_memory_bytes"), "reserved_gib": stats.get("peak_reserved_bytes"),
            "cuda_context_gib": stats.get("cuda_context_bytes")}
    found = {k: round(v / GIB, 3) for k, v in keep.items() if v is not None}
    return {**found, "source": stats.get("peak_memory_source"), "tokens_per_s": tokens_per_s}


def against(measure: dict[str, Any], est: dict[str, Any]) -> dict[str, Any]:
    """Measured / estimated, where both exist (allocated vs allocated; reserved + context vs the peak);
    only for a CUDA measurement (a CPU run's peak RSS and speed are not what the estimate models)."""
    ratios: dict[str, float] = {}
    if not str(measure.get("source") or "").startswith("torch.cuda"):
        return ratios
    if measure.get("peak_gib") and est.get("peak_allocated_gib"):
        ratios["allocated"] = round(measure["peak_gib"] / est["peak_allocated_gib"], 3)
    if measure.get("reserved_gib") and est.get("peak_gib"):
        whole = measure["reserved_gib"] + measure.get("cuda_context_gib", 0.0)
        ratios["reserved_plus_context"] = round(whole / est["peak_gib"], 3)
    if measure.get("tokens_per_s") and est.get("tokens_per_s"):
        ratios["tokens_per_s"] = round(measure["tokens_per_s"] / est["tokens_per_s"], 3)
    return ratios


def mini_run_part(spec_path: Path, command: tuple[str, ...] = ("check", "--mini-run")) -> dict[str, Any]:
    """`tunegate check SPEC --mini-run --json` (or `command`, another whose report holds the mini-run
    stage), as a user runs it."""
    start = time.perf_counter()
    code, report, err = tunegate(command[0], str(spec_path), *command[1:], "--json", timeout=1800)
    if report is None:
        return {"status": "crashed", "exit_code": code, "stderr": err}
    stage = next((s for s in report["stages"] if s["name"] == "mini-run"), {})
    stats = stage.get("stats") or {}
    measure = measured(stats, stats.get("tokens_per_s_steady") or stats.get("tokens_per_s"))
    est = estimate_of(spec_path)
    return {"status": stage.get("status"), "exit_code": code, "seconds": round(time.perf_counter() - start, 1),
            "codes": sorted({f["code"] for f in report["findings"]}),
            "errors": [f"{f['code']} {f['message']}" for f in report["findings"] if f["severity"] == "error"],
            "device": stats.get("device"), "precision": stats.get("precision"), "attention": stats.get("attention"),
            "measured": measure, "estimate": est, "measured_over_estimate": against(measure, est)}


def full_run_part(spec_path: Path) -> dict[str, Any]:
    """The full run through the launcher, the real from_pretrained loader, a few steps."""
    from tunegate.fullrun.launcher import launch
    from tunegate.spec.check import read_spec

    _, spec = read_spec(spec_path)
    start = time.perf_counter()
    lines: list[str] = []
    os.environ["HF_HUB_OFFLINE"] = "1"
    result = launch(spec, spec_path, log=lines.append, timeout_s=1800)
    measure = measured(result.model_dump(), result.tokens_per_s)
    est = estimate_of(spec_path)
    return {"status": result.status, "reason": result.reason[:600], "codes": result.codes,
            "seconds": round(time.perf_counter() - start, 1), "num_processes": result.num_processes,
            "steps": result.global_step, "device": result.device, "attention": result.attention,
            "measured": measure, "estimate": est, "measured_over_estimate": against(measure, est)}


def preflight_part(spec_path: Path) -> dict[str, Any]:
    """`tunegate preflight SPEC --json` (no advisor): the mini-run in a child of the fork server."""
    return mini_run_part(spec_path, ("preflight", "--no-advisor"))


def sweep_part(spec_path: Path) -> dict[str, Any]:
    """`tunegate sweep SPEC --json` with one candidate, as a user runs it."""
    start = time.perf_counter()
    code, summary, err = tunegate("sweep", str(spec_path), "--json", timeout=1800)
    if summary is None:
        return {"status": "crashed", "exit_code": code, "stderr": err}
    keep = ("approved", "errored", "codes", "val_loss", "final_train_loss", "predicted_peak_gib")
    return {"exit_code": code, "seconds": round(time.perf_counter() - start, 1), "approved": summary["approved"],
            "errored": summary["errored"],
            "candidates": [{**{k: o.get(k) for k in keep}, "reason": (o.get("reason") or "")[:600],
                            "logged_memory": logged_memory(spec_path.parent / "mlflow.db", o.get("run_id"))}
                           for o in summary["outcomes"]]}


def logged_memory(store: Path, run_id: str | None) -> dict[str, float]:
    """The memory figures a candidate's MLflow run holds (GiB), as the sweep logged them."""
    if run_id is None:
        return {}
    from mlflow import MlflowClient

    metrics = MlflowClient(f"sqlite:///{store}").get_run(run_id).data.metrics
    return {k: round(v, 3) for k, v in sorted(metrics.items()) if "memory" in k or "peak" in k}


def gpus_visible(device: str) -> int:
    if device != "cuda":
        return 0
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def run(args: argparse.Namespace) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="tunegate-gpu-check-"))
    start = time.perf_counter()
    params = build_proxy(work / "proxy", args.layers, args.tiny, args.device)
    write_records(work / "train.jsonl", args.micro_batch * max(4, args.steps) * 2, args.seq_len, seed=1)
    write_records(work / "validation.jsonl", args.micro_batch * 2, args.seq_len, seed=2)
    out: dict[str, Any] = {
        "proxy": {"config": "Llama-3.1-8B" + (" (tiny widths)" if args.tiny else ""), "layers": args.layers,
                  "params": params, "weights_gib_bf16": round(params * 2 / GIB, 3)},
        "batch": {"micro_batch_size": args.micro_batch, "seq_len": args.seq_len, "steps": args.steps,
                  "precision": args.precision, "gradient_checkpointing": args.gradient_checkpointing},
        "device": args.device, "gpu": args.gpu, "build_s": round(time.perf_counter() - start, 1), "parts": {}}
    parts = out["parts"]
    parts["cli_mini_run"] = mini_run_part(write_spec(work, "mini", args))
    parts["full_run"] = full_run_part(write_spec(work, "full", args))
    if args.device != "cuda" or importlib.util.find_spec("bitsandbytes") is None:
        parts["qlora_mini_run"] = {"status": "skipped: needs CUDA and bitsandbytes"}
    else:
        parts["qlora_mini_run"] = mini_run_part(write_spec(work, "qlora", args, quantization="4bit"))
    if gpus_visible(args.device) < 2:
        parts["ddp_full_run"] = {"status": f"skipped: needs 2 GPUs, {gpus_visible(args.device)} visible"}
    else:
        parts["ddp_full_run"] = full_run_part(write_spec(work, "ddp", args, count=2))
    missing = [m for m in ("prefect", "mlflow") if importlib.util.find_spec(m) is None]
    if args.no_flows or missing:
        why = "--no-flows" if args.no_flows else f"needs the orchestrate extra ({', '.join(missing)} missing)"
        parts["preflight"] = parts["sweep"] = {"status": f"skipped: {why}"}
    else:
        parts["preflight"] = preflight_part(write_spec(work, "preflight", args))
        parts["sweep"] = sweep_part(write_spec(work, "sweep", args, sweep=True))
    out["total_s"] = round(time.perf_counter() - start, 1)
    out["work_dir"] = str(work)  # kept: the runs' logs and adapters, for a second look
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    parser.add_argument("--tiny", action="store_true", help="tiny widths (for a CPU smoke run)")
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--seq-len", type=int, default=2048)
    parser.add_argument("--micro-batch", type=int, default=4)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--precision", default="bf16", choices=["bf16", "fp16", "fp32"])
    parser.add_argument("--gpu", default="H200", help="the catalog GPU the estimate is made for (tunegate gpus)")
    parser.add_argument("--gradient-checkpointing", action="store_true")
    parser.add_argument("--no-flows", action="store_true",
                        help="leave out the preflight and the sweep (Prefect, MLflow)")
    args = parser.parse_args()
    if args.tiny and args.seq_len == 2048:
        args.seq_len = 256
    print(json.dumps(run(args), indent=2))


if __name__ == "__main__":
    main()

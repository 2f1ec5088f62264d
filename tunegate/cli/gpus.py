"""`tunegate gpus`: list the GPU catalog that `hardware.gpu` names come from, with each datasheet."""
from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("gpus", help="list the GPU catalog", description="List the known GPUs, their dense "
                                    "peak TFLOP/s, memory as CUDA reports it, and the datasheet of each.")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from tunegate.spec.gpus import AMBIGUOUS, CATALOG

    print(f"{'name':<15} {'GiB':>6} {'bf16 TF':>8} {'fp16 TF':>8} {'fp32 TF':>8} {'GB/s':>6}  {'FA2':<3}  source")
    for g in CATALOG.values():
        bf16 = f"{g.bf16_tflops:g}" if g.bf16_tflops else "-"
        print(f"{g.name:<15} {g.memory_gib:>6g} {bf16:>8} {g.fp16_tflops:>8g} {g.fp32_tflops:>8g} "
              f"{g.bandwidth_gbs:>6g}  {'yes' if g.flash_attention else 'no':<3}  {g.source}")
    print("\nAmbiguous names (an error, never a silent pick): "
          + "; ".join(f"{k}: {', '.join(v)}" for k, v in AMBIGUOUS.items()))
    print("Another GPU: give its figures in hardware.custom (memory_gib, bf16_tflops, fp32_tflops, bandwidth_gbs).")
    return 0

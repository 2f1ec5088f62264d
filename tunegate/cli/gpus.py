"""`tunegate gpus`: list the GPU catalog that `hardware.gpu` names come from."""
from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("gpus", help="list the GPU catalog", description="List the known GPUs and their specs.")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from tunegate.spec.gpus import CATALOG

    print(f"{'name':<11} {'GiB':>6} {'bf16 TF':>8} {'fp16 TF':>8} {'fp32 TF':>8} {'GB/s':>6}  flash-attn-2")
    for g in CATALOG.values():
        bf16 = f"{g.bf16_tflops:g}" if g.bf16_tflops else "-"
        print(f"{g.name:<11} {g.memory_gib:>6g} {bf16:>8} {g.fp16_tflops:>8g} {g.fp32_tflops:>8g} "
              f"{g.bandwidth_gbs:>6g}  {'yes' if g.flash_attention else 'no'}")
    return 0

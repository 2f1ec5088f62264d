"""The mini-run's update-to-weight ratio (TG535) against the learning rate, on the built-in tiny model.

    python benchmarks/update_ratio.py                               # fp32, 1e-4 .. 50
    python benchmarks/update_ratio.py --precision bf16,fp16 --lr 1e-3,0.1,1

For each precision and learning rate, runs the mini-run stage of tests/data/minirun/good.yaml
(4 AdamW steps, r 8, alpha 16, on the CPU) and prints the largest ||(alpha/r) B A|| / ||W|| over the
adapted modules, the losses, and the error codes. The spec stage is bypassed (a Spec copied with the
rate), so rates it rejects (TG125, >= 1) are measured too. docs/checks.md (TG125, TG535) has the table.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

RATES = "1e-4,2e-4,1e-3,3e-3,1e-2,3e-2,0.1,0.3,1,50"


def main() -> None:
    from tests.support.minirun import load_spec
    from tunegate.minirun.stage import run_mini_lora

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--precision", default="fp32")
    parser.add_argument("--lr", default=RATES)
    args = parser.parse_args()
    print(f"{'precision':<9} {'lr':>8} {'ratio':>10}  losses  codes")
    for precision in args.precision.split(","):
        for lr in (float(x) for x in args.lr.split(",")):
            spec = load_spec("good", **{"training.learning_rate": lr, "training.precision": precision})
            result, _ = run_mini_lora(spec, {"train": spec.data.train, "validation": spec.data.validation})
            ratio = (result.stats.get("update_ratio") or {}).get("ratio", "-")
            errors = sorted({f.code for f in result.findings if f.severity == "error"})
            print(f"{precision:<9} {lr:>8g} {ratio!s:>10}  {result.stats.get('losses')}  {errors}", flush=True)


if __name__ == "__main__":
    main()

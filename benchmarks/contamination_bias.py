"""How much near copies of validation records in train lower the validation loss (TG303, TG308).

    python benchmarks/contamination_bias.py --steps 60

Trains the built-in tiny model with the real trainer (`tunegate.fullrun.trainer.train`) on the
flows test data three ways and prints the validation loss of each:
  clean, seed 0 and seed 1   train only: the run-to-run noise of the score
  contaminated, seed 0       train plus a near copy (one word changed in the prompt and in the
                             reply) of every validation record
The gap between clean and contaminated is what a validation set fully shadowed in train hides;
a share s of shadowed records moves the score by about s times that gap.

Result (2026-12-01, 60 steps): clean 6.5467 and 6.5453 (seeds 0 and 1), contaminated 6.5460: a gap
of 0.0007 below the seed noise of 0.0014. The random 2-layer tiny model learns nothing specific in
60 steps, so it cannot show the bias; that is one of the things the tiny model cannot prove about a
real one (docs/checks.md, TG308 and TG536).
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DATA = ROOT / "tests" / "data" / "flows"


def near_copy(record: dict) -> dict:
    """The record with its first user turn and its last reply each changed by one word."""
    messages = [dict(m) for m in record["messages"]]
    user = next(m for m in messages if m["role"] == "user")
    user["content"] = "Hi, " + user["content"]
    reply = messages[-1]
    words = reply["content"].split(" ")
    reply["content"] = " ".join(words[:-1] + ["thanks"]) if len(words) > 1 else reply["content"] + " thanks"
    return {"messages": messages}


def write_train(folder: Path, contaminate: bool) -> Path:
    lines = (DATA / "train.jsonl").read_text(encoding="utf-8").splitlines()
    if contaminate:
        lines += [json.dumps(near_copy(json.loads(v))) for v in
                  (DATA / "validation.jsonl").read_text(encoding="utf-8").splitlines() if v.strip()]
    path = folder / ("train_contaminated.jsonl" if contaminate else "train.jsonl")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def run(folder: Path, contaminate: bool, seed: int, steps: int) -> float | None:
    from tunegate.fullrun.trainer import train
    from tunegate.spec.check import load_spec

    spec = load_spec(DATA / "good.yaml")
    data = spec.data.model_copy(update={"train": write_train(folder, contaminate)})
    training = spec.training.model_copy(update={"seed": seed, "learning_rate": 1e-3})
    spec = spec.model_copy(update={"data": data, "training": training})
    result = train(spec, output_dir=folder / f"out-{contaminate}-{seed}", max_steps=steps, log=lambda _l: None)
    return result.val_loss


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=60)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        clean0 = run(folder, False, 0, args.steps)
        clean1 = run(folder, False, 1, args.steps)
        dirty = run(folder, True, 0, args.steps)
    print(f"steps {args.steps}: validation loss clean seed 0 {clean0:.4f}, clean seed 1 {clean1:.4f}, "
          f"contaminated seed 0 {dirty:.4f}")
    print(f"noise (seed 0 vs 1): {abs(clean0 - clean1):.4f}; gap from full contamination: {clean0 - dirty:.4f}")


if __name__ == "__main__":
    main()

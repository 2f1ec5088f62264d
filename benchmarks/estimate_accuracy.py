"""How close tunegate's estimate comes to published peak-memory and tokens/s measurements.

    python benchmarks/estimate_accuracy.py            # table + median absolute % errors
    python benchmarks/estimate_accuracy.py --json

Reads benchmarks/data/published_memory.csv (each row: a published measurement with its source,
model, method, GPU, batch, sequence length and settings) and compares our prediction with it.
The baseline in the same run is the estimate most tools give (accelerate's estimate-memory:
weights plus optimizer state, no activations or logits; for speed, 6N FLOPs/token at 40 % MFU).
"""
from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tunegate.estimate.families import load_architecture  # noqa: E402
from tunegate.estimate.memory import FRAGMENTATION, GIB, estimate_memory, memory_terms  # noqa: E402
from tunegate.estimate.setup import TrainSetup  # noqa: E402
from tunegate.estimate.throughput import estimate_throughput  # noqa: E402
from tunegate.spec.gpus import lookup  # noqa: E402

DATA = Path(__file__).resolve().parent / "data" / "published_memory.csv"
NAIVE_MFU = 0.40


def setup_of(row: dict[str, str], seq_len: int | None = None) -> TrainSetup:
    """The TrainSetup a CSV row describes."""
    def flag(key: str) -> bool:
        return row[key].strip().lower() == "true"
    targets = row["lora_targets"].split("+") if row["lora_targets"] else ["q_proj"]
    return TrainSetup(
        method=row["method"], precision=row["precision"], micro_batch_size=int(row["micro_batch"]),
        seq_len=seq_len or int(row["seq_len"]), grad_accum_steps=int(row["grad_accum"]),
        gradient_checkpointing=flag("gradient_checkpointing"), attention=row["attention"],
        compile=flag("compile"), lora_r=int(row["lora_r"] or 16), lora_targets=targets,
        lora_dropout=float(row["lora_dropout"] or 0), gpu_count=int(row["gpu_count"]),
        sharding=row["sharding"], optimizer_state=row["optimizer_state"], loss=row["loss"],
        autocast=flag("autocast"), adapter_dtype=row["adapter_dtype"])


def predicted_gib(row: dict[str, str]) -> tuple[float, float]:
    """(our prediction, baseline prediction) in the measure the row reports."""
    arch, gpu, setup = load_architecture(row["model"]), lookup(row["gpu"]), setup_of(row)
    mem = estimate_memory(arch, setup, gpu)
    ours = {"allocated": mem.peak_allocated_gib,
            "reserved": mem.peak_allocated_gib * (1 + FRAGMENTATION),
            "device": mem.peak_gib}[row["measure"]]
    terms = memory_terms(arch, setup)
    naive = sum(v for k, v in terms.items() if k not in ("activations", "logits")) / GIB
    return ours, naive


def predicted_tps(row: dict[str, str]) -> tuple[float, float]:
    """(our tokens/s per GPU, the 6N-at-40 % baseline) at the row's throughput sequence length."""
    arch, gpu = load_architecture(row["model"]), lookup(row["gpu"])
    setup = setup_of(row, int(row["throughput_seq_len"]))
    ours = estimate_throughput(arch, setup, gpu).tokens_per_s
    naive = gpu.peak_tflops(setup.precision) * 1e12 * NAIVE_MFU / (6 * arch.param_count())
    return ours, naive


def ape(predicted: float, measured: float) -> float:
    return abs(predicted - measured) / measured * 100


def evaluate(rows: list[dict[str, str]]) -> dict[str, object]:
    out = []
    for row in rows:
        measured = float(row["memory_gib"])
        ours, naive = predicted_gib(row)
        item = {"id": row["id"], "confidence": row["confidence"], "measured_gib": measured,
                "ours_gib": round(ours, 2), "baseline_gib": round(naive, 2),
                "ours_err_pct": round((ours - measured) / measured * 100, 1),
                "baseline_err_pct": round((naive - measured) / measured * 100, 1)}
        if row["tokens_per_s"]:
            tps, naive_tps = predicted_tps(row)
            measured_tps = float(row["tokens_per_s"])
            item.update(measured_tps=measured_tps, ours_tps=round(tps), baseline_tps=round(naive_tps),
                        ours_tps_err_pct=round((tps - measured_tps) / measured_tps * 100, 1),
                        baseline_tps_err_pct=round((naive_tps - measured_tps) / measured_tps * 100, 1))
        out.append(item)
    return {"rows": out, **summary(out)}


def summary(items: list[dict]) -> dict[str, object]:
    def mdape(key: str, subset: list[dict]) -> float | None:
        values = [abs(i[key]) for i in subset if key in i]
        return round(statistics.median(values), 1) if values else None
    high = [i for i in items if i["confidence"] == "high"]
    return {"memory_mdape_pct": mdape("ours_err_pct", items),
            "memory_mdape_high_confidence_pct": mdape("ours_err_pct", high),
            "memory_baseline_mdape_pct": mdape("baseline_err_pct", items),
            "tps_mdape_pct": mdape("ours_tps_err_pct", items),
            "tps_baseline_mdape_pct": mdape("baseline_tps_err_pct", items),
            "n_memory": len(items), "n_tps": sum("measured_tps" in i for i in items)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with DATA.open(newline="") as fh:
        result = evaluate(list(csv.DictReader(fh)))
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"{'row':<24}{'measured':>9}{'ours':>8}{'err%':>7}{'base':>8}{'err%':>7}"
          f"{'tok/s':>8}{'ours':>8}{'err%':>7}{'base':>8}{'err%':>7}")
    for r in result["rows"]:
        tps = (f"{r['measured_tps']:>8.0f}{r['ours_tps']:>8}{r['ours_tps_err_pct']:>7}"
               f"{r['baseline_tps']:>8}{r['baseline_tps_err_pct']:>7}") if "measured_tps" in r else ""
        print(f"{r['id']:<24}{r['measured_gib']:>9.1f}{r['ours_gib']:>8.1f}{r['ours_err_pct']:>7}"
              f"{r['baseline_gib']:>8.1f}{r['baseline_err_pct']:>7}{tps}")
    print(f"\nmemory MdAPE: ours {result['memory_mdape_pct']} % over {result['n_memory']} rows "
          f"(high-confidence rows: {result['memory_mdape_high_confidence_pct']} %), "
          f"baseline {result['memory_baseline_mdape_pct']} %")
    print(f"tokens/s MdAPE: ours {result['tps_mdape_pct']} % over {result['n_tps']} rows, "
          f"baseline {result['tps_baseline_mdape_pct']} %")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

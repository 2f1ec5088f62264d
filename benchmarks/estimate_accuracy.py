"""How close tunegate's memory estimate comes to published peak-memory measurements, on rows it never fitted on.

    python benchmarks/estimate_accuracy.py                # held-out rows: errors per source and method
    python benchmarks/estimate_accuracy.py --split fit    # the rows the calibration was fitted on
    python benchmarks/estimate_accuracy.py --split all --rows   # every row, one line each
    python benchmarks/estimate_accuracy.py --fit          # recompute tunegate/estimate/calibration.py
    python benchmarks/estimate_accuracy.py --json

Reads benchmarks/data/published_memory.csv: each row a published measurement with its source URL,
framework, model, GPU, batch, sequence length and the settings that decide memory (see
benchmarks/data/README.md). A row's split is fixed by its id (sha256(id) mod 3 == 0: held out),
so no row can be moved after its error is seen. Rows whose measure is "oom" say the run ran out of
memory: they score the verdict (did we say "fits"?), not a percentage. The baseline in the same run
is what most tools estimate: weights plus optimizer state (accelerate's estimate-memory).
"""
from __future__ import annotations

import argparse
import csv
import hashlib
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tunegate.estimate import calibration  # noqa: E402
from tunegate.estimate.families import load_architecture  # noqa: E402
from tunegate.estimate.memory import GIB, estimate_memory, memory_terms  # noqa: E402
from tunegate.estimate.setup import TrainSetup  # noqa: E402
from tunegate.estimate.throughput import estimate_throughput  # noqa: E402
from tunegate.spec.gpus import lookup  # noqa: E402

DATA = Path(__file__).resolve().parent / "data" / "published_memory.csv"
UNDER = -10.0  # an error below this (%) is an unsafe under-prediction


def load_rows(path: Path = DATA) -> list[dict[str, str]]:
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def split_of(row_id: str) -> str:
    """'holdout' for a third of the rows, chosen by a hash of the id alone."""
    return "holdout" if int(hashlib.sha256(row_id.encode()).hexdigest(), 16) % 3 == 0 else "fit"


def source_of(row: dict[str, str]) -> str:
    return row["id"].split("-")[0]


def setup_of(row: dict[str, str], seq_len: int | None = None) -> TrainSetup:
    """The TrainSetup a CSV row describes."""
    def flag(key: str) -> bool:
        return row[key].strip().lower() == "true"
    targets: Any = row["lora_targets"] or "q_proj"
    targets = "all-linear" if targets == "all-linear" else targets.split("+")
    return TrainSetup(
        method=row["method"], precision=row["precision"], micro_batch_size=int(row["micro_batch"]),
        seq_len=seq_len or int(row["seq_len"]), grad_accum_steps=int(row["grad_accum"]),
        gradient_checkpointing=flag("gradient_checkpointing"), attention=row["attention"],
        compile=flag("compile"), lora_r=int(row["lora_r"] or 16), lora_targets=targets,
        lora_dropout=float(row["lora_dropout"] or 0), gpu_count=int(row["gpu_count"]),
        sharding=row["sharding"], fsdp_no_sync=flag("fsdp_no_sync"), optimizer_state=row["optimizer_state"],
        optimizer_impl=row["optimizer_impl"], loss=row["loss"],
        autocast=flag("autocast"), adapter_dtype=row["adapter_dtype"], quantized_head=flag("quantized_head"),
        nf4_double_quant=flag("double_quant"), qlora_input_bytes=int(row["qlora_input_bytes"]),
        qkv_fused_saved=flag("qkv_fused_saved"))


def arch_of(row: dict[str, str]):
    arch = load_architecture(row["model"])
    if arch is None:
        raise SystemExit(f"{row['id']}: no shipped config for {row['model']}")
    update: dict[str, Any] = {}
    if row["activation"]:  # the framework's own activation (LitGPT's phi uses PyTorch's tanh GELU)
        update["activation"] = row["activation"]
    if row["tie_embeddings"]:  # LitGPT copies a tied embedding into its own lm_head
        update["tie_embeddings"] = row["tie_embeddings"] == "true"
    return arch.model_copy(update=update)


def predicted(row: dict[str, str]) -> dict[str, Any]:
    """Our prediction in the measure the row reports, its band, the verdict, and the baseline."""
    arch, gpu, setup = arch_of(row), lookup(row["gpu"]), setup_of(row)
    mem = estimate_memory(arch, setup, gpu)
    allocated = mem.peak_allocated_gib
    point = {"allocated": allocated, "reserved": allocated * (1 + calibration.RESERVE),
             "device": mem.peak_gib, "oom": mem.peak_gib}[row["measure"]]
    terms = memory_terms(arch, setup)
    naive = sum(v for k, v in terms.items() if k not in ("activations", "logits")) / GIB
    return {"point": point, "low": point * mem.low_gib / mem.peak_gib, "high": point * mem.high_gib / mem.peak_gib,
            "verdict": mem.verdict, "baseline": naive, "capacity": gpu.memory_gib}


def evaluate(row: dict[str, str]) -> dict[str, Any]:
    p = predicted(row)
    item = {"id": row["id"], "source": source_of(row), "method": row["method"], "split": split_of(row["id"]),
            "measure": row["measure"], "ours_gib": round(p["point"], 2), "high_gib": round(p["high"], 2),
            "verdict": p["verdict"]}
    if row["measure"] == "oom":
        item["flagged"] = p["verdict"] != "fits"  # an OOM run must never be told it fits
        return item
    measured = float(row["memory_gib"])
    item.update(measured_gib=measured, err_pct=round((p["point"] - measured) / measured * 100, 1),
                baseline_err_pct=round((p["baseline"] - measured) / measured * 100, 1),
                above_band=measured > p["high"])
    if row["tokens_per_s"]:
        tps = estimate_throughput(arch_of(row), setup_of(row, int(row["throughput_seq_len"])), lookup(row["gpu"]))
        measured_tps = float(row["tokens_per_s"])
        item.update(measured_tps=measured_tps, ours_tps=round(tps.tokens_per_s),
                    tps_err_pct=round((tps.tokens_per_s - measured_tps) / measured_tps * 100, 1))
    return item


def score(items: list[dict[str, Any]]) -> dict[str, Any]:
    """Median absolute error, share within 10 %, share under-predicted by more than 10 %."""
    rated = [i for i in items if "err_pct" in i]
    ooms = [i for i in items if "flagged" in i]
    out: dict[str, Any] = {"rows": len(rated), "oom_rows": len(ooms)}
    if rated:
        errors = [i["err_pct"] for i in rated]
        out.update(median_abs_err_pct=round(statistics.median(abs(e) for e in errors), 1),
                   within_10_pct=round(sum(abs(e) <= 10 for e in errors) / len(errors), 3),
                   under_10_pct=round(sum(e < UNDER for e in errors) / len(errors), 3),
                   above_band=round(sum(i["above_band"] for i in rated) / len(rated), 3),
                   baseline_median_abs_err_pct=round(statistics.median(abs(i["baseline_err_pct"]) for i in rated), 1))
    if ooms:
        out["oom_flagged"] = round(sum(i["flagged"] for i in ooms) / len(ooms), 3)
    tps = [abs(i["tps_err_pct"]) for i in rated if "tps_err_pct" in i]
    if tps:
        out.update(tps_rows=len(tps), tps_median_abs_err_pct=round(statistics.median(tps), 1))
    return out


def grouped(items: list[dict[str, Any]], key: str) -> dict[str, dict[str, Any]]:
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for item in items:
        groups[item[key]].append(item)
    return {name: score(group) for name, group in sorted(groups.items())}


def report(rows: list[dict[str, str]], split: str) -> dict[str, Any]:
    items = [evaluate(r) for r in rows if split == "all" or split_of(r["id"]) == split]
    return {"split": split, "overall": score(items), "by_source": grouped(items, "source"),
            "by_method": grouped(items, "method"), "rows": items}


def _line(name: str, s: dict[str, Any]) -> str:
    if not s["rows"]:
        return f"  {name:<14}{'':>5}  OOM rows flagged {s.get('oom_flagged', 0):.0%} of {s['oom_rows']}"
    oom = f"  OOM flagged {s['oom_flagged']:.0%} of {s['oom_rows']}" if s["oom_rows"] else ""
    return (f"  {name:<14}{s['rows']:>5}  median |err| {s['median_abs_err_pct']:>5.1f} %  within 10 % "
            f"{s['within_10_pct']:>5.0%}  under by >10 % {s['under_10_pct']:>5.0%}  above band "
            f"{s['above_band']:>4.0%}  (baseline {s['baseline_median_abs_err_pct']:.1f} %){oom}")


def print_report(result: dict[str, Any], rows: bool) -> None:
    if rows:
        for i in result["rows"]:
            measured = f"{i['measured_gib']:>7.2f}" if "measured_gib" in i else "    OOM"
            err = f"{i['err_pct']:>7.1f}" if "err_pct" in i else f"{'flagged' if i['flagged'] else 'MISSED':>7}"
            print(f"{i['id']:<34}{i['split']:>8}{measured}{i['ours_gib']:>8.2f}{i['high_gib']:>8.2f}{err}  "
                  f"{i['verdict']}")
        print()
    print(f"split: {result['split']}")
    print(_line("all rows", result["overall"]))
    for title in ("by_source", "by_method"):
        print(title.replace("_", " ") + ":")
        for name, s in result[title].items():
            print(_line(name, s))
    if "tps_rows" in result["overall"]:
        o = result["overall"]
        print(f"tokens/s: median |err| {o['tps_median_abs_err_pct']} % over {o['tps_rows']} rows")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=["holdout", "fit", "all"], default="holdout")
    parser.add_argument("--rows", action="store_true", help="one line per row")
    parser.add_argument("--fit", action="store_true", help="recompute the calibration from the fit rows")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = load_rows()
    if args.fit:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from estimate_calibration import fit_calibration  # noqa: PLC0415 (only for --fit)
        print(json.dumps(fit_calibration([r for r in rows if split_of(r["id"]) == "fit"]), indent=2))
        return 0
    result = report(rows, args.split)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print_report(result, args.rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

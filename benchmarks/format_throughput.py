"""Static gate per dataset format: tunegate's dataset stage against a naive script, same run.

    python benchmarks/format_throughput.py                 # 50 MB per format, 3 repeats
    python benchmarks/format_throughput.py --mb 20 --repeat 1

The seeded chat corpus (benchmarks/chat_corpus.py) is written once in each format tunegate reads,
as users hold them: OpenAI chat JSONL, ShareGPT JSONL, an indented Alpaca `.json` array
(LLaMA-Factory's layout: the conversation's earlier turns as `history`), TRL conversational
prompt-completion JSONL, ShareGPT parquet, Alpaca CSV (the last exchange of each chat: a CSV row
holds no history) and ShareGPT as an Arrow stream (what `save_to_disk` writes). For each, in one
process, interleaved, best of N: (a) tunegate: `validate_dataset` (strict reader, the format's whole
contract, stats, duplicates, the conversion to chat form); (b) baseline: what a user would write, the
stdlib (`json.loads` per line, `json.load` of the array, `csv.DictReader`, pyarrow's `to_pylist`),
a plain mapping to messages and the
same contract rules as benchmarks/static_throughput.py. Prints wall and CPU ratios (target: the
speed issue's, within 1.5x of the baseline) and the peak RSS of each in a fresh process.
"""
from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import time
from pathlib import Path

import orjson

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]

from chat_corpus import write_corpus  # noqa: E402
from naive_contract import contract_problems  # noqa: E402
from static_throughput import _peak_rss_kib  # noqa: E402

FROM = {"system": "system", "user": "human", "assistant": "gpt"}
TO = {"system": "system", "human": "user", "gpt": "assistant"}


def sharegpt(rec: dict) -> dict:
    return {"conversations": [{"from": FROM[m["role"]], "value": m["content"]} for m in rec["messages"]]}


def alpaca(rec: dict) -> dict:
    msgs = rec["messages"]
    system = [m["content"] for m in msgs if m["role"] == "system"]
    turns = [m["content"] for m in msgs if m["role"] != "system"]
    pairs = [turns[i:i + 2] for i in range(0, len(turns) - 2, 2)]
    out = {"instruction": turns[-2], "input": "", "output": turns[-1], "history": pairs}
    return {**out, "system": system[0]} if system else out


def prompt_completion(rec: dict) -> dict:
    return {"prompt": rec["messages"][:-1], "completion": rec["messages"][-1:]}


def write_formats(source: Path, out: Path) -> dict[str, Path]:
    """The corpus in every format (written once, reused)."""
    paths = {"messages": source, "sharegpt": out / f"{source.stem}.sharegpt.jsonl",
             "alpaca": out / f"{source.stem}.alpaca.json", "prompt_completion": out / f"{source.stem}.pc.jsonl",
             "parquet": out / f"{source.stem}.sharegpt.parquet", "csv": out / f"{source.stem}.alpaca.csv",
             "arrow": out / f"{source.stem}.sharegpt.arrow"}
    if all(p.exists() for p in paths.values()):
        return paths
    records = [orjson.loads(line) for line in source.read_bytes().splitlines() if line.strip()]
    for name, convert in (("sharegpt", sharegpt), ("prompt_completion", prompt_completion)):
        paths[name].write_bytes(b"".join(orjson.dumps(convert(r)) + b"\n" for r in records))
    with paths["alpaca"].open("w", encoding="utf-8") as f:
        json.dump([alpaca(r) for r in records], f, indent=2, ensure_ascii=False)
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist([sharegpt(r) for r in records]), paths["parquet"])
    with paths["csv"].open("w", encoding="utf-8", newline="") as f:
        out_csv = csv.writer(f)
        out_csv.writerow(["instruction", "input", "output"])
        out_csv.writerows([a["instruction"], a["input"], a["output"]] for a in map(alpaca, records))
    table = pa.Table.from_pylist([sharegpt(r) for r in records])
    with pa.OSFile(str(paths["arrow"]), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return paths


def naive_records(fmt: str, path: Path) -> list[dict] | object:
    """What a user's script reads: the records, with the stdlib (or pyarrow)."""
    if fmt == "alpaca":
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    if fmt == "parquet":
        import pyarrow.parquet as pq

        return pq.read_table(path).to_pylist()
    if fmt == "arrow":
        import pyarrow as pa

        with pa.OSFile(str(path)) as source:
            return pa.ipc.open_stream(source).read_all().to_pylist()
    if fmt == "csv":
        with open(path, encoding="utf-8", newline="") as f:
            return list(csv.DictReader(f))
    return _lines(path)


def _lines(path: Path):  # noqa: ANN202
    with open(path, encoding="utf-8") as f:
        yield from (json.loads(line) for line in f if line.strip())


def as_messages(fmt: str, rec: dict) -> dict:
    if fmt in ("sharegpt", "parquet", "arrow"):
        return {"messages": [{"role": TO.get(t.get("from"), t.get("from")), "content": t.get("value")}
                             for t in rec.get("conversations", [])]}
    if fmt in ("alpaca", "csv"):
        msgs = [{"role": "system", "content": rec["system"]}] if rec.get("system") else []
        for q, a in rec.get("history") or []:
            msgs += [{"role": "user", "content": q}, {"role": "assistant", "content": a}]
        prompt = "\n".join(t for t in (rec.get("instruction"), rec.get("input")) if t)
        return {"messages": msgs + [{"role": "user", "content": prompt},
                                    {"role": "assistant", "content": rec.get("output")}]}
    if fmt == "prompt_completion":
        return {"messages": list(rec.get("prompt", [])) + list(rec.get("completion", []))}
    return rec


def baseline(fmt: str, path: Path) -> int:
    return sum(len(contract_problems(as_messages(fmt, r))) for r in naive_records(fmt, path))


def tunegate(fmt: str, path: Path) -> int:
    from tunegate.dataset import validate_dataset

    result = validate_dataset({"train": path}, cap=20)
    read_as = {"parquet": "sharegpt", "arrow": "sharegpt", "csv": "alpaca"}.get(fmt, fmt)
    assert result.stats["train"]["format"] == read_as, result.stats
    return sum(result.totals_by_code.values())


def best(fmt: str, path: Path, repeat: int) -> dict[str, dict[str, float]]:
    out = {n: {"wall": float("inf"), "cpu": float("inf"), "found": 0} for n in ("tunegate", "baseline")}
    for _ in range(repeat):
        for name, fn in (("tunegate", tunegate), ("baseline", baseline)):
            wall, cpu = time.perf_counter(), time.process_time()
            found = fn(fmt, path)
            out[name]["wall"] = min(out[name]["wall"], time.perf_counter() - wall)
            out[name]["cpu"] = min(out[name]["cpu"], time.process_time() - cpu)
            out[name]["found"] = found
    return out


def rss(which: str, fmt: str, path: Path) -> float:
    run = subprocess.run([sys.executable, __file__, "--child", which, fmt, str(path)],
                         capture_output=True, text=True, check=True)
    return float(run.stdout.strip())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=50, help="size of the OpenAI chat corpus in MB (default 50)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=HERE / "out")
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        which, fmt, path = args.child
        (tunegate if which == "tunegate" else baseline)(fmt, Path(path))
        print(_peak_rss_kib() / 1024)
        return
    source = args.out / f"chat_{args.mb:g}mb_seed{args.seed}.jsonl"
    if not source.exists():
        write_corpus(source, args.mb, args.seed)
    paths = write_formats(source, args.out)
    print(f"{'format':<18} {'MB':>5} {'tunegate s':>10} {'baseline s':>10} {'ratio':>5} {'cpu ratio':>9} "
          f"{'RSS tg MB':>9} {'RSS base MB':>11} findings")
    for fmt, path in paths.items():
        t = best(fmt, path, args.repeat)
        tg, base = t["tunegate"], t["baseline"]
        print(f"{fmt:<18} {path.stat().st_size / 1e6:>5.0f} {tg['wall']:>10.3f} {base['wall']:>10.3f} "
              f"{tg['wall'] / base['wall']:>5.2f} {tg['cpu'] / base['cpu']:>9.2f} {rss('tunegate', fmt, path):>9.0f} "
              f"{rss('baseline', fmt, path):>11.0f} {tg['found']:.0f} vs {base['found']:.0f}")


if __name__ == "__main__":
    main()

"""A 1-candidate sweep against a bare script of the same LoRA steps, and where the difference goes.

    python benchmarks/sweep_overhead.py                 # 1- and 3-candidate sweeps, the bare loop, the parts
    python benchmarks/sweep_overhead.py --rounds 2

Every command runs as a fresh process (as a user runs it), on the built-in tiny model and the
quickstart data, CPU, one torch thread:
  bare      a plain script: import torch/transformers/peft, load the model, add LoRA (the
            candidate's r/alpha), the candidate's optimizer steps (the mini-run's 4 + the sweep's
            train_steps) on the same batch size and length, one evaluation of the validation set;
  sweep-1   `tunegate sweep` with one candidate (static gate, candidate gate, mini-run, short
            training, scoring, MLflow parent and child runs, Prefect ephemeral API);
  sweep-3   the same with three candidates: (sweep-3 - sweep-1) / 2 is the cost of one more candidate;
  script-1  the 1-candidate sweep's flow called from a plain script (no CLI), for comparison.
Then the fixed parts, each timed in a fresh process: the imports, the ephemeral Prefect API (a
flow with one task), an MLflow store created on a fresh SQLite file and opened again, and a parent
run opened and closed. Prefect's home and the tiny model cache are warmed first, so first-use
migrations and the model build are not counted.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = HERE / "out" / "sweep"
ENV = {**os.environ, "PREFECT_HOME": str(OUT / "prefect-home"), "TUNEGATE_TORCH_THREADS": "1",
       "PYTHONPATH": str(ROOT)}
CANDIDATES = [{"lora.r": 8, "lora.alpha": 16, "training.learning_rate": 3e-4},
              {"lora.r": 16, "lora.alpha": 32, "training.learning_rate": 1e-3},
              {"lora.r": 4, "lora.alpha": 8, "training.learning_rate": 5e-4}]

BARE = r'''
import sys, time
start = time.perf_counter()
import torch, transformers, peft
torch.set_num_threads(1)
from tunegate.training.tiny_model import resolve_model_id
import orjson
path = resolve_model_id("tunegate/tiny-llama")
tok = transformers.AutoTokenizer.from_pretrained(path)
model = transformers.AutoModelForCausalLM.from_pretrained(path)
model = peft.get_peft_model(model, peft.LoraConfig(r=8, lora_alpha=16, lora_dropout=0.05,
                                                   target_modules=["q_proj", "k_proj", "v_proj", "o_proj"]))
def encode(file, n=None):
    rows = [orjson.loads(l) for l in open(file, "rb") if l.strip()][:n]
    return [tok.apply_chat_template(r["messages"], tokenize=True, truncation=True, max_length=256) for r in rows]
def batches(ids, size):
    for i in range(0, len(ids), size):
        chunk = [torch.tensor(x if isinstance(x, list) else x["input_ids"])[:256] for x in ids[i:i + size]]
        padded = torch.nn.utils.rnn.pad_sequence(chunk, batch_first=True, padding_value=tok.pad_token_id or 0)
        yield padded, (padded != (tok.pad_token_id or 0)).long()
train, val = encode(sys.argv[1]), encode(sys.argv[2])
opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=3e-4)
model.train()
steps, done = int(sys.argv[3]), 0
while done < steps:
    for ids, mask in batches(train, 4):
        loss = model(input_ids=ids, attention_mask=mask, labels=ids).loss
        loss.backward(); opt.step(); opt.zero_grad(); done += 1
        if done == steps:
            break
model.eval()
with torch.no_grad():
    val_loss = sum(model(input_ids=i, attention_mask=m, labels=i).loss.item() for i, m in batches(val, 4))
print(round(time.perf_counter() - start, 3), val_loss)
'''

SCRIPT = r'''
import sys
from tunegate.cli.flow_runner import run_flow
from tunegate.flows.sweep import sweep
run_flow(sweep, spec_path=sys.argv[1], strategy=None)
'''

PREFECT_PROBE = r'''
import time
t0 = time.perf_counter()
import tunegate.cli.flow_runner
from prefect import flow, task
t1 = time.perf_counter()
@task
def one(): return 1
@flow
def tiny(): return one()
tiny()
t2 = time.perf_counter()
print(round(t1 - t0, 3), round(t2 - t1, 3))
'''

MLFLOW_PROBE = r'''
import sys, time
t0 = time.perf_counter()
import mlflow
from tunegate.tracking.store import ensure_store, open_client, ensure_experiment
from tunegate.tracking.runs import start_parent
from tunegate.tracking.runs_table import finish_parent
t1 = time.perf_counter()
uri = "sqlite:///" + sys.argv[1]
ensure_store(uri)
t2 = time.perf_counter()
client = open_client(uri)
ensure_experiment(client, "bench", uri)
parent = start_parent(client, "bench", "flow-run-1", {})
t3 = time.perf_counter()
finish_parent(client, parent, "")
t4 = time.perf_counter()
print(round(t1 - t0, 3), round(t2 - t1, 3), round(t3 - t2, 3), round(t4 - t3, 3))
'''


def timed(command: list[str], cwd: Path = ROOT) -> tuple[float, float, str]:
    """(wall, CPU of the process and its children, stdout) of one fresh process."""
    start = time.perf_counter()
    child = subprocess.Popen(command, cwd=cwd, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = child.communicate()
    wall = time.perf_counter() - start
    if child.returncode not in (0, 1):
        raise SystemExit(f"{command[:4]} failed ({child.returncode}): {err.decode()[-2000:]}")
    return wall, _children_cpu(), out.decode()


_LAST = [0.0]


def _children_cpu() -> float:
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    now = r.ru_utime + r.ru_stime
    used, _LAST[0] = now - _LAST[0], now
    return used


def sweep_spec(count: int, steps: int) -> Path:
    text = (ROOT / "examples" / "sweep.yaml").read_text(encoding="utf-8")
    data = ROOT / "examples" / "data"
    text = text.replace("data/train.jsonl", str(data / "train.jsonl"))
    text = text.replace("data/validation.jsonl", str(data / "validation.jsonl"))
    head, _, _ = text.partition("  candidates:")
    head = head.replace("train_steps: 12", f"train_steps: {steps}")
    body = "".join(f"    - {json.dumps(c)}\n" for c in CANDIDATES[:count])
    folder = Path(tempfile.mkdtemp(prefix=f"sweep{count}-", dir=OUT))  # a fresh MLflow store each run
    path = folder / "sweep.yaml"
    path.write_text(head + "  candidates:\n" + body, encoding="utf-8")
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=1, help="interleaved rounds; medians are shown")
    ap.add_argument("--steps", type=int, default=12, help="sweep.train_steps of each candidate")
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    py = sys.executable
    data = ROOT / "examples" / "data"
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    timed([py, "-m", "tunegate", "sweep", str(sweep_spec(1, args.steps)), "--json"])  # warm Prefect home, model
    runs: dict[str, list[tuple[float, float]]] = {"bare": [], "sweep-1": [], "script-1": [], "sweep-3": []}
    for _ in range(args.rounds):
        wall, cpu, _ = timed([py, "-c", BARE, str(data / "train.jsonl"), str(data / "validation.jsonl"),
                              str(4 + args.steps)])
        runs["bare"].append((wall, cpu))
        for n in (1, 3):
            wall, cpu, _ = timed([py, "-m", "tunegate", "sweep", str(sweep_spec(n, args.steps)), "--json"])
            runs[f"sweep-{n}"].append((wall, cpu))
        wall, cpu, _ = timed([py, "-c", SCRIPT, str(sweep_spec(1, args.steps))])
        runs["script-1"].append((wall, cpu))
    med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for k, v in runs.items()}
    for name, (wall, cpu) in med.items():
        print(f"  {name:<8} {wall:6.1f} s wall {cpu:6.1f} s CPU   x{wall / med['bare'][0]:.2f} the bare loop's wall")
    per = (med["sweep-3"][0] - med["sweep-1"][0]) / 2
    print(f"  one more candidate: {per:.1f} s wall; fixed cost of a sweep: {med['sweep-1'][0] - per:.1f} s "
          f"(the bare loop: {med['bare'][0]:.1f} s)")
    parts()
    print(f"load average after: {os.getloadavg()[0]:.1f}")


def parts() -> None:
    py = sys.executable
    imports = {"torch, transformers, peft": "import torch, transformers, peft", "prefect": "import prefect",
               "mlflow": "import mlflow", "tunegate check path": "import tunegate.cli.main"}
    for name, code in imports.items():
        wall, _, _ = timed([py, "-c", code])
        base, _, _ = timed([py, "-c", "pass"])
        print(f"  import {name:<26} {wall - base:5.2f} s")
    _, _, out = timed([py, "-c", PREFECT_PROBE])
    imported, api = out.split()
    print(f"  prefect: import {imported} s, first flow run on the ephemeral API (start-up + one task) {api} s")
    with tempfile.TemporaryDirectory(dir=OUT) as tmp:
        db = str(Path(tmp) / "mlflow.db")
        for label in ("fresh", "existing"):
            _, _, out = timed([py, "-c", MLFLOW_PROBE, db])
            imported, store, opened, closed = out.split()
            print(f"  mlflow ({label} store): import {imported} s, ensure_store {store} s, "
                  f"open experiment + parent {opened} s, close parent {closed} s")


if __name__ == "__main__":
    main()

"""`tunegate preflight` of the quickstart spec as a user runs it, against another checkout, paired.

    python benchmarks/preflight_cli.py --rounds 3 --against /tmp/old   # /tmp/old: `git archive` + build_ext
    python benchmarks/preflight_cli.py --rounds 3 --against /tmp/old --cold   # each on a fresh Prefect home
    python benchmarks/preflight_cli.py --rounds 3 --against /tmp/old --bare   # also the bare loop of its steps
    python benchmarks/preflight_cli.py --rounds 3 --against /tmp/old --bare --check   # `tunegate check --mini-run`

Each round runs `python -m tunegate preflight quickstart.yaml --no-advisor --json` (the whole gate
as the `preflight` Prefect flow: spec, dataset, overlap, estimate, the mini-run on the built-in tiny
model, MLflow tracking, Prefect's local API started and stopped) once from this checkout and once
from --against (PYTHONPATH), in alternating order, on a copy of examples/quickstart.yaml and its data
in a scratch folder (preflight writes its report beside the spec), one torch thread. MLflow's store
is shared by both; each checkout has its own Prefect home (its own warm local API, as one install
has); both are warmed first, so first-use migrations are not counted. It
prints each run's wall and CPU (user + sys of the command and its children, and of the shared local
API while the command ran: it is no child of the command, benchmarks/shared_api_cpu.py), the medians, the
ratio, and whether both reached the same verdict and findings. With --cold every run gets a fresh
Prefect home and the command's own local API (TUNEGATE_LOCAL_API_IDLE_S=0), as a user's first
command on a new home: the API's start-up and Prefect's migrations of the fresh database (or the copy
of the one a first start kept, tunegate.local_api.db_template) count in the command's CPU; the
warm-up makes that first start for each checkout.

With --bare each round also runs the issue's baseline, a bare script of the preflight's training
steps (`bare` in fp32, the issue's; `bf16-bare` in the spec's precision, as the mini-run computes
on a CPU): import torch, transformers and peft, load the built-in tiny model, add the quickstart's
LoRA (r 16, alpha 32, dropout 0.05, q/k/v/o), and take the mini-run's 4 optimizer steps of
grad_accum_steps (2) micro-batches of micro_batch_size (4) records, truncated at max_seq_len (1024),
on the mini-run's 8 records (the 4 longest of the train file first, as its sample; then the next 4
in file order where the mini-run draws 4 at random), and one evaluation of a batch of 4 validation
records. Each preflight median is shown as a ratio to both (the target: <= 1.3x wall, <= 1.5x CPU).

With --check each round runs `python -m tunegate check quickstart.yaml --mini-run --json` instead of
the preflight: the same gate and mini-run in the command's one process, with no Prefect, MLflow or
fork server (the way to the mini-run a user runs on a laptop).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bytecode import compile_trees
from shared_api_cpu import api_cpu_over, shared_api_cpu

ROOT = Path(__file__).resolve().parent.parent
OUT = Path(__file__).resolve().parent / "out" / "preflight"
COMMAND = ["preflight", "quickstart.yaml", "--no-advisor", "--json"]  # --check: the check's mini-run instead


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--against", type=Path, required=True, help="the other checkout (its tunegate on PYTHONPATH)")
    ap.add_argument("--cold", action="store_true", help="every run on a fresh Prefect home, with its own local API")
    ap.add_argument("--bare", action="store_true", help="also the bare loop of the preflight's steps, fp32 and bf16")
    ap.add_argument("--check", action="store_true", help="`tunegate check --mini-run` in place of the preflight")
    args = ap.parse_args()
    if args.check:
        COMMAND[:] = ["check", "quickstart.yaml", "--mini-run", "--json"]
    OUT.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(dir=OUT))
    shutil.copy(ROOT / "examples" / "quickstart.yaml", work)
    shutil.copytree(ROOT / "examples" / "data", work / "data")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "MLFLOW_"))}
    env.update(MLFLOW_TRACKING_URI=f"sqlite:///{work / 'mlflow.db'}", TUNEGATE_TORCH_THREADS="1",
               PREFECT_SERVER_ANALYTICS_ENABLED="false")
    sources = {"this": ROOT, "other": args.against.resolve()}
    compile_trees(list(sources.values()))
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {_load()}")
    if args.cold:
        env["TUNEGATE_LOCAL_API_IDLE_S"] = "0"
    for source in sources.values():  # warm-up
        _run(source, work, env, args.cold)
    bare = ["bare", "bf16-bare"] if args.bare else []
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in [*sources, *bare]}
    verdicts: dict[str, set[str]] = {name: set() for name in [*sources, *bare]}
    for i in range(args.rounds):
        names = [*sources, *bare]
        order = names if i % 2 == 0 else list(reversed(names))
        for name in order:
            if name in sources:
                wall, cpu, verdict = _run(sources[name], work, env, args.cold)
            else:
                wall, cpu, verdict = _bare(work, env, "bf16" if name == "bf16-bare" else "fp32")
            runs[name].append((wall, cpu))
            verdicts[name].add(verdict)
            print(f"    {name:<6} {wall:6.2f} s wall {cpu:6.2f} s CPU  {verdict}  load {_load()}", flush=True)
    medians = {name: (statistics.median(w for w, _ in r), statistics.median(c for _, c in r))
               for name, r in runs.items()}
    for name, (wall, cpu) in medians.items():
        print(f"  {name:<9} median {wall:6.2f} s wall {cpu:6.2f} s CPU  ({sources.get(name, 'a bare loop')})")
    for name in bare:
        print(f"  this / {name}: {medians['this'][0] / medians[name][0]:.2f}x wall, "
              f"{medians['this'][1] / medians[name][1]:.2f}x CPU; other / {name}: "
              f"{medians['other'][0] / medians[name][0]:.2f}x wall, {medians['other'][1] / medians[name][1]:.2f}x CPU")
    same = verdicts["this"] == verdicts["other"]
    print(f"  this / other: {medians['this'][0] / medians['other'][0]:.2f}x wall, "
          f"{medians['this'][1] / medians['other'][1]:.2f}x CPU; same verdicts: {same}")
    print(f"load average after: {_load()}")


def _run(source: Path, work: Path, env: dict[str, str], cold: bool = False) -> tuple[float, float, str]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    command = [sys.executable, "-m", "tunegate", *COMMAND]
    # Each checkout its own Prefect home, so each keeps its own warm local API as one install does (the
    # two checkouts' servers differ by their code: on one home each command would replace the other's).
    home = work / ("prefect-home" if source == ROOT else "prefect-home-other")
    if cold:
        home = Path(tempfile.mkdtemp(prefix="cold-home-", dir=work))
    api = shared_api_cpu(home)
    done = subprocess.run(command, cwd=work, env={**env, "PYTHONPATH": str(source), "PREFECT_HOME": str(home)},
                          capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    cpu += api_cpu_over(api, shared_api_cpu(home))  # the shared local API is not the command's child
    if done.returncode not in (0, 1):
        raise SystemExit(f"{source}: exit {done.returncode}\n{done.stderr[-3000:]}")
    report = json.loads(done.stdout)
    codes = ",".join(sorted(f["code"] for f in report["findings"]))
    return wall, cpu, f"approved={report['approved_for_full_run']} findings={codes}"


BARE = r'''
import sys, time
import torch, transformers, peft
torch.set_num_threads(1)
from tunegate.training.tiny_model import resolve_model_id
import orjson
bf16 = sys.argv[3] == "bf16"
path = resolve_model_id("tunegate/tiny-llama")
tok = transformers.AutoTokenizer.from_pretrained(path)
def encode(file):
    rows = [orjson.loads(line) for line in open(file, "rb") if line.strip()]
    return [tok.apply_chat_template(r["messages"], tokenize=True, truncation=True, max_length=1024) for r in rows]
def ids_of(x):
    return x if isinstance(x, list) else x["input_ids"]
def batch(rows):
    chunk = [torch.tensor(ids_of(x))[:1024] for x in rows]
    padded = torch.nn.utils.rnn.pad_sequence(chunk, batch_first=True, padding_value=tok.pad_token_id or 0)
    return padded, (padded != (tok.pad_token_id or 0)).long()
train, val = encode(sys.argv[1]), encode(sys.argv[2])
longest = sorted(range(len(train)), key=lambda i: -len(ids_of(train[i])))[:4]
sample = [train[i] for i in longest] + [r for i, r in enumerate(train) if i not in longest][:4]
micro = [batch(sample[:4]), batch(sample[4:8])]
model = transformers.AutoModelForCausalLM.from_pretrained(path, dtype=torch.bfloat16 if bf16 else torch.float32)
model = peft.get_peft_model(model, peft.LoraConfig(r=16, lora_alpha=32, lora_dropout=0.05,
                                                   target_modules=["q_proj", "k_proj", "v_proj", "o_proj"]))
opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=2e-4)
model.train()
for step in range(4):
    for ids, mask in micro:
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = model(input_ids=ids, attention_mask=mask, labels=ids).loss / len(micro)
        loss.backward()
    opt.step(); opt.zero_grad()
model.eval()
ids, mask = batch(val[:4])
with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
    print(round(model(input_ids=ids, attention_mask=mask, labels=ids).loss.item(), 4))
'''


def _bare(work: Path, env: dict[str, str], precision: str) -> tuple[float, float, str]:
    """The bare loop of the preflight's steps in a fresh process: its wall, CPU and evaluation loss."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", BARE, str(work / "data" / "train.jsonl"),
                           str(work / "data" / "validation.jsonl"), precision],
                          env={**env, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, f"val loss {done.stdout.split()[-1]}"


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


if __name__ == "__main__":
    main()

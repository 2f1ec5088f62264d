"""A 1-candidate sweep against a bare script of the same LoRA steps, and what each more candidate costs.

    python benchmarks/sweep_overhead.py --rounds 3                     # bare-1/6, sweep-1/6
    python benchmarks/sweep_overhead.py --rounds 3 --counts 1,3,6      # also bare-3 and sweep-3
    python benchmarks/sweep_overhead.py --rounds 3 --against /tmp/old  # also old-sweep-1/6: another checkout's
    python benchmarks/sweep_overhead.py --rounds 1 --parts             # also the fixed parts, one by one
    python benchmarks/sweep_overhead.py --rounds 0 --split             # one 1-candidate sweep's CPU per process
    python benchmarks/sweep_overhead.py --rounds 0 --split --against /tmp/old   # and the other checkout's
    python benchmarks/sweep_overhead.py --rounds 0 --split --split-candidates 6 --split-rounds 3 --against /tmp/old
                                                      # 6-candidate sweeps, 3 each alternating: medians per job
    python benchmarks/sweep_overhead.py --rounds 0 --slots --against /tmp/old  # Prefect's slot requests, 503s
    python benchmarks/sweep_overhead.py --rounds 3 --server             # also server-sweep-1/6: a running server
    python benchmarks/sweep_overhead.py --rounds 3 --cold --against /tmp/old   # also cold-sweep-1: a fresh Prefect home
    python benchmarks/sweep_overhead.py --rounds 3 --bare-bf16         # also bf16-bare-N: the bare loops in bf16
    python benchmarks/sweep_overhead.py --rounds 3 --counts 1,3 --copies 30   # on 30 x the quickstart's records

Every command runs as a fresh process (as a user runs it), on the built-in tiny model and the
quickstart data, CPU, one torch thread, the rounds interleaved (A B, then B A: a load change on the
shared machine, or being first or second of a pair, hits every variant alike):
  bare-1    a plain script: import torch/transformers/peft, load the model, add LoRA (the
            candidate's r/alpha), the candidate's optimizer steps (the mini-run's 4 + the sweep's
            train_steps) on the same batch size and length, one evaluation of the validation set;
  bare-6    the same script looping over 6 candidates in one process (imports paid once): its
            (bare-6 - bare-1) / 5 is what one more candidate costs a bare script;
  sweep-1   `tunegate sweep --json` with one candidate (static gate, candidate gate, mini-run, short
            training in a process of its own, scoring, MLflow parent and child runs, Prefect's
            ephemeral API), on a fresh MLflow store;
  sweep-6   the same with six candidates: (sweep-6 - sweep-1) / 5 is the cost of one more;
  -N        with --counts: bare-N and sweep-N for each N given (default 1,6), each sweep also as a
            ratio to the bare loop of its own N candidates (the issue's targets are per count);
  old-*     with --against DIR: the same sweeps run from another checkout's tunegate (PYTHONPATH).
  bf16-bare-N  with --bare-bf16: the bare loop of N candidates in the sweep spec's precision, bf16, as
            the candidates train on a CPU (the base loaded in bf16, each forward under CPU autocast:
            what the mini-run and the Trainer's bf16=True do there); bare-N stays in fp32, the issue's
            baseline. Each sweep is also shown as a ratio to the bf16 bare loop of its count: the
            difference between the two is what the precision costs a CPU, not the orchestration.
  cold-*    with --cold: sweep-1 on a fresh Prefect home (and a fresh MLflow store), as a user's
            first command there runs it, with the command's own local API (TUNEGATE_LOCAL_API_IDLE_S=0)
            so its start-up, Prefect's migrations of the fresh database (or, from this checkout on, the
            copy of the database a first start kept: tunegate.local_api.db_template, in the user
            cache) count in the command's CPU;
  server-*  with --server: the same sweeps against a Prefect server already running (`prefect server
            start`, started once before the rounds, as a user who sweeps all day keeps one), with
            PREFECT_API_URL naming it: no local API to start per sweep. The server's own CPU while
            the sweep runs is not in the sweep's CPU figure (it is not the sweep's child).
  --copies N  every bare loop and sweep on the quickstart's train records N times over (each copy's
            last user turn and reply marked with its number, so no record repeats another), written
            once into benchmarks/out/sweep/: what grows with the data (reading, tokenising) beside
            the training, which does not (the same steps of the same batch size).
It prints the median wall and CPU (user + sys of the process and its children, and of the shared
local API while the command ran: that server outlives the command in a session of its own, so the
command's rusage never holds it; before session 54 it was left out) of each, the ratio
of each sweep to bare-1 (the target: sweep-1 <= 1.5x bare-1's wall), the per-candidate costs, and
the load average before and after. --parts times the fixed parts, each in a fresh process: the
imports, the ephemeral Prefect API (a flow with one task), an MLflow store created on a fresh
SQLite file and opened again, a parent run opened and closed. --split runs one 1-candidate sweep
and samples every process under it (/proc/PID/stat, every 0.05 s): the user and system CPU and the
minor page faults of the sweep's own process, Prefect's API (uvicorn), the fork server and each job
forked from it (with --against, then one sweep of the other checkout); --split-candidates N sweeps
N candidates, --split-rounds R runs R such sweeps of each checkout, alternating (A B, then B A), and
ends with the median CPU of each kind of process over them (a job's over all N x R jobs), what a
change of a few ms per job needs: the whole command's CPU moves 0.3 s between runs. Prefect's home and
the tiny model cache are warmed first, so first-use migrations and the model build are not counted;
--against's checkout has a Prefect home of its own (its own warm local API, as one install has).
--slots runs one 1-candidate sweep of each checkout with a DEBUG log file and counts, from httpx's
request lines, Prefect's tag-concurrency slot requests (`increment-with-lease`, one per task with
tags unless Prefect's 5 s "no limits" cache answers), the 503s the API gave (SQLite refused the
slot's transaction) and how long each wait lasted until the retry was answered (a count, unlike a
time, hardly depends on the load).
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bytecode import compile_trees
from shared_api_cpu import api_cpu_over, shared_api_cpu

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = HERE / "out" / "sweep"
ENV = {**os.environ, "PREFECT_HOME": str(OUT / "prefect-home"), "TUNEGATE_TORCH_THREADS": "1",
       "PYTHONPATH": str(ROOT)}
CANDIDATES = [{"lora.r": 8, "lora.alpha": 16, "training.learning_rate": 3e-4},
              {"lora.r": 16, "lora.alpha": 32, "training.learning_rate": 1e-3},
              {"lora.r": 4, "lora.alpha": 8, "training.learning_rate": 5e-4},
              {"lora.r": 8, "lora.alpha": 8, "training.learning_rate": 2e-4},
              {"lora.r": 16, "lora.alpha": 16, "training.learning_rate": 5e-4},
              {"lora.r": 4, "lora.alpha": 16, "training.learning_rate": 1e-4}]
AGAINST: list[Path] = []  # --against: another checkout whose tunegate runs the old-* sweeps
SERVER: list[str] = []  # --server: the running server's API URL, for the server-* sweeps
COLD: list[bool] = []  # --cold: also the cold-* sweeps
BF16: list[bool] = []  # --bare-bf16: also the bf16-bare-N loops
COUNTS: list[int] = [1, 6]  # --counts: the candidates of each bare loop and sweep
TRAIN: list[Path] = [ROOT / "examples" / "data" / "train.jsonl"]  # --copies: the train file every variant reads

BARE = r'''
import json, sys, time
start = time.perf_counter()
import torch, transformers, peft
torch.set_num_threads(1)
from tunegate.training.tiny_model import resolve_model_id
import orjson
path = resolve_model_id("tunegate/tiny-llama")
tok = transformers.AutoTokenizer.from_pretrained(path)
def encode(file, n=None):
    rows = [orjson.loads(l) for l in open(file, "rb") if l.strip()][:n]
    return [tok.apply_chat_template(r["messages"], tokenize=True, truncation=True, max_length=256) for r in rows]
def batches(ids, size):
    for i in range(0, len(ids), size):
        chunk = [torch.tensor(x if isinstance(x, list) else x["input_ids"])[:256] for x in ids[i:i + size]]
        padded = torch.nn.utils.rnn.pad_sequence(chunk, batch_first=True, padding_value=tok.pad_token_id or 0)
        yield padded, (padded != (tok.pad_token_id or 0)).long()
bf16 = len(sys.argv) > 5 and sys.argv[5] == "bf16"
def autocast():
    return torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16)
def candidate(r, alpha, lr, steps):
    model = transformers.AutoModelForCausalLM.from_pretrained(path, dtype=torch.bfloat16 if bf16 else torch.float32)
    model = peft.get_peft_model(model, peft.LoraConfig(r=r, lora_alpha=alpha, lora_dropout=0.05,
                                                       target_modules=["q_proj", "k_proj", "v_proj", "o_proj"]))
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=lr)
    model.train()
    done = 0
    while done < steps:
        for ids, mask in batches(train, 4):
            with autocast():
                loss = model(input_ids=ids, attention_mask=mask, labels=ids).loss
            loss.backward(); opt.step(); opt.zero_grad(); done += 1
            if done == steps:
                break
    model.eval()
    with torch.no_grad(), autocast():
        return sum(model(input_ids=i, attention_mask=m, labels=i).loss.item() for i, m in batches(val, 4))
train, val = encode(sys.argv[1]), encode(sys.argv[2])
for c in json.loads(sys.argv[4]):
    val_loss = candidate(c["lora.r"], c["lora.alpha"], c["training.learning_rate"], int(sys.argv[3]))
print(round(time.perf_counter() - start, 3), val_loss)
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


def timed(command: list[str], source: Path = ROOT, api: str | None = None,
          cold: bool = False) -> tuple[float, float, str]:
    """(wall, CPU of the process and its children and of the shared local API meanwhile, stdout) of one
    fresh process running `source`'s tunegate (from that folder: `python -m` puts the working folder
    first on sys.path); with `api`, against that Prefect API; `cold`: on a fresh Prefect home, with
    the command's own local API."""
    start = time.perf_counter()
    home = Path(tempfile.mkdtemp(prefix="cold-home-", dir=OUT)) if cold else prefect_home(source)
    env = {**ENV, "PYTHONPATH": str(source), "PREFECT_HOME": str(home),
           **({"PREFECT_API_URL": api} if api else {}), **({"TUNEGATE_LOCAL_API_IDLE_S": "0"} if cold else {})}
    shared = None if api else home  # with `api`, a server of the user's own: not the command's (see server-*)
    before = shared_api_cpu(shared) if shared else None
    child = subprocess.Popen(command, cwd=source, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = child.communicate()
    wall = time.perf_counter() - start
    if child.returncode not in (0, 1):
        raise SystemExit(f"{command[:4]} failed ({child.returncode}): {err.decode()[-2000:]}")
    return wall, _children_cpu() + (api_cpu_over(before, shared_api_cpu(shared)) if shared else 0.0), out.decode()


def prefect_home(source: Path) -> Path:
    """Each checkout's own Prefect home, so each keeps its own warm local API as one install does: the
    servers of two checkouts differ by their code, and on one home each command would stop the
    other's and start its own."""
    return OUT / "prefect-home" if source == ROOT else OUT / "prefect-home-against"


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
    text = text.replace("data/train.jsonl", str(TRAIN[0]))
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
    ap.add_argument("--counts", default="1,6", help="candidates per bare loop and sweep, comma-separated (1 to 6)")
    ap.add_argument("--against", type=Path, help="another checkout: its tunegate runs paired as old-sweep-1/6")
    ap.add_argument("--parts", action="store_true", help="also time the fixed parts, each in a fresh process")
    ap.add_argument("--split", action="store_true", help="also one 1-candidate sweep's CPU per process")
    ap.add_argument("--split-candidates", type=int, default=1, help="--split: candidates per sweep (1 to 6)")
    ap.add_argument("--split-rounds", type=int, default=1, help="--split: sweeps per checkout, alternating; medians")
    ap.add_argument("--cold", action="store_true", help="also a 1-candidate sweep on a fresh Prefect home")
    ap.add_argument("--slots", action="store_true", help="also count Prefect's slot requests and 503s per checkout")
    ap.add_argument("--server", action="store_true", help="also the sweeps against a running `prefect server`")
    ap.add_argument("--bare-bf16", action="store_true", help="also the bare loops in bf16, the sweep spec's precision")
    ap.add_argument("--copies", type=int, default=1, help="the quickstart's train records this many times over")
    args = ap.parse_args()
    if args.against:
        AGAINST.append(args.against.resolve())
    if args.cold:
        COLD.append(True)
    if args.bare_bf16:
        BF16.append(True)
    COUNTS[:] = sorted({int(n) for n in args.counts.split(",")})
    if not set(COUNTS) <= set(range(1, len(CANDIDATES) + 1)) or 1 not in COUNTS:
        raise SystemExit(f"--counts: between 1 and {len(CANDIDATES)}, 1 among them (the ratios' base)")
    OUT.mkdir(parents=True, exist_ok=True)
    if args.copies > 1:
        TRAIN[:] = [copied_train(args.copies)]
    compile_trees([ROOT, *AGAINST])
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {_load()}")
    server = start_server() if args.server else None
    try:
        measure(args)
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
    print(f"load average after: {_load()}")


def copied_train(copies: int) -> Path:
    """The quickstart's train records `copies` times over, each copy's last user turn and last reply
    ending in its number (no record repeats another), written once into OUT."""
    path = OUT / f"train-x{copies}.jsonl"
    if path.is_file():
        return path
    records = [json.loads(line) for line in TRAIN[0].read_text(encoding="utf-8").splitlines() if line.strip()]
    lines = []
    for copy in range(copies):
        for record in records:
            messages = json.loads(json.dumps(record["messages"]))
            for role in ("user", "assistant"):
                last = [m for m in messages if m.get("role") == role][-1]
                last["content"] += f" [{copy}]"
            lines.append(json.dumps({**record, "messages": messages}, ensure_ascii=False))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def start_server() -> subprocess.Popen:
    """`prefect server start` on a free port of 127.0.0.1 (its own home: the sweeps' warm-ups do not
    share its database), returned once its API answers."""
    import socket
    import urllib.request

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    home = OUT / "prefect-server-home"
    env = {**ENV, "PREFECT_HOME": str(home), "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
    env.pop("PREFECT_API_URL", None)
    started = time.perf_counter()
    proc = subprocess.Popen([str(Path(sys.executable).with_name("prefect")), "server", "start", "--host", "127.0.0.1",
                             "--port", str(port), "--no-ui", "--log-level", "WARNING"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/api"
    while True:
        if proc.poll() is not None:
            raise SystemExit(f"prefect server start exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2) as answer:
                if answer.status == 200:
                    break
        except OSError:
            pass
        time.sleep(0.2)
    print(f"prefect server started in {time.perf_counter() - started:.1f} s at {url}")
    SERVER.append(url)
    return proc


def measure(args: argparse.Namespace) -> None:
    for source in [ROOT, *AGAINST]:  # warm-up: Prefect's home, the tiny model, each checkout's bytecode
        timed([sys.executable, "-m", "tunegate", "sweep", str(sweep_spec(1, args.steps)), "--json"], source=source)
        if COLD:  # and a first start on a fresh home: where a checkout keeps a database template, it is there
            timed([sys.executable, "-m", "tunegate", "sweep", str(sweep_spec(1, args.steps)), "--json"],
                  source=source, cold=True)
    if SERVER:
        timed([sys.executable, "-m", "tunegate", "sweep", str(sweep_spec(1, args.steps)), "--json"], api=SERVER[0])
    runs: dict[str, list[tuple[float, float]]] = {}
    for i in range(args.rounds):
        for name, (wall, cpu, verdicts) in one_round(args.steps, flip=i % 2 == 1).items():
            runs.setdefault(name, []).append((wall, cpu))
            print(f"    {name:<12} {wall:6.1f} s wall {cpu:6.1f} s CPU  {verdicts}  load {_load()}", flush=True)
    if runs:
        report(runs)
    if args.split:
        seen: dict[tuple[str, str], list[float]] = {}
        for i in range(args.split_rounds):
            for source in ([ROOT, *AGAINST] if i % 2 == 0 else [*AGAINST, ROOT]):
                for role, cpu in split(args.steps, source, args.split_candidates):
                    seen.setdefault((str(source), role), []).append(cpu)
        if args.split_rounds > 1 or args.split_candidates > 1:
            print(f"medians over {args.split_rounds} sweep(s) of {args.split_candidates} candidate(s) per checkout:")
            for (source, role), values in seen.items():
                print(f"  {statistics.median(values):6.3f} s CPU (of {len(values)}, min {min(values):.3f}, "
                      f"max {max(values):.3f})  {role}  [{source}]")
    if args.slots:
        for source in [ROOT, *AGAINST]:
            slots(args.steps, source)
    if args.parts:
        parts()


def one_round(steps: int, flip: bool = False) -> dict[str, tuple[float, float, str]]:
    """Each variant once: the bare loops, then each checkout's sweeps of each of COUNTS candidates, alternating
    (this checkout first, or with `flip` last: rounds A B, B A, so the order hits both alike)."""
    py, data = sys.executable, ROOT / "examples" / "data"
    out: dict[str, tuple[float, float, str]] = {}
    for n in COUNTS:
        wall, cpu, text = timed([py, "-c", BARE, str(TRAIN[0]), str(data / "validation.jsonl"),
                                 str(4 + steps), json.dumps(CANDIDATES[:n])])
        out[f"bare-{n}"] = (wall, cpu, f"val loss {float(text.split()[1]):.4f}")
        if BF16:
            wall, cpu, text = timed([py, "-c", BARE, str(TRAIN[0]), str(data / "validation.jsonl"),
                                     str(4 + steps), json.dumps(CANDIDATES[:n]), "bf16"])
            out[f"bf16-bare-{n}"] = (wall, cpu, f"val loss {float(text.split()[1]):.4f}")
    for n in COUNTS:
        order = [("", ROOT)] + [("old-", a) for a in AGAINST]
        for label, source in reversed(order) if flip else order:
            wall, cpu, text = timed([py, "-m", "tunegate", "sweep", str(sweep_spec(n, steps)), "--json"],
                                    source=source)
            out[f"{label}sweep-{n}"] = (wall, cpu, _verdicts(text))
        if SERVER:
            wall, cpu, text = timed([py, "-m", "tunegate", "sweep", str(sweep_spec(n, steps)), "--json"],
                                    api=SERVER[0])
            out[f"server-sweep-{n}"] = (wall, cpu, _verdicts(text))
    for label, source in (reversed(order) if flip else order) if COLD else ():
        wall, cpu, text = timed([py, "-m", "tunegate", "sweep", str(sweep_spec(1, steps)), "--json"], source=source,
                                cold=True)
        out[f"{label}cold-sweep-1"] = (wall, cpu, _verdicts(text))
    return out


def _verdicts(text: str) -> str:
    summary = json.loads(text)
    losses = " ".join(f"{o['val_loss']:.4f}" if o.get("val_loss") is not None else "-" for o in summary["outcomes"])
    return f"{summary['approved']}/{len(summary['outcomes'])} approved, val loss {losses}"


def report(runs: dict[str, list[tuple[float, float]]]) -> None:
    med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for k, v in runs.items()}
    bare_wall, bare_cpu = med["bare-1"]
    print(f"medians of {len(runs['bare-1'])} round(s):")
    for name, (wall, cpu) in med.items():
        count = name.rsplit("-", 1)[1]
        own = med.get(f"bare-{count}") if count.isdigit() and count != "1" and "sweep" in name else None
        bf16 = med.get(f"bf16-bare-{count}") if count.isdigit() and "sweep" in name else None
        print(f"  {name:<12} {wall:6.1f} s wall {cpu:6.1f} s CPU   x{wall / bare_wall:.2f} bare-1's wall, "
              f"x{cpu / bare_cpu:.2f} its CPU" + (f"; x{wall / own[0]:.2f} bare-{count}'s wall, "
                                                  f"x{cpu / own[1]:.2f} its CPU" if own else "")
              + (f"; x{wall / bf16[0]:.2f} bf16-bare-{count}'s wall, x{cpu / bf16[1]:.2f} its CPU" if bf16 else ""))
    most = COUNTS[-1] - 1
    if not most:
        return
    bare_per = ((med[f"bare-{most + 1}"][0] - bare_wall) / most, (med[f"bare-{most + 1}"][1] - bare_cpu) / most)
    print(f"  one more candidate, bare loop: {bare_per[0]:.1f} s wall, {bare_per[1]:.1f} s CPU")
    if f"bf16-bare-{most + 1}" in med:
        low, high = med["bf16-bare-1"], med[f"bf16-bare-{most + 1}"]
        print(f"  one more candidate, bf16 bare loop: {(high[0] - low[0]) / most:.1f} s wall, "
              f"{(high[1] - low[1]) / most:.1f} s CPU")
    for label in [""] + ["old-"] * bool(AGAINST) + ["server-"] * bool(SERVER):
        one, six = med[f"{label}sweep-1"], med[f"{label}sweep-{most + 1}"]
        per = ((six[0] - one[0]) / most, (six[1] - one[1]) / most)
        print(f"  one more candidate, {label}sweep: {per[0]:.1f} s wall, {per[1]:.1f} s CPU "
              f"(x{per[0] / bare_per[0]:.2f} the bare loop's wall); fixed cost of a sweep beyond bare-1: "
              f"{one[0] - bare_wall:.1f} s wall, {one[1] - bare_cpu:.1f} s CPU")


def split(steps: int, source: Path = ROOT, count: int = 1) -> list[tuple[str, float]]:
    """One `count`-candidate sweep of `source`: each process's user and system CPU seconds and minor
    page faults, sampled every 0.05 s until it ends (a process's last 0.05 s may be missed); (role,
    CPU seconds) of each process."""
    tick = os.sysconf("SC_CLK_TCK")
    start = time.perf_counter()
    _children_cpu()  # from here
    env = {**ENV, "PYTHONPATH": str(source), "PREFECT_HOME": str(prefect_home(source))}
    api_before = shared_api_cpu(prefect_home(source))
    proc = subprocess.Popen([sys.executable, "-m", "tunegate", "sweep", str(sweep_spec(count, steps)), "--json"],
                            cwd=source, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seen: dict[int, tuple[tuple[float, float, int], str]] = {}
    reaped: dict[int, float] = {}  # a fork server -> its reaped children's CPU so far (exact, to the tick)
    jobs: list[float] = []  # each job's whole CPU, its last moments too: what its fork server reaped
    while proc.poll() is None:
        for pid, parent in _descendants(proc.pid).items():
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            use = (int(fields[11]) / tick, int(fields[12]) / tick, int(fields[7]))  # utime, stime, minflt
            seen[pid] = (use, seen[pid][1] if pid in seen else _role(pid, parent, proc.pid, command, seen))
            if seen[pid][1] == "fork server":
                children = (int(fields[13]) + int(fields[14])) / tick  # cutime + cstime
                if children > reaped.get(pid, 0.0):
                    jobs.append(children - reaped.get(pid, 0.0))
                reaped[pid] = children
        time.sleep(0.05)
    api = api_cpu_over(api_before, shared_api_cpu(prefect_home(source)))
    wall, total = time.perf_counter() - start, _children_cpu() + api
    print(f"one {count}-candidate sweep of {source}: {wall:.1f} s wall, {total:.1f} s CPU (load {_load()}); per "
          "process (sampled):")
    for (user, system, faults), role in seen.values():
        print(f"  {user + system:6.2f} s CPU ({user:.2f} user, {system:.2f} system), {faults:7d} page faults  {role}")
    print(f"  {api:6.2f} s CPU  {SHARED_API}")
    if jobs:
        print(f"  jobs reaped by the fork server (their whole CPU): {' '.join(f'{j:.2f}' for j in jobs)} s")
    return ([(role, user + system) for (user, system, _), role in seen.values()] + [(REAPED, j) for j in jobs]
            + [(SHARED_API, api)])


REAPED = "a job, as its fork server reaped it (exact)"
SHARED_API = "the shared local API meanwhile (not the command's child: its own session)"


REQUEST = re.compile(r"^(\S+ \S+) \d+ INFO httpx: HTTP Request: (\S+) (\S+) \"HTTP/1.1 (\d+)", re.M)
SLOT = "/v2/concurrency_limits/increment-with-lease"


def slots(steps: int, source: Path) -> None:
    """One 1-candidate sweep of `source` with a DEBUG log: its slot requests, 503s and their waits."""
    log = OUT / f"slots-{os.getpid()}-{time.time_ns()}.log"
    env = {**ENV, "PYTHONPATH": str(source), "TUNEGATE_LOG_LEVEL": "DEBUG", "TUNEGATE_LOG_FILE": str(log)}
    done = subprocess.run([sys.executable, "-m", "tunegate", "sweep", str(sweep_spec(1, steps)), "--json"],
                          cwd=source, env=env, capture_output=True, text=True)
    requests = REQUEST.findall(log.read_text(encoding="utf-8", errors="replace"))
    log.unlink()
    when = [datetime.datetime.strptime(r[0], "%Y-%m-%d %H:%M:%S,%f") for r in requests]
    waits = []  # from each 503 to the answer of the same request's retry
    for i, (_, _, url, status) in enumerate(requests):
        if status == "503":
            retry = next((j for j in range(i + 1, len(requests)) if requests[j][2] == url), None)
            waits.append((when[retry] - when[i]).total_seconds() if retry is not None else float("nan"))
    answered = [r for r in requests if r[3] == "503"]
    print(f"{source}: exit {done.returncode}, {sum(SLOT in r[2] for r in requests)} slot requests, "
          f"{len(answered)} answered 503 ({', '.join(sorted({r[2].split('/api/')[-1] for r in answered})) or '-'}), "
          f"waits {' '.join(f'{w:.2f}' for w in waits) or '-'} s, load {_load()}")


def _role(pid: int, parent: int, sweep: int, command: str, seen: dict[int, tuple[float, str]]) -> str:
    if pid == sweep:
        return "the sweep's process"
    if "uvicorn" in command:
        return "Prefect's API (uvicorn)"
    if "fork_server" in command:
        return "a job forked from the fork server" if seen.get(parent, (0, ""))[1] == "fork server" else "fork server"
    return command[-70:]


def _descendants(root: int) -> dict[int, int]:
    """Every process under `root` (itself included) -> its parent."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                parent = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
            children.setdefault(parent, []).append(int(entry))
    found, todo = {root: 0}, [root]
    while todo:
        pid = todo.pop()
        for child in children.get(pid, []):
            found[child] = pid
            todo.append(child)
    return found


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


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

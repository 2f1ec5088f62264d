"""Measure the two MLflow facts the tracking layer is built on, each against its baseline.

    python benchmarks/tracking_store.py            # 8 processes, 200 steps
    python benchmarks/tracking_store.py 16 400

1. Fresh store, N processes at once: raw `MlflowClient` (baseline) vs `ensure_store` first.
   Prints how many processes succeeded and whether the store still works afterwards.
2. Logging one candidate's S steps of loss + grad norm: one `log_metric` call per point (baseline)
   vs `log_candidate` (batched `log_batch`). Prints seconds and the speed-up.
"""
from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

WORKER = """
import sys, time
from pathlib import Path
sys.path.insert(0, {root!r})
from tunegate.tracking.store import ensure_store, open_client
uri, go, guarded = sys.argv[1], Path(sys.argv[2]), sys.argv[3] == "1"
Path(str(go) + "." + sys.argv[4]).touch()  # imported: ready to race
while not go.exists():
    time.sleep(0.005)
try:
    if guarded:
        ensure_store(uri)
    client = open_client(uri)
    run = client.create_run("0")
    client.log_metric(run.info.run_id, "m", 1.0)
    print("ok")
except Exception as exc:
    print("error", type(exc).__name__)
"""


def fresh_store_race(n: int, guarded: bool) -> tuple[int, bool]:
    """(processes that succeeded, whether a new process can still use the store)."""
    with tempfile.TemporaryDirectory() as tmp:
        uri = "sqlite:///" + str(Path(tmp) / "mlflow.db")
        go = Path(tmp) / "go"
        code = WORKER.format(root=str(ROOT))
        procs = [subprocess.Popen([sys.executable, "-c", code, uri, str(go), "1" if guarded else "0", str(i)],
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True) for i in range(n)]
        while len(list(Path(tmp).glob("go.*"))) < n:  # start the race only once every process is ready
            time.sleep(0.05)
        go.touch()
        ok = sum(p.communicate(timeout=600)[0].strip() == "ok" for p in procs)
        after = subprocess.run([sys.executable, "-c", code, uri, str(go), "0", "after"],
                               capture_output=True, text=True)
        return ok, after.stdout.strip() == "ok"


def logging_speed(steps: int) -> tuple[float, float]:
    """Seconds to log `steps` steps of loss + grad norm: per point, then batched."""
    from tunegate.tracking.candidate_log import log_candidate
    from tunegate.tracking.record import CandidateRecord, StepMetrics
    from tunegate.tracking.runs import open_candidate_run, start_parent
    from tunegate.tracking.store import ensure_store, open_client

    with tempfile.TemporaryDirectory() as tmp:
        uri = "sqlite:///" + str(Path(tmp) / "mlflow.db")
        ensure_store(uri)
        client = open_client(uri)
        parent = start_parent(client, "bench", "flow-bench")
        points = [StepMetrics(step=i, loss=2.0 / (i + 1), grad_norm=1.0) for i in range(steps)]
        run = open_candidate_run(client, parent, "b" * 64).run_id
        start = time.perf_counter()
        for p in points:
            client.log_metric(run, "mini_run/loss", p.loss, step=p.step)
            client.log_metric(run, "mini_run/grad_norm", p.grad_norm, step=p.step)
        per_point = time.perf_counter() - start
        record = CandidateRecord(candidate_id="a" * 64, params={"lora.r": 8}, verdict="approved",
                                 mini_run_steps=points)
        log_candidate(client, parent, record.model_copy(update={"candidate_id": "c" * 64}))  # warm imports
        start = time.perf_counter()
        log_candidate(client, parent, record)
        return per_point, time.perf_counter() - start


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    for guarded in (False, True):
        ok, usable = fresh_store_race(n, guarded)
        label = "ensure_store first " if guarded else "raw MlflowClient   "
        print(f"fresh store, {n} processes at once, {label}: {ok}/{n} succeeded; "
              f"store usable afterwards: {'yes' if usable else 'NO'}")
    per_point, batched = logging_speed(steps)
    print(f"logging {steps} steps x 2 metrics: per-point log_metric {per_point:.2f} s, "
          f"log_candidate (batched, incl. params, inputs, artifacts) {batched:.2f} s, "
          f"speed-up {per_point / batched:.1f}x")


if __name__ == "__main__":
    main()

"""A separate process that uses the tracking layer, for the tests that need real processes.

    python tests/tracking_worker.py init URI GO_FILE I         # wait for GO_FILE, then ensure_store + log
    python tests/tracking_worker.py log URI PARENT N_STEPS I   # log candidate I with N_STEPS steps
    python tests/tracking_worker.py hang URI FLOW_RUN_ID       # open parent + child, print READY, sleep

`hang` is what a flow run looks like at the moment it gets SIGKILLed: runs open, nothing ended.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.support.tracking import EXPERIMENT, approved_record, base_spec, with_changes  # noqa: E402
from tunegate.tracking.candidate_log import log_candidate  # noqa: E402
from tunegate.tracking.runs import open_candidate_run, start_parent  # noqa: E402
from tunegate.tracking.store import ensure_store, open_client  # noqa: E402


def _candidate(i: int, n_steps: int):
    spec = with_changes(base_spec(), lora={"r": 4 + i})
    return approved_record(spec, n_steps=n_steps, val_loss=1.5 + i / 10)


def init(uri: str, go_file: str, i: int) -> None:
    Path(f"{go_file}.{i}").touch()  # imported and ready
    while not Path(go_file).exists():  # a barrier: every process hits the fresh store at once
        time.sleep(0.005)
    ensure_store(uri)
    client = open_client(uri)
    parent = start_parent(client, EXPERIMENT, f"flow-{i}")
    result = log_candidate(client, parent, _candidate(i, 3))
    print(result.status, flush=True)


def log(uri: str, parent: str, n_steps: int, i: int) -> None:
    result = log_candidate(open_client(uri), parent, _candidate(i, n_steps))
    print(result.status, result.run_id, flush=True)


def hang(uri: str, flow_run_id: str) -> None:
    client = open_client(uri)
    parent = start_parent(client, EXPERIMENT, flow_run_id)
    child = open_candidate_run(client, parent, "c" * 64)
    client.log_metric(child.run_id, "mini_run/loss", 2.5, step=0)
    print("READY", parent, child.run_id, flush=True)
    time.sleep(120)


if __name__ == "__main__":
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "init":
        init(args[0], args[1], int(args[2]))
    elif mode == "log":
        log(args[0], args[1], int(args[2]), int(args[3]))
    elif mode == "hang":
        hang(*args)
    else:
        sys.exit(f"unknown mode {mode}")

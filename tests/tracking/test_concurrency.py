"""Four candidates logging at once into one SQLite store lose no metric point and add no run."""
from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.support.paths import SUPPORT
from tests.support.tracking import (
    EXPERIMENT,
    approved_record,
    base_spec,
    with_changes,
)
from tunegate.tracking.candidate_log import log_candidate
from tunegate.tracking.runs import children, start_parent
from tunegate.tracking.store import open_client

WORKER = SUPPORT / "tracking_worker.py"
STEPS = 150


def _assert_complete(client, parent: str, n: int) -> None:
    runs = children(client, parent)
    assert len(runs) == n
    for run in runs:
        assert run.info.status == "FINISHED"
        for key in ("mini_run/loss", "mini_run/grad_norm"):
            assert [m.step for m in client.get_metric_history(run.info.run_id, key)] == list(range(STEPS))
        assert "val/loss" in run.data.metrics


def test_four_threads_sharing_one_client_lose_no_metric(client):
    parent = start_parent(client, EXPERIMENT, "flow-threads")
    records = [approved_record(with_changes(base_spec(), lora={"r": 4 + i}), n_steps=STEPS, val_loss=1.5 + i / 10)
               for i in range(4)]
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda r: log_candidate(client, parent, r), records))
    assert [r.status for r in results] == ["FINISHED"] * 4 and len({r.run_id for r in results}) == 4
    _assert_complete(client, parent, 4)


def test_four_threads_logging_the_same_candidate_add_one_run(client):
    parent = start_parent(client, EXPERIMENT, "flow-dup")
    record = approved_record(n_steps=20)
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda _: log_candidate(client, parent, record), range(4)))
    assert len({r.run_id for r in results}) == 1
    assert len(children(client, parent)) == 1
    assert len(client.get_metric_history(results[0].run_id, "mini_run/loss")) == 20


@pytest.mark.slow
def test_four_processes_lose_no_metric(store_uri):
    client = open_client(store_uri)
    parent = start_parent(client, EXPERIMENT, "flow-procs")
    procs = [subprocess.Popen([sys.executable, str(WORKER), "log", store_uri, parent, str(STEPS), str(i)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(4)]
    outs = [p.communicate(timeout=180) for p in procs]
    assert [p.returncode for p in procs] == [0] * 4, [err[-800:] for _, err in outs]
    assert [out.split()[0] for out, _ in outs] == ["FINISHED"] * 4
    _assert_complete(client, parent, 4)

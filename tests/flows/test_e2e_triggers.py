"""End to end: the trigger chain on a real `prefect server` with a `cpu` and a `gpu` process worker.

`tunegate check --emit-event` -> the preflight deployment's automation -> a preflight on the cpu
worker, approved -> its tunegate.preflight.approved event -> the full-run deployment's automation
-> a full run on the gpu worker that PAUSES for the SampleReview form. Answered "not reviewed", it
ends without training. Nightly (`make test-nightly`, ~95 s more): the approval event sent again with
`prefect event emit` starts another, answered "reviewed" with `prefect api POST .../resume`, which
trains and publishes the adapter. `make test` runs the chain up to the refused review (~140 s on
the loaded 2-core machine, most of it the server, the deploy and the preflight's mini-run).

Everything runs on a temporary PREFECT_HOME and a copy of tests/data/flows inside this checkout
(under .tunegate/, ignored by git, removed afterwards): the events name the spec relative to the
project root, and the workers, which run in this checkout as `prefect deploy` set them up, find it there.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

import pytest

from tests.support.prefect_stack import ROOT, TERMINAL, PrefectStack

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

FLOWS_DATA = ROOT / "tests" / "data" / "flows"
WAIT_S = 240


@pytest.fixture(scope="module")
def stack(tiny_cache, tmp_path_factory):
    """Server, both pools, every deployment of prefect.yaml (with its triggers), a cpu and a gpu worker."""
    stack = PrefectStack(tmp_path_factory.mktemp("prefect-triggers"), os.environ["TUNEGATE_CACHE"])
    started = time.monotonic()
    try:
        stack.deploy_all(worker_pools=("cpu", "gpu"))
        print(f"\ntrigger stack up in {time.monotonic() - started:.0f}s")
        yield stack
    finally:
        problems = stack.stop()
        print(f"\ntrigger stack: {time.monotonic() - started:.0f}s in all")
    assert problems == [], "\n".join(problems)


def _runs_of(stack: PrefectStack, deployment: str) -> list[dict]:
    (dep,) = [d for d in stack.api("POST", "/deployments/filter", {}) if d["name"] == deployment]
    return stack.api("POST", "/flow_runs/filter", {"flow_runs": {"deployment_id": {"any_": [dep["id"]]}},
                                                   "sort": "EXPECTED_START_TIME_ASC"})


def _wait_for(stack: PrefectStack, deployment: str, states: set[str], count: int = 1) -> dict:
    """The `count`-th run of the deployment, once it reaches one of `states`."""
    deadline, runs = time.monotonic() + WAIT_S, []
    while time.monotonic() < deadline:
        runs = _runs_of(stack, deployment)
        if len(runs) >= count and runs[count - 1]["state_type"] in states:
            return runs[count - 1]
        if len(runs) >= count and runs[count - 1]["state_type"] in TERMINAL - states:
            break
        time.sleep(1)
    found = [(r["name"], r["state_type"], (r.get("state") or {}).get("message")) for r in runs]
    raise AssertionError(f"{deployment} run {count} not in {states} after {WAIT_S}s: {found}\n{stack.diagnostics()}")


class _Clock:
    """Seconds each step of the chain took, printed with the test output (where CI time goes)."""

    def __init__(self) -> None:
        self.last, self.laps = time.monotonic(), {}

    def lap(self, name: str, value):
        now = time.monotonic()
        self.laps[name], self.last = round(now - self.last), now
        return value


def _form(stack: PrefectStack, run: dict, timeout_s: float = 60) -> dict:
    """The paused run's form (description, schema): Prefect stores it just after the run turns Paused."""
    import urllib.error

    keys = run["state"]["state_details"]["run_input_keyset"]
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return {k: stack.api("GET", f"/flow_runs/{run['id']}/input/{keys[k]}") for k in ("description", "schema")}
        except urllib.error.HTTPError as exc:
            if exc.code != 404 or time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def _resume(stack: PrefectStack, run: dict, **answer) -> None:
    result = stack.api("POST", f"/flow_runs/{run['id']}/resume", {"run_input": answer})
    assert result["status"] == "ACCEPT", result


@pytest.fixture(scope="module")
def project_folder():
    """A copy of tests/data/flows inside the project (the workers' checkout), removed afterwards."""
    folder = ROOT / ".tunegate" / f"e2e-triggers-{os.getpid()}"
    shutil.copytree(FLOWS_DATA, folder)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)
    if not any(folder.parent.iterdir()):  # .tunegate/ was made for it
        folder.parent.rmdir()


@pytest.fixture(scope="module")
def chain(stack, project_folder):
    """The chain up to the review, answered "not reviewed"; each step's flow run for the tests."""
    folder = project_folder
    spec = folder / "good.yaml"
    check = subprocess.run([sys.executable, "-m", "tunegate", "check", str(spec), "--emit-event"], cwd=ROOT,
                           env=stack.env, capture_output=True, text=True, timeout=120)
    assert check.returncode == 0, check.stdout + check.stderr
    steps = {"check": check, "spec": spec, "adapter": folder / "out" / "full" / "adapter" / "COMPLETE"}
    clock = steps["clock"] = _Clock()
    steps["preflight"] = clock.lap("preflight", _wait_for(stack, "preflight", TERMINAL))
    steps["paused"] = clock.lap("full run 1 paused", _wait_for(stack, "full-run", {"PAUSED"}))
    steps["form"] = _form(stack, steps["paused"])
    steps["adapter_while_paused"] = steps["adapter"].exists()
    _resume(stack, steps["paused"], reviewed_samples=False, reviewer="e2e", note="the replies look truncated")
    steps["refused"] = clock.lap("full run 1 refused", _wait_for(stack, "full-run", TERMINAL))
    steps["adapter_after_refusal"] = steps["adapter"].exists()
    print(f"\ntrigger chain: {clock.laps}")
    return steps


@pytest.fixture(scope="module")
def trained(stack, chain):
    """The approval event posted again with `prefect event emit`; that full run reviewed with `prefect api`."""
    from tunegate.events.payload import preflight_event
    from tunegate.fullrun.approval import load_report, report_path

    spec, clock = chain["spec"], chain["clock"]
    message = preflight_event(load_report(report_path(spec)), spec, report_path(spec))
    stack.cli("event", "emit", message.event, "--resource", json.dumps(message.resource),
              "--payload", json.dumps(message.payload))
    second = clock.lap("full run 2 paused", _wait_for(stack, "full-run", {"PAUSED"}, count=2))
    _form(stack, second)  # answer only once the form is there, as a person in the UI does
    answer = {"run_input": {"reviewed_samples": True, "reviewer": "e2e", "note": ""}}
    stack.cli("api", "POST", f"/flow_runs/{second['id']}/resume", "--data", json.dumps(answer))
    run = clock.lap("full run 2 trained", _wait_for(stack, "full-run", TERMINAL, count=2))
    print(f"\ntrigger chain: {clock.laps}")
    return run


def _in_project(path) -> str:
    return path.relative_to(ROOT).as_posix()


def test_check_with_emit_event_sends_the_event_that_starts_a_preflight_on_the_cpu_worker(stack, chain):
    assert "sent tunegate.dataset.version" in chain["check"].stderr
    run = chain["preflight"]
    assert run["state_type"] == "COMPLETED", f"{run['state']}\n{stack.diagnostics()}"
    # from the event's payload: relative to the project root, resolved in the worker's checkout
    assert run["parameters"] == {"spec_path": _in_project(chain["spec"])}
    assert run["work_pool_name"] == "cpu"
    assert run["state"]["message"] == "approved for a full run: every required gate passed"


def test_the_approval_starts_a_full_run_on_the_gpu_pool_that_pauses_for_review(chain):
    run = chain["paused"]
    assert run["work_pool_name"] == "gpu"
    report = chain["spec"].parent / ".tunegate" / "reports" / "good.json"
    assert run["parameters"]["await_review"] is True
    assert run["parameters"]["spec_path"] == _in_project(chain["spec"])
    assert run["parameters"]["report_file"] == _in_project(report)
    assert chain["adapter_while_paused"] is False


def test_the_paused_form_asks_i_reviewed_the_samples_and_names_the_report_and_samples(chain):
    schema = chain["form"]["schema"]
    schema = json.loads(schema) if isinstance(schema, str) else schema  # stored as a JSON string
    assert schema["properties"]["reviewed_samples"]["description"] == "I reviewed the samples"
    description = chain["form"]["description"]
    assert _in_project(chain["spec"].parent / ".tunegate" / "reports" / "good.json") in description
    assert f"tunegate samples {_in_project(chain['spec'])}" in description


def test_a_reviewer_who_did_not_confirm_ends_the_run_without_training(chain):
    run = chain["refused"]
    assert run["state_type"] == "FAILED"
    assert run["state"]["message"] == ("e2e did not confirm reviewing the samples: the replies look truncated; "
                                       "the full run did not train")
    assert chain["adapter_after_refusal"] is False


@pytest.mark.nightly  # ~95 s more (a second flow run, the training): `make test-nightly`
def test_a_reviewed_full_run_trains_and_publishes_the_adapter(stack, chain, trained):
    run = trained
    assert run["state_type"] == "COMPLETED", f"{run['state']}\n{stack.diagnostics()}"
    assert run["state"]["message"].startswith("trained; validation loss")
    assert chain["adapter"].is_file()

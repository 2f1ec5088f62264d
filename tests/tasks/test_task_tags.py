"""Our Prefect tasks' tags: `gpu` on the tasks that hold an accelerator, `network` on the one that
calls out, and nothing else. Those two are for users' own tag concurrency limits; any other tag
costs a call to the API for its slot before the task runs (and, on SQLite, a ~2 s retry whenever
that call collides with the server's own writers), for a limit nobody created."""
from __future__ import annotations

import importlib
import logging
import pkgutil
import uuid

import pytest

HOLDS = {"mini-run": {"gpu"}, "evaluate-candidate": {"gpu"}, "full-training": {"gpu"}, "advisor": {"network"}}
SLOT_CALL = "/v2/concurrency_limits/increment-with-lease"


def _our_tasks() -> dict[str, set[str]]:
    """Every Prefect task defined in tunegate.tasks, by name -> its tags."""
    from prefect import Task

    import tunegate.tasks as package

    found: dict[str, set[str]] = {}
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        for value in vars(module).values():
            if isinstance(value, Task) and value.fn.__module__ == module.__name__:
                found[value.name] = set(value.tags)
    return found


def _slot_calls(caplog: pytest.LogCaptureFixture) -> list[str]:
    """The tag-concurrency slot requests the client sent (httpx logs one line per request)."""
    return [r.getMessage() for r in caplog.records if r.name == "httpx" and SLOT_CALL in r.getMessage()]


def test_only_tasks_that_hold_an_accelerator_or_the_network_carry_a_tag():
    found = _our_tasks()
    assert {name: tags for name, tags in found.items() if tags} == HOLDS
    assert {"parse-spec", "static-gate", "open-tracking", "publish-sweep"} <= set(found)  # untagged, found


def test_an_untagged_task_asks_the_api_for_no_concurrency_slot(prefect_api, workdir, caplog):
    from prefect import flow

    from tunegate.tasks.gate_tasks import parse_spec_task, static_gate_task

    @flow
    def gate(spec: str):
        return static_gate_task(parse_spec_task(spec))

    caplog.set_level(logging.INFO, logger="httpx")
    assert gate(str(workdir / "good.yaml")).gates_passed
    assert any("/flow_runs/" in r.getMessage() for r in caplog.records if r.name == "httpx")  # calls were seen
    assert _slot_calls(caplog) == []


def test_a_users_tags_context_still_lands_on_our_tasks_and_takes_its_slot(prefect_api, workdir, caplog):
    from prefect import flow, tags
    from prefect.client.orchestration import get_client

    from tunegate.tasks.gate_tasks import parse_spec_task

    team = f"team-{uuid.uuid4().hex[:8]}"  # a tag set Prefect's 5 s "no limits" cache has not seen

    @flow
    def gate(spec: str):
        with tags(team):
            return parse_spec_task(spec, return_state=True)

    caplog.set_level(logging.INFO, logger="httpx")
    state = gate(str(workdir / "good.yaml"))
    with get_client(sync_client=True) as client:
        run = client.read_task_run(state.state_details.task_run_id)
    assert run.tags == [team]
    # A user's limit on `tag:<team>` is honoured: the slot was asked for (and granted; a 503 from
    # SQLite's writer lock before it is retried by Prefect's client).
    assert any('"HTTP/1.1 200 OK"' in call for call in _slot_calls(caplog))

"""The full run's pause for a person, on Prefect's test API: what an answer, a refusal, no answer,
and a change of the data while it waited each do."""
from __future__ import annotations

import threading
import time

import pytest

pytestmark = pytest.mark.slow


def _in_thread(target) -> tuple[threading.Thread, list]:
    out: list = []
    thread = threading.Thread(target=lambda: out.append(target()), daemon=True)
    thread.start()
    return thread, out


def _paused_run(flow_name: str, timeout_s: float = 120):
    """The one paused flow run of this flow, once Prefect shows it Paused with its form stored."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowFilter, FlowFilterName, FlowRunFilter, FlowRunFilterStateType

    flows = FlowFilter(name=FlowFilterName(any_=[flow_name]))
    paused = FlowRunFilter(state={"type": FlowRunFilterStateType(any_=["PAUSED"])})
    deadline = time.monotonic() + timeout_s
    with get_client(sync_client=True) as client:
        while time.monotonic() < deadline:
            runs = client.read_flow_runs(flow_filter=flows, flow_run_filter=paused)
            if runs and _form_saved(client, runs[0]):  # the schema lands just after the Paused state
                (run,) = runs
                return run
            time.sleep(0.5)
    raise AssertionError(f"no paused {flow_name} run after {timeout_s}s")


def _form_saved(client, run) -> bool:
    import httpx

    try:
        client.read_flow_run_input(run.id, run.state.state_details.run_input_keyset["schema"])
        return True
    except httpx.HTTPStatusError as exc:  # Prefect's own subclasses it
        if exc.response.status_code != 404:
            raise
        return False


def test_no_answer_within_the_timeout_is_not_an_approval(prefect_api):
    from prefect import flow

    from tunegate.events.review import await_review

    @flow(name="review-timeout-probe")
    def probe():
        return await_review("## review", timeout_s=2, poll_s=1)

    outcome = probe()
    assert outcome.approved is False
    assert outcome.reason == "no review within 2 s: the full run did not train"


@pytest.mark.parametrize(("answer", "approved", "reason"), [
    ({"reviewed_samples": True, "reviewer": "ana"}, True, "samples reviewed by ana"),
    ({"reviewed_samples": False, "note": "too short"}, False,
     "the reviewer did not confirm reviewing the samples: too short; the full run did not train"),
])
def test_the_answer_given_on_resume_decides_the_review(prefect_api, answer, approved, reason):
    from prefect import flow
    from prefect.flow_runs import resume_flow_run

    from tunegate.events.review import await_review

    name = f"review-answer-probe-{approved}"

    @flow(name=name)
    def probe():
        return await_review("## review", timeout_s=120, poll_s=1)

    thread, out = _in_thread(probe)
    resume_flow_run(_paused_run(name).id, run_input=answer)
    thread.join(60)
    (outcome,) = out
    assert (outcome.approved, outcome.reason) == (approved, reason)


def test_data_changed_while_the_run_waited_for_review_is_refused_after_the_answer(prefect_api, tiny_cache, workdir):
    from prefect.flow_runs import resume_flow_run

    from tunegate.errors import ApprovalError
    from tunegate.flows.full_run import full_run
    from tunegate.flows.preflight import preflight

    spec = str(workdir / "good.yaml")
    assert preflight(spec, advisor=False, return_state=True).is_completed()
    thread, out = _in_thread(lambda: full_run(spec, await_review=True, return_state=True))
    paused = _paused_run("full-run")
    with open(workdir / "train.jsonl", "a") as f:  # someone edits the data while the reviewer reads
        f.write('{"messages": [{"role": "user", "content": "late"}, {"role": "assistant", "content": "edit"}]}\n')
    resume_flow_run(paused.id, run_input={"reviewed_samples": True, "reviewer": "ana"})
    thread.join(120)
    (state,) = out
    with pytest.raises(ApprovalError, match="train data .* changed since it was approved"):
        state.result()
    assert not (workdir / "out" / "full" / "adapter").exists()

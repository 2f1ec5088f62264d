"""prefect.yaml's triggers: they validate as `prefect deploy` validates them, match the events tunegate
emits (and nothing else of ours), and render flow parameters the flows accept.

No server: the trigger and the event go through Prefect's own server-side models, as the
automation service evaluates them.
"""
from __future__ import annotations

from uuid import uuid4

import pytest
import yaml

from tests.support.paths import ROOT
from tunegate.events.payload import DATASET_EVENT, EventMessage, dataset_event, preflight_event
from tunegate.report import REQUIRED_GATES, GateReport, StageResult

DEPLOYMENTS = {d["name"]: d for d in yaml.safe_load((ROOT / "prefect.yaml").read_text())["deployments"]}
TRAIN = {"digest": "a" * 64, "records": 85, "file": "/data/train.jsonl"}
VALIDATION = {"digest": "b" * 64, "records": 20, "file": "/data/validation.jsonl"}


def _trigger(deployment: str):
    """The one trigger of a deployment, validated as `prefect deploy` does and turned into its automation."""
    from prefect.cli.deploy._triggers import _initialize_deployment_triggers  # what `prefect deploy` calls
    from prefect.server.events.schemas.automations import Automation

    (trigger,) = _initialize_deployment_triggers(deployment, [dict(t) for t in DEPLOYMENTS[deployment]["triggers"]])
    trigger.set_deployment_id(uuid4())
    return Automation.model_validate(trigger.as_automation().model_dump(mode="json"))


def _received(message: EventMessage):
    from prefect.events import Event
    from prefect.server.events.schemas.events import Event as ServerEvent

    # Built as send_event builds it, then as the server's POST /events route takes and receives it.
    sent = Event(event=message.event, resource=message.resource, payload=message.payload)
    return ServerEvent.model_validate(sent.model_dump(mode="json")).receive()


def _rendered(automation, event) -> dict:
    """The flow parameters the automation's run-deployment action would pass for this event."""
    from prefect.utilities.schema_tools import hydration

    (action,) = automation.actions
    params = dict(action.parameters)
    action._upgrade_v1_templates(params)
    return hydration.hydrate(params, hydration.HydrationContext(render_jinja=True, jinja_context={"event": event},
                                                                raise_on_error=True))


def _approved(tmp_path, approved: bool = True):
    stages = [StageResult(name=n, status="passed") for n in REQUIRED_GATES if approved or n != "mini-run"]
    report = GateReport.from_stages(stages, fingerprints={"train": TRAIN, "validation": VALIDATION,
                                                          "spec": {"digest": "c" * 64}})
    return preflight_event(report, tmp_path / "run.yaml", tmp_path / "run.json")


def test_preflight_and_full_run_have_one_trigger_each_and_the_others_none():
    assert {n: len(d.get("triggers") or []) for n, d in DEPLOYMENTS.items()} == {
        "preflight": 1, "nightly-sweep": 0, "mini-run": 0, "full-run": 1, "sweep-candidate": 0}


def test_a_dataset_version_event_starts_a_preflight_of_the_spec_it_names(tmp_path):
    automation = _trigger("preflight")
    event = _received(dataset_event(tmp_path / "run.yaml", {"train": TRAIN, "validation": VALIDATION}))
    assert event.event == DATASET_EVENT and automation.trigger.covers(event)
    assert _rendered(automation, event) == {"spec_path": str(tmp_path / "run.yaml")}


def test_an_approved_preflight_event_starts_a_full_run_that_waits_for_review(tmp_path):
    automation = _trigger("full-run")
    event = _received(_approved(tmp_path))
    assert automation.trigger.covers(event)
    assert _rendered(automation, event) == {"spec_path": str(tmp_path / "run.yaml"),
                                            "report_file": str(tmp_path / "run.json"), "await_review": True}


@pytest.mark.parametrize("deployment", ["preflight", "full-run"])
def test_a_rejected_preflight_starts_nothing(tmp_path, deployment):
    event = _received(_approved(tmp_path, approved=False))
    assert event.event == "tunegate.preflight.rejected"
    assert not _trigger(deployment).trigger.covers(event)


def test_each_trigger_ignores_the_other_ones_event(tmp_path):
    dataset = _received(dataset_event(tmp_path / "run.yaml", {"train": TRAIN}))
    assert not _trigger("full-run").trigger.covers(dataset)
    assert not _trigger("preflight").trigger.covers(_received(_approved(tmp_path)))


@pytest.mark.parametrize("deployment", ["preflight", "full-run"])
def test_the_rendered_parameters_pass_the_flows_own_parameter_schema(tmp_path, deployment):
    from prefect.flows import load_flow_from_entrypoint
    from prefect.utilities.callables import parameter_schema
    from prefect.utilities.schema_tools.validation import validate

    message = dataset_event(tmp_path / "s.yaml", {"train": TRAIN}) if deployment == "preflight" else _approved(tmp_path)
    params = _rendered(_trigger(deployment), _received(message))
    flow = load_flow_from_entrypoint(DEPLOYMENTS[deployment]["entrypoint"])
    assert validate(params, parameter_schema(flow).model_dump_for_openapi(), raise_on_error=True) == []

"""The events tunegate emits carry digests, counts and paths we computed: never a record, never a secret."""
from __future__ import annotations

import json

from tunegate.events.payload import (
    APPROVED_EVENT,
    DATASET_EVENT,
    REJECTED_EVENT,
    data_resource_id,
    dataset_event,
    preflight_event,
)
from tunegate.events.paths import root_digest
from tunegate.gate import check
from tunegate.report import REQUIRED_GATES, GateReport, StageResult

TRAIN = {"digest": "a" * 64, "records": 85, "file": "/data/train.jsonl", "algorithm": "sha256-canonical-jsonl"}
VALIDATION = {"digest": "b" * 64, "records": 20, "file": "/data/validation.jsonl"}


def test_the_dataset_event_names_the_spec_path_in_its_project_and_each_split_digest(tmp_path):
    (tmp_path / "prefect.yaml").touch()  # the project's root
    spec = tmp_path / "run.yaml"
    msg = dataset_event(spec, {"train": TRAIN, "validation": VALIDATION}, spec_digest="c" * 64)
    assert msg.event == DATASET_EVENT
    assert msg.payload == {"spec_path": "run.yaml", "project_root_digest": root_digest(tmp_path),
                           "data": {"train": TRAIN, "validation": VALIDATION}, "spec_digest": "c" * 64}
    assert msg.resource["tunegate.train.digest"] == "a" * 64
    assert msg.resource["tunegate.validation.digest"] == "b" * 64


def test_a_spec_in_no_project_travels_as_its_absolute_path(tmp_path):
    msg = dataset_event(tmp_path / "run.yaml", {"train": TRAIN})
    assert msg.payload["spec_path"] == str((tmp_path / "run.yaml").resolve())
    assert "project_root_digest" not in msg.payload


def test_the_resource_id_is_one_per_exact_data_version():
    one = data_resource_id({"train": TRAIN, "validation": VALIDATION})
    assert one.startswith("tunegate.dataset.") and len(one) == len("tunegate.dataset.") + 64
    assert one == data_resource_id({"validation": VALIDATION, "train": TRAIN})  # order does not matter
    assert one != data_resource_id({"train": {**TRAIN, "digest": "d" * 64}, "validation": VALIDATION})


def test_only_the_fingerprint_keys_travel_whatever_else_a_fingerprint_dict_holds():
    loaded = {**TRAIN, "sample": "user: my password is hunter2", "api_key": "sk-live"}
    msg = dataset_event("spec.yaml", {"train": loaded})
    assert msg.payload["data"]["train"] == TRAIN
    assert "hunter2" not in msg.model_dump_json() and "sk-live" not in msg.model_dump_json()


def test_an_approved_report_gives_the_approved_event_with_the_report_file_and_digests(tmp_path):
    passed = [StageResult(name=name, status="passed") for name in REQUIRED_GATES]
    report = GateReport.from_stages(passed, fingerprints={"train": TRAIN, "validation": VALIDATION,
                                                          "spec": {"digest": "c" * 64}})
    assert report.approved_for_full_run  # derived from the stages, as a preflight's report is
    msg = preflight_event(report, tmp_path / "run.yaml", tmp_path / ".tunegate/reports/run.json")
    assert msg.event == APPROVED_EVENT
    assert msg.resource["prefect.resource.id"] == "tunegate.spec." + "c" * 64
    assert msg.payload["report_file"] == str((tmp_path / ".tunegate/reports/run.json").resolve())  # in no project
    assert msg.payload["spec_digest"] == "c" * 64
    assert msg.payload["data"] == {"train": TRAIN, "validation": VALIDATION}


def test_a_rejected_check_of_broken_data_gives_the_rejected_event_without_any_record_text(data_dir, tmp_path):
    spec = data_dir / "flows" / "bad_data.yaml"
    report = check(spec)
    msg = preflight_event(report, spec, tmp_path / "bad_data.json")
    assert msg.event == REJECTED_EVENT and msg.payload["approved_for_full_run"] is False
    sent = json.dumps(msg.payload)
    for line in (data_dir / "flows" / "bad_train.jsonl").read_text().splitlines():
        for message in json.loads(line).get("messages", []):
            if len(message.get("content") or "") > 12:  # no record's text reaches the event
                assert message["content"] not in sent

"""The review form a triggered full run pauses on: what the UI shows, what it accepts, what it refuses."""
from __future__ import annotations

import pydantic
import pytest

from tunegate.events.review import SampleReview, review_description
from tunegate.report import REQUIRED_GATES, GateReport, StageResult

TRAIN = {"digest": "a" * 64, "records": 85, "file": "/data/train.jsonl"}
VALIDATION = {"digest": "b" * 64, "records": 20, "file": "/data/validation.jsonl"}


def test_the_form_starts_unticked_so_a_bare_resume_refuses():
    assert SampleReview().reviewed_samples is False


def test_the_ui_form_labels_the_box_i_reviewed_the_samples():
    schema = SampleReview.model_json_schema()
    assert schema["properties"]["reviewed_samples"]["description"] == "I reviewed the samples"
    assert set(schema["properties"]) == {"reviewed_samples", "reviewer", "note"}


def test_an_answer_with_an_unknown_key_is_refused():
    with pytest.raises(pydantic.ValidationError, match="approve"):
        SampleReview.model_validate({"reviewed_samples": True, "approve": True})


def test_the_description_names_the_report_the_artifact_the_samples_command_and_the_digests():
    approval = GateReport.from_stages([StageResult(name=n, status="passed") for n in REQUIRED_GATES],
                                      fingerprints={"train": TRAIN, "validation": VALIDATION})
    text = review_description("/specs/run.yaml", approval, "/specs/.tunegate/reports/run.json", "tunegate-report-run")
    assert "/specs/.tunegate/reports/run.json" in text and "`tunegate-report-run`" in text
    assert "tunegate samples /specs/run.yaml" in text
    assert "| train | `train.jsonl` | 85 | `aaaaaaaaaaaaaaaa…` |" in text
    assert "| validation | `validation.jsonl` | 20 |" in text


def test_the_description_is_stored_with_the_form_prefect_shows():
    form = SampleReview.with_initial_data(description="## Review")
    assert form._description == "## Review" and issubclass(form, SampleReview)

"""`--output-format junit`: a suite per stage, a failed case per error finding, skipped stages skipped."""
from __future__ import annotations

import xml.etree.ElementTree as ET

from tests.support.paths import DATA, ROOT
from tunegate import check
from tunegate.output.junit import junit_xml

BAD = DATA / "dataset" / "bad"


def _parse(report) -> ET.Element:
    return ET.fromstring(junit_xml(report))


def test_a_rejected_dataset_fails_one_case_per_error_and_skips_the_later_stages():
    root = _parse(check(train=BAD / "last_from_user.jsonl", validation=BAD / "system_not_first.jsonl"))
    suites = {s.get("name"): s for s in root}
    dataset = suites["tunegate.dataset"]
    failures = dataset.findall("testcase/failure")
    assert [f.get("type") for f in failures] == ["TG204"]
    assert "last_from_user.jsonl:2:" in failures[0].text and "fix: " in failures[0].text
    warned = [c for c in dataset if c.find("system-out") is not None]
    assert [c.get("name").split()[0] for c in warned] == ["TG208"]
    assert suites["tunegate.overlap"].find("testcase/skipped").get("message") == "an earlier stage failed"
    assert (root.get("failures"), root.get("skipped")) == ("1", "2")  # overlap skipped; the spec stage too


def test_an_approved_spec_is_all_passed_cases():
    root = _parse(check(ROOT / "examples" / "quickstart.yaml"))
    assert root.get("failures") == "0" and int(root.get("tests")) == 4
    assert {s.get("name") for s in root} == {"tunegate.spec", "tunegate.dataset", "tunegate.overlap",
                                             "tunegate.estimate"}


def test_a_stage_not_run_here_is_skipped_and_keeps_the_finding_that_says_why(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    spec = tmp_path / "spec.yaml"
    text = (ROOT / "examples" / "quickstart.yaml").read_text(encoding="utf-8")
    spec.write_text(text.replace("tunegate/tiny-llama", "acme/never-published-7b")
                    .replace("data/", str(ROOT / "examples" / "data") + "/"), encoding="utf-8")
    estimate = {s.get("name"): s for s in _parse(check(spec))}["tunegate.estimate"]
    assert "not on this machine" in estimate.find("testcase/skipped").get("message")
    said = [c for c in estimate if c.find("system-out") is not None]
    assert [c.get("name").split()[0] for c in said] == ["TG404"]

"""`--output-format sarif`: a SARIF 2.1.0 log, valid against the OASIS schema, a result per finding."""
from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from tests.support.paths import DATA, ROOT
from tunegate import check
from tunegate.output.sarif import sarif_log

SCHEMA = json.loads((DATA / "output" / "sarif-schema-2.1.0.json").read_text())
BAD = DATA / "dataset" / "bad"


@pytest.fixture(scope="module")
def rejected():
    """A spec with seven errors, and a dataset with an error and a warning, each at its line."""
    spec = check(ROOT / "examples" / "broken.yaml")
    data = check(train=BAD / "last_from_user.jsonl", validation=BAD / "system_not_first.jsonl")
    return spec, data


def test_the_log_is_valid_sarif_2_1_0(rejected):
    for report in rejected:
        jsonschema.Draft4Validator(SCHEMA).validate(sarif_log(report, "0.1.0", ROOT))


def test_an_invalid_log_is_caught_by_the_same_validator():
    with pytest.raises(jsonschema.ValidationError):  # the check can fail: a result without its message
        run = {"tool": {"driver": {"name": "tunegate"}}, "results": [{"ruleId": "TG204"}]}
        jsonschema.Draft4Validator(SCHEMA).validate({"version": "2.1.0", "runs": [run]})


def test_each_finding_is_a_result_at_its_line_and_column_relative_to_the_checkout(rejected):
    _, data = rejected
    results = sarif_log(data, "0.1.0", ROOT)["runs"][0]["results"]
    by_code = {r["ruleId"]: r for r in results}
    last = by_code["TG204"]
    location = last["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "tests/data/dataset/bad/last_from_user.jsonl"
    assert location["region"]["startLine"] == 2 and location["region"]["startColumn"] >= 1
    assert (last["level"], by_code["TG208"]["level"]) == ("error", "warning")
    assert "fix: " in last["message"]["text"]


def test_spec_findings_point_at_the_spec_line_and_every_rule_is_declared_once(rejected):
    spec, _ = rejected
    run = sarif_log(spec, "0.1.0", ROOT)["runs"][0]
    rules = [r["id"] for r in run["tool"]["driver"]["rules"]]
    assert rules == sorted(set(rules)) and set(rules) == {"TG101", "TG102", "TG103", "TG107", "TG108", "TG117"}
    for result in run["results"]:
        assert rules[result["ruleIndex"]] == result["ruleId"]
        loc = result["locations"][0]["physicalLocation"]
        assert loc["artifactLocation"]["uri"] == "examples/broken.yaml" and loc["region"]["startLine"] > 1


def test_a_file_outside_the_checkout_is_named_by_a_file_uri(rejected, tmp_path: Path):
    _, data = rejected
    uri = sarif_log(data, "0.1.0", tmp_path)["runs"][0]["results"][0]["locations"][0]["physicalLocation"]
    assert uri["artifactLocation"]["uri"].startswith("file:///")

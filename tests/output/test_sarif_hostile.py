"""`--output-format sarif` on hostile places and text: valid SARIF 2.1.0 that GitHub code scanning takes.

Beyond the OASIS schema, code scanning refuses a whole upload when one result has no location
("locationFromSarifResult: expected at least one location", github/codeql-action#2459), and reads
`artifactLocation.uri` as a URI relative to the checkout.
"""
from __future__ import annotations

import json
from urllib.parse import unquote, urlsplit

import jsonschema

from tests.output.actions_runner import commands
from tests.support.paths import DATA, ROOT
from tunegate import check
from tunegate.output.sarif import sarif_log, sarif_text
from tunegate.report import Finding, GateReport, StageResult

SCHEMA = json.loads((DATA / "output" / "sarif-schema-2.1.0.json").read_text())
HOSTILE = DATA / "output" / "hostile"


def hostile_data() -> GateReport:
    return check(train=HOSTILE / "a b,c:d.jsonl", validation=HOSTILE / "validation.jsonl")


def results(text: str) -> list[dict]:
    log = json.loads(text)
    jsonschema.Draft4Validator(SCHEMA).validate(log)
    return log["runs"][0]["results"]


def test_a_file_name_with_spaces_commas_and_colons_is_a_percent_encoded_relative_uri():
    found = results(sarif_text(hostile_data(), "0.1.0", ROOT))
    artifact = found[0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert artifact == {"uri": "tests/data/output/hostile/a%20b%2Cc%3Ad.jsonl", "uriBaseId": "%SRCROOT%"}
    assert urlsplit(artifact["uri"]).scheme == "" and unquote(artifact["uri"]).endswith("/a b,c:d.jsonl")


def test_a_non_ascii_file_name_is_encoded_as_utf8():
    f = Finding(code="TG999", severity="error", stage="dataset", message="m", file="data/café#1?.jsonl", line=1)
    report = GateReport.from_stages([StageResult(name="dataset", status="failed", findings=[f],
                                                 totals_by_code={"TG999": 1})])
    uri = results(sarif_text(report, "0.1.0", ROOT))[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert uri == "data/caf%C3%A9%231%3F.jsonl"


def test_every_result_has_a_location_even_a_finding_that_names_no_file():
    unplaced = Finding(code="TG599", severity="error", stage="mini-run", message="loss is NaN at step 3")
    report = GateReport.from_stages([StageResult(name="mini-run", status="failed", findings=[unplaced],
                                                 totals_by_code={"TG599": 1})], spec="examples/quickstart.yaml")
    (result,) = results(sarif_text(report, "0.1.0", ROOT))
    location = result["locations"][0]["physicalLocation"]
    assert location == {"artifactLocation": {"uri": "examples/quickstart.yaml", "uriBaseId": "%SRCROOT%"}}


def test_a_spec_key_finding_without_a_line_has_no_region():
    f = Finding(code="TG999", severity="warning", stage="spec", message="m", key="lora.r")
    report = GateReport.from_stages([StageResult(name="spec", status="passed", findings=[f],
                                                 totals_by_code={"TG999": 1})], spec="examples/quickstart.yaml")
    (result,) = results(sarif_text(report, "0.1.0", ROOT))
    assert "region" not in result["locations"][0]["physicalLocation"]


def test_columns_are_declared_as_code_points_the_unit_tunegate_counts():
    log = sarif_log(hostile_data(), "0.1.0", ROOT)
    assert log["runs"][0]["columnKind"] == "unicodeCodePoints"


def test_quoted_commands_stay_json_strings_and_no_line_reads_as_a_runner_command():
    text = sarif_text(check(HOSTILE / "spec.yaml"), "0.1.0", ROOT)
    assert commands(text) == []  # `##[stop-commands]` is written \\u0023#[ ...
    messages = [r["message"]["text"] for r in results(text)]
    assert any("##[stop-commands]halt <b>&</b>" in m for m in messages)  # ... and reads back as itself
    assert any("'lora.dropout\n::warning::x'" in m for m in messages)


def test_a_lone_surrogate_in_a_message_is_written_as_its_escape():
    f = Finding(code="TG999", severity="error", stage="dataset", message="cut \ud83d here", file="a.jsonl", line=1)
    report = GateReport.from_stages([StageResult(name="dataset", status="failed", findings=[f],
                                                 totals_by_code={"TG999": 1})])
    text = sarif_text(report, "0.1.0", ROOT)
    text.encode("utf-8")
    assert results(text)[0]["message"]["text"] == "cut \\ud83d here"

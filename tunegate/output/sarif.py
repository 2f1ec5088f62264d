"""SARIF 2.1.0: each finding a result at its file, line and column, each code a rule.

GitHub code scanning (`github/codeql-action/upload-sarif`) shows the results as annotations on
the dataset lines. tests/data/output holds the OASIS JSON Schema the output is validated against.
What code scanning adds to the schema is kept too: every result has a location (it refuses the whole
upload otherwise, "locationFromSarifResult: expected at least one location"), so a finding that
names no file is anchored at the spec (else the training file) without a region; every ruleId is a
rule of the driver. Columns count Unicode code points, as tunegate's do (`columnKind`; SARIF's
default is UTF-16 code units, which an emoji earlier on the line would shift).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tunegate.output.places import anchor_of, artifact_uri, file_of
from tunegate.output.safe import encodable_tree, json_without_legacy_commands
from tunegate.report import Finding, GateReport

SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
LEVELS = {"error": "error", "warning": "warning", "info": "note"}


def sarif_log(report: GateReport, version: str, root: Path | None = None) -> dict[str, Any]:
    """The report as one SARIF log with one run."""
    findings = report.findings
    codes = sorted({f.code for f in findings})
    rules = [_rule(code, next(f for f in findings if f.code == code)) for code in codes]
    results = [_result(f, codes.index(f.code), report, root) for f in findings]
    run = {"tool": {"driver": {"name": "tunegate", "version": version,
                               "informationUri": "https://pypi.org/project/tunegate/", "rules": rules}},
           "columnKind": "unicodeCodePoints",
           "results": results,
           "invocations": [{"executionSuccessful": True,
                            "properties": {"approved_for_full_run": report.approved_for_full_run,
                                           "gates_passed": report.gates_passed, "counts": report.counts}}]}
    return {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}


def sarif_text(report: GateReport, version: str, root: Path | None = None) -> str:
    """The log as JSON text: strings encodable as UTF-8, and no `##[` a CI runner would read as a command."""
    text = json.dumps(encodable_tree(sarif_log(report, version, root)), indent=2, ensure_ascii=False)
    return json_without_legacy_commands(text) + "\n"


def _rule(code: str, example: Finding) -> dict[str, Any]:
    rule: dict[str, Any] = {"id": code, "name": code,
                            "shortDescription": {"text": f"{example.stage} check {code} (see docs/checks.md)"},
                            "defaultConfiguration": {"level": LEVELS[example.severity]}}
    if example.hint:
        rule["help"] = {"text": example.hint}
    return rule


def _result(f: Finding, rule_index: int, report: GateReport, root: Path | None) -> dict[str, Any]:
    text = f.message + (f"\nfix: {f.hint}" if f.hint else "")
    result: dict[str, Any] = {"ruleId": f.code, "ruleIndex": rule_index, "level": LEVELS[f.severity],
                              "message": {"text": text}}
    path = anchor_of(f, report)
    if path is not None:
        uri, relative = artifact_uri(path, root)
        artifact = {"uri": uri, "uriBaseId": "%SRCROOT%"} if relative else {"uri": uri}
        location: dict[str, Any] = {"artifactLocation": artifact}
        if f.line is not None and file_of(f, report.spec) is not None:  # not a line of an anchor
            region = {"startLine": f.line}
            if f.column is not None:
                region["startColumn"] = f.column
            location["region"] = region
        result["locations"] = [{"physicalLocation": location}]
    properties = {k: v for k, v in (("stage", f.stage), ("record", f.record), ("key", f.key)) if v is not None}
    result["properties"] = properties
    return result

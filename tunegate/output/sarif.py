"""SARIF 2.1.0: each finding a result at its file, line and column, each code a rule.

GitHub code scanning (`github/codeql-action/upload-sarif`) shows the results as annotations on
the dataset lines. tests/data/output holds the OASIS JSON Schema the output is validated against.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tunegate.output.places import file_of, relative_uri
from tunegate.report import Finding, GateReport

SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
LEVELS = {"error": "error", "warning": "warning", "info": "note"}


def sarif_log(report: GateReport, version: str, root: Path | None = None) -> dict[str, Any]:
    """The report as one SARIF log with one run."""
    findings = report.findings
    codes = sorted({f.code for f in findings})
    rules = [_rule(code, next(f for f in findings if f.code == code)) for code in codes]
    results = [_result(f, codes.index(f.code), report.spec, root) for f in findings]
    run = {"tool": {"driver": {"name": "tunegate", "version": version,
                               "informationUri": "https://pypi.org/project/tunegate/", "rules": rules}},
           "results": results,
           "invocations": [{"executionSuccessful": True,
                            "properties": {"approved_for_full_run": report.approved_for_full_run,
                                           "gates_passed": report.gates_passed, "counts": report.counts}}]}
    return {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}


def sarif_text(report: GateReport, version: str, root: Path | None = None) -> str:
    return json.dumps(sarif_log(report, version, root), indent=2, ensure_ascii=False) + "\n"


def _rule(code: str, example: Finding) -> dict[str, Any]:
    rule: dict[str, Any] = {"id": code, "name": code,
                            "shortDescription": {"text": f"{example.stage} check {code} (see docs/checks.md)"},
                            "defaultConfiguration": {"level": LEVELS[example.severity]}}
    if example.hint:
        rule["help"] = {"text": example.hint}
    return rule


def _result(f: Finding, rule_index: int, spec: str | None, root: Path | None) -> dict[str, Any]:
    text = f.message + (f"\nfix: {f.hint}" if f.hint else "")
    result: dict[str, Any] = {"ruleId": f.code, "ruleIndex": rule_index, "level": LEVELS[f.severity],
                              "message": {"text": text}}
    path = file_of(f, spec)
    if path is not None:
        location: dict[str, Any] = {"artifactLocation": {"uri": relative_uri(path, root)}}
        if f.line is not None:
            region = {"startLine": f.line}
            if f.column is not None:
                region["startColumn"] = f.column
            location["region"] = region
        result["locations"] = [{"physicalLocation": location}]
    properties = {k: v for k, v in (("stage", f.stage), ("record", f.record), ("key", f.key)) if v is not None}
    result["properties"] = properties
    return result

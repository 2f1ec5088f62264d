"""The document a machine format gets when the run ended without a report (exit 1, 2 or 3).

    failure_text("sarif", 3, "internal error: KeyError: 'x'", "0.1.0")

A CI job that writes `--output-format sarif > tunegate.sarif` and uploads it in a later step (or
hands JUnit XML to Jenkins) must not get an empty file, which those consumers refuse with an error
that names a parser, not the cause. Each format says, in its own way, that nothing was checked:
SARIF an unsuccessful invocation with the error as a tool notification and no result; JUnit one
errored test case; GitHub one error annotation; JSON a document with `"error"` and no approval
(it is not a report: reading it back as one fails, so it cannot pass for one).
"""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET

from tunegate.output.github import command
from tunegate.output.safe import encodable, json_without_legacy_commands, xml_legal

KINDS = {1: "rejected", 2: "usage error", 3: "internal error"}


def failure_text(fmt: str, exit_code: int, message: str, version: str) -> str:
    """The failure in `fmt` (json, sarif, junit or github), ending with a newline."""
    kind = KINDS.get(exit_code, "error")
    message = encodable(message)
    if fmt == "github":
        return command("error", message, title=f"tunegate {kind} (exit {exit_code})") + "\n"
    if fmt == "junit":
        return _junit(kind, exit_code, message)
    doc = _sarif(kind, exit_code, message, version) if fmt == "sarif" else {
        "approved_for_full_run": False, "gates_passed": False,
        "error": {"kind": kind, "exit_code": exit_code, "message": message},
        "stages": [], "findings": [], "counts": {"error": 0, "warning": 0, "info": 0}}
    return json_without_legacy_commands(json.dumps(doc, indent=2, ensure_ascii=False)) + "\n"


def _sarif(kind: str, exit_code: int, message: str, version: str) -> dict:
    from tunegate.output.sarif import SCHEMA_URI

    notice = {"level": "error", "message": {"text": f"tunegate {kind}: {message}"},
              "descriptor": {"id": kind.replace(" ", "-")}}
    run = {"tool": {"driver": {"name": "tunegate", "version": version,
                               "informationUri": "https://pypi.org/project/tunegate/", "rules": []}},
           "results": [],
           "invocations": [{"executionSuccessful": False, "exitCode": exit_code,
                            "toolExecutionNotifications": [notice],
                            "properties": {"approved_for_full_run": False, "gates_passed": False}}]}
    return {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}


def _junit(kind: str, exit_code: int, message: str) -> str:
    from tunegate.output.junit import inert

    suites = ET.Element("testsuites", name="tunegate", tests="1", failures="0", errors="1", skipped="0")
    suite = ET.SubElement(suites, "testsuite", name="tunegate", tests="1", failures="0", errors="1", skipped="0")
    case = ET.SubElement(suite, "testcase", classname="tunegate", name=f"tunegate run ({kind})")
    error = ET.SubElement(case, "error", message=xml_legal(message), type=f"exit {exit_code}")
    error.text = xml_legal(f"tunegate {kind} (exit {exit_code}): {message}")
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + inert(ET.tostring(suites, encoding="unicode")) + "\n"

"""JUnit XML: one test suite per stage, one test case per finding, so CI test tabs list each problem.

An error finding is a failed case, a warning or note a passed case whose message is in its
system-out, a skipped stage a skipped case, and a stage with nothing to say one passed case.
Jenkins, GitLab (`artifacts:reports:junit`) and GitHub's test-report actions all read this shape.

Quoted text stays data: ElementTree escapes `<`, `&` and quotes; a character XML 1.0 cannot hold
at all (NUL, ESC and the other C0 controls, a lone surrogate) is written as a visible `\\xNN`
escape, never emitted; and since the document is often printed in a CI log, a CR, a line of text
that would start with `::` and a `##[` are written as character references (`&#13;`, `&#58;`,
`&#35;`): the same text to an XML parser, no workflow command to GitHub's runner.
"""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

from tunegate.output.places import file_of, repo_path
from tunegate.output.safe import LEGACY_COMMAND, xml_legal
from tunegate.report import Finding, GateReport, StageResult

_COMMAND_LINE = re.compile(r"\n(\s*)::")  # the runner trims any leading white space first


def junit_xml(report: GateReport, root: Path | None = None) -> str:
    suites = ET.Element("testsuites", name="tunegate", tests="0", failures="0", skipped="0")
    totals = {"tests": 0, "failures": 0, "skipped": 0}
    for stage in report.stages:
        suite = _suite(stage, report.spec, root)
        suites.append(suite)
        for key in totals:
            totals[key] += int(suite.get(key, "0"))
    for key, value in totals.items():
        suites.set(key, str(value))
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + inert(ET.tostring(suites, encoding="unicode")) + "\n"


def inert(xml: str) -> str:
    """The serialised document with no line a CI runner would take for a command (see the docstring)."""
    xml = xml.replace("\r", "&#13;").replace(LEGACY_COMMAND, "&#35;#[")
    return _COMMAND_LINE.sub(lambda m: f"\n{m.group(1)}&#58;:", xml)


def _suite(stage: StageResult, spec: str | None, root: Path | None) -> ET.Element:
    suite = ET.Element("testsuite", name=f"tunegate.{stage.name}", time=f"{stage.duration_s:.3f}")
    cases = [_case(stage, f, spec, root) for f in stage.findings]
    if stage.status == "skipped":
        case = ET.Element("testcase", classname=f"tunegate.{stage.name}", name=stage.name)
        ET.SubElement(case, "skipped", message=xml_legal(stage.reason))
        cases = [*cases, case]  # a stage not run here may say why in a finding (the estimate's TG404)
    elif not cases:
        cases = [ET.Element("testcase", classname=f"tunegate.{stage.name}", name=f"{stage.name} passed",
                            time=f"{stage.duration_s:.3f}")]
    hidden = sum(stage.totals_by_code.values()) - len(stage.findings)
    if hidden > 0:
        out = ET.SubElement(suite, "system-out")
        out.text = f"{hidden} more finding(s) not listed (totals by code: {stage.totals_by_code})"
    suite.extend(cases)
    suite.set("tests", str(len(cases)))
    suite.set("failures", str(sum(1 for c in cases if c.find("failure") is not None)))
    suite.set("skipped", str(sum(1 for c in cases if c.find("skipped") is not None)))
    return suite


def _case(stage: StageResult, f: Finding, spec: str | None, root: Path | None) -> ET.Element:
    place = xml_legal(f.place())
    case = ET.Element("testcase", classname=f"tunegate.{stage.name}", name=f"{f.code} {place}")
    path = file_of(f, spec)
    if path:
        case.set("file", xml_legal(repo_path(path, root)))
        if f.line is not None:
            case.set("line", str(f.line))
    detail = xml_legal(f"{place} {f.code} {f.severity}: {f.message}" + (f"\nfix: {f.hint}" if f.hint else ""))
    if f.severity == "error":
        failure = ET.SubElement(case, "failure", message=xml_legal(f.message), type=f.code)
        failure.text = detail
    else:
        out = ET.SubElement(case, "system-out")
        out.text = detail
    return case

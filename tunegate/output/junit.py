"""JUnit XML: one test suite per stage, one test case per finding, so CI test tabs list each problem.

An error finding is a failed case, a warning or note a passed case whose message is in its
system-out, a skipped stage a skipped case, and a stage with nothing to say one passed case.
Jenkins, GitLab (`artifacts:reports:junit`) and GitHub's test-report actions all read this shape.
"""
from __future__ import annotations

import xml.etree.ElementTree as ET

from tunegate.report import Finding, GateReport, StageResult


def junit_xml(report: GateReport) -> str:
    suites = ET.Element("testsuites", name="tunegate", tests="0", failures="0", skipped="0")
    totals = {"tests": 0, "failures": 0, "skipped": 0}
    for stage in report.stages:
        suite = _suite(stage)
        suites.append(suite)
        for key in totals:
            totals[key] += int(suite.get(key, "0"))
    for key, value in totals.items():
        suites.set(key, str(value))
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"


def _suite(stage: StageResult) -> ET.Element:
    suite = ET.Element("testsuite", name=f"tunegate.{stage.name}", time=f"{stage.duration_s:.3f}")
    cases = [_case(stage, f) for f in stage.findings]
    if stage.status == "skipped":
        case = ET.Element("testcase", classname=f"tunegate.{stage.name}", name=stage.name)
        ET.SubElement(case, "skipped", message=stage.reason)
        cases = [case]
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


def _case(stage: StageResult, f: Finding) -> ET.Element:
    case = ET.Element("testcase", classname=f"tunegate.{stage.name}", name=f"{f.code} {f.place()}")
    if f.file:
        case.set("file", f.file)
    if f.line is not None:
        case.set("line", str(f.line))
    detail = f"{f.place()} {f.code} {f.severity}: {f.message}" + (f"\nfix: {f.hint}" if f.hint else "")
    if f.severity == "error":
        failure = ET.SubElement(case, "failure", message=f.message, type=f.code)
        failure.text = detail
    else:
        out = ET.SubElement(case, "system-out")
        out.text = detail
    return case

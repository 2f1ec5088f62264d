"""`--output-format junit` on hostile text: well-formed XML 1.0 for every real reader, inert in a CI log."""
from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from tests.output.actions_runner import commands
from tests.output.hostile_reports import HOSTILE, report_of
from tests.support.paths import ROOT
from tunegate import check
from tunegate.output.junit import junit_xml
from tunegate.report import Finding

CONTROLS = "nul\x00 bell\x07 esc\x1b[31m ff\x0c unit\x1f lone\ud800 end"



def test_characters_xml_cannot_hold_are_visible_escapes_and_every_parser_reads_the_file(tmp_path):
    f = Finding(code="TG999", severity="error", stage="dataset", message=CONTROLS, hint="tab\there", file="a.jsonl",
                line=1)
    xml = junit_xml(report_of(f), ROOT)
    failure = ET.fromstring(xml).find("testsuite/testcase/failure")
    assert failure.get("message") == "nul\\x00 bell\\x07 esc\\x1b[31m ff\\x0c unit\\x1f lone\\ud800 end"
    assert failure.text.endswith("\nfix: tab\there")
    path = tmp_path / "junit.xml"
    path.write_text(xml, encoding="utf-8")
    lxml = pytest.importorskip("lxml.etree")
    lxml.parse(str(path))  # libxml2 refuses a control character, even written as &#0;
    junitparser = pytest.importorskip("junitparser")
    (case,) = [c for suite in junitparser.JUnitXml.fromfile(str(path)) for c in suite]
    assert case.result[0].message.startswith("nul\\x00")


def test_a_quoted_newline_cr_and_commands_do_not_become_lines_the_runner_reads():
    nasty = "a\r::error::cr\n  ::stop-commands::tok\n##[add-mask]secret ]]> <b>&</b>"
    f = Finding(code="TG999", severity="warning", stage="dataset", message=nasty, file="a.jsonl", line=1)
    xml = junit_xml(report_of(f), ROOT)
    assert commands(xml) == []
    out = ET.fromstring(xml).find("testsuite/testcase/system-out").text
    assert nasty in out  # the same text to an XML parser: the CR is &#13;, the `::` after a newline &#58;:


def test_records_and_a_spec_quoting_commands_give_well_formed_inert_junit():
    for report in (check(train=HOSTILE / "a b,c:d.jsonl", validation=HOSTILE / "validation.jsonl"),
                   check(HOSTILE / "spec.yaml")):
        xml = junit_xml(report, ROOT)
        assert commands(xml) == []
        root = ET.fromstring(xml)
        assert int(root.get("failures")) == len([f for f in report.findings if f.severity == "error"]) > 0


def test_a_case_names_its_file_relative_to_the_checkout():
    report = check(train=HOSTILE / "a b,c:d.jsonl", validation=HOSTILE / "validation.jsonl")
    files = {c.get("file") for c in ET.fromstring(junit_xml(report, ROOT)).iter("testcase") if c.get("file")}
    assert files == {"tests/data/output/hostile/a b,c:d.jsonl"}

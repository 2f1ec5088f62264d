"""Every human form of a rejected report lists its blocking errors before its warnings.

tests/data/flows/bad_data.yaml has a spec-stage warning (TG176: a sweep candidate the sweep will
reject) and a dataset error (TG204: a record ending with the user's turn), found in that order.
"""
from __future__ import annotations

import pytest

from tests.support.paths import DATA
from tunegate.gate import check
from tunegate.output.html import html_page
from tunegate.output.markdown import markdown_with_charts
from tunegate.render import markdown, terminal

SPEC = DATA / "flows" / "bad_data.yaml"


@pytest.fixture(scope="module")
def report():
    found = check(SPEC)
    assert not found.gates_passed
    return found


def _before(text: str, first: str, then: str) -> bool:
    return first in text and then in text and text.index(first) < text.index(then)


def test_the_report_json_keeps_the_order_the_stages_found_them(report):
    assert [f.code for f in report.findings] == ["TG176", "TG204"]


def test_the_terminal_shows_the_error_under_its_stage_and_the_warning_after_as_not_blocking(report):
    text = terminal(report)
    assert _before(text, "TG204 error", "TG176 warning")
    assert _before(text, "not blocking:", "TG176 warning")
    assert _before(text, "[2/", "TG204 error")  # still under the dataset stage's line


def test_an_approved_report_keeps_each_finding_under_its_stage(data_dir):
    text = terminal(check(data_dir / "flows" / "leaky.yaml"))
    assert "not blocking" not in text and _before(text, "TG176 warning", "[2/")


def test_the_markdown_lists_the_error_first(report):
    assert _before(markdown(report), "| TG204 | error |", "| TG176 | warning |")
    assert _before(markdown_with_charts(report), "| TG204 | error |", "| TG176 | warning |")


def test_the_html_page_lists_the_error_first(report):
    page = html_page(report, "test")
    assert _before(page, "<td>TG204</td>", "<td>TG176</td>")

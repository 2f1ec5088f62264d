"""`tunegate check --html`: one self-contained page, checked as a file and in a real headless Chromium.

The browser tests open the page from disk in Debian's Chromium (tests/support/browser.py): it must
render with the verdict, the stages and the findings with their places, every chart decoded as an
image, and not one console error. Two pages built to fail prove that the checks can fail.
"""
from __future__ import annotations

import base64
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import ROOT
from tunegate import check

SVG = b'<svg xmlns="http://www.w3.org/2000/svg"'
PNG = b"\x89PNG\r\n\x1a\n"  # the screenshot's
BROKEN_SVG = base64.b64encode(SVG + b"><text>not closed").decode()


def write_page(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess, Path]:
    page = tmp_path / "report.html"
    run = subprocess.run([sys.executable, "-m", "tunegate", "check", *args, "--html", str(page)], cwd=ROOT,
                         capture_output=True, text=True, timeout=600)
    return run, page


@pytest.fixture(scope="module")
def rejected_page(tmp_path_factory) -> Path:
    run, page = write_page(tmp_path_factory.mktemp("rejected"), "examples/broken.yaml")
    assert run.returncode == 1 and f"report page written to {page}" in run.stderr
    return page


@pytest.fixture(scope="module")
def passed_page(tmp_path_factory) -> Path:
    run, page = write_page(tmp_path_factory.mktemp("approved"), "examples/quickstart.yaml")
    assert run.returncode == 0, run.stderr
    return page


def test_the_page_needs_nothing_outside_itself(passed_page):
    html = passed_page.read_text()
    assert "<script" not in html
    assert not re.search(r'(src|href)="(?!data:)', html)  # no external file, font or stylesheet
    charts = re.findall(r'src="data:image/svg\+xml;base64,([^"]+)"', html)
    assert charts and all(base64.b64decode(c).startswith(SVG) for c in charts)


def test_a_rejected_spec_lists_each_finding_at_its_place(rejected_page):
    html = rejected_page.read_text()
    assert 'class="verdict rejected"' in html
    errors = [f for f in check(ROOT / "examples" / "broken.yaml").findings if f.severity == "error"]
    assert html.count("<td>TG1") == len(errors) >= 6  # one row per finding, as the report holds them
    assert "<code>examples/broken.yaml:8:3 (lora.r)</code>" in html


def test_the_passed_page_renders_in_chromium_with_its_chart_and_no_console_error(chromium, passed_page, tmp_path):
    page = chromium.load(passed_page.as_uri(), screenshot=tmp_path / "shot.png")
    assert page.errors == []
    # the static gate passed, but a full run needs the mini-run too (issue 11): never "approved" here
    assert page.title == "tunegate: examples/quickstart.yaml: not approved"
    assert {"verdict", "stages", "findings", "caveats"} <= set(page.ids) and "NOT APPROVED" in page.text
    assert "not approved for a full run: spec, dataset, overlap, estimate passed; mini-run" in page.text
    charts = {i["chart"]: i for i in page.images}
    assert set(charts) == {"memory_breakdown.svg"}  # the static gate has no token audit: no histogram
    assert charts["memory_breakdown.svg"]["complete"] and charts["memory_breakdown.svg"]["naturalWidth"] == 800
    assert "rerun with --mini-run" in page.text
    assert (tmp_path / "shot.png").read_bytes().startswith(PNG)


def test_the_rejected_page_renders_its_findings_in_chromium(chromium, rejected_page):
    page = chromium.load(rejected_page.as_uri())
    assert page.errors == [] and "REJECTED" in page.text
    assert "examples/broken.yaml:14:3 (training.grad_acum_steps)" in page.text
    assert "Did you mean 'grad_accum_steps'" in page.text


def test_the_browser_check_catches_a_script_error_and_a_broken_chart(chromium, tmp_path):
    bad = tmp_path / "bad.html"
    bad.write_text('<!DOCTYPE html><html><head><title>bad</title></head><body>'
                   f'<img alt="c" data-chart="c.svg" src="data:image/svg+xml;base64,{BROKEN_SVG}">'
                   '<script>console.error("boom"); undefinedFunction();</script></body></html>')
    page = chromium.load(bad.as_uri())
    assert any("boom" in e for e in page.errors) and any("undefinedFunction" in e for e in page.errors)
    assert page.images[0]["naturalWidth"] == 0  # an SVG that is not well-formed XML is no image


@pytest.mark.slow
def test_a_mini_run_page_shows_all_three_charts_in_chromium(chromium, tiny_cache, tmp_path):
    run, html = write_page(tmp_path, "examples/quickstart.yaml", "--mini-run")
    assert run.returncode == 0, run.stderr
    page = chromium.load(html.as_uri(), screenshot=tmp_path / "shot.png")
    assert page.errors == []
    charts = {i["chart"]: i for i in page.images}
    assert set(charts) == {"memory_breakdown.svg", "token_lengths.svg", "mini_run_loss.svg"}
    assert all(c["complete"] and c["naturalWidth"] > 0 for c in charts.values())

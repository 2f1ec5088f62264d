"""The HTML page and the Markdown report on hostile text: shown as text, never markup, and always written."""
from __future__ import annotations

import re
from html.parser import HTMLParser

from tests.output.hostile_reports import HOSTILE, report_of
from tunegate import check
from tunegate.output.html import html_page
from tunegate.render import markdown
from tunegate.report import Finding

SCRIPT = "<script>alert(1)</script><img src=x onerror=alert(2)>"



class Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []

    def handle_starttag(self, tag, attrs) -> None:
        self.tags.append(tag)


def test_a_record_quoting_html_is_text_on_the_page():
    page = html_page(check(train=HOSTILE / "a b,c:d.jsonl", validation=HOSTILE / "validation.jsonl"), "0.1.0")
    parser = Tags()
    parser.feed(page)
    assert "script" not in parser.tags and "halt &lt;scr" in page  # the finding quotes the role cut short


def test_a_finding_with_markup_controls_and_a_lone_surrogate_still_gives_a_page():
    f = Finding(code="TG999", severity="error", stage="dataset", message=SCRIPT + " nul\x00 esc\x1b cut\ud83d",
                hint="\"quoted\" & 'single'", file="a\".jsonl", line=1)
    page = html_page(report_of(f), "0.1.0")
    page.encode("utf-8")
    parser = Tags()
    parser.feed(page)
    assert not {"script", "img"} & set(parser.tags)
    assert "nul\\x00 esc\\x1b cut\\ud83d" in page and not re.search("[\x00-\x08\x0b\x0c\x0e-\x1f]", page)


def test_markdown_cells_quote_html_links_pipes_and_backticks_as_text():
    f = Finding(code="TG999", severity="error", stage="dataset", message=SCRIPT + " [click](http://x) a|b \\| c",
                hint="x\ny", file="we`ird|name.jsonl", line=2)
    text = markdown(report_of(f))
    row = next(line for line in text.splitlines() if "TG999" in line)
    assert row.startswith("| ``we`ird\\|name.jsonl:2`` | TG999 | error | ")
    assert "\\<script\\>" in row and "\\[click\\](http://x)" in row and "a\\|b \\\\\\| c" in row
    assert row.endswith("| x y |")
    assert len(re.findall(r"(?<!\\)\|", row)) == 6  # five cells: no quoted pipe ends one


def test_markdown_of_a_lone_surrogate_is_written():
    f = Finding(code="TG999", severity="error", stage="dataset", message="cut\ud83d", file="a.jsonl", line=1)
    markdown(report_of(f)).encode("utf-8")

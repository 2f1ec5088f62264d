"""The report in the formats CI systems and reviewers read.

    text = render_as(report, "sarif")     # also "json", "junit", "github"
    html_page(report)                     # one self-contained page: report, findings, charts

`--output-format` follows the convention ruff and other linters use: `json` (the report itself),
`sarif` (SARIF 2.1.0, for code-scanning annotations on the dataset lines), `junit` (JUnit XML, for
CI test tabs) and `github` (workflow commands, `::error file=...,line=...::`, which GitHub Actions
turns into annotations).
"""
from __future__ import annotations

from tunegate.front_door import front_door

# Where each name lives. They load on first use (PEP 562): a text report needs none of the page
# and chart writers, and `--output-format`'s choices come from formats.py alone.
_HOME = {name: f"tunegate.output.{module}" for name, module in [
    ("FORMATS", "formats"), ("render_as", "formats"), ("html_page", "html"),
    ("charts_section", "markdown"), ("markdown_with_charts", "markdown")]}

__all__ = ["FORMATS", "charts_section", "html_page", "markdown_with_charts", "render_as"]
__getattr__ = front_door(__name__, _HOME)

"""The report in the formats CI systems and reviewers read.

    text = render_as(report, "sarif")     # also "json", "junit", "github"
    html_page(report)                     # one self-contained page: report, findings, charts

`--output-format` follows the convention ruff and other linters use: `json` (the report itself),
`sarif` (SARIF 2.1.0, for code-scanning annotations on the dataset lines), `junit` (JUnit XML, for
CI test tabs) and `github` (workflow commands, `::error file=...,line=...::`, which GitHub Actions
turns into annotations).
"""
from tunegate.output.formats import FORMATS, render_as
from tunegate.output.html import html_page
from tunegate.output.markdown import charts_section, markdown_with_charts

__all__ = ["FORMATS", "charts_section", "html_page", "markdown_with_charts", "render_as"]

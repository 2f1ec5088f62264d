"""`tunegate check SPEC --html report.html`: one self-contained page a reviewer opens from CI.

Everything is inside the file: the styles, and the charts as SVG data URIs. There is no script
and no external request, so the page renders the same from a CI artifact, an email or disk.
Every text that is not ours (a record's, a key, a file name) goes through `escape`: `<`, `&` and
quotes as entities, and characters no HTML page may hold (NUL, ESC and the other C0 controls, a
lone surrogate, which could not even be written as UTF-8) as visible `\\xNN` escapes.
"""
from __future__ import annotations

import base64
import datetime as dt
from html import escape as html_escape

from tunegate.charts import report_charts
from tunegate.render import MARKS, by_severity, stage_summary, verdict_text
from tunegate.output.safe import xml_legal
from tunegate.report import GateReport

# In the page's head: how `--html` recognises a page it wrote, which it may replace without --force
# (tunegate.destination); any other file at that path is the user's.
PAGE_MARKER = b'<meta name="generator" content="tunegate'
CAPTIONS = {
    "memory_breakdown.svg": "Memory per GPU as the estimate predicts it, against the GPU's usable memory.",
    "token_lengths.svg": "Tokens per training record with the chat template applied (the mini-run's token "
                         "audit), against training.max_seq_len.",
    "mini_run_loss.svg": "Training loss per step of the mini-run.",
}
STYLE = """
body{font:15px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;max-width:1100px;
padding:0 1rem;color:#1f2328}
h1{font-size:1.5rem;margin:0 0 .3rem} h2{font-size:1.15rem;margin:2rem 0 .6rem;border-bottom:1px solid #d0d7de}
.verdict{display:inline-block;padding:.15rem .6rem;border-radius:.4rem;color:#fff;font-weight:600}
.approved{background:#1a7f37} .rejected{background:#cf222e} .not-approved{background:#9a6700}
table{border-collapse:collapse;width:100%;font-size:.9rem} th,td{border:1px solid #d0d7de;padding:.35rem .5rem;
text-align:left;vertical-align:top} th{background:#f6f8fa}
code{font:.85rem ui-monospace,SFMono-Regular,Menlo,monospace;background:#f6f8fa;padding:.05rem .25rem}
.passed{color:#1a7f37} .failed,.error{color:#cf222e} .skipped,.info{color:#57606a} .warning{color:#9a6700}
figure{margin:1rem 0} figure img{max-width:100%;border:1px solid #d0d7de} figcaption{color:#57606a;font-size:.85rem}
.meta{color:#57606a;font-size:.85rem}
"""


def html_page(report: GateReport, version: str) -> str:
    """The whole page as one string."""
    title = f"tunegate: {report.spec or 'data files'}"
    verdict = _verdict_class(report)
    c = report.counts
    parts = [f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
             f"{PAGE_MARKER.decode()} {escape(version)}\">"
             f"<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
             f"<title>{escape(title)}: {verdict.replace('-', ' ')}</title><style>{STYLE}</style></head><body>",
             f"<h1>{escape(title)}</h1>",
             f"<p><span class=\"verdict {verdict}\" id=\"verdict\">{verdict.replace('-', ' ').upper()}</span> "
             f"{escape(verdict_text(report))}; {c['error']} error(s), {c['warning']} warning(s), "
             f"{c['info']} note(s)</p>", _caveats(report),
             _meta(report, version), _stages(report), _findings(report), _charts(report),
             "</body></html>\n"]
    return "\n".join(parts)


def _verdict_class(report: GateReport) -> str:
    """approved (for a full run), not-approved (every gate that ran passed, a required one did not run), rejected."""
    if report.approved_for_full_run:
        return "approved"
    return "not-approved" if report.gates_passed else "rejected"


def _caveats(report: GateReport) -> str:
    if not report.gates_passed or not report.caveats:
        return ""
    items = "".join(f"<li>{escape(c)}</li>" for c in report.caveats)
    return f"<p>What this verdict does not prove:</p><ul id=\"caveats\">{items}</ul>"


def _meta(report: GateReport, version: str) -> str:
    now = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    digests = [f"{escape(role)} <code>{escape(str(fp.get('digest', ''))[:19])}</code>"
               for role, fp in report.fingerprints.items() if isinstance(fp, dict) and fp.get("digest")]
    note = ("<code>approved_for_full_run</code> means only that the local gates passed: review samples by "
            "hand and evaluate on the frozen validation set.")
    return (f"<p class=\"meta\">tunegate {escape(version)}, {now}. Digests: {', '.join(digests) or 'none'}. "
            f"{note}</p>")


def _stages(report: GateReport) -> str:
    rows = []
    for i, s in enumerate(report.stages, 1):
        note = s.reason if s.status == "skipped" else stage_summary(s)
        rows.append(f"<tr><td>{i}</td><td>{escape(s.name)}</td><td class=\"{s.status}\">{MARKS[s.status]} "
                    f"{s.status}</td><td>{s.duration_s:.2f}</td><td>{escape(str(note))}</td></tr>")
    return ("<h2>Stages</h2><table id=\"stages\"><tr><th>#</th><th>stage</th><th>status</th><th>time (s)</th>"
            f"<th>note</th></tr>{''.join(rows)}</table>")


def _findings(report: GateReport) -> str:
    if not report.findings:
        return "<h2>Findings</h2><p id=\"findings\">No findings.</p>"
    rows = [f"<tr><td><code>{escape(f.place())}</code></td><td>{escape(f.code)}</td><td class=\"{f.severity}\">"
            f"{f.severity}</td><td>{escape(f.message)}</td><td>{escape(f.hint)}</td></tr>"
            for f in by_severity(report.findings)]  # what blocks the run first
    shown, total = len(report.findings), sum(n for s in report.stages for n in s.totals_by_code.values())
    more = f"<p>{total - shown} more not shown (raise --max-findings).</p>" if total > shown else ""
    return ("<h2>Findings</h2><table id=\"findings\"><tr><th>place</th><th>code</th><th>severity</th>"
            f"<th>message</th><th>fix</th></tr>{''.join(rows)}</table>{more}")


def _charts(report: GateReport) -> str:
    charts = report_charts(report)
    figures = [f"<figure><img alt=\"{escape(name)}\" data-chart=\"{escape(name)}\" "
               f"src=\"data:image/svg+xml;base64,{base64.b64encode(data).decode()}\">"
               f"<figcaption>{escape(CAPTIONS.get(name, name))}</figcaption></figure>" for name, data in charts.items()]
    if "token_lengths.svg" not in charts:
        figures.append("<p>Token lengths need real tokenisation with the chat template: rerun with "
                       "<code>--mini-run</code>.</p>")
    return "<h2>Charts</h2>" + "".join(figures)


def escape(text: object) -> str:
    """`text` as HTML text or an attribute value (quotes escaped too)."""
    return html_escape(xml_legal(str(text)))

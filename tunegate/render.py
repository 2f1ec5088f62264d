"""Render a GateReport for people: the terminal (colour only on a tty) and Markdown.

The terminal form follows litgpt's validate script: one line per stage, then each finding as
`file:line:col CODE message` with its fix, then a one-line verdict.

Text that is not ours (an LLM's answer, a key or file name from the user's files) is printed with
`one_line` (every finding's message, fix and place) or `quoted` (LLM prose): control, bidi and
zero-width characters dropped, line breaks folded, so no such text can start a line of its own,
recolour the terminal, or pass for our verdict.
"""
from __future__ import annotations

import os
import re
import sys
from typing import TextIO

from tunegate.report import Finding, GateReport, StageResult

MARKS = {"passed": "✓", "failed": "✗", "skipped": "⊘"}
# C0 and C1 controls (newlines, ESC), DEL, lone surrogates, the Arabic letter mark, zero-width and
# bidirectional controls (U+200B-U+200F, U+202A-U+202E, U+2066-U+2069), the line and paragraph
# separators, word joiners and the BOM: each could break, reorder or recolour a line of output.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff"
                     "\ud800-\udfff]")
_RUNS = re.compile(r"\s+")
_COLOURS = {"passed": "32", "failed": "31", "skipped": "90", "error": "31", "warning": "33", "info": "36"}


def use_colour(stream: TextIO) -> bool:
    return stream.isatty() and "NO_COLOR" not in os.environ and os.environ.get("TERM") != "dumb"


def paint(text: str, key: str, colour: bool) -> str:
    return f"\x1b[{_COLOURS[key]}m{text}\x1b[0m" if colour else text


SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}


def by_severity(findings: list[Finding]) -> list[Finding]:
    """Errors, then warnings, then notes; in the order found within each (a stable sort)."""
    return sorted(findings, key=lambda f: SEVERITY_ORDER.get(f.severity, len(SEVERITY_ORDER)))


def terminal(report: GateReport, stream: TextIO | None = None) -> str:
    """The report as terminal text: each stage with its findings, errors first.

    A rejected report shows only the blocking errors under their stages, then every warning and
    note after the stage list, marked as not blocking: what must be fixed comes first.
    """
    stream = stream or sys.stdout
    colour = use_colour(stream)
    rejected = not report.gates_passed
    lines: list[str] = []
    n = len(report.stages)
    for i, stage in enumerate(report.stages, 1):
        lines.append(_stage_line(i, n, stage, colour))
        shown = [f for f in by_severity(stage.findings) if not rejected or f.severity == "error"]
        for f in shown:
            lines.extend(finding_lines(f, colour))
        hidden = sum(stage.totals_by_code.values()) - len(stage.findings)
        if hidden > 0:
            per_code = ", ".join(f"{c}: {t}" for c, t in sorted(stage.totals_by_code.items()))
            lines.append(f"      … {hidden} more not shown (totals {per_code}; raise --max-findings)")
    rest = [f for f in by_severity(report.findings) if f.severity != "error"] if rejected else []
    if rest:
        lines += ["", "not blocking:"]
        for f in rest:
            lines.extend(finding_lines(f, colour))
    lines.extend(_trainer_lines(report, colour))
    lines.append("")
    lines.append(_verdict(report, colour))
    return "\n".join(lines) + "\n"


_CODE = re.compile(r" (TG\d{3}) ")


def _trainer_lines(report: GateReport, colour: bool) -> list[str]:
    """The two verdicts (the config's own trainer, tunegate launch) and what the run machine needs."""
    lines: list[str] = []
    verdicts = [v for v in (report.config_trainer, report.tunegate_launch) if v is not None]
    if len(verdicts) == 2 and verdicts[0].trainer == verdicts[1].trainer:
        verdicts = verdicts[:1]  # a tunegate spec: its own trainer is tunegate launch
    for v in verdicts:
        if v.passed:
            lines.append(f"  {paint(MARKS['passed'], 'passed', colour)} {one_line(v.trainer)}: every check that ran "
                         "passed")
            continue
        codes = ", ".join(dict.fromkeys(m.group(1) for r in v.reasons if (m := _CODE.search(r))))
        lines.append(f"  {paint(MARKS['failed'], 'failed', colour)} {one_line(v.trainer)}: not approved as checked "
                     f"({len(v.reasons)} reason(s): {codes} above)")
    needs = report.requirements
    if needs:
        lines.append("  the run machine needs (where the training runs, not where this check runs):")
    for r in needs:
        here = {True: "installed here", False: "not installed here", None: "not judged here"}[r.met_here] \
            if r.kind == "package" else ("not judged here" if r.met_here is None else "")
        lines.append(f"    - {one_line(r.need)} for {one_line(r.reason)}" + (f" ({here})" if here else ""))
    return ["", *lines] if lines else []


def _stage_line(i: int, n: int, stage: StageResult, colour: bool) -> str:
    mark = paint(MARKS[stage.status], stage.status, colour)
    line = f"[{i}/{n}] {mark} {stage.name}"
    if stage.status == "skipped":
        return f"{line}: skipped: {stage.reason}"
    summary = _stage_summary(stage)
    return f"{line} ({stage.duration_s:.2f}s){': ' + summary if summary else ''}"


def _stage_summary(stage: StageResult) -> str:
    s = stage.stats
    if stage.name == "dataset":
        parts = [f"{role} {v['records']} records" for role, v in s.items()
                 if isinstance(v, dict) and "records" in v]
        return ", ".join(parts)
    if stage.name == "mini-run" and s.get("losses"):
        losses = s["losses"]
        tps = s.get("tokens_per_s")
        return (f"{s.get('steps', len(losses))} steps on {s.get('device', '?')}, loss {losses[0]} -> {losses[-1]}"
                + (f", {tps:,.0f} tok/s" if isinstance(tps, (int, float)) else ""))
    return str(s.get("summary", ""))


def one_line(text: object) -> str:
    """`text` as one printable line: unsafe characters (see _UNSAFE) become spaces, runs of them one.

    `##[` is written `#\\x23[` (the escape a Python string would use): GitHub's runner takes
    `##[name]data` anywhere in a log line for a command (its legacy syntax), so a record quoting
    `##[stop-commands]x` would otherwise switch off every annotation after it.
    """
    return _RUNS.sub(" ", _UNSAFE.sub(" ", str(text))).strip().replace("##[", "#\\x23[")


def quoted(text: object, limit: int = 400) -> str:
    """Untrusted prose (an LLM's) for people: one line, in double quotes, at most `limit` characters.

    Always shown after a label of ours (`why: "..."`), so it can never open a line.
    """
    import json  # here: only the advisor's prose is quoted, and a text report needs json for nothing else

    line = one_line(text)
    if len(line) > limit:
        line = line[:limit - 1] + "…"
    return json.dumps(line, ensure_ascii=False)


def finding_lines(f: Finding, colour: bool) -> list[str]:
    sev = paint(f.severity, f.severity, colour)
    out = [f"    {one_line(f.place())} {f.code} {sev}: {one_line(f.message)}"]
    if f.hint:
        out.append(f"      fix: {one_line(f.hint)}")
    return out


def _verdict(report: GateReport, colour: bool) -> str:
    """The verdict line; unless rejected, followed by what the verdict does not prove."""
    c = report.counts
    tally = f"{c['error']} error(s), {c['warning']} warning(s)"
    if not report.gates_passed:
        failed = next((s.name for s in report.stages if s.status == "failed"), "?")
        return paint("REJECTED", "failed", colour) + f" at stage '{failed}': {tally}."
    if report.approved_for_full_run:
        line = (paint("APPROVED", "passed", colour) + " for a full run: every required gate passed "
                f"({', '.join(report.passed_gates())}; {tally}).")
    else:
        line = paint("NOT APPROVED", "warning", colour) + f" for a full run: {_gaps(report)} ({tally})."
    return "\n".join([line, *(f"  note: {c}" for c in report.caveats)])


def verdict_text(report: GateReport) -> str:
    """The verdict in words, e.g. 'not approved for a full run: spec, dataset passed; mini-run not run'."""
    if not report.gates_passed:
        failed = next((s.name for s in report.stages if s.status == "failed"), "?")
        return f"rejected at stage '{failed}'"
    if report.approved_for_full_run:
        return "approved for a full run: every required gate passed"
    return f"not approved for a full run: {_gaps(report)}"


def _gaps(report: GateReport) -> str:
    passed = ", ".join(report.passed_gates()) or "no gate"
    missing = "; ".join(f"{gate} {why}" for gate, why in report.not_run.items())
    return f"{passed} passed; {missing}"


def markdown(report: GateReport) -> str:
    """The report as Markdown, for Prefect and MLflow artifacts."""
    mark = "✅" if report.approved_for_full_run else ("⚠️" if report.gates_passed else "❌")
    out = [f"# tunegate preflight: {mark} {_md(verdict_text(report))}", "",
           "| # | stage | status | time (s) | note |", "|---|---|---|---|---|"]
    for i, s in enumerate(report.stages, 1):
        note = s.reason if s.status == "skipped" else _stage_summary(s)
        out.append(f"| {i} | {s.name} | {MARKS[s.status]} {s.status} | {s.duration_s:.2f} | {_md(note)} |")
    if report.findings:
        out += ["", "| place | code | severity | message | fix |", "|---|---|---|---|---|"]
        for f in by_severity(report.findings):
            out.append(f"| {_md_code(f.place())} | {f.code} | {f.severity} | {_md(f.message)} | {_md(f.hint)} |")
    lines = [line.strip() for line in _trainer_lines(report, False)[1:]]
    out += ([""] if lines else []) + [f"  - {_md(t[2:])}" if t.startswith("- ") else f"- {_md(t)}" for t in lines]
    c = report.counts
    out += ["", f"{c['error']} error(s), {c['warning']} warning(s)."]
    if report.gates_passed:
        out += ["", "What this verdict does not prove:", *(f"- {_md(c)}" for c in report.caveats)]
    return "\n".join(out) + "\n"


# Markdown that text not ours could open: raw HTML (`<img src=...>`, `<script>`), a link or an image
# (`[x](url)`, `![x](url)`), an entity, a code span; `|` would end the table cell. A backslash comes
# first, so a quoted `\|` cannot turn the escape of its `|` into an escaped backslash.
_MD_ACTIVE = re.compile(r"([\\`<>\[\]|&*])")


def _md(text: object) -> str:
    """`text` in a Markdown table cell: one line, every character shown as itself."""
    return _MD_ACTIVE.sub(r"\\\1", one_line(text))


def _md_code(text: object) -> str:
    """`text` as an inline code span in a table cell: fenced by more backticks than it holds."""
    line = one_line(text)
    fence = "`" * (max((len(run) for run in re.findall("`+", line)), default=0) + 1)
    pad = " " if line.startswith("`") or line.endswith("`") else ""
    return f"{fence}{pad}{line.replace('|', chr(92) + '|')}{pad}{fence}"


def stage_summary(stage: StageResult) -> str:
    """The one-line note a stage's row shows (records read, losses, the estimate's verdict)."""
    return _stage_summary(stage)

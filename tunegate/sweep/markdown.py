"""A sweep and its candidates as Markdown, for their Prefect artifacts."""
from __future__ import annotations

import json

from tunegate.output import charts_section
from tunegate.render import markdown
from tunegate.sweep.evaluate import CandidateOutcome
from tunegate.sweep.summary import SweepSummary, shown_warnings, verdict


_MARKS = {"approved": "✅", "pruned": "✂️", "rejected": "❌", "error": "⚠️"}


def _md(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _loss(value: float | None) -> str:
    return f"{value:.4f}" if value is not None else "-"


def sweep_markdown(summary: SweepSummary, spec_name: str, pngs: dict[str, bytes]) -> str:
    """The candidates table (verdict, losses, warnings, overrides, reason), the best one, and the charts."""
    n = len(summary.outcomes)
    out = [f"# tunegate sweep of {spec_name}: {summary.approved} of {n} candidate(s) approved", "",
           "| # | verdict | val loss | train loss | warnings | candidate | reason |", "|---|---|---|---|---|---|---|"]
    for i, o in enumerate(summary.outcomes, 1):
        out.append(f"| {i} | {_MARKS[verdict(o)]} {verdict(o)} | {_loss(o.val_loss)} | {_loss(o.final_train_loss)} | "
                   f"{_md(shown_warnings(o))} | `{_md(json.dumps(o.overrides))}` | {_md(o.reason)} |")
    if summary.pruned:
        out += ["", f"Pruned: {summary.pruned} candidate(s), {summary.steps_saved} training step(s) saved."]
    if summary.best is not None:
        best = summary.best
        out += ["", f"Best: `{_md(json.dumps(best.overrides))}` (validation loss {_loss(best.val_loss)}, "
                f"MLflow run `{summary.best_run_id}`), spec `{best.spec_path}`."]
    return "\n".join(out) + "\n" + charts_section(pngs)


def candidate_markdown(outcome: CandidateOutcome) -> str:
    """One candidate: its overrides and verdict, then its gate report (stages and findings)."""
    said = verdict(outcome)
    shown = f"{_MARKS[said]} {said}" + (f": {_md(outcome.reason)}" if said != "approved" else "")
    head = [f"# candidate `{_md(json.dumps(outcome.overrides))}`: {shown}", "",
            f"Validation loss {_loss(outcome.val_loss)}, training loss {_loss(outcome.final_train_loss)}; "
            f"warnings {_md(shown_warnings(outcome))}; spec `{outcome.spec_path}`; MLflow run `{outcome.run_id}`.", ""]
    if outcome.report is None:
        head.append("Logged completely by an earlier attempt of this sweep: reused, not run again.")
        return "\n".join(head) + "\n"
    return "\n".join(head) + "\n" + markdown(outcome.report)

"""Stage 5: advice to run the job faster on the same hardware; never fails the gate.

Run: `tunegate check SPEC --advisor` (with the gate) or `tunegate advise SPEC` (alone).
The rule engine always runs. With `advisor.enabled` and a key in the environment variable
`advisor.api_key_env`, an OpenAI-compatible LLM is asked too; its suggestions are verified by
the estimate like the rules' are. On any LLM failure the rules' advice stands and a warning says why.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from tunegate.advisor import llm_client
from tunegate.advisor.advice import Advice, Suggestion
from tunegate.advisor.rules import advise_with_rules
from tunegate.advisor.verify import apply_changes, verify
from tunegate.errors import EstimateError
from tunegate.estimate.readings import readings, summary_with_readings
from tunegate.estimate.run import estimate_run
from tunegate.estimate.stage import fits_at_minimum
from tunegate.facts import GateFacts
from tunegate.report import Finding, FindingCollector, StageResult
from tunegate.spec.model import Spec
from tunegate.stage import GateContext

STAGE = "advisor"


def _finding(code: str, severity: str, message: str, hint: str = "") -> Finding:
    return Finding(code=code, severity=severity, stage=STAGE, message=message, hint=hint)  # type: ignore[arg-type]


def advise(spec: Spec, facts: GateFacts | None = None, base_dir: Path | None = None,
           use_llm: bool = True) -> tuple[Advice | None, list[Finding]]:
    """The advice (None when the run cannot be estimated) and the advisor's findings."""
    facts = facts or GateFacts()
    try:
        advice, improved = advise_with_rules(spec, facts, base_dir)
    except EstimateError as exc:
        return None, [_finding("TG607", "warning", f"no advice: {exc}", exc.hint)]
    if not use_llm or not spec.advisor.enabled:
        return advice, [_finding("TG608", "info", "LLM advisor off: the rule engine's advice stands",
                                 "Set advisor.enabled: true and the key's environment variable to ask an LLM too.")]
    try:
        summary = summary_with_readings(spec, estimate_run(spec, facts, base_dir), facts, base_dir)
        payload = llm_client.build_payload(spec, summary, facts)
        summary, proposed, dropped = llm_client.parse_answer(llm_client.ask(spec, payload))
    except llm_client.AdvisorFailure as exc:
        return advice, [_finding(exc.code, "warning", f"{exc}; the rule engine's advice stands", _HINTS[exc.code])]
    findings = [_finding("TG604", "info", reason, "The LLM proposed something outside the allowed settings "
                         "or values; it was not shown as advice.") for reason in dropped]
    merged = _merge(advice, improved, proposed, facts, base_dir, spec)
    merged.summary = summary or merged.summary
    for s in merged.suggestions:
        if s.source == "llm" and not s.verified:
            findings.append(_finding("TG604", "info", f"LLM suggestion {s.setting} -> {s.proposed} rejected: "
                                     f"{s.rejected_reason}", "Rejected suggestions are shown but not applied."))
    return merged, findings


def _merge(advice: Advice, improved: Spec, proposed: list[Suggestion], facts: GateFacts,
           base_dir: Path | None, original: Spec) -> Advice:
    """Verify the LLM's suggestions on top of the rules' improved spec and fold them in."""
    impossible = not fits_at_minimum(original, base_dir)
    current, out = improved, list(advice.suggestions)
    for s in proposed:
        same = next((r for r in out if r.source != "llm" and r.changes() == s.changes()), None)
        if same is not None:
            out[out.index(same)] = same.model_copy(update={"source": "rules+llm"})
            continue
        checked, new_spec = verify(s, current, facts, base_dir, impossible)
        out.append(checked)
        current = new_spec or current
    final = estimate_run(current, facts, base_dir)
    note = _claimed_time_note(original, proposed, facts, base_dir)
    return advice.model_copy(update={"source": "rules+llm", "suggestions": out,
                                     "hours_after": round(final.hours, 2),
                                     "peak_gib_after": final.memory.peak_gib,
                                     "notes": advice.notes + ([note] if note else [])})


def _claimed_time_note(spec: Spec, proposed: list[Suggestion], facts: GateFacts, base_dir: Path | None) -> str:
    """What the LLM's own claimed savings make of the user's time, judged like any claimed time."""
    savings = [s.expected_time_saving for s in proposed if s.expected_time_saving and s.expected_time_saving > 0]
    hours = spec.estimate.wall_clock_hours
    if not savings or not hours:
        return ""
    claimed = hours
    for saving in savings:
        claimed *= 1.0 - saving
    try:
        found = readings(apply_changes(spec, {"estimate.advised_hours": round(claimed, 2)}), facts, base_dir)
    except (EstimateError, ValueError):
        return ""
    judged = [(r.method, next(c for c in r.claims if c.label == "advised")) for r in found]
    how = ", ".join(f"{c.implied_mfu:.0%} MFU as {m} ({c.verdict})" for m, c in judged)
    return f"the LLM's claimed savings take your {hours:g} h to {claimed:,.1f} h, which needs {how}"


_HINTS = {
    "TG601": "Export the key in the environment variable advisor.api_key_env names, or ignore this: "
             "the rule engine's advice does not need it.",
    "TG602": "Check advisor.base_url and the provider's status; raise advisor.timeout_s or max_retries.",
    "TG603": "Use a model that follows JSON instructions, or raise advisor.max_tokens.",
    "TG605": "pip install 'tunegate[advisor]'.",
    "TG606": "Use an https endpoint, or a local server on 127.0.0.1.",
}


def run_stage(ctx: GateContext) -> StageResult:
    """Run the advisor; its findings are warnings or info, so the stage always passes."""
    start = time.perf_counter()
    out = FindingCollector(STAGE, ctx.cap)
    advice, findings = advise(ctx.spec, ctx.facts, ctx.base_dir)
    out.extend(findings)
    stats: dict[str, Any] = {"summary": "no advice"}
    if advice is not None:
        ctx.facts.advice = advice.model_dump(mode="json")
        stats = {"summary": f"{len(advice.verified())} verified suggestion(s): "
                            f"{advice.hours_before:,.1f} h -> {advice.hours_after:,.1f} h",
                 "advice": ctx.facts.advice}
    return out.result(time.perf_counter() - start, stats)

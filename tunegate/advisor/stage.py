"""Stage 5: advice to run the job faster on the same hardware; never fails the gate.

Run: `tunegate check SPEC --advise` (with the gate) or `tunegate advise SPEC` (alone).
The rule engine always runs. With `advisor.enabled` and a key in the environment variable
`advisor.api_key_env`, an OpenAI-compatible LLM is asked too; its suggestions are verified by
the estimate like the rules' are. On any LLM failure the rules' advice stands and a warning says why.
Advice is for the trainer the file runs on (`tunegate.advisor.targets`): tunegate's for a spec,
axolotl's or TRL's for their configs.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from tunegate.advisor import llm_client
from tunegate.advisor.advice import HARDWARE_SETTINGS, Advice, Suggestion, fmt_hours
from tunegate.advisor.answer import parse_answer
from tunegate.advisor.claims import FLAG, keep_our_figures, same_value, spec_value
from tunegate.advisor.rules import advise_with_rules, headline
from tunegate.advisor.targets import Trainer, kind_of, trainer_for
from tunegate.advisor.verify import apply_changes, verify
from tunegate.errors import AdvisorFailure
from tunegate.errors import EstimateError
from tunegate.estimate.readings import METHOD_NAMES, readings, summary_with_readings
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
           use_llm: bool = True, target: str = "tunegate") -> tuple[Advice | None, list[Finding]]:
    """The advice (None when the run cannot be estimated) and the advisor's findings.

    `target`: the kind of config (`tunegate.spec.importers.KINDS`), whose trainer the advice is for.
    """
    facts, trainer = facts or GateFacts(), trainer_for(target)
    try:
        advice, improved = advise_with_rules(spec, facts, base_dir, trainer)
    except EstimateError as exc:
        return None, [_finding("TG607", "warning", f"no advice: {exc}", exc.hint)]
    if not use_llm or not spec.advisor.enabled:
        return advice, [_finding("TG608", "info", "LLM advisor off: the rule engine's advice stands",
                                 "Set advisor.enabled: true and the key's environment variable to ask an LLM too.")]
    impossible = not fits_at_minimum(spec, base_dir)
    try:
        summary = summary_with_readings(spec, estimate_run(spec, facts, base_dir), facts, base_dir)
        payload = llm_client.build_payload(spec, summary, facts, impossible)
        text = llm_client.ask(spec, payload, llm_client.system_prompt(trainer, impossible))
        summary, proposed, dropped = parse_answer(text)
    except AdvisorFailure as exc:
        return advice, [_finding(exc.code, "warning", f"{exc}; the rule engine's advice stands",
                                 llm_client.failure_hint(exc))]
    findings = [_finding("TG604", "info", reason, "The LLM proposed something outside the allowed settings "
                         "or values; it was not shown as advice.") for reason in dropped]
    proposed, wrong = _current_checked(proposed, spec)
    findings += wrong
    merged = _merge(advice, improved, proposed, _Check(facts, base_dir, impossible, trainer), spec)
    merged, flagged = _llm_words(merged, summary)
    findings += flagged
    for s in merged.suggestions:
        if s.source == "llm" and not s.verified:
            findings.append(_finding("TG604", "info", f"LLM suggestion {s.setting} -> {s.proposed} rejected: "
                                     f"{s.rejected_reason}", "Rejected suggestions are shown but not applied."))
    return merged, findings


def _current_checked(proposed: list[Suggestion], spec: Spec) -> tuple[list[Suggestion], list[Finding]]:
    """The LLM's suggestions whose `current` is the spec's value (filled in when left out); TG609 for
    each dropped one: a suggestion made for another config says nothing about this one."""
    kept, findings = [], []
    for s in proposed:
        actual = spec_value(spec, s.setting)
        if s.current is None:
            kept.append(s.model_copy(update={"current": actual}))
        elif same_value(s.current, actual):
            kept.append(s)
        else:
            findings.append(_finding(
                "TG609", "info", f"LLM suggestion {s.setting} -> {s.proposed} dropped: it says the current value "
                f"is {s.current!r}, but the spec has {actual!r}", "The LLM misread the config; its suggestion "
                "is not shown. Rerun the advisor, or use another model at advisor.model."))
    return kept, findings


def _llm_words(advice: Advice, summary: str) -> tuple[Advice, list[Finding]]:
    """Our summary stays the headline; the LLM's summary and prose keep only figures that are ours."""
    ours = {"hours": [advice.hours_before, advice.hours_after, *(s.predicted_hours for s in advice.suggestions)],
            "percent": [100 * s.expected_time_saving for s in advice.suggestions if s.expected_time_saving is not None],
            "memory": [advice.peak_gib_before, advice.peak_gib_after,
                       *(s.predicted_peak_gib for s in advice.suggestions)]}
    llm_summary, removed = keep_our_figures(summary, ours)
    suggestions = []
    for s in advice.suggestions:
        if s.source == "llm":
            texts = {k: keep_our_figures(getattr(s, k), ours) for k in ("rationale", "risks", "monitor")}
            removed += sum(n for _, n in texts.values())
            s = s.model_copy(update={k: text for k, (text, _) in texts.items()})
        suggestions.append(s)
    advice = advice.model_copy(update={"llm_summary": llm_summary, "suggestions": suggestions})
    if not removed:
        return advice, []
    return advice, [_finding("TG610", "info", f"{removed} figure(s) in the LLM's words are not ours and were "
                             f"replaced by {FLAG}", "Only the hours, savings and memory computed by our "
                             "estimate are shown as predictions; the LLM's are not checked numbers.")]


class _Check:
    """What verifying an LLM suggestion needs: measured facts, the spec's folder, the run's feasibility, the trainer."""

    def __init__(self, facts: GateFacts, base_dir: Path | None, impossible: bool, trainer: Trainer):
        self.facts, self.base_dir, self.impossible, self.trainer = facts, base_dir, impossible, trainer


def _merge(advice: Advice, improved: Spec, proposed: list[Suggestion], check: _Check, original: Spec) -> Advice:
    """Verify the LLM's suggestions on top of the rules' improved spec and fold them in.

    Only a verified suggestion is applied (verify: faster, or needed to fit memory), so the
    headline is the best verified combination. New hardware is an alternative to the rest: checked
    against the spec as written and never applied.
    """
    facts, base_dir = check.facts, check.base_dir
    current, out = improved, list(advice.suggestions)
    for s in proposed:
        same = next((r for r in out if r.source != "llm" and _effect(r, original) == _effect(s, original)), None)
        if same is not None:
            out[out.index(same)] = same.model_copy(update={"source": "rules+llm",
                                                           "claimed_time_saving": s.claimed_time_saving})
            continue
        alternative = bool(HARDWARE_SETTINGS & set(s.changes()))
        checked, new_spec = verify(s, original if alternative else current, facts, base_dir, check.impossible,
                                   check.trainer)
        out.append(checked)
        current = current if alternative else new_spec or current
    final = estimate_run(current, facts, base_dir)
    note = _claimed_time_note(original, proposed, facts, base_dir)
    merged = advice.model_copy(update={"source": "rules+llm", "suggestions": out,
                                       "hours_after": float(f"{final.hours:.4g}"),
                                       "peak_gib_after": final.memory.peak_gib,
                                       "notes": advice.notes + ([note] if note else [])})
    return merged.model_copy(update={"summary": headline(merged, original, estimate_run(original, facts, base_dir))})


def _effect(s: Suggestion, spec: Spec) -> dict[str, Any]:
    """What a suggestion changes in `spec`: its main setting, and the companions that differ from the spec
    (the rules' torch.compile names its mode, default; the LLM's may leave it out)."""
    return {k: v for k, v in s.changes().items() if k == s.setting or not same_value(v, spec_value(spec, k))}


def _claimed_time_note(spec: Spec, proposed: list[Suggestion], facts: GateFacts, base_dir: Path | None) -> str:
    """What the LLM's own claimed savings make of the user's time, judged like any claimed time."""
    savings = [s.claimed_time_saving for s in proposed if s.claimed_time_saving and 0 < s.claimed_time_saving < 1]
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
    how = ", ".join(f"{c.implied_mfu:.0%} MFU as {METHOD_NAMES[m]} ({c.verdict})" for m, c in judged)
    return f"the LLM's claimed savings take your {hours:g} h to {claimed:,.1f} h, which needs {how}"


def run_stage(ctx: GateContext) -> StageResult:
    """Run the advisor; its findings are warnings or info, so the stage always passes."""
    start = time.perf_counter()
    out = FindingCollector(STAGE, ctx.cap)
    advice, findings = advise(ctx.spec, ctx.facts, ctx.base_dir, target=kind_of(ctx.spec_path))
    out.extend(findings)
    stats: dict[str, Any] = {"summary": "no advice"}
    if advice is not None:
        ctx.facts.advice = advice.model_dump(mode="json")
        stats = {"summary": f"{len(advice.verified())} verified suggestion(s): "
                            f"{fmt_hours(advice.hours_before)} -> {fmt_hours(advice.hours_after)} (our estimate)",
                 "advice": ctx.facts.advice}
    return out.result(time.perf_counter() - start, stats)

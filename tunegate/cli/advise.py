"""`tunegate advise`: how to run the job faster on the same hardware, each change verified.

    tunegate advise examples/worked_case.yaml
    OXLO_API_KEY=... tunegate advise examples/worked_case.yaml --json

The rule engine always answers; with a key in the environment variable `advisor.api_key_env`
an OpenAI-compatible LLM is asked too. Exit 0 with advice, 1 when the run cannot be estimated.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from tunegate.advisor.advice import fmt_hours
from tunegate.cli.gpu_flags import add_config_flags, gpu_flags

# A claimed saving within 5 points of ours is the same claim; beyond, it is flagged as unconfirmed.
CLAIM_TOLERANCE = 0.05


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("advise", help="suggest faster settings for the same hardware",
                       description="Suggest changes that make the run faster on the declared hardware; "
                                   "every suggestion is re-checked by the estimate before it is shown.")
    p.add_argument("spec", metavar="SPEC|CONFIG", help="the spec YAML, or an axolotl / TRL `trl sft` config")
    add_config_flags(p)
    p.add_argument("--json", action="store_true", help="write one JSON document to stdout")
    p.add_argument("--no-llm", action="store_true", help="rule engine only, even when a key is set")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from tunegate.advisor.stage import advise
    from tunegate.cli.estimate import load_parsed

    parsed = load_parsed(args.spec, args.kind, gpu_flags(args))
    spec, path = parsed.spec, Path(args.spec)
    if spec is None:
        return 1
    if "train" in parsed.unavailable and not spec.estimate.dataset_tokens:
        spec = _with_nominal_tokens(spec)
    advice, findings = advise(spec, base_dir=path.resolve().parent, use_llm=not args.no_llm, target=parsed.kind)
    if args.json:
        doc = {"advice": advice.model_dump(mode="json") if advice else None,
               "findings": [f.model_dump(mode="json", exclude_none=True) for f in findings]}
        print(json.dumps(doc, indent=2))
    else:
        from tunegate.render import one_line

        for f in findings:
            print(f"{f.code} {f.severity}: {one_line(f.message)}", file=sys.stderr)
        if advice is not None:
            print(render_advice(advice.model_dump(mode="json"), spec.hardware.count, spec.hardware.gpu))
    return 0 if advice is not None else 1


# Without the training data (an imported config's Hub dataset) the hours are unknown, but a suggestion's
# saving is a ratio of hours: it is judged on this many training tokens, said as nominal.
NOMINAL_TOKENS = 100_000_000


def _with_nominal_tokens(spec: Any) -> Any:
    from tunegate.cli.streams import say

    say(f"note: the hours below are for a nominal {NOMINAL_TOKENS:,} training tokens (the data cannot be had "
        "here): compare them, do not plan with them; set estimate.dataset_tokens for the real figure")
    estimate = spec.estimate.model_copy(update={"dataset_tokens": NOMINAL_TOKENS})
    return spec.model_copy(update={"estimate": estimate})


def render_advice(a: dict[str, Any], gpu_count: int = 1, gpu: str = "") -> str:
    """The advice as plain text: our hours before and after, each suggestion and its check, the
    readings of a claimed time.

    Only our numbers are shown as ours; an LLM's summary and rationale are quoted as its words, one
    line each (`tunegate.render.quoted`): its answer can neither break a line nor print something
    that looks like our output.
    """
    from tunegate.estimate.readings import Reading, render_readings
    from tunegate.render import one_line, quoted

    lines = [f"predicted hours: {fmt_hours(a['hours_before'])} -> {fmt_hours(a['hours_after'])}   "
             f"peak memory per GPU: {a['peak_gib_before']:.1f} -> {a['peak_gib_after']:.1f} GiB   "
             f"(our estimate; advice from {a['source']})"]
    if a["summary"]:
        lines.append(a["summary"])
    if a.get("llm_summary"):
        lines.append(f"the LLM's words (its figures that are not ours removed): "
                     f"{quoted(a['llm_summary'], 1500)}")
    for i, s in enumerate(a["suggestions"], 1):
        text = quoted if s["source"] == "llm" else one_line
        extra = "".join(f", {k} -> {v}" for k, v in s["companions"].items())
        who = " (the LLM's words)" if s["source"] == "llm" else ""
        lines += ["", f"{i}. {s['setting']}: {s['current']} -> {s['proposed']}{extra}  [{_mark(s)}]",
                  f"   why{who}: {text(s['rationale'])}"]
        if s["risks"]:
            lines.append(f"   risks: {text(s['risks'])}")
        if s["monitor"]:
            lines.append(f"   monitor: {text(s['monitor'])}")
    for note in a.get("notes", []):
        lines += ["", f"note: {one_line(note)}"]
    lines += render_readings([Reading.model_validate(r) for r in a.get("readings", [])], gpu_count, gpu)
    return "\n".join(lines)


def _mark(s: dict[str, Any]) -> str:
    """What we verified about one suggestion: the check, our hours, our saving, the LLM's claim."""
    hours = "" if s["predicted_hours"] is None else f", {fmt_hours(s['predicted_hours'])}"
    if not s["verified"]:
        from tunegate.render import one_line

        return f"REJECTED: {one_line(s['rejected_reason'])}"
    if s.get("new_hardware"):
        mark = f"verified, NEW HARDWARE: the run is physically impossible on the declared GPUs{hours} there"
    elif s.get("purpose") == "memory":
        mark = f"verified, needed to fit GPU memory{hours}"
    elif s.get("purpose") == "stability":
        mark = f"verified, no cost in time{hours}: bf16 cannot overflow as fp16 does"
    else:
        saving = s["expected_time_saving"]
        mark = f"verified{hours}" + ("" if saving is None else f", saves {saving:.0%} by our estimate")
    claimed = s.get("claimed_time_saving")
    if claimed is not None and abs(claimed - (s["expected_time_saving"] or 0.0)) > CLAIM_TOLERANCE:
        mark += f"; the LLM claimed {claimed:.0%}, not confirmed"
    return mark

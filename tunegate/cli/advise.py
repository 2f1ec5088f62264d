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
from typing import Any


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("advise", help="suggest faster settings for the same hardware",
                       description="Suggest changes that make the run faster on the declared hardware; "
                                   "every suggestion is re-checked by the estimate before it is shown.")
    p.add_argument("spec", help="the spec YAML")
    p.add_argument("--json", action="store_true", help="write one JSON document to stdout")
    p.add_argument("--no-llm", action="store_true", help="rule engine only, even when a key is set")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from tunegate.advisor.stage import advise
    from tunegate.cli.estimate import load_valid_spec

    spec, path = load_valid_spec(args.spec)
    if spec is None:
        return 1
    advice, findings = advise(spec, base_dir=path.resolve().parent, use_llm=not args.no_llm)
    if args.json:
        doc = {"advice": advice.model_dump(mode="json") if advice else None,
               "findings": [f.model_dump(mode="json", exclude_none=True) for f in findings]}
        print(json.dumps(doc, indent=2))
    else:
        from tunegate.render import one_line

        for f in findings:
            print(f"{f.code} {f.severity}: {one_line(f.message)}", file=sys.stderr)
        if advice is not None:
            print(render_advice(advice.model_dump(mode="json")))
    return 0 if advice is not None else 1


def render_advice(a: dict[str, Any]) -> str:
    """The advice as plain text: hours before and after, then each suggestion and its check.

    What an LLM wrote is shown quoted, one line each (`tunegate.render.quoted`): its answer can
    neither break a line nor print something that looks like our output.
    """
    from tunegate.render import one_line, quoted

    lines = [f"predicted hours: {a['hours_before']:,.1f} -> {a['hours_after']:,.1f}   "
             f"peak memory per GPU: {a['peak_gib_before']:.1f} -> {a['peak_gib_after']:.1f} GiB   "
             f"(advice from {a['source']})"]
    if a["summary"]:
        lines.append(f"summary: {quoted(a['summary'], 1500)}")
    for i, s in enumerate(a["suggestions"], 1):
        text = quoted if s["source"] == "llm" else one_line
        extra = "".join(f", {k} -> {v}" for k, v in s["companions"].items())
        mark = "verified" if s["verified"] else f"REJECTED: {one_line(s['rejected_reason'])}"
        saving = "" if s["expected_time_saving"] is None else f", time saved {s['expected_time_saving']:.0%}"
        hours = "" if s["predicted_hours"] is None else f", {s['predicted_hours']:,.1f} h"
        lines += ["", f"{i}. {s['setting']}: {s['current']} -> {s['proposed']}{extra}  [{mark}{hours}{saving}]",
                  f"   why ({s['source']}): {text(s['rationale'])}"]
        if s["risks"]:
            lines.append(f"   risks: {text(s['risks'])}")
        if s["monitor"]:
            lines.append(f"   monitor: {text(s['monitor'])}")
    return "\n".join(lines)

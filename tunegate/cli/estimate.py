"""`tunegate estimate`: memory per GPU, tokens/s, hours and cost of the full run a spec describes.

    tunegate estimate examples/worked_case.yaml
    tunegate estimate examples/worked_case.yaml --json

Needs only the model's config.json (a local folder holding just that file works). Exit 0 when
the run fits, 1 when it does not fit or cannot be estimated (or the spec is invalid).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("estimate", help="estimate memory, time and cost of the full run",
                       description="Estimate per-GPU memory (as a breakdown), tokens/s, hours and cost "
                                   "of the full run, from the model's config.json alone.")
    p.add_argument("spec", help="the spec YAML")
    p.add_argument("--json", action="store_true", help="write one JSON document to stdout")
    p.set_defaults(run=run)


def load_valid_spec(path_text: str) -> tuple[Any, Path]:
    """The validated spec and its path; prints the spec findings and returns None when invalid."""
    from tunegate.cli.paths import require_files
    from tunegate.render import terminal
    from tunegate.report import GateReport
    from tunegate.spec.check import parse_spec

    path = Path(path_text)
    parsed = parse_spec(path)
    if parsed.spec is None:
        sys.stderr.write(terminal(GateReport.from_stages([parsed.result]), sys.stderr))
    elif not parsed.spec.estimate.dataset_tokens:  # the token count comes from the training file
        require_files(parsed.spec, "data.train")
    return parsed.spec, path


def run(args: argparse.Namespace) -> int:
    from tunegate.errors import EstimateError
    from tunegate.estimate.run import estimate_run

    spec, path = load_valid_spec(args.spec)
    if spec is None:
        return 1
    try:
        est = estimate_run(spec, base_dir=path.resolve().parent)
    except EstimateError as exc:
        if args.json:
            print(json.dumps({"error": {"code": exc.code, "message": str(exc), "hint": exc.hint}}))
        else:
            print(f"{exc.code} {exc}\n  fix: {exc.hint}", file=sys.stderr)
        return 1
    summary = est.summary()
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(render_estimate(summary))
    return 0 if summary["memory"]["verdict"] != "does not fit" else 1


def render_estimate(s: dict[str, Any]) -> str:
    """The estimate as a plain-text table (no colour: it is meant to be pasted into tickets)."""
    m, t, tok = s["memory"], s["throughput"], s["tokens"]
    lines = [f"{s['model']['id']} on {s['hardware']['count']} x {s['hardware']['gpu']}  "
             f"({s['model']['total_params']:,} params, {s['model']['trainable_params']:,} trainable)",
             "", f"  {'memory per GPU':<22}{'GiB':>9}"]
    for term, gib in sorted(m["breakdown"].items(), key=lambda kv: -kv[1]):
        mark = "  <- biggest" if term == m["biggest"] else ""
        lines.append(f"  {term:<22}{gib:>9.2f}{mark}")
    lines += [f"  {'peak':<22}{m['peak_gib']:>9.2f}  of {m['capacity_gib']:g}: {m['verdict']}", "",
              f"  tokens/s per GPU      {t['tokens_per_s']:>12,.0f}  ({t['source']}, MFU {t['mfu']:.0%})",
              f"  training tokens       {tok['total']:>12,.0f}  ({tok['epochs']:g} epoch(s), from {tok['source']})",
              f"  hours                 {s['hours']:>12,.1f}"]
    if s["cost_usd"] is not None:
        lines.append(f"  cost (USD)            {s['cost_usd']:>12,.0f}")
    user = s["user_estimate"]
    if user["hours"]:
        lines.append(f"  your estimate         {user['hours']:>12,.1f}  h, implies MFU {user['implied_mfu']:.0%}")
    return "\n".join(lines)

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

from tunegate.cli.streams import say
from tunegate.cli.gpu_flags import add_config_flags, gpu_flags


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("estimate", help="estimate memory, time and cost of the full run",
                       description="Estimate per-GPU memory (as a breakdown), tokens/s, hours and cost "
                                   "of the full run, from the model's config.json alone.")
    p.add_argument("spec", metavar="SPEC|CONFIG", help="the spec YAML, or an axolotl / TRL `trl sft` config")
    add_config_flags(p)
    p.add_argument("--json", action="store_true", help="write one JSON document to stdout")
    p.add_argument("--meta", action="store_true",
                   help="count parameters on transformers' meta-device model (imports torch: seconds, not ms)")
    p.set_defaults(run=run)


def load_valid_spec(path_text: str, kind: str | None = None) -> tuple[Any, Path]:
    """The validated spec and its path; prints the spec findings and returns None when invalid."""
    parsed = load_parsed(path_text, kind)
    return parsed.spec, Path(path_text)


def load_parsed(path_text: str, kind: str | None = None, hardware: dict[str, Any] | None = None) -> Any:
    """The parsed spec (`tunegate.spec.check.ParsedSpec`); prints the spec findings when it is invalid.

    A planning figure needs neither the run machine's packages nor the data: what the run machine
    needs and this one lacks is named on stderr, and training data that cannot be had here (an
    imported config's Hub dataset) leaves only the hours unknown.
    """
    from tunegate.cli.paths import require_files
    from tunegate.render import terminal
    from tunegate.report import GateReport
    from tunegate.spec.check import parse_spec

    parsed = parse_spec(Path(path_text), kind=kind, hardware=hardware)
    if parsed.spec is None:
        sys.stderr.write(terminal(GateReport.from_stages([parsed.result]), sys.stderr))
        return parsed
    if not parsed.spec.estimate.dataset_tokens and "train" not in parsed.unavailable:
        require_files(parsed.spec, "data.train")  # the token count comes from the training file
    for need in parsed.result.stats.get("requirements", []):
        if need.get("met_here") is False:
            say(f"note: the run machine needs {need['need']} for {need['reason']}; not installed here "
                "(not needed for the estimate)")
    hw = parsed.spec.hardware
    if "gpu" not in hw.model_fields_set and hw.custom is None:
        say(f"note: no GPU is named (hardware.gpu, --gpu): the figures assume {hw.count} x {hw.gpu} "
            "(`tunegate gpus` lists the others)")
    if "train" in parsed.unavailable and not parsed.spec.estimate.dataset_tokens:
        why = parsed.unavailable["train"]
        say(f"note: the training data cannot be had here ({why.code}: {why.message}); the hours are unknown "
            "(set estimate.dataset_tokens)")
    return parsed


def run(args: argparse.Namespace) -> int:
    from tunegate.errors import EstimateError
    from tunegate.estimate.readings import summary_with_readings
    from tunegate.estimate.run import estimate_run

    parsed = load_parsed(args.spec, args.kind, gpu_flags(args))
    spec, path = parsed.spec, Path(args.spec)
    if spec is None:
        return 1
    base = path.resolve().parent
    try:
        est = estimate_run(spec, base_dir=base, meta=args.meta, data_available="train" not in parsed.unavailable)
        summary = summary_with_readings(spec, est, base_dir=base)
    except EstimateError as exc:
        if args.json:
            print(json.dumps({"error": {"code": exc.code, "message": str(exc), "hint": exc.hint}}))
        else:
            say(f"{exc.code} {exc}\n  fix: {exc.hint}")
        return 1
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(render_estimate(summary))
    if summary["memory"]["verdict"] != "does not fit":
        return 0
    from tunegate.estimate.stage import not_judged, sharded_fit

    sharded = sharded_fit(spec, est, base)  # fits on GPUs the config does not count (TG428): no failure
    if sharded is not None:
        say(f"note: TG428 {sharded[0]}\n  fix: {sharded[1]}")
        return 0
    savers = [s for s in parsed.result.stats.get("memory_savers") or [] if isinstance(s, str)]
    if savers:  # what lowers the memory is not modelled (TG429): an upper bound, no failure
        message, hint = not_judged(est, savers, str(parsed.result.stats.get("trainer")))
        say(f"note: TG429 {message}\n  fix: {hint}")
        return 0
    return 1


def sample_statement(sample: dict[str, Any]) -> str:
    """How a sampled character count was estimated (`tunegate.estimate.characters.CharacterSample`)."""
    from tunegate.estimate.characters import CharacterSample

    return CharacterSample.model_validate(sample).statement()


def render_estimate(s: dict[str, Any]) -> str:
    """The estimate as a plain-text table (no colour: it is meant to be pasted into tickets)."""
    from tunegate.estimate.readings import Reading, render_readings

    m, t, tok, model = s["memory"], s["throughput"], s["tokens"], s["model"]
    moe = f", {model['active_params']:,} active per token" if model["active_params"] != model["total_params"] else ""
    lines = [f"{model['id']} on {s['hardware']['count']} x {s['hardware']['gpu']}  ({model['total_params']:,} "
             f"params{moe}, {model['trainable_params']:,} trainable, {model['method']}; counted from "
             f"{model['count']})", "", f"  {'memory per GPU':<22}{'GiB':>9}"]
    for term, gib in sorted(m["breakdown"].items(), key=lambda kv: -kv[1]):
        mark = "  <- biggest" if term == m["biggest"] else ""
        lines.append(f"  {term:<22}{gib:>9.2f}{mark}")
    lines += [f"  {'peak':<22}{m['peak_gib']:>9.2f}  band {m['low_gib']:.1f}-{m['high_gib']:.1f} of "
              f"{m['capacity_gib']:g}: {m['verdict']}"]
    if m.get("check"):
        c = m["check"]
        lines.append(f"  {'mini-run check':<22}{c['measured_gib']:>9.2f}  measured vs {c['predicted_gib']:.2f} "
                     f"predicted at {c['micro_batch_size']} x {c['seq_len']} tokens"
                     + (" (applied)" if c["applied"] else " (not applied)"))
    lines += ["", f"  tokens/s per GPU      {t['tokens_per_s']:>12,.0f}  ({t['source']}, MFU {t['mfu']:.0%})",
              f"  training tokens       {tok['total']:>12,.0f}  ({tok['epochs']:g} epoch(s), from {tok['source']})"
              if tok["source"] != "none" else "  training tokens            unknown  (the training data cannot be had here)",
              f"  hours                 {s['hours']:>12,.1f}" if s["hours"] is not None else
              "  hours                      unknown  (no training data here: set estimate.dataset_tokens)"]
    if tok.get("sample"):
        lines.insert(-1, f"                        (characters {sample_statement(tok['sample'])})")
    if s["cost_usd"] is not None:
        lines.append(f"  cost (USD)            {s['cost_usd']:>12,.0f}")
    found = [Reading.model_validate(r) for r in s.get("readings", [])]
    lines += render_readings(found, s["hardware"]["count"], s["hardware"]["gpu"])
    return "\n".join(lines)

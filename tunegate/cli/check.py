"""`tunegate check`: run the gate on a spec, or on bare train/validation files.

    tunegate check examples/quickstart.yaml
    tunegate check --train data/train.jsonl --validation data/val.jsonl --json
    tunegate check examples/quickstart.yaml --mini-run     # stages 0-4: real LoRA steps on a sample
    tunegate check examples/quickstart.yaml --output-format sarif --html report.html > tunegate.sarif
    tunegate check examples/axolotl/lora-1b.yml             # an axolotl or TRL config, as it is
    tunegate check --train data/sharegpt.json --data-format sharegpt
    PREFECT_API_URL=http://prefect:4200/api tunegate check spec.yaml --emit-event   # starts the preflight
"""
from __future__ import annotations

import argparse
import sys

from tunegate.cli.emit import add_report_flags, chosen_format, emit_report, refuse_unsafe_outputs
from tunegate.cli.event_flag import add_emit_flag, emit_dataset_event, require_spec, skipped
from tunegate.errors import UsageError


def register(sub: argparse._SubParsersAction) -> None:
    from tunegate.spec import importers  # the dialects --from takes; here, as `lint` imports this module

    p = sub.add_parser("check", help="run the preflight gate",
                       description="Run the gate's stages cheapest first and stop at the first that fails. "
                                   "Exit 0 when every gate that ran passed, 1 when one rejected, 2 usage "
                                   "error. The report says whether a full run is approved: that needs every "
                                   "required gate (a spec, a separate validation set, the mini-run).")
    p.add_argument("spec", nargs="?", metavar="SPEC|CONFIG",
                   help="the spec YAML, or an axolotl / TRL `trl sft` config (omit to check only --train/--validation)")
    p.add_argument("--from", dest="kind", choices=importers.KINDS,
                   help="what the config file is (default: detected from its keys)")
    p.add_argument("--data-format", choices=["auto", "messages", "sharegpt", "alpaca", "prompt_completion"],
                   help="the records' format (overrides data.format; default auto: each file's first record decides)")
    p.add_argument("--train", metavar="PATH", help="training JSONL (overrides data.train)")
    p.add_argument("--validation", metavar="PATH", help="validation JSONL (overrides data.validation)")
    p.add_argument("--json", action="store_true", help="write the report as one JSON document to stdout")
    p.add_argument("--mini-run", action="store_true",
                   help="also run the mini-run (stage 4): real LoRA steps on a sample, with health checks; "
                        "needs tunegate[train]")
    p.add_argument("--advise", action="store_true",
                   help="also run the advisor (stage 5): rule-based advice, plus the LLM when its key is set")
    p.add_argument("--max-findings", type=_positive, metavar="N", help="findings shown per code (default 20)")
    add_report_flags(p)
    add_approval_flag(p)
    add_emit_flag(p)
    p.set_defaults(run=run)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def run(args: argparse.Namespace) -> int:
    from tunegate.gate import check
    from tunegate.render import terminal

    if args.spec is None and args.train is None and args.validation is None:
        raise UsageError("give a spec, or --train and/or --validation files to check")
    chosen_format(args)  # two formats for stdout is a usage error before any stage runs
    refuse_unsafe_outputs(args)  # and so is --html over an input, a FIFO or a file tunegate did not write
    _emit_usage(args)
    spec = args.spec
    if spec is not None and args.kind is not None:
        from tunegate.gate import DEFAULT_CAP
        from tunegate.spec.check import parse_spec

        spec = parse_spec(spec, cap=args.max_findings or DEFAULT_CAP, kind=args.kind)
    report = check(spec, train=args.train, validation=args.validation, mini_run=args.mini_run,
                   advisor=args.advise, max_findings=args.max_findings, data_format=args.data_format)
    emit_report(report, args, lambda: terminal(report, sys.stdout))
    if args.emit_event:
        _emit(report, args.spec)
    return exit_code(report, args.require_full_approval)


def _emit_usage(args: argparse.Namespace) -> None:
    require_spec(args, args.spec, "give SPEC")
    if args.emit_event and (args.train or args.validation):
        # The preflight the event starts gates the spec's own data files: the digests must be theirs.
        raise UsageError("--emit-event sends the digests of the spec's own data: drop --train/--validation")


def _emit(report, spec_path: str) -> None:
    if not report.gates_passed:
        return skipped("the gate rejected the spec or its data")
    prints = {role: fp for role, fp in report.fingerprints.items() if role in ("train", "validation")}
    if not prints:
        return skipped("no data fingerprint was computed (the overlap stage did not run)")
    emit_dataset_event(spec_path, prints, (report.fingerprints.get("spec") or {}).get("digest"))


def add_approval_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--require-full-approval", action="store_true",
                   help="exit 1 unless the report approves a full run (every required gate ran and passed), "
                        "not only when a gate rejected")


def exit_code(report, require_full_approval: bool) -> int:
    """0 when every gate that ran passed (or, when required, a full run is approved); else 1."""
    ok = report.approved_for_full_run if require_full_approval else report.gates_passed
    return 0 if ok else 1

"""`tunegate check`: run the gate on a spec, or on bare train/validation files.

    tunegate check examples/quickstart.yaml
    tunegate check --train data/train.jsonl --validation data/val.jsonl --json
    tunegate check examples/quickstart.yaml --mini-run     # stages 0-4: real LoRA steps on a sample
    tunegate check examples/worked_case.yaml --advise      # and the advisor's verified suggestions
    tunegate check examples/quickstart.yaml --output-format sarif --html report.html > tunegate.sarif
    tunegate check examples/axolotl/lora-1b.yml             # an axolotl, TRL or LLaMA-Factory config, as it is
    tunegate check --train data/sharegpt.json --data-format sharegpt
    PREFECT_API_URL=http://prefect:4200/api tunegate check spec.yaml --emit-event   # starts the preflight
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from tunegate.cli.emit import add_report_flags, chosen_format, emit_report, refuse_unsafe_outputs
from tunegate.cli.event_flag import add_emit_flag, emit_dataset_event, require_spec, skipped
from tunegate import formats
from tunegate.cli.gpu_flags import add_gpu_flags, gpu_flags
from tunegate.cli.gpu_flags import positive_int as _positive  # lint and samples take it from here
from tunegate.errors import UsageError


def register(sub: argparse._SubParsersAction) -> None:
    from tunegate.spec import importers  # the dialects --from takes; here, as `lint` imports this module

    p = sub.add_parser("check", help="run the preflight gate",
                       description="Run the gate's stages cheapest first and stop at the first that fails. "
                                   "Exit 0 when every gate that ran passed, 1 when one rejected, 2 usage "
                                   "error. The report says whether a full run is approved: that needs every "
                                   "required gate (a spec, a separate validation set, the mini-run).")
    p.add_argument("spec", nargs="?", metavar="SPEC|CONFIG",
                   help="the spec YAML, or an axolotl, TRL (`trl sft`) or LLaMA-Factory config (omit to check "
                        "only --train/--validation)")
    p.add_argument("--from", dest="kind", choices=importers.KINDS,
                   help="what the config file is (default: detected from its keys)")
    add_gpu_flags(p)
    p.add_argument("--data-format", choices=formats.CHOICES,
                   help="the records' format (overrides data.format; default auto: each file's first record decides)")
    p.add_argument("--train", metavar="PATH", action="append",
                   help="training file (overrides data.train); given more than once, the files are read in "
                        "order as one split")
    p.add_argument("--validation", metavar="PATH", action="append",
                   help="validation file (overrides data.validation); may be given more than once, as --train")
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


def run(args: argparse.Namespace) -> int:
    from tunegate.gate import check, given_split

    if args.spec is None and args.train is None and args.validation is None:
        raise UsageError("give a spec, or --train and/or --validation files to check")
    chosen_format(args)  # two formats for stdout is a usage error before any stage runs
    refuse_unsafe_outputs(args)  # and so is --html over an input, a FIFO or a file tunegate did not write
    _emit_usage(args)
    spec, hardware = args.spec, gpu_flags(args)
    if spec is not None and (args.kind is not None or hardware):
        from tunegate.gate import DEFAULT_CAP
        from tunegate.spec.check import parse_spec

        given = {role: given_split(p) for role, p in (("train", args.train), ("validation", args.validation)) if p}
        spec = parse_spec(spec, cap=args.max_findings or DEFAULT_CAP, kind=args.kind, data=given, hardware=hardware)
    spec = _require_extras(args, spec)
    report = check(spec, train=args.train, validation=args.validation, mini_run=args.mini_run,
                   advisor=args.advise, max_findings=args.max_findings, data_format=args.data_format)
    emit_report(report, args, lambda: _text(report, _advice(report, args) if args.advise else None))
    if args.emit_event:
        _emit(report, args.spec)
    return exit_code(report, args.require_full_approval)


def _advice(report, args: argparse.Namespace) -> tuple[str, dict | None, list]:
    """(header, advice, findings) to print: the advisor stage's; or, where the gate stopped before it
    (a run that does not fit fails the estimate), the advisor run on the spec alone, as `tunegate advise` does."""
    stage = next((s for s in report.stages if s.name == "advisor"), None)
    if report.facts.advice or stage is None or stage.status != "skipped" or args.spec is None:
        return "advice (each change verified by our estimate before it is shown):", report.facts.advice, []
    from pathlib import Path

    from tunegate.advisor.stage import advise
    from tunegate.spec.check import parse_spec

    parsed = parse_spec(args.spec, kind=args.kind)
    if parsed.spec is None:
        return "", None, []
    base = Path(args.spec).resolve().parent
    found, findings = advise(parsed.spec, report.facts, base, target=parsed.kind)
    failed = next((s.name for s in report.stages if s.status == "failed"), "?")
    header = (f"advice (the gate stopped at '{failed}', so the advisor read the spec alone; each change "
              "verified by our estimate before it is shown):")
    return header, None if found is None else found.model_dump(mode="json"), findings


def _text(report, advised: tuple[str, dict | None, list] | None) -> str:
    """The terminal report; with advice, its suggestions (as `tunegate advise` prints them) before the verdict."""
    from tunegate.render import finding_lines, terminal, use_colour

    text = terminal(report, sys.stdout)
    header, advice, findings = advised or ("", None, [])
    if not advice and not findings:
        return text
    from tunegate.cli.advise import render_advice

    lines = [line for f in findings for line in finding_lines(f, use_colour(sys.stdout))]
    if advice:
        hardware = (report.facts.estimate or {}).get("hardware", {})
        block = render_advice(advice, hardware.get("count", 1), hardware.get("gpu", ""))
        lines += [f"    {line}" if line else "" for line in block.splitlines()]
    stages, _, verdict = text.rpartition("\n\n")  # the verdict follows the report's one blank line
    return f"{stages}\n\n{header}\n" + "\n".join(lines) + f"\n\n{verdict}"


def _require_extras(args: argparse.Namespace, spec: Any) -> Any:
    """What this check needs installed, asked before any stage runs (a usage error naming the extra):
    the training stack for --mini-run, pyarrow for a parquet or Arrow data file. Returns the spec,
    parsed here when its data paths must be known first (the gate then reuses that parse)."""
    from tunegate.cli.extras import TRAINING, installed, require, require_readers

    if not args.mini_run and installed("pyarrow"):
        return spec
    if isinstance(spec, str):
        from tunegate.gate import DEFAULT_CAP, given_split
        from tunegate.spec.check import parse_spec

        given = {role: given_split(p) for role, p in (("train", args.train), ("validation", args.validation)) if p}
        spec = parse_spec(spec, cap=args.max_findings or DEFAULT_CAP, kind=args.kind, data=given,
                          hardware=gpu_flags(args))
    valid = spec.spec if spec is not None else None
    if args.mini_run and valid is not None:  # a rejected spec never reaches the mini-run
        require(*TRAINING, why="--mini-run trains a few LoRA steps")
    from tunegate.spec.model import split_files

    given = {role: split_files(p) for role, p in (("train", args.train), ("validation", args.validation)) if p}
    spec_files = {role: valid.data.files(role) for role in ("train", "validation")} if valid is not None else {}
    require_readers(path for role in ("train", "validation") for path in given.get(role, spec_files.get(role, [])))
    return spec


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

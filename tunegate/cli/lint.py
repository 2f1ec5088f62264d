"""`tunegate lint`: the dataset contract on each data file named, for pre-commit and CI.

    tunegate lint data/train.jsonl data/val.jsonl.gz
    tunegate lint --json data/*.jsonl
    tunegate lint --output-format sarif data/*.jsonl > tunegate.sarif
    PREFECT_API_URL=... tunegate lint --emit-event --spec spec.yaml data/*.jsonl   # starts the preflight

Each file is checked on its own (no spec, no train/validation pairing, no overlap). A metadata file
beside the data (LLaMA-Factory's dataset_info.json, a save_to_disk index: tunegate.dataset.metadata_files)
is named and skipped, not read as records. Exit 0 when no file has an error (warnings are shown but
pass, unless --strict), 1 otherwise, 2 on bad usage.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tunegate.cli.check import _positive
from tunegate.cli.emit import add_report_flags, chosen_format, emit_report, refuse_unsafe_outputs
from tunegate.cli.event_flag import add_emit_flag, emit_dataset_event, require_spec, skipped
from tunegate.report import GateReport, StageResult


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("lint", help="check data files against the dataset contract (pre-commit)",
                       description="Check each data file (.jsonl, .jsonl.gz, a .json array, .parquet, .arrow, .csv; "
                                   "any format tunegate reads) against its contract. Exit 0 clean, 1 errors found, "
                                   "2 usage error.")
    p.add_argument("files", nargs="+", metavar="FILE", help="data files to check")
    p.add_argument("--json", action="store_true", help="write one JSON document to stdout")
    p.add_argument("--strict", action="store_true", help="fail on warnings too")
    p.add_argument("--max-findings", type=_positive, default=20, metavar="N",
                   help="findings shown per code (default 20)")
    add_report_flags(p)
    add_emit_flag(p, needs_spec_flag=True)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from tunegate.dataset import validate_dataset
    from tunegate.dataset.metadata_files import metadata_kind
    from tunegate.pathguard import shown

    from tunegate.cli.extras import require_readers

    chosen_format(args)
    refuse_unsafe_outputs(args)
    require_spec(args, args.spec, "add --spec SPEC")
    require_readers(args.files)  # a parquet or Arrow file without pyarrow: the install line, exit 2
    # Each file is its own "role", so stats and duplicate detection stay per file; the role is the
    # name as it can be printed (a file name need not be UTF-8, nor free of newlines).
    named = {shown(name): Path(name) for name in args.files}
    metadata = {name: kind for name, path in named.items() if (kind := metadata_kind(path)) is not None}
    files = {name: path for name, path in named.items() if name not in metadata}
    prints: dict = {}
    result = validate_dataset(files, cap=args.max_findings, observers=_digests(prints, files, args.emit_event))
    counts = {sev: sum(n for code, n in result.totals_by_code.items() if _severity(result, code) == sev)
              for sev in ("error", "warning")}
    failed = counts["error"] > 0 or (args.strict and counts["warning"] > 0)
    doc = {"passed": not failed, "counts": counts, "files": result.stats, "skipped": metadata,
           "findings": [f.model_dump() for f in result.findings], "totals_by_code": result.totals_by_code}
    emit_report(GateReport.from_stages([result]), args, lambda: _text(result, counts, failed, metadata),
                json_text=lambda: json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    if args.emit_event and failed:
        skipped("the data did not pass")
    elif args.emit_event:
        emit_dataset_event(args.spec, prints)
    return 1 if failed else 0


def _digests(sink: dict, files: dict[str, Path], wanted: bool) -> list:
    """The fingerprint observer (each file's content digest, in the same single read) when an event will carry it."""
    if not wanted:
        return []
    from tunegate.dataset.fingerprint import FingerprintObserver

    return [FingerprintObserver(sink, files)]


def _severity(result: StageResult, code: str) -> str:
    return next((f.severity for f in result.findings if f.code == code), "error")


def _text(result: StageResult, counts: dict[str, int], failed: bool, metadata: dict[str, str]) -> str:
    from tunegate.render import by_severity, finding_lines, paint, use_colour

    colour = use_colour(sys.stdout)
    lines = [f"{paint('⊘', 'skipped', colour)} {name}: skipped: {kind}, not records"
             for name, kind in metadata.items()]
    for name, stats in result.stats.items():
        mine = [f for f in result.findings if f.file == name]
        mark = paint("✗", "failed", colour) if any(f.severity == "error" for f in mine) else paint("✓", "passed", colour)
        lines.append(f"{mark} {name}: {stats['records']} records")
        for f in by_severity(mine):  # errors first
            lines.extend(finding_lines(f, colour))
    hidden = sum(result.totals_by_code.values()) - len(result.findings)
    if hidden > 0:
        lines.append(f"  … {hidden} more not shown (raise --max-findings)")
    verdict = paint("FAILED", "failed", colour) if failed else paint("OK", "passed", colour)
    lines.append(f"{verdict}: {len(result.stats)} file(s), {counts['error']} error(s), {counts['warning']} warning(s)"
                 + (f", {len(metadata)} metadata file(s) skipped" if metadata else ""))
    return "\n".join(lines) + "\n"


"""`tunegate convert`: write any dataset format tunegate reads as OpenAI chat JSONL, losslessly.

    tunegate convert data/sharegpt.json data/train.jsonl --to messages
    tunegate convert data/alpaca.parquet data/train.jsonl.gz --to messages --from alpaca

The input is checked first (the dataset stage, in its own format): a record with a defect cannot
be converted faithfully, so any error stops the conversion (exit 1) with its place. Every key of
every record is kept; ShareGPT's `from`/`value` become `role`/`content`, Alpaca's fields become a
user and an assistant turn (LLaMA-Factory's rule), a TRL prompt's replies get `weight: 0`. The
output is written to a temporary file and renamed into place, then its content digest is compared
with the input's (both in chat form): they must be equal, or the output is removed. The input, a
folder or a device is never overwritten (exit 2), nor an existing output without --force; a
symbolic link is written through (tunegate.output.destination).
"""
from __future__ import annotations

import argparse
import gzip
import sys
from pathlib import Path

from tunegate.cli.streams import say
from tunegate.errors import TunegateError
from tunegate.pathguard import shown


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("convert", help="write a dataset in any format as OpenAI chat JSONL",
                       description="Convert ShareGPT, Alpaca, TRL prompt-completion (JSONL, .json array, CSV, "
                                   "parquet) to OpenAI chat JSONL, keeping every key. Exit 0 written, 1 the input "
                                   "has errors, 2 usage error.")
    p.add_argument("input", type=Path, metavar="IN", help="the dataset file to convert")
    p.add_argument("output", type=Path, metavar="OUT", help="the JSONL file to write (.jsonl.gz compresses)")
    p.add_argument("--to", choices=["messages"], default="messages", help="the output format (OpenAI chat)")
    p.add_argument("--from", dest="source", default="auto",
                   choices=["auto", "messages", "sharegpt", "alpaca", "prompt_completion"],
                   help="the input's format (default: detected from its first record)")
    p.add_argument("--force", action="store_true", help="replace OUT if it exists (never IN)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from tunegate.dataset import validate_dataset
    from tunegate.render import finding_lines, use_colour

    target = _refuse_unsafe(args.input, args.output, args.force)
    checked = validate_dataset({"input": args.input}, cap=10, fmt=args.source)
    errors = [f for f in checked.findings if f.severity == "error"]
    if errors:
        for f in errors:
            sys.stderr.write("\n".join(finding_lines(f, use_colour(sys.stderr))) + "\n")
        total = sum(n for code, n in checked.totals_by_code.items() if any(f.code == code for f in errors))
        say(f"tunegate: not converted: {shown(args.input)} has {total} error(s) (first ones above); fix them first")
        return 1
    fmt = checked.stats["input"]["format"] or "messages"
    written = _write(args.input, target, args.source)
    _verify(args.input, target)
    if fmt == "prompt_completion":
        sys.stderr.write("note: plain-text prompt/completion records become a user and an assistant turn, which "
                         "trainers render through the chat template (TRL trains plain text without one)\n")
    print(f"{written} records: {shown(args.input)} ({fmt}) -> {shown(args.output)} (messages)")
    return 0


def _refuse_unsafe(source: Path, target: Path, force: bool) -> Path:
    """The file to write (tunegate.output.destination: never the input, a folder or a device; an
    existing file only with --force)."""
    from tunegate.output.destination import destination

    return destination(target, [source], force, what="OUT")


def _write(source: Path, target: Path, fmt: str) -> int:
    import orjson

    from tunegate.dataset.fingerprint import json_default
    from tunegate.dataset.records import iter_canonical
    from tunegate.output.destination import written_aside

    count = 0
    with written_aside(target) as raw:
        out = gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) if target.name.endswith(".gz") else raw
        for _, _, record in iter_canonical(source, fmt, strict=True):
            # A number a double cannot hold is read as a Decimal: written back digit for digit.
            out.write(orjson.dumps(record, default=json_default) + b"\n")
            count += 1
        if out is not raw:
            out.close()
    return count


def _verify(source: Path, target: Path) -> None:
    """The output's digest must equal the input's: nothing was lost or changed on the way."""
    from tunegate.dataset.fingerprint import fingerprint_file

    before, after = fingerprint_file(source), fingerprint_file(target)
    if (before.digest, before.records) != (after.digest, after.records):
        target.unlink(missing_ok=True)
        raise TunegateError(f"the written file does not match {source} ({after.records} vs {before.records} "
                            "records, digests differ); it was removed. This is a bug in tunegate: please report it.")

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
symbolic link is written through (tunegate.destination). The conversion itself is
`tunegate.dataset.convert`; this module parses the flags and says what happened.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tunegate import formats
from tunegate.cli.streams import say
from tunegate.pathguard import shown


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("convert", help="write a dataset in any format as OpenAI chat JSONL",
                       description="Convert ShareGPT, Alpaca, TRL prompt-completion (JSONL, .json array, CSV, "
                                   "parquet) to OpenAI chat JSONL, keeping every key. Exit 0 written, 1 the input "
                                   "has errors, 2 usage error.")
    p.add_argument("input", type=Path, metavar="IN", help="the dataset file to convert")
    p.add_argument("output", type=Path, metavar="OUT", help="the JSONL file to write (.jsonl.gz compresses)")
    p.add_argument("--to", choices=[formats.CHAT], default=formats.CHAT, help="the output format (OpenAI chat)")
    p.add_argument("--from", dest="source", default=formats.AUTO, choices=formats.CHOICES,
                   help="the input's format (default: detected from its first record)")
    p.add_argument("--force", action="store_true", help="replace OUT if it exists (never IN)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from tunegate.dataset import validate_dataset
    from tunegate.dataset.convert import convert_file, refuse_unsafe
    from tunegate.render import finding_lines, use_colour

    refuse_unsafe(args.input, args.output, args.force)
    checked = validate_dataset({"input": args.input}, cap=10, fmt=args.source)
    errors = [f for f in checked.findings if f.severity == "error"]
    if errors:
        for f in errors:
            sys.stderr.write("\n".join(finding_lines(f, use_colour(sys.stderr))) + "\n")
        total = sum(n for code, n in checked.totals_by_code.items() if any(f.code == code for f in errors))
        say(f"tunegate: not converted: {shown(args.input)} has {total} error(s) (first ones above); fix them first")
        return 1
    fmt = checked.stats["input"]["format"] or formats.CHAT
    written = convert_file(args.input, args.output, args.source, force=args.force)
    note = formats.info(fmt).convert_note
    if note:
        sys.stderr.write(f"note: {note}\n")
    print(f"{written} records: {shown(args.input)} ({fmt}) -> {shown(args.output)} ({formats.CHAT})")
    return 0

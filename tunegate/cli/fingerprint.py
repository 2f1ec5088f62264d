"""`tunegate fingerprint`: print the content digest and record count of data files.

    tunegate fingerprint data/train.jsonl data/validation.jsonl
    tunegate fingerprint data/validation.jsonl --json
    tunegate fingerprint --algorithm sha256 data/validation.jsonl   # a digest of the first version

The digest ignores blank lines, line endings, JSON whitespace and key order, and changes with any
content or record order: two runs whose validation digests differ must not be compared.
"""
from __future__ import annotations

import argparse
import json

from tunegate.cli.streams import say
from tunegate.errors import TunegateError, UsageError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("fingerprint", help="print content digests of data files",
                       description="Print each file's hash over its canonical JSONL records (blank lines, "
                                   "line endings, JSON whitespace and key order do not count) and its record "
                                   "count: BLAKE3, written blake3:<hex>, or with --algorithm sha256 the first "
                                   "version's SHA-256 (bare hex, as digests were published before). Exit 0 when "
                                   "every file was read, 1 when a file holds a line that is not a JSON object, "
                                   "2 when a file cannot be opened.")
    p.add_argument("files", nargs="+", metavar="FILE", help="JSONL files (gzip is read transparently)")
    p.add_argument("--json", action="store_true", help="write one JSON array of fingerprints to stdout")
    p.add_argument("--algorithm", choices=("blake3", "sha256"), default="blake3",
                   help="the digest's version: blake3 (the default) or sha256 (the first, bare hex)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from tunegate.dataset.fingerprint import ALGORITHM, SHA256, fingerprint_file

    algorithm = SHA256 if args.algorithm == "sha256" else ALGORITHM
    results, code = [], 0
    for name in args.files:
        try:
            results.append(fingerprint_file(Path(name), algorithm))
        except UsageError as exc:
            say(f"tunegate: error: {exc}")
            code = 2
        except TunegateError as exc:
            say(f"tunegate: error: {exc}")
            code = max(code, 1)
    if args.json:
        print(json.dumps([r.model_dump() for r in results], indent=2))
    else:
        for r in results:
            print(f"{r.digest}  {r.records:>9} records  {r.file}")
    return code

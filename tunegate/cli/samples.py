"""`tunegate samples`: representative training records as the model will see them, trained tokens marked.

    tunegate samples examples/quickstart.yaml            # 5 records: shortest, median, longest, 2 random
    tunegate samples lora-1b.yml -n 8 --seed 3            # an axolotl or TRL config works too
    tunegate samples SPEC --json

Each record is rendered through the model's chat template exactly as the full run tokenises it
(the token audit): trained tokens are marked (green on a terminal, ⟦…⟧ elsewhere), with the token
count against training.max_seq_len and what truncation cut. Needs tunegate[train] (the tokenizer).
"""
from __future__ import annotations

import argparse
import sys

from tunegate.cli.check import _positive


def register(sub: argparse._SubParsersAction) -> None:
    from tunegate.spec import importers  # the dialects --from takes (registered in tunegate.spec.importers)

    p = sub.add_parser("samples", help="show representative records rendered with their trained tokens",
                       description="Print N representative training records rendered through the chat template, "
                                   "trained tokens marked, with token counts and truncation. Exit 0, or 2 on a "
                                   "usage error (an invalid spec, no tokenizer).")
    p.add_argument("spec", metavar="SPEC|CONFIG", help="the spec YAML, or an axolotl / TRL config")
    p.add_argument("-n", type=_positive, default=5, metavar="N", help="records to show (default 5)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random picks (default 0)")
    p.add_argument("--split", choices=["train", "validation"], default="train", help="which file (default train)")
    p.add_argument("--from", dest="kind", choices=importers.KINDS, help="what the config file is")
    p.add_argument("--json", action="store_true", help="write the samples as one JSON document")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from tunegate.cli.paths import require_files
    from tunegate.errors import MissingDependency
    from tunegate.render import use_colour
    from tunegate.spec.check import parse_spec

    spec = parse_spec(args.spec, kind=args.kind).require()
    require_files(spec, f"data.{args.split}")  # a folder, FIFO or device: said now, not after the imports
    try:
        from tunegate.training.samples import render_samples
    except ImportError:
        raise MissingDependency("transformers", "train") from None
    colour = not args.json and use_colour(sys.stdout)
    sys.stdout.write(render_samples(spec, args.split, args.n, args.seed, as_json=args.json, colour=colour))
    return 0

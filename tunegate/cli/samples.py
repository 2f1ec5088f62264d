"""`tunegate samples`: representative training records as the model will see them, trained tokens marked.

    tunegate samples examples/quickstart.yaml            # 5 records: shortest, median, longest, 2 random
    tunegate samples lora-1b.yml -n 8 --seed 3            # an axolotl, TRL or LLaMA-Factory config works too
    tunegate samples SPEC --json
    tunegate samples lora-1b.yml --train data/train.jsonl --validation data/val.jsonl   # local copies, as `check`

Each record is rendered through the model's chat template exactly as the full run tokenises it
(the token audit): trained tokens are marked (green on a terminal, ⟦…⟧ elsewhere), with the token
count against training.max_seq_len and what truncation cut. Needs tunegate[train] (the tokenizer).
"""
from __future__ import annotations

import argparse
import sys

from tunegate.cli.check import _positive
from tunegate.cli.gpu_flags import add_config_flags, gpu_flags


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("samples", help="show representative records rendered with their trained tokens",
                       description="Print N representative training records rendered through the chat template, "
                                   "trained tokens marked, with token counts and truncation. Exit 0, or 2 on a "
                                   "usage error (an invalid spec, no tokenizer).")
    p.add_argument("spec", metavar="SPEC|CONFIG", help="the spec YAML, or an axolotl, TRL or LLaMA-Factory config")
    p.add_argument("-n", type=_positive, default=5, metavar="N", help="records to show (default 5)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random picks (default 0)")
    p.add_argument("--split", choices=["train", "validation"], default="train", help="which file (default train)")
    p.add_argument("--train", metavar="PATH", action="append",
                   help="training file (overrides data.train, or a config's datasets); more than once: read in order")
    p.add_argument("--validation", metavar="PATH", action="append",
                   help="validation file (overrides data.validation); more than once: read in order")
    add_config_flags(p)
    p.add_argument("--json", action="store_true", help="write the samples as one JSON document")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from tunegate.cli.extras import require
    from tunegate.cli.paths import require_files
    from tunegate.processes.held_collections import is_own_process
    from tunegate.gate import given_split
    from tunegate.render import use_colour
    from tunegate.spec.check import parse_spec

    given = {role: given_split(p) for role, p in (("train", args.train), ("validation", args.validation)) if p}
    spec = parse_spec(args.spec, kind=args.kind, data=given, hardware=gpu_flags(args)).require()
    if given:  # a tunegate spec's data.* give way too, as `check --train/--validation` reads them
        resolved = {k: [p.resolve() for p in v] if isinstance(v, list) else v.resolve() for k, v in given.items()}
        spec = spec.model_copy(update={"data": spec.data.model_copy(update=resolved)})
    require_files(spec, f"data.{args.split}")  # a folder, FIFO or device: said now, not after the imports
    require("transformers", "tokenizers", why="tunegate samples renders records with the model's tokenizer")
    from tunegate.training.samples import render_samples

    colour = not args.json and use_colour(sys.stdout)
    sys.stdout.write(render_samples(spec, args.split, args.n, args.seed, as_json=args.json, colour=colour,
                                    torch_free=is_own_process()))
    return 0

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
import json
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
    from tunegate.render import use_colour
    from tunegate.spec.check import parse_spec

    spec = parse_spec(args.spec, kind=args.kind).require()
    tokenizer = _tokenizer(spec)
    picked, stats = _pick(spec, tokenizer, args)
    if args.json:
        sys.stdout.write(json.dumps(_as_json(picked, tokenizer, spec), indent=2, ensure_ascii=False) + "\n")
        return 0
    colour = use_colour(sys.stdout)
    path = getattr(spec.data, args.split)
    print(f"{len(picked)} of {stats['records']} records of {path} (tokens p50 {stats['tokens_p50']}, max "
          f"{stats['tokens_max']}; {stats['over_max_seq_len']} over max_seq_len {spec.training.max_seq_len})")
    for sample in picked:
        sys.stdout.write(_text(sample, tokenizer, spec.training.max_seq_len, colour))
    return 0


def _tokenizer(spec):  # noqa: ANN001, ANN202 (transformers' types, imported lazily)
    from tunegate.errors import MissingDependency, UsageError

    try:
        from tunegate.training.chat_tokens import substitute_pad_token
        from tunegate.training.model import load_tokenizer
        from tunegate.training.tiny_model import resolve_model_id
    except ImportError:
        raise MissingDependency("transformers", "train") from None
    try:
        tokenizer = load_tokenizer(resolve_model_id(spec.model.id), spec)
    except (OSError, ValueError) as exc:
        raise UsageError(f"the tokenizer of model.id {spec.model.id!r} cannot be loaded: {exc}") from None
    if not tokenizer.chat_template:
        raise UsageError(f"the tokenizer of {spec.model.id!r} has no chat template: nothing to render")
    try:
        substitute_pad_token(tokenizer, spec.model.pad_token)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    return tokenizer


def _pick(spec, tokenizer, args):  # noqa: ANN001, ANN202
    from tunegate.report import FindingCollector
    from tunegate.training.samples import representative
    from tunegate.training.token_audit import audit_split

    path = getattr(spec.data, args.split)
    stats, audited = audit_split(path, str(path), tokenizer, spec.training.max_seq_len, FindingCollector("samples"),
                                 seed=args.seed, fmt=spec.data.format, loss_on=spec.training.loss_on)
    return representative(audited, args.n, args.seed), stats


def _text(sample, tokenizer, max_seq_len: int, colour: bool) -> str:  # noqa: ANN001
    from tunegate.training.samples import cut_text, segments

    enc, rec = sample.audited.encoded, sample.audited.record
    where = f"line {rec.line}" if rec.line else f"row {rec.index}"
    head = (f"\n── record {rec.index} ({where}, {sample.why}): {enc.full_length} tokens / max_seq_len {max_seq_len}, "
            f"{enc.trainable_tokens} trained ──\n")
    body = "".join(f"\x1b[32m{text}\x1b[0m" if colour and trained else f"⟦{text}⟧" if trained else text
                   for text, trained in segments(tokenizer, enc))
    cut = cut_text(tokenizer, enc)
    tail = ""
    if cut:
        tail = (f"\n  truncation cut {len(enc.cut)} tokens{' (the final reply is cut)' if enc.final_reply_cut else ''}:"
                f" {cut!r}")
    return head + body + tail + "\n"


def _as_json(picked, tokenizer, spec) -> dict:  # noqa: ANN001
    from tunegate.training.samples import cut_text, segments

    return {"max_seq_len": spec.training.max_seq_len, "samples": [{
        "why": s.why, "record": s.audited.record.index, "line": s.audited.record.line or None,
        "tokens": s.audited.encoded.full_length, "trained_tokens": s.audited.encoded.trainable_tokens,
        "segments": [{"text": t, "trained": tr} for t, tr in segments(tokenizer, s.audited.encoded)],
        "cut_tokens": len(s.audited.encoded.cut), "cut": cut_text(tokenizer, s.audited.encoded),
        "final_reply_cut": s.audited.encoded.final_reply_cut} for s in picked]}

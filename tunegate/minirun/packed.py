"""Packing in the mini-run: the sample packed into rows as the full run packs it, and a check that
the model keeps packed records apart.

    batches, rows = packed_batches([a.encoded for a in sample], max_seq_len, micro, pad_id)
    diff = cross_record_diff(model, rows, pad_id, place)    # None: no row holds two records

Packed rows carry position ids that restart at every record and no attention mask
(tunegate.training.packing); transformers builds the per-record mask from those position ids for
the architectures whose attention goes through its masking utilities (Llama, Qwen, Mistral, Gemma,
Phi, GPT-2, GPT-NeoX, Falcon: measured equal to the records alone). Others ignore them: OPT takes its
learned positions from the attention mask, BLOOM has ALiBi and no position ids; there every token of
a packed row attends to the records before it, and the full run trains on that silently. So the
mini-run scores the first row that holds two records or more, packed and record by record, and
compares the logits.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tunegate.minirun.steps import autocast, to_device
from tunegate.report import FindingCollector
from tunegate.training.chat_tokens import EncodedChat, collate
from tunegate.training.device import RunPlace
from tunegate.training.packing import collate_packed, pack

# Largest |logit difference| between a record packed and alone, relative to the largest |logit|,
# read as kernel rounding: measured on the tiny Llama, 0 in fp32 and 2e-3 in bf16; OPT's leak is
# 0.2 and BLOOM's 6e-3 in fp32 (random 2-layer models).
TOLERANCE = {"fp32": 1e-4, "bf16": 2e-2, "fp16": 1e-2}


def packed_batches(encoded: Sequence[EncodedChat], max_seq_len: int, micro: int,
                   pad_id: int) -> tuple[list[dict[str, Any]], list[list[EncodedChat]]]:
    """The sample's records packed into rows, `micro` rows per batch, as the full run's collator builds them."""
    rows = pack(encoded, max_seq_len)
    return [collate_packed(rows[i:i + micro], pad_id) for i in range(0, len(rows), micro)], rows


def cross_record_diff(model: Any, rows: list[list[EncodedChat]], pad_id: int, place: RunPlace) -> float | None:
    """Largest relative |logit difference| between the records of a packed row scored together and alone."""
    import torch

    row = next((r for r in rows if len(r) > 1), None)
    if row is None:
        return None
    model.eval()
    with torch.no_grad(), autocast(place):
        together = model(**to_device(collate_packed([row], pad_id), place.device)).logits[0].float()
        worst, start = 0.0, 0
        for chat in row:
            alone = model(**to_device(collate([chat], pad_id), place.device)).logits[0].float()
            n = len(chat.input_ids)
            worst = max(worst, float((together[start:start + n] - alone).abs().max()))
            start += n
    return worst / max(1.0, float(together.abs().max()))


def check_isolated(model: Any, rows: list[list[EncodedChat]], pad_id: int, place: RunPlace,
                   out: FindingCollector) -> float | None:
    """TG540 when a packed record's logits depend on the records packed before it."""
    diff = cross_record_diff(model, rows, pad_id, place)
    if diff is not None and diff > TOLERANCE[place.precision]:
        name = type(getattr(model, "get_base_model", lambda: model)()).__name__
        out.add("TG540", "error", f"packed records attend to each other on {name} (attention "
                f"{place.attention}): a record's logits in a packed row differ from the same record alone by "
                f"{diff:.3g} of the largest logit (rounding is under {TOLERANCE[place.precision]:g}); the model "
                "ignores the position ids that keep packed records apart", "Set training.packing: false "
                "(axolotl: sample_packing: false) for this model, or use an architecture whose attention "
                "takes packed position ids (Llama, Qwen, Mistral, Gemma).", key="training.packing")
    return diff

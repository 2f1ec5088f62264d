"""Packing: several encoded records per row of `max_seq_len` tokens, each still attending only to itself.

    rows = pack(encoded, max_seq_len)                 # best-fit decreasing, as TRL's default "bfd"
    batch = collate_packed(rows[:4], pad_id=0)        # input_ids, labels, position_ids; no attention_mask

A row concatenates whole records (none is split; one longer than the row was truncated before).
Position ids restart at 0 for every record, and the batch carries no attention mask: transformers
then builds a block-diagonal causal mask from the position ids (`masking_utils.
find_packed_sequence_indices`, every attention kernel; flash-attention uses its varlen path), so
no token sees another record. The first label of each record is masked, so no record is trained
to continue the one before it. Padding at a row's end is one more "record" of its own, all labels masked.
"""
from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import Any

from tunegate.training.chat_tokens import IGNORE, EncodedChat


def pack(encoded: Sequence[EncodedChat], max_seq_len: int) -> list[list[EncodedChat]]:
    """Rows of records, longest first into the row with the least room that still fits them."""
    rows: list[list[EncodedChat]] = []
    free: list[tuple[int, int]] = []  # (room left, row number), sorted by room
    for chat in sorted(encoded, key=lambda c: len(c.input_ids), reverse=True):
        size = len(chat.input_ids)
        at = bisect.bisect_left(free, (size, -1))
        if at < len(free):
            room, row = free.pop(at)
        else:
            room, row = max_seq_len, len(rows)
            rows.append([])
        rows[row].append(chat)
        bisect.insort(free, (room - size, row))
    return rows


def collate_packed(rows: Sequence[Sequence[EncodedChat]], pad_id: int) -> dict[str, Any]:
    """A micro batch of packed rows, right-padded to the widest row."""
    import torch

    width = max(sum(len(c.input_ids) for c in row) for row in rows)
    ids, labels, positions = [], [], []
    for row in rows:
        r_ids, r_labels, r_pos = [], [], []
        for chat in row:
            n = len(chat.input_ids)
            r_ids += chat.input_ids
            r_labels += [IGNORE] + list(chat.labels[1:])
            r_pos += list(range(n))
        pad = width - len(r_ids)
        ids.append(r_ids + [pad_id] * pad)
        labels.append(r_labels + [IGNORE] * pad)
        positions.append(r_pos + list(range(pad)))
    return {"input_ids": torch.tensor(ids), "labels": torch.tensor(labels), "position_ids": torch.tensor(positions)}

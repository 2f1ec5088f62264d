"""A chart drawn once per process for the same numbers: a sweep's candidates on the base data share it.

    png = drawn_once(tokens_png, audit, "train split")    # the second candidate gets the same bytes

Every candidate of a sweep that keeps the base's data, tokenizer and max_seq_len has the same token
audit, so the same token-length histogram: drawing it again (~0.1 s of matplotlib a candidate) gives
the bytes the first drawing gave. The key is the chart's inputs as canonical JSON, so a candidate
on its own data (another histogram) draws its own. A few charts are kept, the latest used.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import orjson

KEPT = 8
_DRAWN: OrderedDict[tuple[str, bytes], bytes | None] = OrderedDict()
_GUARD = threading.Lock()


def drawn_once(draw: Callable[..., bytes | None], *inputs: Any) -> bytes | None:
    """`draw(*inputs)`, or the PNG it gave for equal inputs earlier in this process."""
    key = (f"{draw.__module__}.{draw.__qualname__}",
           orjson.dumps(inputs, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS, default=str))
    with _GUARD:
        if key in _DRAWN:
            _DRAWN.move_to_end(key)
            return _DRAWN[key]
    png = draw(*inputs)  # outside the lock: candidates logging in parallel draw their own charts at once
    with _GUARD:
        _DRAWN[key] = png
        while len(_DRAWN) > KEPT:
            _DRAWN.popitem(last=False)
    return png

"""The tiny model's tokenizer, as every tokenisation test here reads it."""
from __future__ import annotations

import pytest


@pytest.fixture
def tokenizer(tiny_cache):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_cache)

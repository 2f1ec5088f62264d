"""The dataset stage's cheap line tests decide the same with the compiled counts as with bytes.count."""
from __future__ import annotations

from pathlib import Path

import pytest

from tunegate.dataset.line_marks import (
    holds_double_brace,
    line_marks,
    may_hold_a_placeholder,
    may_hold_media,
    may_repeat_a_key,
)
from tunegate.native import compiled

DATA = Path(__file__).parents[1] / "data"

LINES = [b"", b'"', b"{", b"{{", b'":', b'a"', b"x{", b"{{x", b'":"', b'{"a":1,"a":2}\n',
         b'{"messages": [{"role": "user", "content": "say \\"hi\\": {{name}}"}]}\n',
         b'{"messages":[{"role":"user","content":"{ {"},{"role":"assistant","content":"}}"}]}',
         b'{"k": "' + b'"' * 70_000 + b'{' * 3 + b'"}', b"<", b"a<", b'{"c": "<image> x"}', b'{"c": "a < b"}']


def counted(raw: bytes) -> tuple:
    return raw.count(b'"'), raw.count(b'":'), raw.count(b"{"), b"{{" in raw, b"<" in raw


def real_lines() -> list[bytes]:
    return [line for path in sorted(DATA.rglob("*.jsonl")) for line in path.read_bytes().splitlines(keepends=True)]


@pytest.mark.skipif(compiled is None, reason="the compiled loops are not built")
def test_the_compiled_marks_are_the_byte_counts():
    for raw in LINES + real_lines():
        assert line_marks(raw) == counted(raw), raw[:60]


def test_the_tests_decide_the_same_either_way():
    for raw in LINES + real_lines():
        marks = line_marks(raw)
        for keys, strings in ((0, 0), (1, 1), (3, 4), (raw.count(b'":'), 2)):
            assert may_repeat_a_key(raw, marks, keys, strings) == may_repeat_a_key(raw, None, keys, strings)
        assert holds_double_brace(raw, marks) == holds_double_brace(raw, None) == (b"{{" in raw)
        for objects in (0, 1, 3):
            assert may_hold_a_placeholder(raw, marks, objects) == may_hold_a_placeholder(raw, None, objects)
        assert may_hold_media(raw, marks) == may_hold_media(raw)


@pytest.mark.skipif(compiled is None, reason="the compiled loops are not built")
def test_the_compiled_marks_count_pairs_that_straddle_a_block_edge():
    # The compiled loop takes 16 bytes a step: `":` and `{{` may begin in one step and end in the next.
    for size in range(1, 50):
        for at in range(size):
            for mark in (b'":', b"{{", b'"{', b'{"', b"<a"):
                raw = bytearray(b"a" * size)
                raw[at:at + 2] = mark
                raw = bytes(raw[:size])
                assert line_marks(raw) == counted(raw), raw

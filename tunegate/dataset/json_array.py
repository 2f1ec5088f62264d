"""A `.json` file holding one array of records, streamed element by element in constant memory.

    for line, column, text in elements(stream):   # where each element starts, and its JSON text
        ...

LLaMA-Factory's data files and many exports are one JSON array (`[{...}, {...}]`), usually
pretty-printed over many lines. The array is never loaded whole: text is decoded in chunks, each
element is found with the standard library's C scanner (`raw_decode`) and handed on as text with
the line and column where it starts, so a finding can say where the broken element begins. The
caller parses each element strictly (orjson) itself. A structural break (a missing comma, a
truncated file, an element over `max_chars`) ends the array: after it no element boundary can be
trusted, so it raises `BrokenContainer` with its place.
"""
from __future__ import annotations

import codecs
import json
from collections.abc import Iterator
from typing import BinaryIO

from tunegate.errors import BrokenContainer

CHUNK = 1 << 20
_WS = " \t\r\n"
_DECODER = json.JSONDecoder()


def starts_array(stream: BinaryIO) -> bool:
    """Whether the stream's first non-blank byte opens an array (peek only)."""
    head = stream.peek(4096)[:4096]  # type: ignore[attr-defined]
    return head.lstrip(b" \t\r\n").startswith(b"[")


class _Text:
    """Decoded text of the stream from some point on, with the line number of each position."""

    def __init__(self, stream: BinaryIO):
        self.stream, self.decoder = stream, codecs.getincrementaldecoder("utf-8")()
        self.buf, self.eof = "", False
        self.line, self.counted, self.line_start = 1, 0, 0  # line of buf[counted]; buf index where it starts

    def more(self, size: int = CHUNK) -> bool:
        if self.eof:
            return False
        data = self.stream.read(size)
        try:
            self.buf += self.decoder.decode(data, final=not data)
        except UnicodeDecodeError as exc:
            line, column = self.place(len(self.buf))
            bad = data[exc.start:exc.start + 4].hex(" ")
            raise BrokenContainer("utf8", f"invalid UTF-8 (bytes {bad}): {exc.reason}", line, column) from None
        self.eof = not data
        return True

    def place(self, pos: int) -> tuple[int, int]:
        """1-based line and column of buf[pos]."""
        if pos > self.counted:
            self.line += self.buf.count("\n", self.counted, pos)
            last = self.buf.rfind("\n", self.counted, pos)
            if last >= 0:
                self.line_start = last + 1
            self.counted = pos
        return self.line, pos - self.line_start + 1

    def skip_ws(self, pos: int) -> int:
        while True:
            while pos < len(self.buf) and self.buf[pos] in _WS:
                pos += 1
            if pos < len(self.buf) or not self.more():
                return pos

    def drop_before(self, pos: int) -> int:
        """Forget text before pos (keeps memory bounded); returns pos in the shortened buffer."""
        self.place(pos)
        self.buf = self.buf[pos:]
        self.counted -= pos
        self.line_start -= pos
        return 0


def elements(stream: BinaryIO, max_chars: int) -> Iterator[tuple[int, int, str]]:
    """Yield (line, column, text) of each element of the array the stream holds."""
    text = _Text(stream)
    pos = text.skip_ws(0)
    if text.buf[pos:pos + 1] != "[":
        raise BrokenContainer("json", "the file does not start with '['", *text.place(pos))
    pos = text.skip_ws(pos + 1)
    if text.buf[pos:pos + 1] == "]":
        return _after_array(text, pos + 1)
    while True:
        end = _element_end(text, pos, max_chars)
        yield (*text.place(pos), text.buf[pos:end])
        pos = text.skip_ws(end)
        sep = text.buf[pos:pos + 1]
        if sep == "]":
            return _after_array(text, pos + 1)
        if sep != ",":
            what = "the file ends before the array is closed" if not sep else f"expected ',' or ']', found {sep!r}"
            raise BrokenContainer("json", what, *text.place(pos))
        pos = text.skip_ws(pos + 1)
        if text.buf[pos:pos + 1] == "]":
            raise BrokenContainer("json", "a comma before ']' (a trailing comma is not JSON)", *text.place(pos))
        if pos > CHUNK:
            pos = text.drop_before(pos)


def _element_end(text: _Text, pos: int, max_chars: int) -> int:
    while True:
        try:
            return _DECODER.raw_decode(text.buf, pos)[1]
        except RecursionError:
            raise BrokenContainer("depth", "the element nests deeper than the JSON reader can follow",
                             *text.place(pos)) from None
        except json.JSONDecodeError as exc:
            # Incomplete only because the buffer ends: read more (doubling, so a big element costs
            # a few retries) and try again; at the end of the file it is a real error.
            if len(text.buf) - pos > max_chars:
                raise BrokenContainer("size", f"the element is over {max_chars:,} characters",
                                      *text.place(pos)) from None
            if not text.more(max(CHUNK, len(text.buf) - pos)):
                raise BrokenContainer("json", f"invalid JSON in the element: {exc.msg}", *text.place(exc.pos)) from None


def _after_array(text: _Text, pos: int) -> None:
    pos = text.skip_ws(pos)
    if pos < len(text.buf):
        raise BrokenContainer("json", "more text after the array's closing ']'", *text.place(pos))

"""gzip streams inflated with a bound: a decompression bomb is refused after a few MiB, not 8 GiB.

    stream = io.BufferedReader(Inflated(raw, "train.jsonl.gz"), 1 << 20)

deflate tops out at ~1030x (a run of one byte, or of a few-byte period such as `{}\\n`); data
that reads like a dataset does not come close: the most repetitive we could build (one record,
or one 30 KB system prompt, repeated in every record) inflates 290-360x, ordinary chat JSONL
3-10x. So a stream that inflates more than MAX_RATIO times over a window of its compressed
input is a bomb (or a file of padding), and DecompressionBomb stops the read.

The stream is inflated here with zlib rather than `gzip.GzipFile`, which reads its input 8 KiB
ahead and so cannot say how much of it a given output cost. zlib checks each member's header,
CRC and length; members may follow each other (as `cat a.gz b.gz` makes) with zero padding
between, as gzip allows. A corrupt stream raises zlib.error, a truncated one EOFError.
"""
from __future__ import annotations

import io
import zlib
from typing import BinaryIO

from tunegate.errors import DecompressionBomb

MAX_RATIO = 600
# The ratio is measured over at least _MIN_INPUT compressed bytes (so a few header bytes do not
# count as a bomb) and at most _WINDOW (so a bomb after gigabytes of honest data is caught as
# quickly): at most MAX_RATIO * _MIN_INPUT = 2.4 MiB inflate before a bomb is refused.
_MIN_INPUT = 4 * 1024
_WINDOW = 1 << 20
_CHUNK = 16 * 1024
_GZIP = 16 + zlib.MAX_WBITS  # wbits for a gzip header and trailer


class Inflated(io.RawIOBase):
    """The inflated bytes of the gzip stream in `raw`; closing it closes `raw`."""

    def __init__(self, raw: BinaryIO, name: str):
        super().__init__()
        self._raw, self._name = raw, name
        self._zlib = zlib.decompressobj(_GZIP)
        self._input = b""  # compressed bytes read from `raw`, not yet inflated
        self._window_in = self._window_out = 0
        self.inflated = 0  # bytes inflated in all

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        if not len(buffer):
            return 0
        while True:
            if self._zlib.eof and not self._next_member():
                return 0
            if not self._input:
                self._input = self._raw.read(_CHUNK)
                if not self._input:
                    raise EOFError("Compressed file ended before the end-of-stream marker was reached")
            fed = len(self._input)
            out = self._zlib.decompress(self._input, len(buffer))
            self._input = self._zlib.unconsumed_tail or self._zlib.unused_data
            self._count(fed - len(self._input), len(out))
            if out:
                buffer[:len(out)] = out
                return len(out)

    def _next_member(self) -> bool:
        """Start the next gzip member, skipping zero padding; False at the end of the file."""
        while True:
            self._input = self._input.lstrip(b"\x00")
            if self._input:
                self._zlib = zlib.decompressobj(_GZIP)
                return True
            self._input = self._raw.read(_CHUNK)
            if not self._input:
                return False

    def _count(self, read: int, inflated: int) -> None:
        self._window_in += read
        self._window_out += inflated
        self.inflated += inflated
        if self._window_out > MAX_RATIO * max(self._window_in, _MIN_INPUT):
            raise DecompressionBomb(
                f"{self._name}: the gzip stream inflates more than {MAX_RATIO}x (about "
                f"{self._window_out // max(self._window_in, 1):,}x); a dataset does not compress like "
                "that: it is a decompression bomb or padding", inflated=self.inflated)
        if self._window_in >= _WINDOW:
            self._window_in = self._window_out = 0

    def close(self) -> None:
        try:
            self._raw.close()
        finally:
            super().close()

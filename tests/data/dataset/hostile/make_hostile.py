"""Regenerate the hostile data files: gzip bombs and exact-number records (see tests/dataset/test_hostile.py).

    python tests/data/dataset/hostile/make_hostile.py

The files are committed; this script only documents how each byte sequence was made. The bombs
hold 64 MiB each (about 64 KB on disk, deflate's ~1030x): enough that an unbounded reader spends
tens of seconds on them, small enough to commit. A bomb of 8 GiB is the same bytes, more of them.
"""
from __future__ import annotations

import gzip
from pathlib import Path

HERE = Path(__file__).resolve().parent
MIB = 1 << 20
GOOD = (b'{"messages": [{"role": "user", "content": "Where is my order?"}, '
        b'{"role": "assistant", "content": "It ships today."}]}\n')


def bomb(name: str, unit: bytes, head: bytes = b"") -> None:
    """`head`, then `unit` repeated to 64 MiB, gzip level 9 (mtime 0: the bytes are reproducible)."""
    with gzip.GzipFile(HERE / name, "wb", compresslevel=9, mtime=0) as out:
        out.write(head)
        chunk = unit * (MIB // len(unit))
        for _ in range(64):
            out.write(chunk)


def main() -> None:
    bomb("newlines.jsonl.gz", b"\n", head=GOOD)
    bomb("empty_objects.jsonl.gz", b"{}\n")
    bomb("spaces.jsonl.gz", b" ", head=GOOD)  # one endless blank line


if __name__ == "__main__":
    main()

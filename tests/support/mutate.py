"""Byte and text mutators shared by the hypothesis fuzz tests and benchmarks/fuzz_parsers.py.

A mutation is a few random inserts (of hazards that tend to break parsers, or random bytes),
deletes and bit flips applied to a seed file. `mutate(rng, seed, hazards)` takes a random.Random,
so the benchmark can run 100,000 reproducible inputs without hypothesis.
"""
from __future__ import annotations

import random

# Bytes that break JSON readers: NUL, invalid UTF-8, a surrogate, a BOM, NaN, overflow, deep nesting,
# keys, separators, CR/LF, U+2028, gzip magic, long digit runs, exponents past a double's and Decimal's range.
JSON_HAZARDS = [b"\x00", b"\xff", b"\xed\xa0\x80", b"\xef\xbb\xbf", b"\\ud800", b"NaN", b"1e400", b"[" * 1100,
                b'"role":', b'"content": "x",', b"\r", b"\n", b"\xe2\x80\xa8", b"}", b"{", b",", b"\x1f\x8b",
                b"123456789012345678901234567890", b"1e-400", b"0.1000000000000000000001", b"\n" * 50,
                b"1e-400000000000000000000"]
# Text that breaks YAML readers: tags, anchors and aliases, flow nesting, merge keys, documents,
# directives, tabs, odd scalars, and keys that are not strings.
YAML_HAZARDS = [b"!!python/object:os.system ", b"!!int ", b"!!bool ", b"!!set ", b"!!timestamp ", b"!foo ",
                b"!<tag:x> ", b"&a ", b"*a", b"*b", b"<<: ", b"[" * 80, b"{" * 80, b"]", b"}", b"\n---\n",
                b"%YAML 1.1\n", b"%TAG ! tag:x,2000:\n", b"\t", b"? ", b": ", b"- ", b"'", b'"', b"|\n", b">\n",
                b"0x1f", b"1e-4", b".inf", b"~", b"7" * 5000, b"\x00", b"\xff", b"\xef\xbb\xbf", b"#"]


def mutate(rng: random.Random, seed: bytes, hazards: list[bytes]) -> bytes:
    """`seed` with 1-4 random inserts, deletes or bit flips."""
    data = bytearray(seed)
    for _ in range(rng.randint(1, 4)):
        at = rng.randint(0, len(data))
        action = rng.choice(("insert", "insert", "delete", "flip"))
        if action == "insert":
            data[at:at] = rng.choice(hazards) if rng.random() < 0.7 else rng.randbytes(rng.randint(1, 4))
        elif action == "delete":
            del data[at:at + rng.randint(1, 8)]
        elif data:
            data[min(at, len(data) - 1)] ^= 1 << rng.randint(0, 7)
    return bytes(data)

"""The casefold and whitespace tables of the compiled normaliser, written from this interpreter.

    python tunegate/native/fold_table.py OUT.h     # what setup.py runs before compiling tunegate/native/*.c

`str.casefold()` folds each character on its own (no context, unlike lower()'s final sigma), so a
table of every character whose fold differs, taken from the interpreter that builds the extension,
folds exactly as that interpreter does. The table records the Unicode version it was taken from;
tunegate.native refuses the extension under an interpreter with another version, and the
pure-Python normaliser runs instead. Whitespace is what `str.split()` cuts on (`str.isspace()`).

Stdlib only: setup.py runs it before any dependency is installed.
"""
from __future__ import annotations

import sys
import unicodedata

BLOCK = 128  # code points per second-stage block
SPACE = 0xFFFF  # the entry that marks whitespace


def fold_entries() -> tuple[list[tuple[int, ...]], dict[int, int]]:
    """(folds, entry of each code point that folds or is whitespace); folds[0] is "itself"."""
    folds: list[tuple[int, ...]] = [()]
    entry: dict[int, int] = {}
    for cp in range(sys.maxunicode + 1):
        char = chr(cp)
        if char.isspace():
            entry[cp] = SPACE
            continue
        folded = char.casefold()
        assert not any(c.isspace() for c in folded), f"U+{cp:04X} folds to whitespace"
        if folded != char:
            entry[cp] = len(folds)
            folds.append(tuple(map(ord, folded)))
    return folds, entry


def header() -> str:
    """The C header: two-stage lookup (block of a code point, entry in the block) and the folds."""
    folds, entry = fold_entries()
    assert len(folds) < SPACE and max(map(len, folds)) <= 3
    blocks: list[tuple[int, ...]] = [(0,) * BLOCK]  # block 0: nothing folds, nothing is a space
    stage1 = []
    for start in range(0, sys.maxunicode + 1, BLOCK):
        block = tuple(entry.get(cp, 0) for cp in range(start, start + BLOCK))
        if block not in blocks:
            blocks.append(block)
        stage1.append(blocks.index(block))
    lines = [
        "/* Written by tunegate/native/fold_table.py from this interpreter: do not edit. */",
        f'#define TG_UNIDATA_VERSION "{unicodedata.unidata_version}"',
        f"#define TG_FOLD_BLOCK {BLOCK}",
        f"#define TG_FOLD_SPACE {SPACE}",
        f"static const unsigned char tg_fold_stage1[{len(stage1)}] = {{{','.join(map(str, stage1))}}};",
        f"static const unsigned short tg_fold_stage2[{len(blocks) * BLOCK}] = {{",
        *(",".join(map(str, block)) + "," for block in blocks),
        "};",
        f"static const unsigned int tg_folds[{len(folds)}][4] = {{",  # [count, cp, cp, cp]
        *("{%d,%s}," % (len(f), ",".join(map(str, (*f, 0, 0, 0)[:3]))) for f in folds),
        "};",
    ]
    assert len(blocks) < 256
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    with open(sys.argv[1], "w", encoding="ascii") as out:
        out.write(header())

"""The casefold and whitespace tables of the compiled normaliser, written from this interpreter.

    python tunegate/native/fold_table.py OUT.h     # what setup.py runs before compiling tunegate/native/*.c

`str.casefold()` folds each character on its own (no context, unlike lower()'s final sigma), so a
table of every character whose fold differs, taken from the interpreter that builds the extension,
folds exactly as that interpreter does; a bitmap of the characters NFKC may change (`nfkc_unsafe`)
lets it skip unicodedata.normalize for text that holds none. The table records the Unicode version it was taken from;
tunegate.native refuses the extension under an interpreter with another version, and the
pure-Python normaliser runs instead. Whitespace is what `str.split()` cuts on (`str.isspace()`).

Stdlib only: setup.py runs it before any dependency is installed.
"""
from __future__ import annotations

import sys
import unicodedata

BLOCK = 128  # code points per second-stage block
SPACE = 0xFFFF  # the entry that marks whitespace
NFKC_BLOCK = 256  # code points per block of the NFKC bitmap


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


def nfkc_unsafe() -> set[int]:
    """Code points that may change under NFKC in some string: all but those that NFKC keeps alone,
    are starters (combining class 0) and never join the character before them in canonical
    composition, nor begin their decomposition with one that does. A string of only the others
    is its own NFKC (each character is, no mark is reordered across a starter and no starter
    composes with the one before), so the normaliser may skip unicodedata.normalize for it."""
    seconds = set(range(0x1161, 0x1176)) | set(range(0x11A8, 0x11C3))  # Hangul vowels and trailing consonants
    for cp in range(sys.maxunicode + 1):
        parts = unicodedata.decomposition(chr(cp)).split()
        if len(parts) == 2 and not parts[0].startswith("<"):  # a canonical pair: its second may join
            seconds.add(int(parts[1], 16))
    unsafe = set(range(0xD800, 0xE000))  # lone surrogates: left to unicodedata
    for cp in range(sys.maxunicode + 1):
        char = chr(cp)
        if cp in seconds or unicodedata.combining(char) or unicodedata.normalize("NFKC", char) != char:
            unsafe.add(cp)
        elif ord(unicodedata.normalize("NFD", char)[0]) in seconds:
            unsafe.add(cp)
    return unsafe


def _bitmap(marked: set[int], block: int) -> tuple[list[int], list[tuple[int, ...]]]:
    """Two-stage bitmap: stage1[cp // block] names a block of block // 8 bytes, bit cp % 8 of byte."""
    blocks: list[tuple[int, ...]] = [(0,) * (block // 8)]
    index: dict[tuple[int, ...], int] = {blocks[0]: 0}
    stage1 = []
    for start in range(0, sys.maxunicode + 1, block):
        bits = tuple(sum(1 << k for k in range(8) if start + 8 * byte + k in marked) for byte in range(block // 8))
        if bits not in index:
            index[bits] = len(blocks)
            blocks.append(bits)
        stage1.append(index[bits])
    return stage1, blocks


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
    stage1, bitmaps = _bitmap(nfkc_unsafe(), NFKC_BLOCK)
    assert len(bitmaps) < 256
    lines += [
        f"#define TG_NFKC_BLOCK {NFKC_BLOCK}",
        f"static const unsigned char tg_nfkc_stage1[{len(stage1)}] = {{{','.join(map(str, stage1))}}};",
        f"static const unsigned char tg_nfkc_unsafe[{len(bitmaps) * NFKC_BLOCK // 8}] = {{",
        *(",".join(map(str, bits)) + "," for bits in bitmaps),
        "};",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    with open(sys.argv[1], "w", encoding="ascii") as out:
        out.write(header())

"""The table of formats in docs/formats.md, written from the registry (`tunegate.formats.registry`).

    python -m tests.formats.docs_table            # rewrite the table in docs/formats.md
    python -m tests.formats.docs_table --check    # exit 1 and say what is missing or out of date

A new format module is listed here without an edit: its row comes from its `FORMAT`.
tests/test_format_registry.py holds the committed page to what this writes.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from tests.support.paths import ROOT
from tunegate.formats.registry import FORMATS, INFO

PAGE = ROOT / "docs" / "formats.md"
START = "<!-- the table of formats: written by `python -m tests.formats.docs_table` from tunegate/formats -->\n"
END = "<!-- end of the table of formats -->\n"
_ROW_NAME = re.compile(r"^\| `(\w+)` \|", re.M)


def markdown_table() -> str:
    """The registry's formats as the page lists them, in their declared order."""
    rows = ["| `data.format` | format | a record is in it when it has | `loss_on: all` trains |", "|---|---|---|---|"]
    for name, info in INFO.items():
        keys = ", ".join(f"`{k}`" for k in info.keys)
        trained = "every token" if info.trains_every_token else "the completion only"
        rows.append(f"| `{name}` | {info.label} | {keys} | {trained} |")
    return "\n".join(rows) + "\n"


def table_in(text: str) -> str:
    """The table section of the page (between the markers); empty when the page has none."""
    start, end = text.find(START), text.find(END)
    return text[start + len(START):end] if 0 <= start < end else ""


def problems(text: str, page: str = "docs/formats.md") -> list[str]:
    """What the page's table lacks or has too much, in words; empty when it is what the registry writes."""
    listed = _ROW_NAME.findall(table_in(text))
    out = [f"{name} is missing from {page}'s table of formats" for name in FORMATS if name not in listed]
    out += [f"{name} is in {page}'s table of formats but no format module declares it"
            for name in listed if name not in FORMATS]
    if not out and table_in(text) != markdown_table():
        out.append(f"{page}'s table of formats is out of date (a label, key or order changed)")
    return out


def rewritten(text: str) -> str:
    """The page with its table section written from the registry."""
    start, end = text.index(START) + len(START), text.index(END)
    return text[:start] + markdown_table() + text[end:]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("page", nargs="?", type=Path, default=PAGE)
    parser.add_argument("--check", action="store_true", help="only say what is out of date (exit 1 if anything)")
    args = parser.parse_args(argv)
    text = args.page.read_text(encoding="utf-8")
    found = problems(text, str(args.page))
    if args.check:
        print("\n".join(found) or f"{args.page}: the table of formats is up to date")
        return 1 if found else 0
    args.page.write_text(rewritten(text), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

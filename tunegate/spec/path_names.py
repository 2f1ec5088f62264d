"""Whether a path a spec or config names could name a file at all, asked before any file is looked at.

    path_problem("data/a\\x00b.jsonl")   # 'it holds a NUL byte, which no file name can'
    path_problem("x" * 300 + ".jsonl")  # 'its component "xxx…" is 306 bytes, over the 255 a file system allows'

Python raises ValueError ("embedded null byte") or OSError (ENAMETOOLONG) from deep inside
`resolve`, `stat` or `open` for such a path; asked here first, each is a finding at its key.
`split_files(value)` is a split's files in reading order. No heavy import here: the spec stage
imports this module, and so does a check of bare data files, which reads no spec.
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path, PurePath

# Bytes per path component on every common file system (ext4, xfs, btrfs, APFS; NTFS counts 255
# UTF-16 units), and Linux's limit for a whole path.
NAME_MAX = 255
PATH_MAX = 4096


def path_problem(text: str) -> str | None:
    """Why `text` cannot be a path on any file system, or None."""
    if "\0" in text:
        return "it holds a NUL byte, which no file name can"
    try:
        size = len(text.encode("utf-8", "surrogateescape"))
    except UnicodeEncodeError:
        return "it holds a lone surrogate, which no file name can"
    if size > PATH_MAX:
        return f"it is {size} bytes long, over the {PATH_MAX} a path may be"
    for part in PurePath(text).parts:
        length = len(part.encode("utf-8", "surrogateescape"))
        if length > NAME_MAX:
            return (f"its component {part[:24]!r}… is {length} bytes, over the {NAME_MAX} a file system allows "
                    "in one name")
    return None


def usable_path(path: PurePath) -> PurePath:
    """`path`, or pydantic's error (TG102 at the key) when no file system could hold it."""
    problem = path_problem(str(path))
    if problem:
        from pydantic_core import PydanticCustomError  # only a spec's validation calls this: pydantic is loaded

        raise PydanticCustomError("path_unusable", "not a usable path: {problem}", {"problem": problem})
    return path


def split_files(value: Path | str | Sequence[Path | str]) -> list[Path]:
    """A split's files in reading order: data.train or data.validation (one path, or a list of them)."""
    return [Path(p) for p in value] if isinstance(value, (list, tuple)) else [Path(value)]

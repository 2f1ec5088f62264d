"""One fuzz input through each parser, and what counts as a failure (an internal error).

The spec loader (`parse_spec`) may refuse a file with a UsageError (not UTF-8, ...) and otherwise
returns a stage result of TG1xx findings; the strict reader (the dataset stage) never raises; the
lenient reader (`iter_records`, `fingerprint_file`) raises nothing but tunegate's own errors
(UnreadableRecord, DecompressionBomb, UsageError). Anything else is a bug of ours.
"""
from __future__ import annotations

import re
from pathlib import Path

from tests.support.paths import DATA, EXAMPLES
from tunegate.errors import TunegateError

SPEC_SEEDS = [p.read_bytes() for p in sorted([*EXAMPLES.glob("*.yaml"), *(DATA / "spec").glob("*.yaml")])]
# axolotl and TRL configs the import maps (tunegate.spec.importers): the mapping reads raw values itself.
CONFIG_SEEDS = [p.read_bytes() for p in sorted([*(DATA / "configs" / "axolotl").glob("*.yml"),
                                                *(DATA / "configs" / "trl").glob("*.yaml"),
                                                *(DATA / "configs" / "llamafactory" / "examples").glob("*/*.yaml")])]
JSONL_SEEDS = [p.read_bytes() for p in sorted((DATA / "dataset" / "good").glob("*.jsonl"))
               if p.stat().st_size < 4000]


def spec_input(data: bytes, folder: Path) -> None:
    """Raise AssertionError unless the spec stage answers `data` with findings or a usage error."""
    from tunegate.spec.check import parse_spec

    path = folder / "fuzz.yaml"
    path.write_bytes(data)
    try:
        parsed = parse_spec(path)
    except TunegateError:
        return
    result = parsed.result
    assert result.status in ("passed", "failed") and parsed.valid == (result.status == "passed")
    for f in result.findings:
        assert re.fullmatch(r"TG1\d\d", f.code) and f.message, f
        assert f.line is None or f.line >= 1, f


def strict_input(data: bytes, folder: Path, name: str = "fuzz.jsonl") -> None:
    """Raise AssertionError unless the dataset stage answers `data` with well-placed TG2xx findings."""
    from tunegate.dataset import validate_dataset

    path = folder / name
    path.write_bytes(data)
    result = validate_dataset({"train": path}, cap=5)
    assert result.status in ("passed", "failed")
    for f in result.findings:
        assert re.fullmatch(r"TG2\d\d", f.code) and f.message, f
        if f.code != "TG240":  # a file that cannot be opened has no line
            assert f.line is not None and f.line >= 1 and f.column is not None and f.column >= 1, f
    assert result.status == "failed" or not any(f.severity == "error" for f in result.findings)


def lenient_input(data: bytes, folder: Path, name: str = "fuzz.jsonl") -> None:
    """Raise AssertionError if the lenient reader raises anything but tunegate's own errors."""
    from tunegate.dataset.fingerprint import fingerprint_file
    from tunegate.dataset.records import iter_chats, iter_records

    path = folder / name
    path.write_bytes(data)
    for read in (lambda: list(iter_records(path)), lambda: list(iter_records(path, strict=True)),
                 lambda: list(iter_chats(path)), lambda: fingerprint_file(path)):
        try:
            read()
        except TunegateError:
            pass

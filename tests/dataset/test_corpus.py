"""The dataset stage on the committed corpus: each bad file yields exactly its one documented code."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.support.paths import DATA
from tunegate.dataset import validate_dataset
from tunegate.dataset.records import MAX_LINE_BYTES

CORPUS = DATA / "dataset"
README = (CORPUS / "README.md").read_text(encoding="utf-8")
# (file, code, line) from the README's table: the README is the specification of the corpus.
DEFECTS = re.findall(r"^\| (\S+\.jsonl(?:\.gz)?) \| (TG\d{3}) \| (\d+) \|", README, flags=re.M)


def findings_of(path: Path):
    result = validate_dataset({"train": path}, cap=50)
    return result, result.findings


def test_readme_documents_every_bad_file():
    assert sorted(f for f, _, _ in DEFECTS) == sorted(p.name for p in (CORPUS / "bad").iterdir())


@pytest.mark.parametrize(("name", "code", "line"), DEFECTS, ids=[d[0] for d in DEFECTS])
def test_bad_file_reports_its_one_defect(name, code, line):
    result, found = findings_of(CORPUS / "bad" / name)
    assert {f.code for f in found} == {code}, [f"{f.code}:{f.line} {f.message}" for f in found]
    assert found[0].line == int(line)
    assert found[0].file == str(CORPUS / "bad" / name)
    assert found[0].message and found[0].hint
    warning = code in {"TG208", "TG209", "TG210", "TG268"}
    assert result.status == ("passed" if warning else "failed")
    assert found[0].severity == ("warning" if warning else "error")


@pytest.mark.parametrize("path", sorted((CORPUS / "good").iterdir()), ids=lambda p: p.name)
def test_good_file_passes_without_findings(path):
    result, found = findings_of(path)
    assert found == [] and result.status == "passed"
    assert result.stats["train"]["records"] >= 1


def column_of(name: str, needle: str, occurrence: int) -> int:
    """1-based character column of the n-th `needle` on the defect's line (from the README)."""
    line_no = next(int(line) for f, _, line in DEFECTS if f == name)
    line = (CORPUS / "bad" / name).read_text(encoding="utf-8").splitlines()[line_no - 1]
    at = -1
    for _ in range(occurrence):
        at = line.index(needle, at + 1)
    return at + 1


@pytest.mark.parametrize(("name", "needle", "occurrence"), [
    ("last_from_user.jsonl", '"user"', 2),       # the role value of the last message
    ("unknown_role.jsonl", '"human"', 1),
    ("empty_content.jsonl", '""', 1),
    ("content_not_string.jsonl", '{"text"', 1),
    ("duplicate_key.jsonl", '"content"', 3),     # the repeat, not the first
    ("system_not_first.jsonl", '"system"', 1),
    ("unread_message_key.jsonl", '"bar"', 1),      # the value of the unread key
    ("trailing_comma.jsonl", ",]", 1),
    ("nan_literal.jsonl", "NaN", 1),
    ("negative_infinity.jsonl", "-Infinity", 1),
])
def test_column_points_at_the_offending_part(name, needle, occurrence):
    _, found = findings_of(CORPUS / "bad" / name)
    assert found[0].column == column_of(name, needle, occurrence)


def test_invalid_utf8_column_is_the_bad_byte():
    raw = (CORPUS / "bad" / "invalid_utf8.jsonl").read_bytes().splitlines()[1]
    _, found = findings_of(CORPUS / "bad" / "invalid_utf8.jsonl")
    assert found[0].column == len(raw[:raw.index(b"\xe9")].decode()) + 1
    assert "e9" in found[0].message


def test_line_over_the_cap_is_reported_and_skipped_in_constant_memory(tmp_path):
    path = tmp_path / "long.jsonl"
    good = b'{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]}\n'
    path.write_bytes(good + b'{"messages": "' + b"x" * (MAX_LINE_BYTES + 1024) + b'"}\n' + good.replace(b"yo", b"hey"))
    result, found = findings_of(path)
    assert [(f.code, f.line) for f in found] == [("TG228", 2)]
    assert result.stats["train"]["records"] == 3 and result.stats["train"]["lines"] == 3


def test_missing_file_is_a_finding(tmp_path):
    _, found = findings_of(tmp_path / "nope.jsonl")
    assert [f.code for f in found] == ["TG240"] and "does not exist" in found[0].message


def test_folder_is_a_finding(tmp_path):
    _, found = findings_of(tmp_path)
    assert [f.code for f in found] == ["TG240"] and "folder" in found[0].message


def test_a_long_document_record_is_accepted(tmp_path):
    # A 4.8 MB document to summarise: long-context models train on records that size (the 4 MiB
    # cap rejected it as TG228 before).
    document = " ".join(f"Paragraph {i}: the quarterly report lists revenue, costs and risks." for i in range(70_000))
    record = {"messages": [{"role": "user", "content": f"Summarise this report:\n{document}"},
                           {"role": "assistant", "content": "Revenue grew while costs held steady."}]}
    path = tmp_path / "long_document.jsonl"
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    assert path.stat().st_size > 4_800_000
    result, found = findings_of(path)
    assert found == [] and result.status == "passed"
    assert result.stats["train"]["records"] == 1

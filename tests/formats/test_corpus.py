"""The dataset stage on the format corpus: each bad file yields exactly its one code at its place."""
from __future__ import annotations

import re

import pytest

from tests.support.paths import DATA
from tunegate.dataset import validate_dataset

CORPUS = DATA / "formats"
README = (CORPUS / "README.md").read_text(encoding="utf-8")
DEFECTS = re.findall(r"^\| (\S+\.(?:jsonl|json|parquet|csv)) \| (TG\d{3}) \| ([^|]+) \| ([^|]+) \|", README, re.M)
WARNINGS = {"TG268", "TG277"}


def test_readme_documents_every_bad_file():
    assert sorted(d[0] for d in DEFECTS) == sorted(p.name for p in (CORPUS / "bad").iterdir())


@pytest.mark.parametrize(("name", "code", "place", "words"), DEFECTS, ids=[d[0] for d in DEFECTS])
def test_bad_file_reports_its_one_defect_at_its_place(name, code, place, words):
    result = validate_dataset({"train": CORPUS / "bad" / name}, cap=50)
    found = result.findings
    assert [f.code for f in found] == [code], [f"{f.place()} {f.code} {f.message}" for f in found]
    finding = found[0]
    assert finding.place() == f"{CORPUS / 'bad' / name}:{place.strip()}"
    assert words.strip() in finding.message
    assert finding.hint
    assert result.status == ("passed" if code in WARNINGS else "failed")


@pytest.mark.parametrize("path", sorted((CORPUS / "good").iterdir()), ids=lambda p: p.name)
def test_good_file_passes_without_findings(path):
    result = validate_dataset({"train": path}, cap=50)
    assert result.findings == [] and result.status == "passed"
    assert result.stats["train"]["records"] >= 2


@pytest.mark.parametrize(("name", "fmt", "container"), [
    ("openai_tools.jsonl", "messages", "jsonl"), ("sharegpt.jsonl", "sharegpt", "jsonl"),
    ("sharegpt.parquet", "sharegpt", "parquet"), ("alpaca.json", "alpaca", "json"), ("alpaca.csv", "alpaca", "csv"),
    ("prompt_completion.jsonl", "prompt_completion", "jsonl"),
])
def test_the_format_and_container_are_detected_and_reported(name, fmt, container):
    stats = validate_dataset({"train": CORPUS / "good" / name}).stats["train"]
    assert (stats["format"], stats["container"]) == (fmt, container)
    assert stats["content_chars"] > 0 and stats["roles"]["assistant"] >= stats["records"]  # counted as chat turns


def test_a_declared_format_rejects_records_of_another_at_their_line():
    result = validate_dataset({"train": CORPUS / "good" / "sharegpt.jsonl"}, fmt="alpaca")
    assert {f.code for f in result.findings} == {"TG260"}
    assert [f.line for f in result.findings] == [1, 2, 3, 4]
    assert "data.format is 'alpaca'" in result.findings[0].message

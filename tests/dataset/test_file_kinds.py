"""`tunegate.file_kinds` names the container the dataset readers choose, for layers that read no records."""
from __future__ import annotations

import pytest

from tests.support.paths import DATA
from tunegate.dataset import validate_dataset
from tunegate.file_kinds import kind_of

FILES = sorted([*(DATA / "formats").glob("*/*.*"), *(DATA / "configs" / "data").rglob("*.*")])
DATA_FILES = [p for p in FILES if p.suffix in {".jsonl", ".json", ".parquet", ".arrow", ".csv", ".tsv"}
              and p.name not in {"state.json", "dataset_info.json", "dataset_dict.json"}]


def _json_either(kind: str) -> str:
    return "json" if kind in ("json", "jsonl") else kind  # JSON lines or one array: both `load_dataset("json")`


@pytest.mark.parametrize("path", DATA_FILES, ids=lambda p: p.name)
def test_the_kind_named_is_the_container_the_reader_chose(path):
    assert _json_either(kind_of(path)) == _json_either(validate_dataset({"train": path}).stats["train"]["container"])


def test_parquet_bytes_are_parquet_whatever_the_name(tmp_path):
    (tmp_path / "export.json").write_bytes((DATA / "formats" / "good" / "sharegpt.parquet").read_bytes())
    assert kind_of(tmp_path / "export.json") == "parquet"

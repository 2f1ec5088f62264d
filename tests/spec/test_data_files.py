"""data.train and data.validation: one file, as always, or a list of files read in order as one split."""
from __future__ import annotations

from pathlib import Path

from tests.support.paths import DATA
from tunegate.spec.check import read_spec
from tunegate.spec.model import json_schema

SPECS = DATA / "spec"


def test_one_file_is_still_one_path():
    _, spec = read_spec(SPECS / "good.yaml")
    assert spec.data.train == (SPECS / "t.jsonl").resolve() and isinstance(spec.data.train, Path)
    assert spec.data.files("train") == [spec.data.train] and spec.data.names("train") == "t.jsonl"


def test_a_list_of_files_is_one_split_each_resolved_against_the_spec_folder():
    result, spec = read_spec(SPECS / "split_files.yaml")
    assert result.status == "passed", result.findings
    assert spec.data.train == [(SPECS / "a.jsonl").resolve(), (SPECS / "more" / "b.jsonl").resolve()]
    assert spec.data.files("validation") == [(SPECS / "v.jsonl").resolve()]
    assert spec.data.names("train") == "a.jsonl + b.jsonl"


def test_a_validation_file_that_is_also_a_training_file_is_tg108():
    result, _ = read_spec(SPECS / "split_files_shared.yaml")
    [finding] = [f for f in result.findings if f.code == "TG108"]
    assert finding.key == "data.validation" and finding.line == 4
    assert finding.message == "data.validation is also a file of data.train (v.jsonl)"


def test_an_empty_list_or_an_item_that_is_no_path_is_a_wrong_type_at_its_key():
    result, spec = read_spec(SPECS / "split_files_bad.yaml")
    assert spec is None
    found = {f.key: f.message for f in result.findings if f.code == "TG102"}
    assert found["data.train"].startswith("data.train: a list of files must name at least one file")
    assert found["data.validation"].startswith("data.validation: file 2 of the list: input is not a valid path")


def test_one_value_that_is_no_path_is_said_as_it_always_was(tmp_path):
    (tmp_path / "spec.yaml").write_text("data: {train: 5, validation: v.jsonl}\n")
    result, _ = read_spec(tmp_path / "spec.yaml")
    [finding] = [f for f in result.findings if f.key == "data.train"]
    assert (finding.code, finding.message) == (
        "TG102", "data.train: input is not a valid path for <class 'pathlib.path'>, got 5")


def test_the_schema_takes_one_path_or_a_list_of_them():
    train = json_schema()["$defs"]["DataSpec"]["properties"]["train"]
    assert train["anyOf"] == [{"format": "path", "type": "string"},
                              {"items": {"format": "path", "type": "string"}, "minItems": 1, "type": "array"}]

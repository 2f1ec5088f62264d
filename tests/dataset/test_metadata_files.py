"""Metadata JSON beside the data (tool registries, save_to_disk indexes) is recognised by name and shape."""
from __future__ import annotations

import json

import pytest

from tests.support.paths import DATA
from tunegate.dataset.metadata_files import metadata_kind

SAVED = DATA / "configs" / "data" / "alpaca_saved"  # a DatasetDict written by save_to_disk


def test_llamafactorys_dataset_registry_is_metadata():
    kind = metadata_kind(DATA / "configs" / "llamafactory" / "data" / "dataset_info.json")
    assert kind is not None and kind.startswith("LLaMA-Factory's dataset registry")


@pytest.mark.parametrize(("path", "words"), [
    (SAVED / "dataset_dict.json", "DatasetDict index"),
    (SAVED / "train" / "state.json", "save_to_disk state"),
    (SAVED / "train" / "dataset_info.json", "Hugging Face datasets dataset_info.json"),
])
def test_save_to_disk_metadata_is_metadata(path, words):
    assert words in (metadata_kind(path) or "")


@pytest.mark.parametrize(("name", "content"), [
    ("dataset_info.json", [{"instruction": "Hi", "output": "Hello"}]),  # records under a registry's name
    ("dataset_info.json", {"identity": {"instruction": "Hi", "output": "Hello"}}),  # no file named
    ("train.json", {"identity": {"file_name": "identity.json"}}),  # a registry's shape under another name
])
def test_records_or_other_names_are_data_not_metadata(tmp_path, name, content):
    path = tmp_path / name
    path.write_text(json.dumps(content))
    assert metadata_kind(path) is None


def test_a_broken_registry_is_left_to_the_data_checks(tmp_path):
    path = tmp_path / "dataset_info.json"
    path.write_text('{"identity": {"file_name": "identity.json"},')
    assert metadata_kind(path) is None

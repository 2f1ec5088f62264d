"""LLaMA-Factory datasets that llamafactory-cli trains and tunegate does not read here fail the gate (their
data is not checked) without being called LLaMA-Factory's refusal: multimodal records with a template that
takes their media, a Hub dataset's subset or folder, ModelScope and Modelers hub datasets, loading scripts
and cloud storage (TG145 by the dataset stage). What LLaMA-Factory itself stops on still is its refusal:
media its template does not take (TG154).

The configs and the dataset_info.json excerpt are published copies in LLaMA-Factory's own layout
(tests/data/configs/published/README.md names each source), so `dataset_dir: data` resolves as in a checkout.
"""
from __future__ import annotations

import json
import shutil

import pytest

from tests.support.paths import DATA
from tunegate.gate import check

PUBLISHED = DATA / "configs" / "published"
CHECKOUT = PUBLISHED / "llamafactory" / "checkout"
# dataset: mllm_demo,identity,alpaca_en_demo; template: moss_vl (images and videos)
MOSS_VL_SFT = CHECKOUT / "examples" / "train_lora" / "mossvl_lora_sft.yaml"
QWEN3_VL_DPO = CHECKOUT / "examples" / "train_lora" / "qwen3vl_lora_dpo.yaml"  # stage: dpo on rlhf_v (images)
QWEN2_VL_MEGATRON = CHECKOUT / "examples" / "megatron" / "qwen2_vl_full.yaml"  # llava_1k_en: a Hub subset, images
ALPACA = (PUBLISHED / "data" / "alpaca_en_demo_train.jsonl", PUBLISHED / "data" / "alpaca_en_demo_validation.jsonl")


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(PUBLISHED / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def checkout_with(tmp_path, config, replace=(), entries=None):
    """A copy of the checkout with `config` edited (`replace`: (old, new) pairs) and dataset_info.json entries
    added or replaced; the path of the edited config."""
    root = tmp_path / "checkout"
    shutil.copytree(CHECKOUT, root)
    copy = root / config.relative_to(CHECKOUT)
    text = copy.read_text(encoding="utf-8")
    for old, new in replace:
        assert old in text
        text = text.replace(old, new)
    copy.write_text(text, encoding="utf-8")
    if entries:
        info = root / "data" / "dataset_info.json"
        info.write_text(json.dumps({**json.loads(info.read_text(encoding="utf-8")), **entries}, indent=2),
                        encoding="utf-8")
    return copy


def not_read(report):
    return [f for f in report.findings if f.code == "TG145"]


def test_multimodal_data_its_template_takes_fails_the_gate_and_not_llamafactory():
    report = check(MOSS_VL_SFT)
    [unread] = not_read(report)
    assert unread.stage == "dataset" and unread.key == "mllm_demo.columns.images"
    assert unread.file.endswith("dataset_info.json") and "moss_vl" in unread.message
    assert report.config_trainer.passed, report.config_trainer.reasons
    assert not report.gates_passed and not report.approved_for_full_run
    # the data stages are skipped for want of the data; the estimate still runs
    assert report.stage("overlap").reason.startswith("the train and validation data cannot be had here")
    assert "earlier stage failed" not in (report.stage("estimate").reason or "")


@pytest.mark.parametrize("replace", [("template: moss_vl", "template: qwen3"), ("template: moss_vl\n", "")],
                         ids=["a text template", "no template"])
def test_images_the_template_does_not_take_are_llamafactorys_refusal(tmp_path, replace):
    report = check(checkout_with(tmp_path, MOSS_VL_SFT, [replace]))
    [refused] = [f for f in report.findings if f.code == "TG154"]
    assert refused.key == "mllm_demo.columns.images" and "This model does not support image input" in refused.message
    assert not report.config_trainer.passed and not report.approved_for_full_run


def test_a_medium_the_template_does_not_take_is_refused_beside_those_it_does(tmp_path):
    config = checkout_with(tmp_path, MOSS_VL_SFT, [("dataset: mllm_demo,identity,alpaca_en_demo",
                                                    "dataset: mllm_video_audio_demo")])
    [refused] = [f for f in check(config).findings if f.code == "TG154"]
    assert refused.key == "mllm_video_audio_demo.columns.audios"  # moss_vl takes videos, not audio


def test_a_template_this_copy_of_llamafactory_does_not_list_is_no_refusal(tmp_path):
    report = check(checkout_with(tmp_path, MOSS_VL_SFT, [("template: moss_vl", "template: moss_vl_v2")]))
    assert [f.stage for f in not_read(report)] == ["dataset"] and report.config_trainer.passed


def test_another_objective_on_multimodal_pairs_is_no_refusal():
    report = check(QWEN3_VL_DPO)
    codes = {(f.code, f.stage, f.key) for f in report.findings if f.severity == "error"}
    assert ("TG147", "spec", "stage") in codes and ("TG145", "dataset", "rlhf_v.columns.images") in codes
    assert report.config_trainer.passed, report.config_trainer.reasons
    assert not report.approved_for_full_run


def test_a_hub_subset_of_multimodal_records_is_said_once_as_multimodal():
    report = check(QWEN2_VL_MEGATRON)
    [unread] = not_read(report)
    assert unread.key == "llava_1k_en.columns.images" and report.config_trainer.passed


@pytest.mark.parametrize("entry", [
    {"hf_hub_url": "BUAADreamer/llava-en-zh-2k", "subset": "en"},  # load_dataset(path, name=subset)
    {"hf_hub_url": "llamafactory/alpaca_en", "folder": "en"},  # load_dataset(path, data_dir=folder)
    {"ms_hub_url": "deepctrl/deepctrl-sft-data"},  # MsDataset.load: modelscope on the run machine
    {"om_hub_url": "HaM/alpaca_en"},  # OmDataset.load_dataset: openmind on the run machine
    {"script_url": "hh_rlhf_en"},  # load_dataset(dataset_dir/script_url)
    {"cloud_file_name": "s3://bucket/train.json"},  # read_cloud_json: S3 or GCS
], ids=["hub subset", "hub folder", "modelscope", "modelers", "loading script", "cloud storage"])
def test_data_llamafactory_loads_from_where_tunegate_does_not_read_is_no_refusal(tmp_path, entry):
    config = checkout_with(tmp_path, MOSS_VL_SFT, [("dataset: mllm_demo,identity,alpaca_en_demo", "dataset: remote")],
                           {"remote": entry})
    report = check(config)
    [unread] = not_read(report)
    assert unread.stage == "dataset" and unread.key == f"remote.{next(iter(entry.keys() - {'hf_hub_url'}))}"
    assert report.config_trainer.passed and not report.approved_for_full_run


def test_files_given_for_a_split_not_read_here_are_checked_instead():
    report = check(MOSS_VL_SFT, train=ALPACA[0], validation=ALPACA[1])
    assert not not_read(report) and any(f.code == "TG157" for f in report.findings)
    assert report.stage("dataset").status == "passed"

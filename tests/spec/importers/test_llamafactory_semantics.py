"""A LLaMA-Factory config's keys and dataset_info.json entries, read as LLaMA-Factory reads them.

Each test writes a config beside a copy of the published data folder (tests/data/configs/llamafactory/data)
and changes one thing; findings about an entry point into that dataset_info.json, at the entry's key.
"""
from __future__ import annotations

import json
import shutil

import pytest

from tests.support.paths import DATA
from tunegate.gate import check
from tunegate.spec.check import parse_spec
from tunegate.spec.importers import detect_kind

LF_DATA = DATA / "configs" / "llamafactory" / "data"
BASE = """model_name_or_path: meta-llama/Llama-3.2-1B
stage: sft
do_train: true
finetuning_type: lora
lora_target: all
dataset: alpaca_en_demo
eval_dataset: heldout
cutoff_len: 1024
learning_rate: 1.0e-4
num_train_epochs: 1.0
bf16: true
"""


@pytest.fixture
def layout(tmp_path):
    """A folder as a LLaMA-Factory checkout holds it: data/ (with a frozen validation set registered)."""
    shutil.copytree(LF_DATA, tmp_path / "data")
    info = json.loads((tmp_path / "data" / "dataset_info.json").read_text())
    info["heldout"] = {"file_name": "alpaca_en_demo_heldout.json"}
    (tmp_path / "data" / "dataset_info.json").write_text(json.dumps(info, indent=2))
    return tmp_path


def config(folder, text=BASE, **changes):
    lines = [line for line in text.splitlines() if line.split(":")[0] not in changes]
    lines += [f"{key}: {value}" for key, value in changes.items() if value is not None]
    (folder / "cfg.yaml").write_text("\n".join(lines) + "\n")
    return folder / "cfg.yaml"


def entry(folder, name, **attrs):
    """Register dataset `name` in the folder's dataset_info.json."""
    path = folder / "data" / "dataset_info.json"
    info = json.loads(path.read_text())
    info[name] = attrs
    path.write_text(json.dumps(info, indent=2))


def found(path):
    """(code, key) of the import's warnings and errors, with the data the dataset stage says it cannot have."""
    parsed = parse_spec(path)
    return [(f.code, f.key) for f in [*parsed.result.findings, *parsed.unavailable.values()] if f.severity != "info"]


def test_a_llamafactory_config_on_local_data_passes_every_static_stage(layout):
    report = check(config(layout))
    assert report.gates_passed, [f"{f.place()} {f.code}" for f in report.findings]
    assert [s.status for s in report.stages] == ["passed"] * 4
    assert report.stage("dataset").stats["train"]["records"] == 8


def test_detection_needs_its_own_keys_not_the_trainer_arguments_trl_shares():
    assert detect_kind({"model_name_or_path": "m", "stage": "sft", "finetuning_type": "lora", "dataset": "d"}) \
        == "llamafactory"
    assert detect_kind({"model_name_or_path": "m", "dataset_name": "d", "use_peft": True}) == "trl"


NOT_READ, REFUSED = ("TG145", "dataset"), ("TG154", "spec")  # LLaMA-Factory trains it, tunegate does not read it


@pytest.mark.parametrize(("name", "attrs", "code", "key"), [
    ("mllm", {"file_name": "mllm_demo.json", "formatting": "sharegpt", "columns": {"messages": "messages",
     "images": "images"}}, REFUSED, "mllm.columns.images"),  # no template: LLaMA-Factory's takes no images
    ("kto", {"file_name": "kto_en_demo.json", "formatting": "sharegpt", "columns": {"messages": "messages",
     "kto_tag": "label"}}, ("TG145", "spec"), "kto.columns.kto_tag"),
    ("dpo", {"file_name": "dpo_en_demo.json", "ranking": True, "formatting": "sharegpt",
             "columns": {"messages": "conversations", "chosen": "chosen", "rejected": "rejected"}},
     REFUSED, "dpo.ranking"),
    ("c4", {"file_name": "c4_demo.jsonl", "columns": {"prompt": "text"}}, ("TG145", "spec"), "c4.columns.prompt"),
    ("renamed", {"file_name": "alpaca_en_demo.json", "columns": {"prompt": "question", "response": "answer"}},
     NOT_READ, "renamed.columns.prompt"),
    ("tagged", {"file_name": "mllm_demo.json", "formatting": "sharegpt", "columns": {"messages": "messages"},
                "tags": {"role_tag": "speaker", "content_tag": "text"}}, NOT_READ, "tagged.tags"),
    ("modelscope", {"ms_hub_url": "llamafactory/alpaca_en"}, NOT_READ, "modelscope.ms_hub_url"),
    ("odd", {"file_name": "alpaca_en_demo.json", "formatting": "chatml"}, REFUSED, "odd.formatting"),
])
def test_an_entry_that_is_not_sft_data_tunegate_reads_is_named_at_its_key_in_dataset_info(layout, name, attrs,
                                                                                          code, key):
    entry(layout, name, **attrs)
    parsed = parse_spec(config(layout, dataset=name))
    findings = [f for f in [*parsed.result.findings, *parsed.unavailable.values()] if (f.code, f.stage) == code]
    assert [f.key for f in findings] == [key]
    assert findings[0].file.endswith("dataset_info.json") and findings[0].line > 1


@pytest.mark.parametrize(("name", "attrs", "fmt"), [
    ("mllm_text", {"file_name": "alpaca_en_demo.json"}, "alpaca"),
    ("glaive_toolcall_en_demo", None, "sharegpt"),
    ("openai_tags", {"file_name": "kto_en_demo.json", "formatting": "sharegpt", "columns": {"messages": "messages"},
                     "tags": {"role_tag": "role", "content_tag": "content", "user_tag": "user",
                              "assistant_tag": "assistant"}}, "messages"),
])
def test_an_entrys_columns_and_tags_choose_the_format_that_reads_its_records_the_same_way(layout, name, attrs, fmt):
    if attrs is not None:
        entry(layout, name, **attrs)
    assert parse_spec(config(layout, dataset=name, eval_dataset=name)).raw["data"]["format"] == fmt


def test_several_names_are_one_split_of_their_files_in_order(layout):
    report = check(config(layout, dataset="identity,alpaca_en_demo"))
    assert report.stage("dataset").stats["train"]["records"] == 6 + 8
    assert [f.file.rsplit("/", 1)[-1] for f in report.findings if f.code == "TG266"] == ["identity.json"] * 6


def test_several_names_in_different_formats_are_not_read_as_tunegate_reads_a_split_in_one(layout):
    parsed = parse_spec(config(layout, dataset="alpaca_en_demo,glaive_toolcall_en_demo"))
    finding = parsed.unavailable["train"]  # LLaMA-Factory converts each and trains them: no refusal of its own
    assert (finding.code, finding.stage, finding.key) == ("TG145", "dataset", "dataset")
    assert "glaive_toolcall_en_demo is sharegpt but alpaca_en_demo is alpaca" in finding.message


def test_a_file_name_folder_of_several_files_is_one_dataset_of_them_all(layout):
    (layout / "data" / "both").mkdir()
    for name in ("alpaca_en_demo.json", "identity.json"):
        shutil.copy(layout / "data" / name, layout / "data" / "both" / name)
    entry(layout, "both", file_name="both")
    parsed = parse_spec(config(layout, dataset="both"))
    assert [p.rsplit("/", 1)[-1] for p in parsed.raw["data"]["train"]] == ["alpaca_en_demo.json", "identity.json"]
    assert check(parsed).stage("dataset").stats["train"]["records"] == 8 + 6


def test_a_file_name_folder_of_files_of_two_types_is_refused_as_llamafactory_refuses_it(layout):
    (layout / "data" / "mixed").mkdir()
    shutil.copy(layout / "data" / "alpaca_en_demo.json", layout / "data" / "mixed" / "a.json")
    (layout / "data" / "mixed" / "b.csv").write_text("instruction,input,output\nHi,,Hello\n")
    entry(layout, "mixed", file_name="mixed")
    [finding] = [f for f in parse_spec(config(layout, dataset="mixed")).result.findings if f.code == "TG154"]
    assert finding.key == "mixed.file_name" and "File types should be identical." in finding.message


def test_a_name_missing_from_dataset_info_is_refused_as_llamafactory_refuses_it(layout):
    [finding] = [f for f in parse_spec(config(layout, dataset="nope")).result.findings if f.code == "TG154"]
    assert finding.key == "dataset" and "Undefined dataset nope" in finding.message


def test_a_hub_entry_not_in_the_local_cache_is_said_at_the_dataset_key(layout, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-hub"))
    assert ("TG142", "dataset") in found(config(layout, dataset="alpaca_en"))


def test_no_dataset_info_here_leaves_the_data_unchecked_saying_where_it_was_looked_for(tmp_path):
    parsed = parse_spec(config(tmp_path))
    assert not [f for f in parsed.result.findings if f.code == "TG154"]  # llamafactory-cli reads it where it runs
    finding = parsed.unavailable["train"]
    assert finding.code == "TG158" and finding.stage == "dataset"
    assert "dataset_info.json" in finding.message and str(tmp_path) in finding.message


def test_a_remote_dataset_dir_leaves_the_data_unchecked(tmp_path):
    parsed = parse_spec(config(tmp_path, dataset_dir="REMOTE:llamafactory/demo_data"))
    said = parsed.unavailable["train"]
    assert said.code == "TG158" and "llamafactory/demo_data" in said.message


@pytest.mark.parametrize(("changes", "expected"), [
    ({"eval_dataset": None, "val_size": 0.1}, ("TG141", "val_size")),
    ({"val_size": 0.1}, ("TG154", "val_size")),
    ({"eval_dataset": None}, ("TG143", None)),
])
def test_a_config_without_one_frozen_file_per_split_is_refused(layout, changes, expected):
    assert expected in found(config(layout, **changes))


@pytest.mark.parametrize(("changes", "expected"), [
    ({"finetuning_type": "full"}, ("TG144", "finetuning_type")),
    ({"finetuning_type": "freeze"}, ("TG144", "finetuning_type")),
    ({"finetuning_type": "full", "quantization_bit": 4}, ("TG154", "quantization_bit")),
    ({"quantization_bit": 4, "quantization_method": "hqq"}, ("TG147", "quantization_method")),
    ({"stage": "rm"}, ("TG147", "stage")),
    ({"do_train": None}, ("TG147", None)),
    ({"use_dora": "true"}, ("TG147", "use_dora")),
    ({"mask_history": "true"}, ("TG147", "mask_history")),
    ({"flash_attn": "fa3"}, ("TG147", "flash_attn")),
    ({"fp16": "true"}, ("TG149", "fp16")),
    ({"lora_rnak": 16}, ("TG155", "lora_rnak")),
    ({"model_name_or_path": None}, ("TG152", None)),
])
def test_a_setting_llamafactory_refuses_or_tunegate_would_not_honour_is_named_at_its_key(layout, changes, expected):
    assert expected in found(config(layout, **changes))


def test_llamafactory_values_are_mapped_onto_the_spec(layout):
    raw = parse_spec(config(layout, lora_rank=16, lora_target="q_proj,v_proj", additional_target="embed_tokens",
                            quantization_bit=8, train_on_prompt="true", flash_attn="fa2",
                            disable_gradient_checkpointing="true", deepspeed="ds_z2_config.json")).raw
    assert raw["lora"] == {"r": 16, "alpha": 32, "dropout": 0.0, "target_modules": ["q_proj", "v_proj"],
                           "modules_to_save": ["embed_tokens"]}
    t = raw["training"]
    assert (t["loss_on"], t["attention"], t["gradient_checkpointing"], t["sharding"]) == (
        "all", "flash_attention_2", False, "zero2")
    assert raw["model"]["quantization"] == "8bit"


def test_a_template_is_a_warning_and_none_renders_with_the_tokenizer_like_tunegate(layout):
    assert ("TG156", "template") in found(config(layout, template="llama3"))
    assert "TG156" not in {code for code, _ in found(config(layout))}


def test_wrong_types_are_findings_never_a_crash(layout):
    hostile = config(layout, stage="[1]", finetuning_type="{a: 1}", quantization_bit="[4]", flash_attn="[]",
                     dataset="5", dataset_dir="[x]", lora_target="7", val_size="abc", deepspeed="7",
                     eval_dataset="{b: 2}")
    result = parse_spec(hostile).result
    assert result.status == "failed" and {"TG102"} <= {f.code for f in result.findings}


def test_the_data_folder_is_the_working_directorys_first_as_llamafactory_reads_it(layout, tmp_path, monkeypatch):
    elsewhere = tmp_path / "run-from-here"
    shutil.copytree(LF_DATA, elsewhere / "data")
    monkeypatch.chdir(elsewhere)
    assert ("TG154", "eval_dataset") in found(config(layout))  # its dataset_info.json has no "heldout"


LONG = "x" * 300  # a component past the 255 bytes every file system allows (issue 36)


@pytest.mark.parametrize(("changes", "code", "key"), [
    ({"dataset_dir": LONG}, "TG145", "dataset_dir"),
    ({"val_size": 10 ** 4000, "eval_dataset": None}, "TG102", "val_size"),  # no float holds it
], ids=["long dataset_dir", "huge val_size"])
def test_a_key_no_file_system_or_float_holds_is_a_finding_never_an_exception(layout, changes, code, key):
    assert (code, key) in found(config(layout, **changes))


def test_a_long_deepspeed_name_is_a_name_never_an_exception(layout):
    # read as a name, as for a file that is not there: ZeRO-2 (which tunegate launch does not run, TG160)
    assert found(config(layout, deepspeed=LONG)) == [("TG160", "deepspeed")]


@pytest.mark.parametrize("file_name", ["a\0b.json", LONG + ".json"], ids=["nul", "long"])
def test_an_entrys_file_name_no_file_system_holds_is_tg145_at_it(layout, file_name):
    entry(layout, "bad", file_name=file_name)
    assert ("TG145", "bad.file_name") in found(config(layout, dataset="bad"))

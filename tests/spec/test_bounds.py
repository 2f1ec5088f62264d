"""Every number of a spec has a range a real run could use, and every float is normal: past it, TG103
at its key, in a tunegate spec and in an imported config alike; never exit 3, never a hang."""
from __future__ import annotations

import time

import pytest
import yaml

from tests.support.hostile import HUGE, NUMBERS, spec_with
from tests.support.paths import DATA
from tunegate.spec import bounds
from tunegate.spec.check import parse_spec
from tunegate.spec.model import json_schema


def short(value) -> str:
    """A test id for `value`: 10**4000 is named by its size."""
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) < 16 else f"{text[:4]}..({len(text)} chars)"


def codes(parsed) -> set[tuple[str, str | None]]:
    return {(f.code, f.key) for f in parsed.result.findings}


@pytest.mark.parametrize(("key", "value"), NUMBERS, ids=short)
def test_a_number_past_its_range_is_tg103_at_its_key(key, value, tmp_path):
    parsed = parse_spec(spec_with(tmp_path, key, value))
    assert not parsed.valid and ("TG103", key) in codes(parsed), parsed.result.findings


def test_a_huge_value_is_quoted_by_its_size(tmp_path):
    parsed = parse_spec(spec_with(tmp_path, "lora.r", HUGE))
    (finding,) = [f for f in parsed.result.findings if f.key == "lora.r"]
    assert "at most 65536" in finding.message or "less than or equal to 65536" in finding.message
    assert "an integer of 4,001 digits" in finding.message and len(finding.message) < 200


def test_the_bounds_a_real_run_uses_still_pass(tmp_path):
    for key, value in [("training.max_seq_len", 1 << 20), ("hardware.count", 16_384), ("gate.overlap.num_perm", 256),
                       ("training.micro_batch_size", 512), ("estimate.dataset_tokens", 15 * 10 ** 12),
                       ("training.adam_epsilon", 1e-12), ("training.seed", 2 ** 32 - 1), ("model.params", 405),
                       ("model.params", 0.000135)]:
        parsed = parse_spec(spec_with(tmp_path, key, value))
        assert ("TG103", key) not in codes(parsed), (key, parsed.result.findings)


def test_the_json_schema_shows_each_upper_bound():
    props = json_schema()["$defs"]
    assert props["LoraSpec"]["properties"]["r"]["maximum"] == bounds.MAX_RANK
    assert props["OverlapSpec"]["properties"]["num_perm"]["maximum"] == bounds.MAX_PERMUTATIONS
    assert props["TrainingSpec"]["properties"]["max_seq_len"]["maximum"] == bounds.MAX_SEQ_LEN
    assert props["HardwareSpec"]["properties"]["count"]["maximum"] == bounds.MAX_GPUS
    assert props["ModelSpec"]["properties"]["num_layers"]["anyOf"][0]["maximum"] == bounds.MAX_LAYERS


@pytest.mark.parametrize(("config", "key", "value"), [
    ("axolotl/lora-1b.yml", "micro_batch_size", HUGE), ("axolotl/lora-1b.yml", "sequence_len", 2 ** 63),
    ("axolotl/lora-1b.yml", "lora_r", HUGE), ("axolotl/lora-1b.yml", "num_epochs", 1e300),
    ("trl/sft.yaml", "per_device_train_batch_size", 2 ** 63), ("trl/sft.yaml", "warmup_steps", 10 ** 30),
    ("trl/sft.yaml", "max_length", HUGE), ("trl/sft.yaml", "gradient_accumulation_steps", 10 ** 30),
], ids=lambda v: v if isinstance(v, str) else short(v))
def test_an_imported_config_holds_the_same_bounds(config, key, value, tmp_path):
    data = yaml.safe_load((DATA / "configs" / config).read_text())
    data[key] = value
    path = tmp_path / config.replace("/", "-")
    path.write_text(yaml.safe_dump(data, width=1 << 20))
    parsed = parse_spec(path)
    assert not parsed.valid and ("TG103", key) in codes(parsed), parsed.result.findings


def test_a_config_value_past_any_float_is_a_finding_not_an_overflow(tmp_path):
    data = yaml.safe_load((DATA / "configs" / "axolotl" / "lora-1b.yml").read_text())
    data["val_set_size"] = 10 ** 30  # a share or a record count: float() of it overflowed
    (tmp_path / "c.yml").write_text(yaml.safe_dump(data, width=1 << 20))
    parsed = parse_spec(tmp_path / "c.yml")  # no OverflowError: a random split of 1e+30 records, said at its key
    found = parsed.unavailable["validation"]
    assert (found.code, found.key, found.severity) == ("TG141", "val_set_size", "error")


@pytest.mark.parametrize("command", ["check", "estimate", "advise"])
@pytest.mark.parametrize(("key", "value"), [("lora.r", HUGE), ("training.micro_batch_size", 2 ** 63),
                                            ("gate.overlap.num_perm", 1_000_000),
                                            ("hardware.custom.bf16_tflops", 1e-320)], ids=short)
def test_no_command_crashes_or_hangs_on_a_number(command, key, value, tmp_path, capsys):
    from tunegate.cli.main import main

    start = time.monotonic()
    code = main([command, str(spec_with(tmp_path, key, value))])
    output = capsys.readouterr()
    assert code == 1 and "internal error" not in output.err and time.monotonic() - start < 10, output.err


LARGEST = {"training.micro_batch_size": bounds.MAX_BATCH, "training.grad_accum_steps": bounds.MAX_BATCH,
           "training.max_seq_len": 1, "hardware.count": bounds.MAX_GPUS, "estimate.dataset_tokens": bounds.MAX_TOKENS,
           "lora.r": bounds.MAX_RANK, "training.epochs": bounds.MAX_EPOCHS}
SLOWEST_GPU = {"hardware.custom.memory_gib": bounds.MIN_GPU_MEMORY_GIB,
               "hardware.custom.bf16_tflops": bounds.MIN_TFLOPS, "hardware.custom.fp32_tflops": bounds.MIN_TFLOPS,
               "hardware.custom.bandwidth_gbs": bounds.MIN_BANDWIDTH_GBS}


@pytest.mark.parametrize("values", [LARGEST, {**LARGEST, **SLOWEST_GPU},
                                    {**LARGEST, "training.max_seq_len": bounds.MAX_SEQ_LEN},
                                    {"hardware.custom.bf16_tflops": 1e-300}],
                         ids=["largest run", "on the slowest GPU", "longest sequences", "a GFLOP/s short"])
def test_the_extremes_a_spec_allows_are_estimated_and_advised_without_a_crash(values, tmp_path):
    from tests.support.fuzz import number_input

    number_input(values, tmp_path)  # the spec stage, the static gate and the advisor's rules, no exception

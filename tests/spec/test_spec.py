"""The spec stage: every rule of the spec, each a finding with its key, line and fix."""
from __future__ import annotations

import json

import pytest

from tests.support.paths import DATA, ROOT
from tunegate.errors import UsageError
from tunegate.spec.check import load_spec, read_spec
from tunegate.spec.model import json_schema

SPECS = DATA / "spec"


def findings(name: str):
    result, spec = read_spec(SPECS / name)
    return result, spec, {(f.code, f.key) for f in result.findings}


def test_scientific_notation_without_a_dot_is_a_number():
    result, spec, _ = findings("sci_lr.yaml")
    assert result.status == "passed"
    assert spec.training.learning_rate == pytest.approx(1e-4)


def test_duplicated_key_is_an_error_at_the_second_line():
    result, _, codes = findings("duplicate_key.yaml")
    assert result.status == "failed"
    dup = next(f for f in result.findings if f.code == "TG105")
    assert (dup.key, dup.line) == ("training.epochs", 6)
    assert "first on line 5" in dup.message


def test_nan_and_inf_are_never_accepted():
    _, _, codes = findings("not_finite.yaml")
    assert ("TG107", "training.learning_rate") in codes
    assert ("TG107", "lora.dropout") in codes


def test_unknown_key_suggests_the_closest_name():
    result, _, codes = findings("typo.yaml")
    f = next(f for f in result.findings if f.code == "TG101")
    assert f.key == "training.learnign_rate"
    assert (f.line, f.column) == (5, 3)
    assert "Did you mean 'learning_rate'?" in f.hint


def test_every_non_positive_value_is_reported_at_once():
    _, _, codes = findings("non_positive.yaml")
    for key in ["lora.r", "lora.alpha", "lora.dropout", "training.learning_rate",
                "training.micro_batch_size", "training.grad_accum_steps", "training.max_seq_len",
                "training.max_steps"]:
        assert ("TG103", key) in codes, key


def test_error_names_key_value_and_fix():
    result, _, _ = findings("non_positive.yaml")
    f = next(f for f in result.findings if f.key == "lora.alpha")
    assert "lora.alpha" in f.message and "-2" in f.message
    assert f.hint.startswith("Set lora.alpha to a valid value")


def test_unsupported_precision_lists_the_allowed_values():
    result, _, codes = findings("bad_precision.yaml")
    f = next(f for f in result.findings if f.key == "training.precision")
    assert f.code == "TG102"
    assert "'bf16', 'fp16' or 'fp32'" in f.message and "fp8" in f.message


def test_validation_set_is_required():
    _, _, codes = findings("no_validation.yaml")
    assert ("TG104", "data.validation") in codes


def test_validation_must_not_be_the_training_file():
    _, _, codes = findings("same_file.yaml")
    assert ("TG108", "data.validation") in codes


def test_yaml_syntax_error_points_at_line_and_column():
    result, spec, _ = findings("bad_yaml.yaml")
    f = result.findings[0]
    assert spec is None
    assert f.code == "TG106" and f.line is not None and f.column is not None


@pytest.mark.parametrize("name", ["not_mapping.yaml", "empty.yaml"])
def test_spec_that_is_not_a_mapping_is_rejected(name):
    _, _, codes = findings(name)
    assert {c for c, _ in codes} == {"TG113"}


def test_gpu_rules_catch_bf16_and_flash_attention_on_a_v100():
    _, _, codes = findings("v100_bf16_flash.yaml")
    assert ("TG110", "training.precision") in codes
    assert ("TG111", "training.attention") in codes


def test_unknown_gpu_suggests_a_catalog_name():
    result, _, _ = findings("unknown_gpu.yaml")
    f = next(f for f in result.findings if f.code == "TG109")
    assert "A100-80GB" in f.hint


def test_suspicious_values_are_warnings_not_errors():
    result, spec, codes = findings("suspicious.yaml")
    assert result.status == "passed" and spec is not None
    assert {c for c, _ in codes} == {"TG120", "TG121", "TG122"}
    assert all(f.severity == "warning" for f in result.findings)


def test_an_api_key_pasted_into_the_spec_is_rejected_without_echoing_it():
    result, _, codes = findings("key_in_spec.yaml")
    assert ("TG116", "advisor.api_key_env") in codes
    dumped = result.model_dump_json()
    assert "4f9a8b7c6d5e" not in dumped


def test_remote_code_needs_a_pinned_revision():
    _, _, codes = findings("remote_code.yaml")
    assert ("TG114", "model.trust_remote_code") in codes


def test_hub_kernels_switched_on_is_a_warning_at_its_line():
    result, _, codes = findings("hub_kernels.yaml")
    assert ("TG126", "model.hub_kernels") in codes
    found = next(f for f in result.findings if f.code == "TG126")
    assert (found.severity, found.line) == ("warning", 5) and "remote code" in found.message


def test_hub_kernels_are_off_unless_the_spec_asks():
    _, spec, codes = findings("good.yaml")
    assert spec.model.hub_kernels is False and not any(code == "TG126" for code, _ in codes)


def test_good_spec_resolves_paths_against_its_folder_and_aliases_gpus():
    result, spec, _ = findings("good.yaml")
    assert result.status == "passed", result.findings
    assert spec.data.train == (SPECS / "t.jsonl").resolve()
    assert spec.training.learning_rate == pytest.approx(3e-4)


def test_errors_on_keys_that_do_not_exist_still_report_cross_field_rules():
    result, _ = read_spec(ROOT / "examples" / "broken.yaml")
    got = {f.code for f in result.findings}
    assert {"TG101", "TG102", "TG103", "TG107", "TG108"} <= got


def test_missing_spec_file_is_a_usage_error():
    with pytest.raises(UsageError, match="not found"):
        read_spec(SPECS / "nope.yaml")


def test_load_spec_raises_usage_error_listing_the_problems():
    with pytest.raises(UsageError, match="TG103"):
        load_spec(SPECS / "non_positive.yaml")


def test_schema_carries_the_field_descriptions():
    schema = json_schema()
    text = json.dumps(schema)
    assert "Peak learning rate of AdamW." in text
    assert schema["title"] == "tunegate spec"


def test_a_missing_section_is_named_with_the_keys_it_needs():
    result, _, codes = findings("no_data.yaml")
    assert ("TG104", "data") in codes
    hint = next(f.hint for f in result.findings if f.key == "data")
    assert "()" not in hint
    assert hint == ("Add the 'data' section with train, validation (and optionally version, format); "
                    "`tunegate schema` lists every key.")


def test_a_missing_key_is_named_with_its_description():
    result, _, _ = findings("no_validation.yaml")
    hint = next(f.hint for f in result.findings if f.key == "data.validation")
    assert hint.startswith("Add 'data.validation' (Validation set, same kinds; must be a different file")


def test_a_boolean_rank_and_quoted_numbers_are_wrong_types_not_silently_coerced():
    result, spec, codes = findings("coerced_types.yaml")
    assert spec is None and result.status == "failed"
    assert {("TG102", "lora.r"), ("TG102", "lora.alpha"), ("TG102", "training.learning_rate"),
            ("TG102", "training.gradient_checkpointing")} <= codes
    by_key = {f.key: f for f in result.findings}
    assert by_key["lora.r"].line == 4 and "'true' is a boolean" in by_key["lora.r"].hint
    assert "without quotes (alpha: 32)" in by_key["lora.alpha"].hint


def test_paths_and_whole_numbers_for_real_fields_still_read_as_written():
    result, spec, _ = findings("good.yaml")
    assert result.status == "passed"
    assert spec.data.train.name == "t.jsonl" and spec.training.epochs == 2.0


def test_an_api_key_in_any_spec_string_is_rejected_without_echoing_it():
    result, _, codes = findings("keys_everywhere.yaml")
    flagged = {key for code, key in codes if code == "TG124"}
    assert flagged == {"data.version", "sweep.candidates.1.data.version", "sweep.candidates.2.model.revision"}
    place = next(f for f in result.findings if f.key == "data.version")
    assert (place.line, place.severity) == (9, "error")
    dumped = result.model_dump_json()
    for secret in ("Zq8vN3xL0pR7", "AbCdEfGhIjKl", "Xk29dLq0ZpWm"):
        assert secret not in dumped


def test_a_learning_rate_no_lora_run_survives_is_rejected_at_the_spec_stage():
    result, spec, codes = findings("lr_absurd.yaml")
    assert spec is None and ("TG125", "training.learning_rate") in codes
    lr = next(f for f in result.findings if f.code == "TG125")
    assert lr.severity == "error" and lr.line == 4


def test_a_high_but_survivable_learning_rate_is_only_a_warning():
    result, _, codes = findings("suspicious.yaml")
    assert not {c for c, _ in codes} & {"TG124", "TG125"}


def test_a_spec_saved_with_a_byte_order_mark_reads_as_without_it_with_the_same_lines():
    result, spec, codes = findings("byte_order_mark.yaml")
    assert spec is None and codes == {("TG103", "training.epochs")}
    assert (result.findings[0].line, result.findings[0].column) == (7, 3)


def test_a_spec_that_is_not_utf8_names_the_bad_byte_counted_after_the_byte_order_mark():
    with pytest.raises(UsageError, match=r"is not UTF-8 text \(bad byte at offset 51\)"):
        read_spec(SPECS / "latin1_after_mark.yaml")


def test_digit_groups_are_numbers_as_python_and_pyyaml_read_them():
    result, spec, _ = findings("digit_groups.yaml")
    assert result.status == "passed"
    assert (spec.training.max_seq_len, spec.training.max_steps) == (4096, 1000)
    assert spec.training.learning_rate == pytest.approx(2e-4)


def test_long_hub_model_and_dataset_names_are_not_taken_for_api_keys():
    result, _, codes = findings("long_hub_ids.yaml")
    assert {key for code, key in codes if code == "TG124"} == {"sweep.candidates.1.data.version"}

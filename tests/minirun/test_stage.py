"""The mini-run stage on the tiny model, on the CPU: what it approves, what it rejects, what it measures."""
from __future__ import annotations

import math

import pytest

from tests.support.minirun import codes, finding, load_spec, run_stage


@pytest.fixture(scope="module")
def good(tiny_cache):
    return run_stage(load_spec("good"))


def test_a_good_spec_passes(good):
    result, _ = good
    assert result.status == "passed", result.findings
    assert codes(result) == {"TG515", "TG536"}  # the notes: it ran on a CPU, on the tiny model


def test_every_step_is_measured_and_finite(good):
    stats = good[0].stats
    assert stats["steps"] == 4 == len(stats["losses"]) == len(stats["grad_norms"])
    assert all(math.isfinite(x) for x in stats["losses"] + stats["grad_norms"])
    assert all(g > 0 for g in stats["grad_norms"])
    assert stats["tokens_per_s"] > 0 and stats["step_s"] > 0 and stats["load_s"] > 0
    assert stats["peak_memory_bytes"] > 0 and "RSS" in stats["peak_memory_source"]
    assert (stats["device"], stats["precision"]) == ("cpu", "bf16")


def test_the_whole_lifecycle_runs(good):
    stats = good[0].stats
    assert stats["probe_loss_after"] < stats["probe_loss_before"]  # the trained-on batch got better
    assert math.isfinite(stats["eval_loss"])
    assert stats["adapter_bytes"] > 10_000
    assert stats["reload_max_logit_diff"] == 0.0
    assert stats["disk_free_bytes"] > stats["checkpoint_bytes_estimate"]


def test_real_token_counts_go_to_the_estimate(good):
    result, ctx = good
    tokens = ctx.facts.tokens
    assert tokens.records == 12 and not tokens.sampled
    assert tokens.train_tokens == result.stats["token_audit"]["train"]["train_tokens"] > 0
    assert 0 < tokens.trainable_tokens < tokens.train_tokens
    assert ctx.facts.mini_run.tokens_per_s == result.stats["tokens_per_s"]


def test_the_same_spec_gives_the_same_losses(tiny_cache, good):
    again, _ = run_stage(load_spec("good"))
    assert again.stats["losses"] == good[0].stats["losses"]


def test_gradient_checkpointing_changes_memory_not_results(tiny_cache, good):
    checkpointed, _ = run_stage(load_spec("good", **{"training.gradient_checkpointing": True}))
    assert checkpointed.status == "passed"
    assert checkpointed.stats["losses"] == pytest.approx(good[0].stats["losses"], abs=1e-3)


def test_fp16_overflow_from_a_huge_learning_rate_is_rejected(tiny_cache):
    result, _ = run_stage(load_spec("lr_huge"))
    assert result.status == "failed"
    nan = finding(result, "TG516")
    assert "nan" in nan.message or "inf" in nan.message
    assert nan.key == "training.learning_rate"
    assert "adapter_bytes" not in result.stats  # no save of a diverged adapter


def test_fp16_with_modules_to_save_trains_its_full_copies_in_fp32(tiny_cache):
    # PEFT keeps LoRA in fp32 but a modules_to_save copy in the base's fp16: the scaler refused it
    # ("Attempting to unscale FP16 gradients", issue 31)
    result, _ = run_stage(load_spec("good", **{"training.precision": "fp16", "lora.modules_to_save": ["lm_head"]}))
    assert result.status == "passed", [f"{f.code} {f.message}" for f in result.findings if f.severity == "error"]
    assert result.stats["precision"] == "fp16" and len(result.stats["losses"]) == result.stats["steps"]


def test_a_text_model_under_ddp_has_no_unused_trainable_parameters(tiny_cache):
    result, _ = run_stage(load_spec("good", **{"hardware.count": 2}))
    assert result.status == "passed" and "TG552" not in codes(result)


def test_compile_on_a_cpu_mini_run_is_a_note_naming_what_it_did_not_exercise(tiny_cache):
    result, _ = run_stage(load_spec("good", **{"training.compile": True}))
    assert result.status == "passed" and finding(result, "TG550").severity == "info"


def test_a_huge_learning_rate_in_bf16_is_rejected_though_its_loss_stays_finite(tiny_cache):
    result, _ = run_stage(load_spec("lr_huge", **{"training.precision": "bf16"}))
    assert result.status == "failed"
    assert codes(result) & {"TG516", "TG517", "TG518", "TG535"}


def test_a_saturating_learning_rate_in_bf16_is_rejected_for_a_dead_gradient(tiny_cache):
    # 1e4 never reaches the mini-run through the gate (the spec stage rejects it, TG125): the
    # mini-run's own checks are tested past it.
    result, _ = run_stage(load_spec("lr_huge", **{"training.precision": "bf16", "training.learning_rate": 1e4}))
    assert result.status == "failed"
    assert codes(result) & {"TG516", "TG517", "TG518"}


def test_a_record_whose_reply_is_truncated_away_is_rejected(tiny_cache):
    result, _ = run_stage(load_spec("long_user"))
    assert result.status == "failed"
    zero = finding(result, "TG510")
    assert zero.file.endswith("train_long_user.jsonl") and zero.line == 3
    assert result.stats["sample_records"] == 5  # the other records still ran
    assert result.stats["steps"] == 4


def test_target_modules_matching_nothing_are_rejected_with_the_real_names(tiny_cache):
    result, _ = run_stage(load_spec("bad_targets"))
    assert result.status == "failed"
    bad = finding(result, "TG506")
    assert "nonexistent" in bad.message
    for name in ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"):
        assert name in bad.message
    assert bad.key == "lora.target_modules"


def test_one_misspelt_target_among_good_ones_is_rejected(tiny_cache):
    result, _ = run_stage(load_spec("good", **{"lora.target_modules": ["q_proj", "o_prj"]}))
    assert "['o_prj']" in finding(result, "TG506").message


def test_all_linear_targets_pass(tiny_cache):
    result, _ = run_stage(load_spec("good", **{"lora.target_modules": "all-linear"}))
    assert result.status == "passed"


def test_a_tokenizer_without_chat_template_is_rejected(tiny_cache, tmp_path):
    from tunegate.training.tiny_model import make_variant

    base = make_variant(tiny_cache, tmp_path / "base-model", chat_template=False)
    result, _ = run_stage(load_spec("good", **{"model.id": str(base)}))
    assert result.status == "failed"
    assert finding(result, "TG503").key == "model.id"


def test_a_tokenizer_without_pad_token_runs_and_says_what_pads(tiny_cache, tmp_path):
    from tunegate.training.tiny_model import make_variant

    nopad = make_variant(tiny_cache, tmp_path / "nopad", pad=None)
    result, _ = run_stage(load_spec("good", **{"model.id": str(nopad)}))
    assert result.status == "passed"
    assert "'<unk>'" in finding(result, "TG504").message


def test_pad_equal_to_eos_is_flagged_for_masking_the_eos(tiny_cache, tmp_path):
    from tunegate.training.tiny_model import make_variant

    eos_pad = make_variant(tiny_cache, tmp_path / "eospad", pad="eos")
    result, _ = run_stage(load_spec("good", **{"model.id": str(eos_pad)}))
    flagged = finding(result, "TG505")
    assert flagged.severity == "warning" and "12 EOS labels" in flagged.message


def test_an_unloadable_model_id_is_a_finding_not_a_crash(tiny_cache, tmp_path):
    result, _ = run_stage(load_spec("good", **{"model.id": str(tmp_path / "no-such-model")}))
    assert result.status == "failed"
    assert "no-such-model" in finding(result, "TG508").message


def test_records_of_zero_characters_are_rejected(tiny_cache):
    result, _ = run_stage(load_spec("good", **{"data.train": load_spec("good").data.train.with_name(
        "train_empty_content.jsonl")}))
    assert finding(result, "TG502").line == 2
    assert result.stats["sample_records"] == 2


def test_no_usable_training_record_means_an_empty_sample(tiny_cache):
    result, _ = run_stage(load_spec("good", **{"training.max_seq_len": 8}))
    assert result.totals_by_code["TG510"] == 12 + 4  # every train and validation record
    assert "TG501" in codes(result)
    assert "steps" not in result.stats


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="this machine has a GPU")
def test_asking_for_a_device_the_machine_lacks_is_rejected(tiny_cache):
    result, _ = run_stage(load_spec("good", **{"gate.mini_run.device": "cuda"}))
    assert finding(result, "TG528").key == "gate.mini_run.device"


def test_without_a_spec_the_stage_is_skipped():
    from tunegate.minirun.stage import run_stage as minirun_stage
    from tunegate.stage import GateContext

    result = minirun_stage(GateContext(None, None, {}, cap=20, mini_run=True))
    assert result.status == "skipped" and "spec" in result.reason


def test_a_learning_rate_too_low_to_move_the_loss_is_warned(tiny_cache):
    result, _ = run_stage(load_spec("good", **{"training.learning_rate": 1e-9}))
    assert result.status == "passed"  # a warning: the run works, it just learns nothing
    warned = finding(result, "TG520")
    assert warned.severity == "warning" and "did not go down" in warned.message


def test_a_learning_rate_that_underflows_leaves_the_weights_unchanged(tiny_cache):
    result, _ = run_stage(load_spec("good", **{"training.learning_rate": 1e-50, "training.precision": "fp32"}))
    assert result.status == "failed"
    assert "no LoRA weight changed" in finding(result, "TG519").message


def test_flash_attention_without_cuda_falls_back_to_sdpa_and_says_so(tiny_cache):
    result, _ = run_stage(load_spec("good", **{"training.attention": "flash_attention_2"}))
    assert result.status == "passed"
    assert finding(result, "TG514").severity == "warning"
    assert result.stats["attention"] == "sdpa"


def test_a_quantized_base_off_a_gpu_is_trained_unquantized_and_the_report_says_so(tiny_cache):
    result, _ = run_stage(load_spec("good", **{"model.quantization": "4bit"}))
    assert result.status == "passed"
    note = finding(result, "TG537")
    assert note.severity == "info" and note.key == "model.quantization"
    assert any("unquantized" in c and "CUDA" in c for c in result.stats["caveats"])
    assert any("tiny model" in c for c in result.stats["caveats"])  # the other caveat is kept


def test_a_validation_set_with_no_usable_record_fails_the_evaluation_step(tiny_cache):
    spec = load_spec("good")
    result, _ = run_stage(load_spec("good", **{"data.validation": spec.data.train.with_name("validation_empty.jsonl")}))
    assert {"TG502", "TG522"} <= codes(result)
    assert result.stats["steps"] == 4  # training itself still ran


def test_a_tokenizer_bigger_than_the_model_embedding_is_rejected(tiny_cache, tmp_path):
    from transformers import AutoConfig, AutoTokenizer, LlamaForCausalLM

    config = AutoConfig.from_pretrained(tiny_cache)
    config.vocab_size = 128  # as if tokens were added without resize_token_embeddings
    LlamaForCausalLM(config).save_pretrained(tmp_path / "small-vocab")
    AutoTokenizer.from_pretrained(tiny_cache).save_pretrained(tmp_path / "small-vocab")
    result, _ = run_stage(load_spec("good", **{"model.id": str(tmp_path / "small-vocab")}))
    assert "only 128 rows" in finding(result, "TG534").message
    assert "TG533" not in codes(result)


def test_a_crash_inside_the_run_is_a_finding_naming_the_step(tiny_cache, monkeypatch):
    from tunegate.minirun.session import MiniRun
    from tunegate.report import FindingCollector

    monkeypatch.delenv("TUNEGATE_DEBUG", raising=False)
    ctx = run_stage(load_spec("good"))[1]
    out = FindingCollector("mini-run")
    run = MiniRun(ctx, out, {})
    assert run._guard("the evaluation step", lambda: {}["missing-key"]) is None
    [crash] = out.kept
    assert crash.code == "TG533" and "during the evaluation step: KeyError" in crash.message
    monkeypatch.setenv("TUNEGATE_DEBUG", "1")
    with pytest.raises(KeyError):
        run._guard("the evaluation step", lambda: {}["missing-key"])


def test_a_chat_template_that_does_not_parse_is_one_error_on_the_model(tiny_cache, tmp_path):
    from transformers import AutoTokenizer

    from tunegate.training.tiny_model import make_variant

    folder = make_variant(tiny_cache, tmp_path / "model")
    tokenizer = AutoTokenizer.from_pretrained(folder)
    tokenizer.chat_template = "{% for m in messages %}{{ m['content'] }}{% endfor %"  # the closing brace lost
    tokenizer.save_pretrained(folder)
    result, _ = run_stage(load_spec("good", **{"model.id": str(folder)}))
    assert [f.code for f in result.findings if f.severity == "error"] == ["TG545"]
    syntax = finding(result, "TG545")
    assert syntax.key == "model.id" and "does not parse" in syntax.message
    assert "expected token 'end of statement block'" in syntax.message


def test_a_finding_on_a_spec_key_names_the_spec_file_and_the_key(tiny_cache):
    from tests.support.minirun import DATA
    from tunegate.gate import check

    report = check(DATA / "lr_out_of_scale.yaml", mini_run=True)
    scale = next(f for f in report.findings if f.code == "TG535")
    assert scale.file.endswith("lr_out_of_scale.yaml") and scale.key == "training.learning_rate"
    assert scale.place().endswith("lr_out_of_scale.yaml:training.learning_rate")

"""Stage 3 reports whether the full run fits, how long it takes, and judges the user's estimate."""
from __future__ import annotations

import subprocess
import sys

import pytest

from tests.support.estimate_specs import DATA, context, make_spec
from tunegate.estimate.run import estimate_run
from tunegate.estimate.stage import SHARDED_COUNTS
from tunegate.estimate.stage import run_stage as estimate_stage

# What the mini-run's token audit of a 5M-token training split hands the estimate.
AUDITED = {"train_tokens": 5_000_000, "trainable_tokens": 3_000_000, "records": 10_000, "sampled": True,
           "max_seq_len": 2048, "mean_tokens_per_record": 500.0}


def codes(result):
    return {f.code: f.severity for f in result.findings}


def test_a_run_that_fits_passes_and_leaves_its_estimate_for_the_advisor():
    ctx = context(make_spec())
    result = estimate_stage(ctx)
    assert result.status == "passed" and not result.findings
    est = ctx.facts.estimate
    assert est["memory"]["verdict"] == "fits"
    assert est["tokens"] == {"per_epoch": 100_000_000, "source": "spec", "epochs": 1.0, "total": 1e8}
    assert est["cost_usd"] == round(est["hours"] * 2.0, 2)
    assert "GiB per GPU" in result.stats["summary"]


def test_a_run_that_does_not_fit_is_an_error_naming_the_biggest_term():
    result = estimate_stage(context(make_spec(training={"micro_batch_size": 16, "max_seq_len": 4096})))
    assert result.status == "failed"
    finding = next(f for f in result.findings if f.code == "TG401")
    assert "biggest term: logits" in finding.message
    assert "micro_batch_size" in finding.hint


def test_a_run_whose_band_top_does_not_fit_is_tight_a_warning():
    # 3 x 1920 tokens on an L4: the point estimate fits its 22 GiB, the band's top does not
    result = estimate_stage(context(make_spec(training={"micro_batch_size": 3, "max_seq_len": 1920},
                                              hardware={"gpu": "L4"})))
    assert codes(result) == {"TG402": "warning"}
    m = result.stats["memory"]
    assert m["peak_gib"] <= m["capacity_gib"] < m["high_gib"]
    assert "upper bound" in result.findings[0].message


def test_a_run_too_big_even_at_micro_batch_1_with_checkpointing_is_impossible():
    spec = make_spec(model={"id": str(DATA / "llama-70b")}, hardware={"gpu": "A100-40GB"})
    result = estimate_stage(context(spec))
    assert codes(result) == {"TG403": "error"}
    assert "even at micro batch 1 with gradient checkpointing" in result.findings[0].message


def test_a_model_whose_config_is_not_on_this_machine_is_not_estimated_here_saying_what_to_provide(monkeypatch):
    # The run machine finds the config (its Hub or its cache); this one cannot: memory was never
    # checked, so the stage did not run (nothing is approved), and the config is not at fault.
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    result = estimate_stage(context(make_spec(model={"id": "acme/never-published-7b"})))
    assert result.status == "skipped" and "config.json is not on this machine" in result.reason
    assert codes(result) == {"TG404": "warning"}
    assert "no config.json" in result.findings[0].message and "on this machine" in result.findings[0].message
    assert "hf download" in result.findings[0].hint and "model.id" in result.findings[0].hint


def test_an_unknown_gpu_still_stops_the_estimate_as_an_error():
    spec = make_spec(model={"id": str(DATA / "llama-70b")})
    spec.hardware.gpu = "Z9000-1TB"  # past the spec's own check (TG109): the estimate says it too
    result = estimate_stage(context(spec))
    assert result.status == "failed" and codes(result) == {"TG404": "error"}
    assert "unknown GPU 'Z9000-1TB'" in result.findings[0].message


def test_a_malformed_config_is_an_error():
    result = estimate_stage(context(make_spec(model={"id": str(DATA / "broken-config")})))
    assert codes(result) == {"TG405": "error"}


def test_tokens_estimated_from_characters_are_said_so():
    ctx = context(make_spec(estimate={"dataset_tokens": None}))
    result = estimate_stage(ctx)
    assert codes(result) == {"TG409": "info"}
    chars = 0
    import json
    for line in (DATA / "train.jsonl").read_text().splitlines():
        chars += sum(len(m["content"]) for m in json.loads(line)["messages"])
    assert ctx.facts.estimate["tokens"] == {"per_epoch": int(chars / 4), "source": "characters",
                                               "epochs": 1.0, "total": float(int(chars / 4))}


def test_the_token_audit_is_used_when_the_spec_declares_no_size():
    ctx = context(make_spec(estimate={"dataset_tokens": None}), facts={"tokens": AUDITED})
    estimate_stage(ctx)
    assert ctx.facts.estimate["tokens"]["source"] == "token audit"
    assert ctx.facts.estimate["tokens"]["per_epoch"] == 5_000_000


def test_mini_run_tokens_per_second_on_the_same_gpu_replace_the_model():
    same = {"mini_run": {"tokens_per_s": 1234.0, "gpu": "NVIDIA A100-80GB"}}
    other = {"mini_run": {"tokens_per_s": 1234.0, "gpu": "T4"}}
    ctx_same, ctx_other = context(make_spec(), same), context(make_spec(), other)
    estimate_stage(ctx_same), estimate_stage(ctx_other)
    assert ctx_same.facts.estimate["throughput"]["tokens_per_s"] == 1234.0
    assert ctx_same.facts.estimate["throughput"]["source"] == "mini-run"
    assert ctx_other.facts.estimate["throughput"]["source"] == "model"


def _user_hours_finding(hours):
    # the spec says LoRA, so only that reading is judged
    result = estimate_stage(context(make_spec(estimate={"wall_clock_hours": hours}, training={"method": "lora"})))
    return codes(result), result


def test_a_user_estimate_beyond_the_gpus_peak_is_physically_impossible():
    found, result = _user_hours_finding(0.01)
    assert found == {"TG406": "warning"}
    assert "physically impossible" in result.findings[0].message


def test_a_user_estimate_above_60_percent_mfu_is_optimistic():
    ours = context(make_spec())
    estimate_stage(ours)
    hours_at_80_percent = ours.facts.estimate["hours"] * ours.facts.estimate["throughput"]["mfu"] / 0.8
    assert _user_hours_finding(hours_at_80_percent)[0] == {"TG407": "warning"}


def test_a_user_estimate_below_10_percent_mfu_is_probably_misconfigured():
    assert _user_hours_finding(10_000)[0] == {"TG408": "warning"}


def test_a_claimed_time_for_a_run_of_unstated_method_is_also_read_as_a_full_fine_tune():
    result = estimate_stage(context(make_spec(estimate={"wall_clock_hours": 5.0})))
    other = next(f for f in result.findings if f.code == "TG412")
    assert other.severity == "info" and other.key == "training.method"
    assert "read as full" in other.message and "MFU" in other.message
    assert [r["method"] for r in result.stats["readings"]] == ["lora", "full"]


def test_an_advised_time_is_judged_like_the_users_own():
    spec = make_spec(estimate={"advised_hours": 0.01}, training={"method": "lora"})
    result = estimate_stage(context(spec))
    finding = next(f for f in result.findings if f.code == "TG406")
    assert finding.key == "estimate.advised_hours" and "physically impossible" in finding.message


def test_a_plausible_user_estimate_shows_its_implied_mfu_without_a_finding():
    ours = context(make_spec())
    estimate_stage(ours)
    found, result = _user_hours_finding(ours.facts.estimate["hours"])
    assert found == {}
    implied = result.stats["user_estimate"]["implied_mfu"]
    assert abs(implied - result.stats["throughput"]["mfu"]) < 1e-3


def test_the_estimate_stage_imports_neither_torch_nor_transformers():
    code = ("import sys; from tests.support.estimate_specs import make_spec, context; "
            "from tunegate.estimate.stage import run_stage as estimate_stage; estimate_stage(context(make_spec())); "
            "bad = [m for m in ('torch', 'transformers', 'peft', 'prefect', 'mlflow', 'openai') if m in sys.modules]; "
            "print(bad); sys.exit(1 if bad else 0)")
    done = subprocess.run([sys.executable, "-c", code], cwd=DATA.parent.parent, capture_output=True, text=True,
                          env={"PYTHONPATH": f"{DATA.parent.parent}:{DATA.parent.parent.parent}", "PATH": ""})
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_full_fine_tune_is_estimated_but_never_approved_by_tunegate(monkeypatch):
    result = estimate_stage(context(make_spec(training={"method": "full"})))
    assert codes(result)["TG410"] == "error" and result.status == "failed"
    model, memory = result.stats["model"], result.stats["memory"]
    assert model["method"] == "full" and model["trainable_params"] == model["total_params"] == 1_235_814_400
    # unsharded fp32 master weights: fp32 weights, gradients and moments of every parameter
    assert memory["breakdown"]["optimizer_states"] == pytest.approx(8 * 1_235_814_400 / 2**30, abs=1e-2)


def test_pure_bf16_full_fine_tuning_keeps_moments_in_bf16():
    result = estimate_stage(context(make_spec(training={"method": "full", "master_weights": "none"})))
    assert result.stats["memory"]["breakdown"]["optimizer_states"] == pytest.approx(4 * 1_235_814_400 / 2**30, abs=1e-2)


def test_qlora_stores_the_base_in_nf4_and_is_checked_when_the_base_is_loaded_in_4_bit():
    qlora = estimate_stage(context(make_spec(training={"method": "qlora"}, model={"quantization": "4bit"})))
    lora = estimate_stage(context(make_spec()))
    # Llama-3.2-1B: its decoder's linear layers in NF4, the 262M tied embedding values in fp32
    # (prepare_model_for_kbit_training): 1.45 GiB against 2.30 GiB in bf16
    assert qlora.stats["memory"]["breakdown"]["weights"] < 0.65 * lora.stats["memory"]["breakdown"]["weights"]
    assert "TG410" not in codes(qlora) and qlora.status == "passed"


def test_qlora_without_a_4_bit_base_is_an_error_naming_the_quantization_key():
    result = estimate_stage(context(make_spec(training={"method": "qlora"})))
    finding = next(f for f in result.findings if f.code == "TG410")
    assert finding.severity == "error" and finding.key == "model.quantization"


def test_full_fine_tuning_of_a_quantized_base_is_an_error():
    for quant in ("4bit", "8bit"):
        both = estimate_stage(context(make_spec(training={"method": "full"}, model={"quantization": quant})))
        finding = next(f for f in both.findings if f.code == "TG410")
        assert "cannot be trained" in finding.message


def test_a_custom_gpu_is_estimated_with_its_own_figures_and_the_generic_prior():
    custom = {"memory_gib": 120.0, "bf16_tflops": 1000.0, "fp32_tflops": 100.0, "bandwidth_gbs": 4000.0}
    ctx = context(make_spec(hardware={"gpu": "Lab-accelerator", "custom": custom}))
    result = estimate_stage(ctx)
    assert result.status == "passed"
    assert ctx.facts.estimate["hardware"]["gpu"] == "Lab-accelerator"
    assert ctx.facts.estimate["memory"]["capacity_gib"] == 120.0
    assert ctx.facts.estimate["throughput"]["peak_tflops"] == 1000.0


def _sharded_70b(**hardware):
    return make_spec(model={"id": str(DATA / "llama-70b")}, hardware={"count": None, **hardware},
                     training={"method": "full", "sharding": "fsdp", "micro_batch_size": 1,
                               "gradient_checkpointing": True})


def test_a_sharded_run_whose_gpu_count_nothing_gave_is_judged_by_the_gpus_it_needs():
    # an axolotl FSDP config never says how many GPUs (the launcher does): one GPU is a guess, so the
    # run is not refused for not fitting on it; the finding says from how many it fits
    result = estimate_stage(context(_sharded_70b()))
    assert codes(result)["TG428"] == "warning" and not {"TG401", "TG403"} & set(codes(result))
    (f,) = [f for f in result.findings if f.code == "TG428"]  # beside TG410: tunegate's own trainer is LoRA only
    assert "fsdp sharding" in f.message and "fits on " in f.message
    enough = int(f.message.split("fits on ")[1].split(" x A100-80GB")[0])
    assert enough in SHARDED_COUNTS[1:]  # more than 2 GPUs for 70B in full
    below = SHARDED_COUNTS[SHARDED_COUNTS.index(enough) - 1]
    assert estimate_run(_sharded_70b(count=below)).memory.verdict != "fits"
    assert estimate_run(_sharded_70b(count=enough)).memory.verdict == "fits"


def test_a_sharded_run_on_a_stated_count_that_does_not_fit_is_still_refused():
    result = estimate_stage(context(_sharded_70b(count=2)))
    assert set(codes(result)) & {"TG401", "TG403"} and "TG428" not in codes(result)
    assert result.status == "failed"

"""The mini-run's profiled split (torch.profiler) and the measurements it hands on, labelled by device.

No GPU is lent to these tests: on the CPU the same keys are recorded and labelled "cpu", and the
estimate never lets them stand in for a GPU prior.
"""
from __future__ import annotations

import pytest

from tests.support.minirun import load_spec, run_stage
from tunegate.facts import MiniRunFacts
from tunegate.plain_record import field_names
from tunegate.minirun.profile_split import PROFILED_STEPS, kind_of, shares

KEYS = ("matmul", "attention", "optimizer", "data", "other", "idle")


@pytest.fixture(scope="module")
def good(tiny_cache):
    return run_stage(load_spec("good"))


def test_the_steps_after_the_first_are_profiled_and_split_by_kind_of_work(good):
    result, ctx = good
    split = result.stats["profile"]
    assert split["device"] == "cpu" and "gpu" not in split
    assert split["steps"] == min(PROFILED_STEPS, result.stats["steps"] - 1)  # step 1 pays warm-up
    assert all(0.0 <= split[k] <= 1.0 for k in KEYS)
    assert sum(split[k] for k in KEYS) == pytest.approx(1.0, abs=1e-3)
    assert split["matmul"] > 0 and split["optimizer"] > 0 and split["attention"] > 0
    assert split["peak_memory_bytes"] > 0  # the process's peak RSS here, a CUDA peak on a GPU


def test_the_mini_run_hands_on_its_batch_shape_loss_and_norms_with_its_device(good):
    result, ctx = good
    run = ctx.facts.mini_run
    assert (run.device, run.gpu) == ("cpu", None)
    assert run.profile is not None and run.profile.device == "cpu"
    assert run.micro_batch_size == 4 and run.batch_seq_len > 0
    assert run.final_loss == result.stats["losses"][-1]
    assert run.grad_norm_max == max(result.stats["grad_norms"])


def test_op_and_kernel_names_are_sorted_into_kinds():
    assert kind_of("aten::addmm", set()) == "matmul"
    assert kind_of("ampere_bf16_s16816gemm_bf16_128x64_ldg8_f2f_stages_64x4_tn", set()) == "matmul"
    assert kind_of("aten::_scaled_dot_product_flash_attention", set()) == "attention"
    assert kind_of("flash_fwd_kernel", set()) == "attention"
    assert kind_of("aten::_foreach_sqrt", {"tunegate.optimizer"}) == "optimizer"
    assert kind_of("aten::copy_", {"tunegate.data"}) == "data"
    assert kind_of("aten::mul", set()) == "other"
    # cuBLAS's Hopper GEMMs (an H200's matmuls): counted as idle before (issue 31)
    assert kind_of("nvjet_tst_128x256_64x4_2x1_v_bz_coopB_TNT", set()) == "matmul"


def test_steady_tokens_per_second_leave_out_the_warm_up_and_the_profiled_steps():
    from tunegate.minirun.session import steady_steps
    from tunegate.minirun.steps import StepLog

    steps = [StepLog(step=n, loss=1.0, grad_norm=1.0, tokens=100, seconds=1.0) for n in range(1, 6)]
    assert [s.step for s in steady_steps(steps)] == [n for n in range(2 + PROFILED_STEPS, 6)]
    assert [s.step for s in steady_steps(steps[:3])] == [2, 3]  # none unprofiled: all after the warm-up


def test_shares_leave_the_unaccounted_wall_time_as_idle():
    split = shares({"matmul": 500.0, "attention": 100.0, "optimizer": 100.0, "data": 0.0, "other": 100.0}, 1000.0)
    assert split == {"matmul": 0.5, "attention": 0.1, "optimizer": 0.1, "data": 0.0, "other": 0.1, "idle": 0.2}


def test_every_measured_key_reaches_the_advisors_payload(good, tmp_path):
    # today's bug: four of the six allowed keys never matched what the mini-run records
    from tunegate.advisor.llm_client import _MINIRUN_KEYS, build_payload
    from tunegate.estimate.run import estimate_run

    _, ctx = good
    spec = load_spec("good")
    payload = build_payload(spec, estimate_run(spec, ctx.facts).summary(), ctx.facts)
    sent = payload["mini_run"]
    measured = ctx.facts.mini_run.as_measured()
    assert set(measured) <= set(_MINIRUN_KEYS)
    assert {k for k in measured if k != "profile"} == {k for k in sent if k != "profile"}
    assert sent["device"] == "cpu" and sent["profile"]["device"] == "cpu"
    assert set(_MINIRUN_KEYS) <= set(field_names(MiniRunFacts)) | {"train_peak_memory_gib"}


def test_a_cpu_mini_run_is_shown_as_measured_but_never_replaces_the_gpu_prior(good):
    from tunegate.estimate.run import estimate_run

    _, ctx = good
    est = estimate_run(load_spec("good"), ctx.facts)
    assert est.throughput.source == "model" and est.memory_check is None
    assert est.summary()["measured"]["device"] == "cpu"


def test_the_cpu_split_from_the_profilers_raw_records_equals_the_one_from_its_events():
    # cpu_busy_us nests ops as torch's events() does, ~10x faster; the same totals per kind,
    # the tunegate ranges (data, optimizer) included.
    import torch

    from tunegate.minirun.profile_split import StepProfiler, busy_us, cpu_busy_us, data_range, optimizer_range
    from tunegate.training.device import RunPlace

    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    profiler = StepProfiler(RunPlace("cpu", "fp32", "sdpa"))
    for number in range(1, PROFILED_STEPS + 2):
        with profiler.step(number):
            with data_range():
                x = torch.randn(16, 32).clone()
            loss = torch.nn.functional.softmax(model(x), -1).pow(2).sum()
            loss.backward()
            with optimizer_range():
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                opt.step()
                opt.zero_grad()
    fast = cpu_busy_us(profiler.profile)
    slow = busy_us([e for p in profiler.profile for e in p.events()], on_gpu=False)
    assert all(fast[k] > 0 for k in ("matmul", "optimizer", "data", "other"))
    assert fast == pytest.approx(slow, rel=1e-9)

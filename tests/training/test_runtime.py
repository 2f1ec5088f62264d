"""Process settings the mini-run and sweep candidates make deliberately: torch's intra-op threads."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from tunegate.training.runtime import SHORT_RUN_THREADS, THREADS_ENV, set_short_run_threads  # noqa: E402


@pytest.fixture
def restore_threads():
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def test_a_short_run_uses_one_intra_op_thread_not_one_per_core(monkeypatch, restore_threads):
    monkeypatch.delenv(THREADS_ENV, raising=False)
    torch.set_num_threads(2)
    assert set_short_run_threads() == SHORT_RUN_THREADS == 1
    assert torch.get_num_threads() == 1


def test_the_environment_overrides_the_thread_count(monkeypatch, restore_threads):
    monkeypatch.setenv(THREADS_ENV, "3")
    assert set_short_run_threads() == 3 and torch.get_num_threads() == 3
    monkeypatch.setenv(THREADS_ENV, "zero")
    assert set_short_run_threads() == 1


def test_on_cuda_the_peak_records_allocated_reserved_and_the_context(monkeypatch):
    from tunegate.training.runtime import peak_memory

    # an H200 as torch reports it: 139 GiB in all, 30 GiB held, of which the allocator reserved 28
    gib = 2**30
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda *a: (109 * gib, 139 * gib))
    monkeypatch.setattr(torch.cuda, "max_memory_allocated", lambda *a: 25 * gib)
    monkeypatch.setattr(torch.cuda, "max_memory_reserved", lambda *a: 29 * gib)
    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda *a: 28 * gib)
    peak = peak_memory("cuda")
    assert (peak["peak_memory_bytes"], peak["peak_reserved_bytes"], peak["cuda_context_bytes"]) == \
        (25 * gib, 29 * gib, 2 * gib)
    assert peak["peak_memory_source"] == "torch.cuda.max_memory_allocated"


def test_on_the_cpu_the_peak_is_the_process_peak_rss():
    from tunegate.training.runtime import peak_memory

    peak = peak_memory("cpu")
    assert peak["peak_memory_bytes"] > 0 and "peak_reserved_bytes" not in peak


def test_torch_compiles_toolchain_is_checked_per_device(monkeypatch):
    import torch.utils._triton as triton_probe

    from tunegate.training.runtime import compile_toolchain_missing

    assert compile_toolchain_missing("cpu") == ""  # this machine has gcc
    monkeypatch.setattr(triton_probe, "has_triton", lambda: False)
    assert "Triton is not installed" in compile_toolchain_missing("cuda")
    from torch._inductor import config, cpp_builder

    monkeypatch.setattr(config.cpp, "cxx", ("/nonexistent/c++",))  # a machine without a C++ compiler
    cpp_builder.cpp_compiler_search.cache_clear()
    try:
        assert compile_toolchain_missing("cpu").startswith("no C++ compiler")
    finally:
        cpp_builder.cpp_compiler_search.cache_clear()

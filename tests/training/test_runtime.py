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

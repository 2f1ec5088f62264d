"""No hub kernel is fetched or run unless the spec asks (issue 31: the H200's first step crashed on one).

The GPU path is simulated on the CPU: the device's capability is faked and transformers' kernelize
is told the model sits on CUDA, which is what it sees on a real GPU. Unpatched, that path asks the
Hub for `kernels-community/rotary` at the first `train()`, exactly as on the offline H200:
"Version 2 of 'kernels-community/rotary' is not available in the local cache".
"""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("kernels")

from tests.support.minirun import load_spec  # noqa: E402
from tunegate.fullrun.launcher import training_env  # noqa: E402
from tunegate.training.device import RunPlace  # noqa: E402
from tunegate.training.model import load_model  # noqa: E402


class _Props:
    major, minor, name, total_memory = 9, 0, "NVIDIA H200", 141 * 2**30


@pytest.fixture
def on_a_hopper_gpu(monkeypatch):
    """Where transformers' kernel mapping looks, the device is an H200 (compute capability 9.0), offline."""
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *a, **k: (9, 0))
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda *a, **k: _Props())
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("USE_HUB_KERNELS", raising=False)


@pytest.fixture
def kernelize_calls(monkeypatch):
    """Every call transformers makes into the kernels library's kernelize (each one may fetch repos)."""
    from transformers.integrations import hub_kernels

    calls = []
    real = hub_kernels._kernels_kernelize
    monkeypatch.setattr(hub_kernels, "_kernels_kernelize", lambda *a, **k: (calls.append(k), real(*a, **k))[1])
    return calls


def _loaded(tiny_cache, **overrides):
    spec = load_spec("good", **overrides)
    model = load_model(str(tiny_cache), spec, RunPlace("cpu", "fp32", "sdpa"))
    model._kernels_device = "cuda"  # where kernelize looks: the GPU the model would sit on
    return model


def test_training_on_a_gpu_fetches_no_hub_kernel(tiny_cache, on_a_hopper_gpu, kernelize_calls):
    model = _loaded(tiny_cache)
    model.eval()
    model.train()  # the H200 crashed here: "kernels-community/rotary ... not available in the local cache"
    assert kernelize_calls == []
    assert model.use_kernels is False


def test_a_spec_that_opts_in_lets_transformers_kernelize(tiny_cache, on_a_hopper_gpu, kernelize_calls):
    model = _loaded(tiny_cache, **{"model.hub_kernels": True})
    assert kernelize_calls, "use_kernels=True must reach transformers' kernelize"
    assert model.use_kernels is True


def test_the_launched_run_has_hub_kernels_off_unless_the_spec_asks(monkeypatch):
    monkeypatch.delenv("USE_HUB_KERNELS", raising=False)
    assert training_env(load_spec("good"))["USE_HUB_KERNELS"] == "NO"
    assert "USE_HUB_KERNELS" not in training_env(load_spec("good", **{"model.hub_kernels": True}))


def test_an_environment_that_already_refuses_hub_kernels_is_kept(monkeypatch):
    monkeypatch.setenv("USE_HUB_KERNELS", "NO")
    assert training_env(load_spec("good", **{"model.hub_kernels": True}))["USE_HUB_KERNELS"] == "NO"

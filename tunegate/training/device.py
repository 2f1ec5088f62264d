"""Where a training step computes: the device, and the precision and attention fitted to it.

The mini-run and the full run pick their place the same way, so a finding about the mini-run's
precision or attention speaks for the full run too.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tunegate.report import FindingCollector
from tunegate.spec.checkpoint import config_of, read_config
from tunegate.spec.model import Spec
from tunegate.spec.model_classes import AttentionSupport, attention_support, effective_attention

DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}


@dataclass(frozen=True)
class RunPlace:
    """Where and how the mini-run computes."""

    device: str  # cuda | mps | cpu (the full run passes its process's cuda:<local rank>)
    precision: str  # bf16 | fp16 | fp32, after fitting the spec's to the device
    attention: str

    @property
    def dtype(self) -> Any:
        import torch

        return getattr(torch, DTYPES[self.precision])


def available_devices() -> list[str]:
    import torch

    found = ["cuda"] if torch.cuda.is_available() else []
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        found.append("mps")
    return found + ["cpu"]


def choose_place(spec: Spec, out: FindingCollector) -> RunPlace | None:
    """Pick the device (cuda, then mps, then cpu, unless the spec names one) and fit precision and
    attention to it, saying so in a finding whenever the spec's choice cannot be kept."""
    wanted = spec.gate.mini_run.device
    devices = available_devices()
    if wanted != "auto" and wanted not in devices:
        out.add("TG528", "error", f"gate.mini_run.device is {wanted!r} but this machine has only "
                f"{', '.join(devices)}", "Set gate.mini_run.device: auto, or run on a machine with that device.",
                key="gate.mini_run.device")
        return None
    device = devices[0] if wanted == "auto" else wanted
    precision = _fit_precision(spec.training.precision, device, out)
    attention = supported_attention(spec, device)
    if spec.training.attention == "flash_attention_2" and attention != "flash_attention_2" \
            and not _flash_attention_ready(device):
        out.add("TG514", "warning", f"attention flash_attention_2 cannot run on {device} here (it needs CUDA "
                f"and the flash-attn package); the mini-run uses {attention}", "Install flash-attn on the GPU "
                f"machine; {attention} gives the same results, so the mini-run's checks still hold.",
                key="training.attention")
    if device == "cpu":
        out.add("TG515", "info", f"the mini-run runs on the CPU in {precision}"
                f"{' (autocast)' if precision != 'fp32' else ''}: its checks hold, but its speed and memory "
                "are not a GPU's", "Run it on a GPU machine (gate.mini_run.device: cuda) to measure "
                "throughput and peak memory for the estimate.", key="gate.mini_run.device")
    return RunPlace(device, precision, attention)


def supported_precision(precision: str, device: str) -> str:
    """`precision`, or fp16 where the device has no bf16 (GPUs before Ampere, MPS before macOS 14)."""
    import torch

    # including_emulation=False: torch's default counts a T4's or V100's emulated bf16 (it creates a
    # bf16 tensor), which runs every matmul many times slower and is no bf16 support (issue 31).
    if device.startswith("cuda") and precision == "bf16" and not torch.cuda.is_bf16_supported(including_emulation=False):
        return "fp16"
    if device == "mps" and precision == "bf16" and not _mps_bf16():
        return "fp16"
    return precision


def supported_attention(spec: Spec, device: str) -> str:
    """The spec's attention where the device and the installed model class run it; else what
    transformers' own default falls back to (sdpa, else eager: Gemma-2 refuses sdpa). Never a kernel
    transformers would download from the Hub (gpt_oss swaps flash_attention_2 for one) unless the
    spec allows hub kernels. The gate refuses a kernel the class refuses when the spec names it (TG417)."""
    support = class_support(spec)
    kernel = effective_attention(spec.training.attention, support, explicit=False, hub_kernels=spec.model.hub_kernels)
    if kernel == "flash_attention_2" and not _flash_attention_ready(device):  # no CUDA or no flash-attn package
        kernel = effective_attention("sdpa", support, explicit=False)
    return kernel


def class_support(spec: Spec) -> AttentionSupport | None:
    """What model.id's class accepts, from its config.json on this disk or in the Hugging Face cache."""
    found = config_of(spec.model.id, None)
    config = found[1] if found is not None else _cached_config(spec)
    model_type = config.get("model_type") if config else None
    return attention_support(model_type) if isinstance(model_type, str) else None


def _cached_config(spec: Spec) -> dict[str, Any] | None:
    try:
        from huggingface_hub import try_to_load_from_cache

        cached = try_to_load_from_cache(spec.model.id, "config.json", revision=spec.model.revision)
        return read_config(Path(cached)) if isinstance(cached, str) else None
    except Exception:  # noqa: BLE001  (not a repo id, not cached, unreadable: the load itself decides)
        return None


def _fit_precision(precision: str, device: str, out: FindingCollector) -> str:
    fitted = supported_precision(precision, device)
    if fitted != precision:
        out.add("TG513", "warning", f"training.precision {precision} is not supported on this {device}; "
                f"the mini-run uses {fitted}", "Use a GPU with bf16 (Ampere or newer) for the full run, "
                "or set training.precision to what it supports.", key="training.precision")
    return fitted


def _mps_bf16() -> bool:
    import torch

    try:  # bf16 on MPS needs macOS 14+; asking for it is the reliable test
        (torch.ones(2, 2, dtype=torch.bfloat16, device="mps") @ torch.ones(2, 2, dtype=torch.bfloat16, device="mps"))
        return True
    except (RuntimeError, TypeError):
        return False


def _flash_attention_ready(device: str) -> bool:
    import importlib.util

    return device.startswith("cuda") and importlib.util.find_spec("flash_attn") is not None

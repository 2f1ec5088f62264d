"""The GPU catalog: every GPU the issue lists, cited; ambiguous names an error; custom hardware."""
from __future__ import annotations

import pytest

from tests.support.paths import DATA
from tunegate.spec import gpus
from tunegate.spec.check import read_spec

SPECS = DATA / "spec"
# Issue #13's list: A10, A10G, A40, A30, L4, L40, L40S, RTX A6000, RTX 6000 Ada, RTX 4090/5090,
# V100 16/32, A100 40/80 (SXM/PCIe), H100 SXM/PCIe/NVL, H20, H200, B200, GB200, MI250X, MI300X, MI325X.
LISTED = ["A10", "A10G", "A40", "A30", "L4", "L40", "L40S", "RTX-A6000", "RTX-6000-Ada", "RTX-4090",
          "RTX-5090", "V100-16GB", "V100-32GB", "A100-40GB", "A100-40GB-PCIe", "A100-80GB", "A100-80GB-PCIe",
          "H100-SXM", "H100-PCIe", "H100-NVL", "H20", "H200", "B200", "GB200", "MI250X", "MI300X", "MI325X"]


@pytest.mark.parametrize("name", LISTED)
def test_every_listed_gpu_is_in_the_catalog_with_its_datasheet(name):
    gpu = gpus.lookup(name)
    assert gpu is not None and gpu.name == name
    assert "datasheet" in gpu.source or "whitepaper" in gpu.source or "brief" in gpu.source \
        or "documentation" in gpu.source
    # dense peak below the 2:4-sparse headline: a bf16 figure never exceeds 2.6 PFLOP/s on one device
    assert gpu.peak_tflops("bf16") < 2600 and gpu.memory_gib > 10


@pytest.mark.parametrize("name, choices", [("A100", 4), ("V100", 2), ("H100", 3), ("rtx 6000", 2)])
def test_an_ambiguous_name_is_never_silently_resolved(name, choices):
    assert gpus.lookup(name) is None
    assert len(gpus.ambiguous(name)) == choices


def test_an_ambiguous_gpu_in_a_spec_is_an_error_listing_the_choices():
    result, _ = read_spec(SPECS / "ambiguous_gpu.yaml")
    finding = next(f for f in result.findings if f.code == "TG117")
    assert finding.severity == "error" and finding.key == "hardware.gpu" and finding.line == 5
    for choice in ("A100-40GB", "A100-40GB-PCIe", "A100-80GB", "A100-80GB-PCIe"):
        assert choice in finding.hint


def test_cuda_device_names_map_to_their_catalog_entry():
    assert gpus.lookup("NVIDIA A100-SXM4-40GB").name == "A100-40GB"
    assert gpus.lookup("NVIDIA A100 80GB PCIe").name == "A100-80GB-PCIe"
    assert gpus.lookup("NVIDIA H100 80GB HBM3").name == "H100-SXM"
    assert gpus.lookup("NVIDIA H100 NVL").name == "H100-NVL"
    assert gpus.lookup("NVIDIA L40S").name == "L40S" and gpus.lookup("NVIDIA L40").name == "L40"
    assert gpus.lookup("NVIDIA A10G").name == "A10G" and gpus.lookup("NVIDIA A10").name == "A10"
    assert gpus.lookup("AMD Instinct MI300X").name == "MI300X"


def test_custom_hardware_is_estimated_with_its_own_figures_and_said_so():
    result, spec = read_spec(SPECS / "custom_gpu.yaml")
    assert result.status == "passed", result.findings
    assert {f.code: f.severity for f in result.findings} == {"TG119": "info"}
    gpu = gpus.for_hardware(spec.hardware)
    assert (gpu.name, gpu.memory_gib, gpu.peak_tflops("bf16"), gpu.bandwidth_gbs) == ("Gaudi3-like", 120, 1835, 3700)
    assert gpu.peak_tflops("fp16") == 1835  # fp16 defaults to the bf16 figure


def test_custom_figures_under_a_catalog_name_are_an_error():
    result, _ = read_spec(SPECS / "custom_shadows_catalog.yaml")
    assert {f.code: f.severity for f in result.findings} == {"TG118": "error"}

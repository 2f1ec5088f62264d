"""The GPU catalog: what each accelerator can hold and do, from the vendors' datasheets.

Peak figures are DENSE tensor-core throughput (NVIDIA's datasheets headline the 2:4-sparse number,
twice as large, which no fine-tuning run reaches). Memory is what the device reports to CUDA,
in GiB (2**30 bytes), which is what the allocator can actually hand out: where PyTorch's OOM
message ("GPU 0 has a total capacity of X GiB") is widely quoted we use its X, otherwise the
marketed size less the ECC/driver reserve.
"""
from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class GPU(BaseModel):
    """One accelerator model."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    memory_gib: float
    bf16_tflops: float | None  # None: no bf16 support at all
    fp16_tflops: float
    fp32_tflops: float         # plain FP32 (not TF32), used for fp32 training
    bandwidth_gbs: float
    flash_attention: bool      # FlashAttention-2 needs Ampere (sm_80) or newer
    compute_capability: str

    @property
    def supports_bf16(self) -> bool:
        return self.bf16_tflops is not None

    def peak_tflops(self, precision: str) -> float:
        if precision == "bf16":
            return self.bf16_tflops or self.fp16_tflops
        if precision == "fp16":
            return self.fp16_tflops
        return self.fp32_tflops


def _gpu(name: str, mem: float, bf16: float | None, fp16: float, fp32: float, bw: float,
         flash: bool, cc: str) -> GPU:
    return GPU(name=name, memory_gib=mem, bf16_tflops=bf16, fp16_tflops=fp16, fp32_tflops=fp32,
               bandwidth_gbs=bw, flash_attention=flash, compute_capability=cc)


CATALOG: dict[str, GPU] = {g.name: g for g in [
    # NVIDIA A100 Tensor Core GPU datasheet (2021): BF16/FP16 312 TFLOPS dense, FP32 19.5,
    # 1,555 GB/s (40GB HBM2) and 2,039 GB/s (80GB HBM2e, SXM). CUDA reports 39.49 and 79.15 GiB.
    _gpu("A100-40GB", 39.49, 312.0, 312.0, 19.5, 1555.0, True, "8.0"),
    _gpu("A100-80GB", 79.15, 312.0, 312.0, 19.5, 2039.0, True, "8.0"),
    # NVIDIA H100 Tensor Core GPU datasheet (2023): SXM BF16 989.5 dense (1,979 sparse),
    # FP32 67, 3.35 TB/s; PCIe BF16 756 dense, FP32 51, 2.0 TB/s. Both 80 GB; CUDA reports 79.19 GiB.
    _gpu("H100-SXM", 79.19, 989.5, 989.5, 67.0, 3350.0, True, "9.0"),
    _gpu("H100-PCIe", 79.19, 756.0, 756.0, 51.0, 2000.0, True, "9.0"),
    # NVIDIA H200 datasheet (2024): same compute as H100 SXM, 141 GB HBM3e at 4.8 TB/s;
    # CUDA reports 139.8 GiB of it.
    _gpu("H200", 139.8, 989.5, 989.5, 67.0, 4800.0, True, "9.0"),
    # NVIDIA L4 datasheet (2023): BF16 121 dense (242 sparse), FP32 30.3, 24 GB GDDR6, 300 GB/s.
    _gpu("L4", 22.5, 121.0, 121.0, 30.3, 300.0, True, "8.9"),
    # NVIDIA L40S datasheet (2023): BF16 362 dense (733 sparse), FP32 91.6, 48 GB GDDR6, 864 GB/s.
    _gpu("L40S", 44.5, 362.0, 362.0, 91.6, 864.0, True, "8.9"),
    # NVIDIA A10 datasheet: BF16 125 dense, FP32 31.2, 24 GB, 600 GB/s. AWS publishes no
    # datasheet for its A10G variant; its clocks give about 70 dense BF16 TFLOPS (EC2 G5 docs).
    _gpu("A10G", 22.0, 70.0, 70.0, 31.2, 600.0, True, "8.6"),
    # NVIDIA Ada GPU architecture whitepaper, RTX 4090: FP16/BF16 tensor with FP32 accumulate
    # 165.2 dense, FP32 82.6, 24 GB GDDR6X, 1,008 GB/s.
    _gpu("RTX-4090", 24.0, 165.2, 165.2, 82.6, 1008.0, True, "8.9"),
    # NVIDIA Ampere GA102 whitepaper, RTX 3090: FP16/BF16 tensor with FP32 accumulate 71 dense,
    # FP32 35.6, 24 GB GDDR6X, 936 GB/s.
    _gpu("RTX-3090", 24.0, 71.0, 71.0, 35.6, 936.0, True, "8.6"),
    # NVIDIA V100 datasheet: FP16 tensor 125 (SXM2), FP32 15.7, 900 GB/s; Volta has no BF16 and
    # FlashAttention-2 does not support it.
    _gpu("V100-16GB", 16.0, None, 125.0, 15.7, 900.0, False, "7.0"),
    _gpu("V100-32GB", 32.0, None, 125.0, 15.7, 900.0, False, "7.0"),
    # NVIDIA T4 datasheet: FP16 tensor 65, FP32 8.1, 16 GB GDDR6, 320 GB/s; Turing: no BF16,
    # no FlashAttention-2.
    _gpu("T4", 15.0, None, 65.0, 8.1, 320.0, False, "7.5"),
]}

# Spellings users write, mapped to catalog names.
ALIASES = {
    "A100": "A100-80GB", "A100-80G": "A100-80GB", "A100-80": "A100-80GB", "A100-40": "A100-40GB",
    "NVIDIA A100 80GB": "A100-80GB", "NVIDIA A100 40GB": "A100-40GB", "H100": "H100-SXM",
    "V100": "V100-32GB", "RTX4090": "RTX-4090", "4090": "RTX-4090", "RTX3090": "RTX-3090",
    "3090": "RTX-3090",
}


# Substrings of CUDA device names (torch.cuda.get_device_name), most specific first.
_DEVICE_NAMES = [("H200", "H200"), ("H100 PCIE", "H100-PCIe"), ("H100", "H100-SXM"),
                 ("A100-SXM4-40GB", "A100-40GB"), ("A100-PCIE-40GB", "A100-40GB"), ("A100", "A100-80GB"),
                 ("L40S", "L40S"), ("L4", "L4"), ("A10G", "A10G"), ("4090", "RTX-4090"), ("3090", "RTX-3090"),
                 ("V100-SXM2-16GB", "V100-16GB"), ("V100-PCIE-16GB", "V100-16GB"), ("V100", "V100-32GB"),
                 ("T4", "T4")]


def from_device_name(device_name: str) -> GPU | None:
    """The catalog entry for a CUDA device name such as 'NVIDIA A100-SXM4-80GB', or None."""
    upper = device_name.upper()
    for needle, key in _DEVICE_NAMES:
        if needle in upper:
            return CATALOG[key]
    return None


def lookup(name: str) -> GPU | None:
    """Find a GPU by catalog name or common alias, ignoring case, spaces and underscores."""
    def norm(s: str) -> str:
        return s.upper().replace(" ", "-").replace("_", "-")
    wanted = norm(name)
    for key, gpu in CATALOG.items():
        if norm(key) == wanted:
            return gpu
    for alias, key in ALIASES.items():
        if norm(alias) == wanted:
            return CATALOG[key]
    return from_device_name(name) if name.upper().startswith(("NVIDIA", "TESLA")) else None

"""The GPU catalog: what each accelerator can hold and do, from the vendors' datasheets.

    gpu = lookup("H100-SXM")           # None for an unknown or ambiguous name
    ambiguous("A100")                  # ['A100-40GB', 'A100-40GB-PCIe', 'A100-80GB', 'A100-80GB-PCIe']
    gpu = for_hardware(spec.hardware)  # the catalog entry, or the spec's `hardware.custom`

Peak figures are DENSE tensor-core throughput for 16-bit inputs with fp32 accumulation, which is
what PyTorch's bf16/fp16 matmuls use (NVIDIA's datasheets headline the 2:4-sparse number, twice
as large, which no fine-tuning run reaches; GeForce cards run fp32 accumulation at half their
headline fp16 rate). `fp32_tflops` is plain FP32 (not TF32), used for fp32 training. Memory is
what the device reports to CUDA/ROCm, in GiB (2**30 bytes), which is what the allocator can hand
out: where PyTorch's OOM message ("GPU 0 has a total capacity of X GiB") is widely quoted we use
its lowest X, otherwise the marketed size less the ECC/driver reserve. An AMD MI250X is two GCDs
that PyTorch sees as two devices: its entry is one GCD.
"""
# Annotations are real types here, not `from __future__ import annotations` strings: pydantic
# would compile and evaluate each field's type from its text when the models are built, at every
# start-up (~2 % of a rejection's instructions over the report, facts and spec models; issue 15).

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

Family = Literal["volta", "turing", "ampere", "ada", "hopper", "blackwell", "cdna2", "cdna3", "custom"]


class GPU(BaseModel):
    """One accelerator model."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    memory_gib: float
    bf16_tflops: float | None  # None: no bf16 support at all
    fp16_tflops: float
    fp32_tflops: float         # plain FP32 (not TF32), used for fp32 training
    bandwidth_gbs: float
    flash_attention: bool      # FlashAttention-2 needs Ampere (sm_80) or newer, or ROCm CDNA2/3
    compute_capability: str    # sm version for NVIDIA, gfx target for AMD
    family: Family = "ampere"
    source: str = ""           # the datasheet the figures come from

    @property
    def supports_bf16(self) -> bool:
        return self.bf16_tflops is not None

    def peak_tflops(self, precision: str) -> float:
        if precision == "bf16":
            return self.bf16_tflops or self.fp16_tflops
        if precision == "fp16":
            return self.fp16_tflops
        return self.fp32_tflops


def _gpu(name: str, mem: float, bf16: float | None, fp16: float, fp32: float, bw: float, flash: bool,
         cc: str, family: Family, source: str) -> GPU:
    return GPU(name=name, memory_gib=mem, bf16_tflops=bf16, fp16_tflops=fp16, fp32_tflops=fp32,
               bandwidth_gbs=bw, flash_attention=flash, compute_capability=cc, family=family, source=source)


_A100 = "NVIDIA A100 Tensor Core GPU datasheet (2021)"
_H100 = "NVIDIA H100 Tensor Core GPU datasheet (2023)"
CATALOG: dict[str, GPU] = {g.name: g for g in [
    # A100: BF16/FP16 312 TFLOPS dense (624 sparse), FP32 19.5; 40GB HBM2 1,555 GB/s; 80GB HBM2e
    # 2,039 GB/s (SXM4), 1,935 GB/s (PCIe). CUDA reports 39.39-39.59 and 79.14-79.25 GiB.
    _gpu("A100-40GB", 39.39, 312.0, 312.0, 19.5, 1555.0, True, "8.0", "ampere", _A100 + ", SXM4"),
    _gpu("A100-40GB-PCIe", 39.39, 312.0, 312.0, 19.5, 1555.0, True, "8.0", "ampere", _A100 + ", PCIe"),
    _gpu("A100-80GB", 79.14, 312.0, 312.0, 19.5, 2039.0, True, "8.0", "ampere", _A100 + ", SXM4"),
    _gpu("A100-80GB-PCIe", 79.14, 312.0, 312.0, 19.5, 1935.0, True, "8.0", "ampere", _A100 + ", PCIe"),
    # A30 datasheet: BF16 165 dense (330 sparse), FP32 10.3, 24 GB HBM2, 933 GB/s; CUDA 23.53 GiB.
    _gpu("A30", 23.53, 165.0, 165.0, 10.3, 933.0, True, "8.0", "ampere", "NVIDIA A30 datasheet (2021)"),
    # A10 datasheet: BF16 125 dense (250 sparse), FP32 31.2, 24 GB GDDR6, 600 GB/s; CUDA 22.19 GiB.
    _gpu("A10", 22.19, 125.0, 125.0, 31.2, 600.0, True, "8.6", "ampere", "NVIDIA A10 datasheet (2021)"),
    # AWS publishes no datasheet for its A10G: the same GA102 and 24 GB at lower clocks; about
    # 70 dense BF16 TFLOPS (EC2 G5 documentation's 31.2 FP32 / 250 sparse INT8-derived figures).
    _gpu("A10G", 22.19, 70.0, 70.0, 31.2, 600.0, True, "8.6", "ampere", "AWS EC2 G5 documentation"),
    # A40 datasheet: BF16 149.7 dense (299.3 sparse), FP32 37.4, 48 GB GDDR6 (ECC), 696 GB/s.
    _gpu("A40", 44.35, 149.7, 149.7, 37.4, 696.0, True, "8.6", "ampere", "NVIDIA A40 datasheet (2021)"),
    # RTX A6000 datasheet: FP16/BF16 tensor 154.8 dense (309.7 sparse), FP32 38.7, 48 GB, 768 GB/s.
    _gpu("RTX-A6000", 47.54, 154.8, 154.8, 38.7, 768.0, True, "8.6", "ampere", "NVIDIA RTX A6000 datasheet (2021)"),
    # GA102 whitepaper, RTX 3090: FP16/BF16 tensor with FP32 accumulate 71 dense, FP32 35.6, 936 GB/s.
    _gpu("RTX-3090", 23.69, 71.0, 71.0, 35.6, 936.0, True, "8.6", "ampere", "NVIDIA Ampere GA102 whitepaper"),
    # L4 datasheet: BF16 121 dense (242 sparse), FP32 30.3, 24 GB GDDR6, 300 GB/s.
    _gpu("L4", 22.03, 121.0, 121.0, 30.3, 300.0, True, "8.9", "ada", "NVIDIA L4 datasheet (2023)"),
    # L40 datasheet: BF16 181 dense (362 sparse), FP32 90.5, 48 GB GDDR6, 864 GB/s; CUDA 44.40 GiB.
    _gpu("L40", 44.40, 181.0, 181.0, 90.5, 864.0, True, "8.9", "ada", "NVIDIA L40 datasheet (2022)"),
    # L40S datasheet: BF16 362 dense (733 sparse), FP32 91.6, 48 GB GDDR6, 864 GB/s.
    _gpu("L40S", 44.40, 362.0, 362.0, 91.6, 864.0, True, "8.9", "ada", "NVIDIA L40S datasheet (2023)"),
    # Ada whitepaper, RTX 6000 Ada: FP16/BF16 tensor with FP32 accumulate 364.2 dense, FP32 91.1,
    # 48 GB GDDR6 (ECC), 960 GB/s.
    _gpu("RTX-6000-Ada", 47.50, 364.2, 364.2, 91.1, 960.0, True, "8.9", "ada",
         "NVIDIA Ada GPU architecture whitepaper"),
    # Ada whitepaper, RTX 4090: FP16/BF16 tensor with FP32 accumulate 165.2 dense, FP32 82.6, 1,008 GB/s.
    _gpu("RTX-4090", 23.55, 165.2, 165.2, 82.6, 1008.0, True, "8.9", "ada", "NVIDIA Ada GPU architecture whitepaper"),
    # RTX Blackwell whitepaper, RTX 5090: FP16/BF16 tensor with FP32 accumulate 209.5 dense,
    # FP32 104.8, 32 GB GDDR7, 1,792 GB/s.
    _gpu("RTX-5090", 31.36, 209.5, 209.5, 104.8, 1792.0, True, "12.0", "blackwell",
         "NVIDIA RTX Blackwell GPU architecture whitepaper"),
    # H100: SXM BF16 989.4 dense (1,979 sparse), FP32 67, 80 GB at 3.35 TB/s; PCIe 756 dense,
    # FP32 51, 80 GB at 2.0 TB/s; NVL 835 dense, FP32 60, 94 GB at 3.9 TB/s.
    _gpu("H100-SXM", 79.11, 989.4, 989.4, 67.0, 3350.0, True, "9.0", "hopper", _H100 + ", SXM5"),
    _gpu("H100-PCIe", 79.11, 756.0, 756.0, 51.0, 2000.0, True, "9.0", "hopper", _H100 + ", PCIe"),
    _gpu("H100-NVL", 93.10, 835.0, 835.0, 60.0, 3900.0, True, "9.0", "hopper", _H100 + ", NVL"),
    # H200 datasheet (2024): H100 SXM's compute, 141 GB HBM3e at 4.8 TB/s; CUDA reports 139.8 GiB.
    _gpu("H200", 139.8, 989.4, 989.4, 67.0, 4800.0, True, "9.0", "hopper", "NVIDIA H200 datasheet (2024)"),
    # H20 (export-market Hopper) product brief: BF16 148 dense (296 sparse), FP32 44, 96 GB HBM3 at 4.0 TB/s.
    _gpu("H20", 95.0, 148.0, 148.0, 44.0, 4000.0, True, "9.0", "hopper", "NVIDIA H20 product brief (2024)"),
    # HGX B200 datasheet: FP16/BF16 tensor 2.25 PFLOPS dense (4.5 sparse) per GPU, FP32 75,
    # 180 GB HBM3e at 8 TB/s.
    _gpu("B200", 178.4, 2250.0, 2250.0, 75.0, 8000.0, True, "10.0", "blackwell", "NVIDIA HGX B200 datasheet (2024)"),
    # GB200 NVL72 datasheet: 360 PFLOPS FP16/BF16 sparse over 72 GPUs, i.e. 2.5 dense per GPU;
    # 13.4 TB HBM3e over 72 (186 GB each) at 8 TB/s.
    _gpu("GB200", 172.5, 2500.0, 2500.0, 80.0, 8000.0, True, "10.0", "blackwell",
         "NVIDIA GB200 NVL72 datasheet (2024)"),
    # V100 datasheet: FP16 tensor 125 (SXM2), FP32 15.7, HBM2 900 GB/s. Volta has no BF16 and
    # FlashAttention-2 does not support it.
    _gpu("V100-16GB", 15.77, None, 125.0, 15.7, 900.0, False, "7.0", "volta", "NVIDIA V100 datasheet (2020), SXM2"),
    _gpu("V100-32GB", 31.74, None, 125.0, 15.7, 900.0, False, "7.0", "volta", "NVIDIA V100 datasheet (2020), SXM2"),
    # T4 datasheet: FP16 tensor 65, FP32 8.1, 16 GB GDDR6, 320 GB/s; Turing: no BF16, no FlashAttention-2.
    _gpu("T4", 14.75, None, 65.0, 8.1, 320.0, False, "7.5", "turing", "NVIDIA T4 datasheet (2019)"),
    # AMD Instinct MI250X datasheet: 383 TFLOPS BF16/FP16 matrix, 47.9 FP32 vector, 128 GB HBM2e
    # at 3.2 TB/s per module of two GCDs; one GCD (one PyTorch device) is half of each.
    _gpu("MI250X", 63.98, 191.5, 191.5, 23.95, 1638.0, True, "gfx90a", "cdna2",
         "AMD Instinct MI250X datasheet (2021), per GCD"),
    # AMD Instinct MI300X datasheet: BF16/FP16 1,307.4 dense (2,614.9 sparse), FP32 163.4,
    # 192 GB HBM3 at 5.3 TB/s.
    _gpu("MI300X", 191.5, 1307.4, 1307.4, 163.4, 5300.0, True, "gfx942", "cdna3",
         "AMD Instinct MI300X datasheet (2023)"),
    # AMD Instinct MI325X datasheet: MI300X's compute, 256 GB HBM3E at 6 TB/s.
    _gpu("MI325X", 255.5, 1307.4, 1307.4, 163.4, 6000.0, True, "gfx942", "cdna3",
         "AMD Instinct MI325X datasheet (2024)"),
]}

# Spellings users write, mapped to catalog names.
ALIASES = {
    "A100-80G": "A100-80GB", "A100-80": "A100-80GB", "A100-80GB-SXM": "A100-80GB", "A100-SXM4-80GB": "A100-80GB",
    "A100-40": "A100-40GB", "A100-40GB-SXM": "A100-40GB", "A100-SXM4-40GB": "A100-40GB",
    "NVIDIA A100 80GB": "A100-80GB", "NVIDIA A100 40GB": "A100-40GB", "H100-80GB": "H100-SXM",
    "H100-SXM5": "H100-SXM", "RTX4090": "RTX-4090", "4090": "RTX-4090", "RTX5090": "RTX-5090",
    "5090": "RTX-5090", "RTX3090": "RTX-3090", "3090": "RTX-3090", "A6000": "RTX-A6000",
    "RTX-6000-ADA-GENERATION": "RTX-6000-Ada", "6000-Ada": "RTX-6000-Ada", "V100-SXM2-16GB": "V100-16GB",
    "V100-SXM2-32GB": "V100-32GB", "MI300": "MI300X", "MI325": "MI325X", "MI250": "MI250X",
}
# Names that fit several catalog entries: an error listing them, never a silent pick.
AMBIGUOUS = {
    "A100": ["A100-40GB", "A100-40GB-PCIe", "A100-80GB", "A100-80GB-PCIe"],
    "V100": ["V100-16GB", "V100-32GB"],
    "H100": ["H100-SXM", "H100-PCIe", "H100-NVL"],
    "RTX-6000": ["RTX-A6000", "RTX-6000-Ada"],
    "B100": ["B200", "GB200"],
}

# Substrings of CUDA/ROCm device names (torch.cuda.get_device_name), most specific first.
_DEVICE_NAMES = [
    ("GB200", "GB200"), ("B200", "B200"), ("H200", "H200"), ("H20", "H20"), ("H100 NVL", "H100-NVL"),
    ("H100 PCIE", "H100-PCIe"), ("H100", "H100-SXM"), ("A100-SXM4-40GB", "A100-40GB"),
    ("A100-PCIE-40GB", "A100-40GB-PCIe"), ("A100 80GB PCIE", "A100-80GB-PCIe"), ("A100", "A100-80GB"),
    ("L40S", "L40S"), ("L40", "L40"), ("L4", "L4"), ("A10G", "A10G"), ("A10", "A10"), ("A30", "A30"),
    ("A40", "A40"), ("RTX A6000", "RTX-A6000"),
    ("RTX 6000 ADA", "RTX-6000-Ada"), ("5090", "RTX-5090"), ("4090", "RTX-4090"), ("3090", "RTX-3090"),
    ("V100-SXM2-16GB", "V100-16GB"), ("V100-PCIE-16GB", "V100-16GB"), ("V100", "V100-32GB"), ("T4", "T4"),
    ("MI250X", "MI250X"), ("MI300X", "MI300X"), ("MI325X", "MI325X"),
]


def _norm(s: str) -> str:
    return s.strip().upper().replace(" ", "-").replace("_", "-")


def from_device_name(device_name: str) -> GPU | None:
    """The catalog entry for a device name such as 'NVIDIA A100-SXM4-80GB', or None."""
    upper = device_name.upper()
    for needle, key in _DEVICE_NAMES:
        if needle in upper:
            return CATALOG[key]
    return None


def ambiguous(name: str) -> list[str]:
    """The catalog entries a name could mean when it names none exactly (empty when not ambiguous)."""
    wanted = _norm(name)
    return next((choices for key, choices in AMBIGUOUS.items() if _norm(key) == wanted), [])


def lookup(name: str) -> GPU | None:
    """Find a GPU by catalog name or common alias, ignoring case, spaces and underscores.

    None for an unknown name and for an ambiguous one (see `ambiguous`).
    """
    wanted = _norm(name)
    for key, gpu in CATALOG.items():
        if _norm(key) == wanted:
            return gpu
    for alias, key in ALIASES.items():
        if _norm(alias) == wanted:
            return CATALOG[key]
    if ambiguous(name):
        return None
    return from_device_name(name) if name.upper().startswith(("NVIDIA", "TESLA", "AMD")) else None


def from_custom(name: str, custom: Any) -> GPU:
    """A GPU from the spec's `hardware.custom` (memory, TFLOP/s per dtype, bandwidth)."""
    fp16 = custom.fp16_tflops or custom.bf16_tflops or custom.fp32_tflops
    return GPU(name=name, memory_gib=custom.memory_gib, bf16_tflops=custom.bf16_tflops, fp16_tflops=fp16,
               fp32_tflops=custom.fp32_tflops, bandwidth_gbs=custom.bandwidth_gbs,
               flash_attention=custom.flash_attention, compute_capability="custom", family="custom",
               source="hardware.custom in the spec")


def for_hardware(hardware: Any) -> GPU | None:
    """The GPU a spec's `hardware` section describes: its `custom` figures, else the catalog entry."""
    if getattr(hardware, "custom", None) is not None:
        # a catalog name beside custom figures is the spec stage's TG118; never borrow its name
        return from_custom("custom" if lookup(hardware.gpu) else hardware.gpu, hardware.custom)
    return lookup(hardware.gpu)

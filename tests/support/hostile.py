"""The seed corpus of hostile inputs (issue 36): numbers, paths, names and URIs that once crashed or hung.

Each list is what a regression test walks and what the property tests (tests/spec/test_fuzz.py,
tests/cli/test_fuzz_commands.py) and benchmarks/fuzz_parsers.py draw from and mutate. A case is
here because it was measured: an OverflowError (exit 3), a hang past 150 s, an "embedded null
byte", a file overwritten.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tests.support.paths import DATA

HUGE = 10 ** 4000  # no float holds it: int too large to convert to float
# (dotted key, value): each must be TG103 at its key, never exit 3 or a hang.
NUMBERS: list[tuple[str, Any]] = [
    ("lora.r", HUGE), ("lora.alpha", HUGE), ("training.micro_batch_size", HUGE), ("training.grad_accum_steps", HUGE),
    ("training.max_steps", HUGE), ("training.max_seq_len", HUGE), ("hardware.count", HUGE),
    ("estimate.dataset_tokens", HUGE), ("training.grad_accum_steps", 2 ** 63), ("training.grad_accum_steps", 10 ** 30),
    ("gate.overlap.shingle_size", 2 ** 63), ("gate.overlap.num_perm", 1_000_000), ("gate.overlap.num_perm", 2 ** 63),
    ("training.micro_batch_size", 2 ** 63), ("training.micro_batch_size", 10 ** 30),
    ("training.micro_batch_size", 1_000_000_000), ("hardware.custom.bf16_tflops", 1e-320),
    ("hardware.custom.bandwidth_gbs", 1e-320), ("estimate.wall_clock_hours", 1e-320), ("training.epochs", 1e300),
    ("training.seed", -1), ("training.seed", 2 ** 64), ("sweep.max_evals", HUGE), ("training.adam_epsilon", 5e-324),
    ("model.params", HUGE), ("model.params", 1e6), ("model.params", 1e-320), ("model.hidden_size", 2 ** 63),
    ("model.num_layers", 10 ** 30),
]
# Names a data path may hold: a NUL, a component past 255 bytes, glob patterns, escapes, line breaks.
PATHS = ["a\0b.jsonl", "x" * 300 + ".jsonl", "a/" + "y" * 300 + "/z.jsonl", "/" * 5000, "/abs/*.jsonl", "**",
         "[", "e\x1b[31mred.jsonl", "nl\n.jsonl", "u\u2028.jsonl", "-rf", "a b.jsonl", "pct%41.jsonl", "q'\"x.jsonl",
         "~/x.jsonl", ".", "", "/proc/kmsg", "/dev/zero"]
# Folder names a tracking store may sit in (SQLAlchemy reads sqlite:/// as a URL).
STORE_NAMES = ["a b", "q'uote", 'dq"x', "back\\slash", "pct%41", "pct%", "tab\tx", "nl\nx", "u\u2028x", "-dash",
               "esc\x1b[31mred", "hash#x", "qm?x", "at@x"]
# tracking.mlflow_uri values that name no usable store: each a usage error (exit 2).
BAD_URIS = ["/tmp/mlruns-folder", "file:///tmp/mlruns", "garbage::://x", "sqlite://x", "http://", "http://h:port",
            "https://h\n", "mlruns", "C:\\mlruns"]


def custom_gpu() -> dict[str, Any]:
    return {"gpu": "mine", "count": 1,
            "custom": {"memory_gib": 80, "bf16_tflops": 300, "fp32_tflops": 20, "bandwidth_gbs": 2000}}


def spec_with(folder: Path, key: str, value: Any, name: str = "hostile.yaml") -> Path:
    """The flows' good spec (its data copied beside it) with the dotted `key` set to `value`."""
    data = yaml.safe_load((DATA / "flows" / "good.yaml").read_text())
    data.pop("sweep", None)
    if key.startswith("hardware.custom."):
        data["hardware"] = custom_gpu()
    node = data
    *parents, last = key.split(".")
    for part in parents:
        node = node.setdefault(part, {})
    node[last] = value
    for file in ("train.jsonl", "validation.jsonl"):
        if not (folder / file).exists():
            (folder / file).write_bytes((DATA / "flows" / file).read_bytes())
    (folder / name).write_text(yaml.safe_dump(data, allow_unicode=True, width=1 << 20))
    return folder / name

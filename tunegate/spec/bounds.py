"""The range of every number a spec holds: what a real run could use, and no further.

    training: {micro_batch_size: 100000}   # TG103: micro_batch_size must be at most 65536
    estimate: {wall_clock_hours: 1e-320}   # TG103: a subnormal float (0 < |x| < 2.2e-308)
    hardware: {custom: {bf16_tflops: 1e-300}}   # TG103: at least 0.001 (a GFLOP/s)

A number past any real run is a typo or an attack, and unbounded it becomes an internal error or
a hang downstream: `lora.r: 10**4000` cannot be a float (OverflowError), `gate.overlap.num_perm:
1e6` spends minutes hashing, `shingle_size: 2**63` is past a C size, a micro batch of 2**63 makes
the advisor search forever, a GPU of 1e-320 TFLOP/s divides to infinity. So each is refused at its
key (TG103, with the range) before any stage reads it. Each upper bound leaves room far above
today's largest runs; docs/checks.md (TG103) lists them.

Floats must also be normal: a subnormal (denormal) value such as 1e-320 holds a few bits of
precision, and 1 / 1e-320 is infinity. Zero stays allowed where a field allows it.
"""
# Annotations are real types here (see tunegate.spec.model).

import sys
from typing import Annotated

from pydantic import AfterValidator, Field
from pydantic_core import PydanticCustomError

# Sizes: far above every model and cluster of 2025 (hidden sizes ~25k, contexts of 10M tokens,
# clusters of 100k GPUs), still small enough that every product of them is an exact float.
MAX_RANK = 1 << 16  # lora.r: wider than any hidden size
MAX_ALPHA = 1 << 20  # lora.alpha: alpha / r stays within any sensible scale
MAX_BATCH = 1 << 16  # micro_batch_size, grad_accum_steps: sequences per device, micro batches per step
MAX_STEPS = 100_000_000  # max_steps, warmup_steps, save_steps, train_steps: 1e8 optimizer steps
MAX_EPOCHS = 10_000
MAX_SEQ_LEN = 1 << 24  # 16,777,216 tokens per sequence
MAX_GPUS = 100_000  # hardware.count: the largest clusters
MAX_PROCESSES = 1024  # full_run.num_processes per node, sweep.max_parallel
MAX_TOKENS = 10 ** 15  # estimate.dataset_tokens: 1e15, ~60x the largest pre-training corpora
MAX_HOURS, MIN_HOURS = 1_000_000, 1 / 3600  # wall_clock_hours, advised_hours: a second to over a century
MAX_SAMPLE = 100_000  # gate.mini_run.sample_size and steps: a mini-run is a sample
MAX_PERMUTATIONS = 1024  # gate.overlap.num_perm: MinHash permutations (datasketch's default is 128)
MAX_SHINGLE = 64  # gate.overlap.shingle_size: words per shingle
MAX_FINDINGS = 1_000_000  # gate.max_findings_per_code
MAX_EVALS = 10_000  # sweep.max_evals
MAX_SEED = (1 << 32) - 1  # numpy's seed range (transformers' set_seed seeds numpy with it)
# Hardware: a GPU's figures (an H200 has 141 GiB, ~990 bf16 TFLOP/s, 4,800 GB/s). Lower bounds too:
# 1e-300 TFLOP/s is a normal float, yet its products with the run's sizes underflow to 0 and the
# hours divide by zero; no device that trains has less than a GFLOP/s or 100 MB of memory.
MAX_GPU_MEMORY_GIB, MIN_GPU_MEMORY_GIB = 100_000, 0.1
MAX_TFLOPS, MIN_TFLOPS = 1_000_000, 0.001
MAX_BANDWIDTH_GBS, MIN_BANDWIDTH_GBS = 10_000_000, 0.1
MAX_HOURLY_USD, MIN_HOURLY_USD = 100_000, 1e-6
# A model given by its size (model.params, in billions; model.hidden_size, model.num_layers): from a
# thousand parameters (a test model) to 100 trillion, ~50x the largest published; hidden sizes and
# depths far past any model (the widest have ~25k, the deepest a few hundred layers). The estimate's
# shape from a size (tunegate.estimate.sized) holds to the same limits.
MAX_PARAMS_B, MIN_PARAMS_B = 100_000, 1e-6
MAX_HIDDEN_SIZE = 1 << 18
MAX_LAYERS = 10_000
# The advisor's requests.
MAX_TIMEOUT_S = 86_400
MAX_RETRIES = 100
MAX_COMPLETION_TOKENS = 10_000_000

SUBNORMAL = "float_subnormal"  # the pydantic error type of a subnormal float (TG103 in schema_errors)


def normal(value: float) -> float:
    """`value` unless it is subnormal (0 < |value| < 2.2e-308)."""
    if value != 0 and abs(value) < sys.float_info.min:
        raise PydanticCustomError(
            SUBNORMAL, "Input should be 0 or a normal number (of size at least 2.2e-308); a subnormal float "
                       "has almost no precision and divides to infinity")
    return value


Real = Annotated[float, AfterValidator(normal)]
Positive = Annotated[float, Field(gt=0, allow_inf_nan=False), AfterValidator(normal)]
PositiveInt = Annotated[int, Field(gt=0)]

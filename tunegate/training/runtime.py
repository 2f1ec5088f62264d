"""Process-level helpers the mini-run and the full run share: quiet libraries, memory, places.

Nothing here imports torch or transformers at module level: callers reach these only once the
training stack is known to be installed.
"""
from __future__ import annotations

import contextlib
import gc
import math
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any


@contextlib.contextmanager
def quiet_transformers() -> Iterator[None]:
    """No progress bars, load chatter or deprecation notices on the user's terminal; restored afterwards.

    (PEFT 0.21 calls a method transformers 5 deprecated: the FutureWarning is for library authors.)
    """
    import warnings

    from transformers.utils import logging as hf_logging

    verbosity = hf_logging.get_verbosity()
    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            yield
    finally:
        hf_logging.set_verbosity(verbosity)
        if bars:
            hf_logging.enable_progress_bar()


THREADS_ENV = "TUNEGATE_TORCH_THREADS"
# One intra-op thread for the mini-run and each sweep candidate: their batches are a few short
# records, too little work per operator to split, and torch's default (a thread per core) is what
# several candidates, or other jobs, then fight over: measured on a loaded 2-core machine, a mini-run
# or candidate ran 7-28x slower with the default than with one thread (issue 15). torchrun makes
# the same choice for each process it starts (OMP_NUM_THREADS=1). The full run keeps torch's
# default: it owns its machine, and on GPUs the CPU threads hardly matter.
SHORT_RUN_THREADS = 1


def set_short_run_threads() -> int:
    """Set torch's intra-op threads for a mini-run or a sweep candidate; return the number set.

    TUNEGATE_TORCH_THREADS overrides (e.g. a real model mini-run on a large idle CPU machine).
    """
    import os

    import torch

    value = os.environ.get(THREADS_ENV, "").strip()
    threads = int(value) if value.isdigit() and int(value) > 0 else SHORT_RUN_THREADS
    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)
    return threads


def finite_or_text(value: float) -> float | str:
    """Stats are JSON: NaN and Inf are written as text, finite numbers rounded."""
    return round(value, 6) if math.isfinite(value) else str(value)


def is_oom(exc: BaseException) -> bool:
    import torch

    if isinstance(exc, (torch.OutOfMemoryError, MemoryError)):
        return True
    text = str(exc).lower()
    return isinstance(exc, RuntimeError) and ("out of memory" in text or "can't allocate memory" in text)


def free_memory() -> None:
    import torch

    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def scratch_dir() -> tempfile.TemporaryDirectory:
    return tempfile.TemporaryDirectory(prefix="tunegate-minirun-")


def peak_memory(device: str) -> dict[str, Any]:
    """Peak memory of the run: the CUDA allocator's high-water mark, else the process's peak RSS.

    On CUDA also what the estimate's reserve and context terms model: the allocator's peak reserved
    bytes (allocated plus its cached blocks) and the CUDA context (what the device holds beyond what
    the allocator reserved: the driver's context, cuBLAS and kernel images), read from mem_get_info.
    """
    import sys

    if device == "cuda":
        import torch

        free, total = torch.cuda.mem_get_info()
        held = total - free  # by this process (and any other on the device: a shared GPU overstates it)
        return {"peak_memory_bytes": int(torch.cuda.max_memory_allocated()),
                "peak_memory_source": "torch.cuda.max_memory_allocated",
                "peak_reserved_bytes": int(torch.cuda.max_memory_reserved()),
                "cuda_context_bytes": max(0, int(held - torch.cuda.memory_reserved()))}
    import resource

    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    rss *= 1 if sys.platform == "darwin" else 1024  # bytes on macOS, KiB on Linux
    return {"peak_memory_bytes": int(rss), "peak_memory_source": "process peak RSS (ru_maxrss)"}


def shown_path(path: Path) -> str:
    """A data path as findings show it: relative to the working folder (clickable), else absolute."""
    with contextlib.suppress(ValueError):
        return str(path.resolve().relative_to(Path.cwd()))
    return str(path)


def compile_toolchain_missing(device: str) -> str:
    """What torch.compile's inductor lacks on `device` ("" when nothing): Triton for CUDA kernels, a
    C++ compiler for CPU ones."""
    if device.startswith("cuda"):
        from torch.utils._triton import has_triton

        return "" if has_triton() else "Triton is not installed (inductor writes its CUDA kernels in Triton)"
    try:
        from torch._inductor.cpp_builder import get_cpp_compiler

        get_cpp_compiler()
    except Exception as exc:  # noqa: BLE001  (torch raises its own error types for a missing compiler)
        return f"no C++ compiler ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})"
    return ""

"""Stage 4, the mini-run: real LoRA steps on a sample, exercising the full run's whole lifecycle.

Run: `tunegate check examples/quickstart.yaml --mini-run`

Load model and tokenizer as the full run will, tokenise and audit both splits with the chat
template, train a handful of AdamW steps on `gate.mini_run.sample_size` records with a health
check on every step, evaluate once, save the adapter and tokenizer, reload them into a fresh base
model and compare. Everything it measures (load and step time, tokens/s, peak memory, every
step's loss and gradient norm) goes into the stage's stats; real token counts go to
`ctx.facts["tokens"]` and the measurements to `ctx.facts["mini_run"]`.
"""
from __future__ import annotations

import contextlib
import gc
import importlib.util
import math
import random
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tunegate.gate import GateContext
from tunegate.report import FindingCollector, StageResult

STAGE = "mini-run"
STACK = ("torch", "transformers", "peft")


def minirun_stage(ctx: GateContext) -> StageResult:
    """Run the mini-run for the context's spec and data; every problem is a finding."""
    if ctx.spec is None:
        return StageResult.skipped(STAGE, "no spec: the mini-run needs the model, LoRA and training settings")
    start = time.perf_counter()
    out = FindingCollector(STAGE, ctx.cap)
    stats: dict[str, Any] = {}
    missing = [name for name in STACK if importlib.util.find_spec(name) is None]
    if missing:
        out.add("TG527", "error", f"the mini-run needs {', '.join(missing)}, which is not installed",
                "Install the training stack: pip install 'tunegate[train]'.")
        return out.result(time.perf_counter() - start, stats)
    stats["imports_s"] = _import_stack()
    from tunegate.minirun_session import MiniRun

    with _quiet_transformers():
        MiniRun(ctx, out, stats).run()
    stats["total_s"] = round(time.perf_counter() - start, 3)
    return out.result(time.perf_counter() - start, stats)


def _import_stack() -> float:
    """Import the training stack up front, so its cost shows as its own line in the stats."""
    start = time.perf_counter()
    import peft  # noqa: F401
    import torch  # noqa: F401
    from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: F401  (resolves the lazy modules)

    return round(time.perf_counter() - start, 3)


@contextlib.contextmanager
def _quiet_transformers() -> Iterator[None]:
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


def pick_sample(usable: list[Any], size: int, micro: int, seed: int) -> list[Any]:
    """`size` records: the `micro` longest first (the peak-memory batch runs at step 1, so an OOM
    shows at once), then a seeded random draw of the rest."""
    by_length = sorted(usable, key=lambda a: len(a.encoded.input_ids), reverse=True)
    longest, rest = by_length[:min(micro, size)], by_length[min(micro, size):]
    rest = sorted(rest, key=lambda a: a.record.index)
    random.Random(seed).shuffle(rest)
    return longest + rest[:max(0, size - len(longest))]


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
    """Peak memory of the run: the CUDA allocator's high-water mark, else the process's peak RSS."""
    import sys

    if device == "cuda":
        import torch

        return {"peak_memory_bytes": int(torch.cuda.max_memory_allocated()),
                "peak_memory_source": "torch.cuda.max_memory_allocated"}
    import resource

    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    rss *= 1 if sys.platform == "darwin" else 1024  # bytes on macOS, KiB on Linux
    return {"peak_memory_bytes": int(rss), "peak_memory_source": "process peak RSS (ru_maxrss)"}


def shown_path(path: Path) -> str:
    """A data path as findings show it: relative to the working folder (clickable), else absolute."""
    with contextlib.suppress(ValueError):
        return str(path.resolve().relative_to(Path.cwd()))
    return str(path)

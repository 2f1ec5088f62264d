"""Parameter counts from the real architecture: transformers builds the model on the meta device.

    python -m tunegate.estimate.meta_count path/to/config.json      # prints {"total_params": ...}

No weights are read and nothing is downloaded: `AutoModelForCausalLM.from_config` under
`torch.device("meta")` allocates no storage. It needs torch and transformers (a few seconds to
import), so the static gate never imports it: `tunegate estimate --meta` runs it in-process, and
the gate runs it in a child process (`count_in_subprocess`) only for an architecture the
config-only counter (`tunegate.estimate.families`) does not know, caching the answer per config.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from tunegate.user_cache import cache_root

# A cold `import torch, transformers` plus building a 70B model's skeleton takes 3-10 s.
SUBPROCESS_TIMEOUT_S = 60.0


class MetaCount(BaseModel):
    """What the meta-device model holds."""

    model_config = ConfigDict(extra="forbid")

    total_params: int
    linear_names: list[str]  # the leaf names of every nn.Linear and Conv1D (what LoRA target_modules match)
    model_class: str
    seconds: float


def meta_count(config: dict[str, Any]) -> MetaCount:
    """Build the model from `config` on the meta device and count its parameters.

    Raises:
        ImportError: torch or transformers is not installed.
        ValueError: transformers does not know the config's model_type (or cannot build it).
    """
    start = time.perf_counter()
    import torch
    import transformers
    from transformers.pytorch_utils import Conv1D

    try:
        hf_config = transformers.AutoConfig.for_model(**config)
        with torch.device("meta"):
            model = transformers.AutoModelForCausalLM.from_config(hf_config)
    except (KeyError, ValueError, TypeError) as exc:
        raise ValueError(f"transformers cannot build this config: {exc}") from None
    # GPT-2's projections are transformers' Conv1D, which PEFT adapts like a linear layer
    linear = (torch.nn.Linear, Conv1D)
    names = sorted({name.rsplit(".", 1)[-1] for name, module in model.named_modules()
                    if isinstance(module, linear)})
    # parameters() yields a tied weight once, as the checkpoint stores it once
    total = sum(p.numel() for p in model.parameters())
    return MetaCount(total_params=total, linear_names=names, model_class=type(model).__name__,
                     seconds=round(time.perf_counter() - start, 3))


def transformers_installed() -> bool:
    """Whether the meta-device path can run here (checked without importing anything)."""
    return all(importlib.util.find_spec(m) is not None for m in ("torch", "transformers"))


def _cache_file(config: dict[str, Any]) -> Path:
    root = cache_root()
    digest = hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode()).hexdigest()[:32]
    return root / "param-counts" / f"{digest}.json"


def count_in_subprocess(config: dict[str, Any]) -> MetaCount | None:
    """The meta-device count from a child process (torch never enters this one), cached per config.

    None when transformers is not installed, cannot build the config, or takes too long.
    """
    cached = _cache_file(config)
    if cached.is_file():
        try:
            return MetaCount.model_validate_json(cached.read_text(encoding="utf-8"))
        except ValueError:
            pass  # a truncated cache file: count again
    if not transformers_installed():
        return None
    try:
        done = subprocess.run([sys.executable, "-m", "tunegate.estimate.meta_count", "-"],
                              input=json.dumps(config), capture_output=True, text=True,
                              timeout=SUBPROCESS_TIMEOUT_S)
        found = MetaCount.model_validate_json(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 else None
    except (subprocess.TimeoutExpired, OSError, ValueError, IndexError):
        return None
    if found is not None:
        cached.parent.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(found.model_dump_json(), encoding="utf-8")
        tmp.replace(cached)
    return found


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m tunegate.estimate.meta_count CONFIG.json|-", file=sys.stderr)
        return 2
    text = sys.stdin.read() if args[0] == "-" else Path(args[0]).read_text(encoding="utf-8")
    try:
        print(meta_count(json.loads(text)).model_dump_json())
    except (ImportError, ValueError) as exc:
        print(f"cannot count on the meta device: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

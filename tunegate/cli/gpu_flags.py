"""The flags that say which run a config is for: `--from KIND`, `--gpu NAME`, `--gpus N`.

    tunegate check lora-1b.yml --gpu L4 --gpus 2
    tunegate estimate qlora.yml --gpu H100-80GB
    tunegate advise sft.yaml --from trl --gpu A10G

An axolotl or TRL config names no GPU (the GPU box is chosen at launch), and a spec's
`hardware.gpu` may be left at its default: `--gpu` and `--gpus` set `hardware.gpu` and
`hardware.count` for any spec or config, validated against the catalog (`tunegate gpus`). Given,
they replace what the file says; not given, the estimate says which GPU it assumed (TG426).
"""
from __future__ import annotations

import argparse
from typing import Any

from tunegate.errors import UsageError


def positive_int(text: str) -> int:
    """A command-line count: a whole number above 0 (argparse's error otherwise)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def add_gpu_flags(p: argparse.ArgumentParser) -> None:
    """`--gpu NAME` and `--gpus N`."""
    p.add_argument("--gpu", metavar="NAME", help="the GPU the run trains on, from `tunegate gpus` (sets "
                   "hardware.gpu; an axolotl or TRL config names none)")
    p.add_argument("--gpus", type=positive_int, metavar="N", help="how many GPUs the run trains on (sets hardware.count)")


def add_config_flags(p: argparse.ArgumentParser) -> None:
    """`--from KIND` (what the config file is) and the GPU flags."""
    from tunegate.spec import importers  # the dialects --from takes

    p.add_argument("--from", dest="kind", choices=importers.KINDS,
                   help="what the config file is (default: detected from its keys)")
    add_gpu_flags(p)


def gpu_flags(args: argparse.Namespace) -> dict[str, Any] | None:
    """The hardware `--gpu`/`--gpus` set ({"gpu": ..., "count": ...}), or None; UsageError for a GPU
    name the catalog does not know or cannot tell apart."""
    name, count = getattr(args, "gpu", None), getattr(args, "gpus", None)
    if name is None and count is None:
        return None
    from tunegate.spec import gpus  # the catalog, only for a flag that names a GPU

    hardware: dict[str, Any] = {}
    if name is not None:
        choices = gpus.ambiguous(name)
        if choices:
            raise UsageError(f"--gpu {name!r} is ambiguous: it could be {', '.join(choices)}; write one of them")
        found = gpus.lookup(name)
        if found is None:
            raise UsageError(f"--gpu {name!r} is not a GPU tunegate knows; `tunegate gpus` lists them (for another "
                             "GPU, give its figures in the spec's hardware.custom)")
        hardware["gpu"] = found.name
    if count is not None:
        hardware["count"] = count
    return hardware

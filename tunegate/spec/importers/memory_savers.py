"""Settings of an imported config that lower GPU memory in ways the estimate does not model.

Each tool applies these (a fused or cut cross-entropy that never holds the logits, low-rank or
block-wise optimizers, activations or states offloaded to the CPU, sequences split over GPUs); the
estimate models the run without them, so it may only over-count. Where it then finds the run does
not fit, that is no verdict: the estimate stage says so (TG429) and leaves the memory unjudged
rather than refuse what the tool runs. A dialect lists its keys in one table:

    memory_savers(cmap, SAVERS)          # each key set away from its default, said as `key: value (what)`
    deepspeed_offload(cmap, "deepspeed")  # a DeepSpeed config that offloads parameters or states
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tunegate.spec.importers.config_keys import as_written
from tunegate.spec.importers.config_map import ConfigMap

# A dialect's table: key -> (the value that saves nothing, what the setting does to memory)
Savers = Mapping[str, tuple[Any, str]]


def memory_savers(cmap: ConfigMap, table: Savers) -> None:
    """Note each key of `table` the config sets away from its default."""
    for key, (default, what) in table.items():
        value = cmap.source.get(key)
        if value is None or value is False or value == default or value in ("", [], {}):
            continue
        cmap.memory_savers.append(f"{key}: {as_written(value)} ({what})")


def plugin_savers(cmap: ConfigMap, table: Savers) -> None:
    """Note each plugin of `table` (its module path's tail -> (the key that turns it off, what it does))
    listed under `plugins` with its key unset: set, the key says it (`memory_savers`), or turns it off."""
    plugins = cmap.source.get("plugins")
    names = [p for p in plugins if isinstance(p, str)] if isinstance(plugins, list) else []
    for tail, (off_key, what) in table.items():
        if any(p.endswith(tail) for p in names) and cmap.source.get(off_key) is None:
            cmap.memory_savers.append(f"plugins: {tail} ({what})")


def deepspeed_offload(cmap: ConfigMap, key: str) -> None:
    """Note a DeepSpeed config (inline, or named by a file whose name says so, as the published ones do)
    that offloads parameters or optimizer states to the CPU or NVMe."""
    config = cmap.source.get(key)
    if isinstance(config, dict):
        zero = config.get("zero_optimization")
        zero = zero if isinstance(zero, dict) else {}
        offloads = [k for k in ("offload_param", "offload_optimizer")
                    if isinstance(zero.get(k), dict) and zero[k].get("device") in ("cpu", "nvme")]
    else:
        offloads = ["offload"] if isinstance(config, str) and "offload" in config.lower() else []
    if offloads:
        cmap.memory_savers.append(f"{key}: {as_written(config) if isinstance(config, str) else 'inline'} (ZeRO "
                                  "offloads parameters or optimizer states to the CPU)")


def fsdp_offload(cmap: ConfigMap, key: str) -> None:
    """Note an FSDP config (a mapping at `key`) that offloads the parameters to the CPU."""
    config = cmap.source.get(key)
    on = isinstance(config, dict) and any(config.get(k) is True for k in ("offload_params", "fsdp_offload_params"))
    if on:
        cmap.memory_savers.append(f"{key}.offload_params: true (FSDP offloads the parameters to the CPU)")

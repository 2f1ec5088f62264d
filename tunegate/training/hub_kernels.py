"""No remote code unless the spec asks: transformers' hub kernels stay off in every training process.

    AutoModelForCausalLM.from_pretrained(path, **load_options(spec))   # use_kernels=False
    env = kernels_env(spec, dict(os.environ))                          # USE_HUB_KERNELS=NO

transformers 5 defaults `use_kernels` on (its `kernels` package is a hard dependency): the load
kernelizes, and the first `train()` and `eval()` kernelize again for the new mode, fetching
`kernels-community/*` repos chosen by the model and the device (rotary, RMSNorm, MLP, flash-attn).
On an offline GPU box that is a crash at the first training step ("Version 2 of
'kernels-community/rotary' is not available in the local cache", measured on an H200, issue 31);
online it is unpinned code from the Hub run in the training process. `model.hub_kernels: true`
(TG126 warns) lets transformers do it; an environment that already says USE_HUB_KERNELS=NO wins.
"""
from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

from tunegate.spec.model import Spec

ENV = "USE_HUB_KERNELS"


def allowed(spec: Spec) -> bool:
    """Whether this run may fetch and run hub kernels."""
    return bool(spec.model.hub_kernels)


def load_options(spec: Spec) -> dict[str, Any]:
    """The from_pretrained keywords that keep kernels off unless the spec asks for them."""
    return {"use_kernels": allowed(spec)}


def kernels_env(spec: Spec, env: MutableMapping[str, str]) -> MutableMapping[str, str]:
    """`env` with USE_HUB_KERNELS=NO unless the spec opts in (a NO already there is kept)."""
    if not allowed(spec):
        env[ENV] = "NO"
    return env

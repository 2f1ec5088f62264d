"""The optimizer the full run's HF Trainer builds for `training.optimizer`, for the mini-run's steps.

    optimizer, fallback = build_optimizer(model, spec)   # fallback: why torch AdamW stands in, or ""

The mini-run steps with the same optimizer class and arguments as the full run (transformers' own
optimizer table, `transformers.trainer_optimizer`, as `Trainer.get_optimizer_cls_and_kwargs` reads
it), and the Trainer's weight-decay groups (no decay on biases and norms). So an 8-bit or paged
bitsandbytes optimizer, Adafactor or SGD first runs in the mini-run, not hours into the full run
(issue 31). Where it cannot be built here (bitsandbytes not installed on this machine, a
transformers without that table) torch's AdamW stands in and the caller says so.
"""
from __future__ import annotations

import re
from types import SimpleNamespace
from typing import Any

from tunegate.spec.model import Spec

# transformers' Trainer.get_decay_parameter_names: no weight decay on biases and norm weights
_NO_DECAY = re.compile(r"bias|layernorm|rmsnorm|(?:^|\.)norm(?:$|\.)|_norm(?:$|\.)")


def build_optimizer(model: Any, spec: Spec) -> tuple[Any, str]:
    """(the optimizer over the model's trainable parameters, why torch AdamW stood in or "")."""
    import torch

    t = spec.training
    trained = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    groups = [{"params": [p for n, p in trained if not _NO_DECAY.search(n)], "weight_decay": t.weight_decay},
              {"params": [p for n, p in trained if _NO_DECAY.search(n)], "weight_decay": 0.0}]
    groups = [g for g in groups if g["params"]]
    try:
        cls, kwargs = trainer_choice(spec, model)
    except (ImportError, ValueError, AttributeError) as exc:  # bitsandbytes not here; an older transformers
        adam = {"lr": t.learning_rate, "betas": (t.adam_beta1, t.adam_beta2), "eps": t.adam_epsilon}
        return torch.optim.AdamW(groups, **adam), str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return cls(groups, **kwargs), ""


def trainer_choice(spec: Spec, model: Any = None) -> tuple[Any, dict[str, Any]]:
    """(optimizer class, keyword arguments) as transformers' Trainer picks them for the spec.

    Raises:
        ImportError: the optimizer's package (bitsandbytes) is not installed here.
        ValueError: this transformers does not know the name.
    """
    from transformers.trainer_optimizer import _OPTIMIZER_HANDLERS, OptimizerContext

    t = spec.training
    args = SimpleNamespace(optim=t.optimizer, learning_rate=t.learning_rate, adam_beta1=t.adam_beta1,
                           adam_beta2=t.adam_beta2, adam_epsilon=t.adam_epsilon, optim_args=None)
    handler = _OPTIMIZER_HANDLERS.get(t.optimizer)
    if handler is None:
        raise ValueError(f"transformers has no optimizer named {t.optimizer!r}")
    ctx = OptimizerContext(args=args, model=model, optimizer_kwargs={"lr": t.learning_rate},
                           adam_kwargs={"betas": (t.adam_beta1, t.adam_beta2), "eps": t.adam_epsilon},
                           optim_args={})
    return handler(ctx)

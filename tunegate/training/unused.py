"""Trainable parameters a batch never reaches: read from the autograd graph of one forward pass.

    names = unused_trainable(model, batch)     # e.g. LoRA on the vision tower of a text-only run

`AutoModelForCausalLM` builds gemma3/4, llama4 and mllama as their multimodal classes, and LoRA
target names (q_proj, v_proj, all-linear) also wrap the vision tower, which text batches never run.
Under DDP with `find_unused_parameters=False` (the HF Trainer's default for tunegate's runs) those
parameters never get a gradient and the run stops at step 2: "Expected to have finished reduction
in the prior iteration" (reproduced with 2 CPU processes on gloo, issue 31). The graph is walked,
not backpropagated: every parameter a loss depends on is an AccumulateGrad leaf of it.
"""
from __future__ import annotations

from typing import Any


def unused_trainable(model: Any, batch: dict[str, Any]) -> list[str]:
    """Names of the trainable parameters the loss of `batch` does not depend on."""
    import torch

    with torch.enable_grad():
        loss = model(**batch).loss
    reached: set[int] = set()
    seen: set[Any] = set()
    stack = [loss.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        variable = getattr(node, "variable", None)  # an AccumulateGrad node: a leaf tensor
        if variable is not None:
            reached.add(id(variable))
        stack.extend(parent for parent, _ in node.next_functions)
    del loss
    return [name for name, p in model.named_parameters() if p.requires_grad and id(p) not in reached]

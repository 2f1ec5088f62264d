"""A Trainer callback that stops a run the moment its loss or gradient norm stops being finite.

    health = HealthCallback()
    trainer = Trainer(..., args=TrainingArguments(..., logging_nan_inf_filter=False, logging_steps=1),
                      callbacks=[health])
    trainer.train()
    if health.stopped: ...   # health.problems: which step, which metric, which value

The HF Trainer's default `logging_nan_inf_filter=True` replaces a NaN or Inf training loss with
the running average in its logs, so runs keep going for days on `loss 0.0, grad_norm nan`. This
callback refuses that setting and checks every logged loss, gradient norm and evaluation loss.
"""
from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel
from transformers import TrainerCallback

WATCHED = ("loss", "grad_norm", "eval_loss")


class HealthProblem(BaseModel):
    """One non-finite value seen during training."""

    step: int
    metric: str
    value: str  # "nan", "inf" or "-inf": JSON has no such numbers


class HealthCallback(TrainerCallback):
    """Stop training at the first non-finite loss, gradient norm or evaluation loss.

    The gradients are checked before every optimizer step (the step itself still runs; training
    stops right after it) (a pass over the trainable parameters'
    grads, cheap for LoRA); the loss when the Trainer logs, where a NaN anywhere in a logging
    window makes the window's mean NaN; the evaluation loss after every evaluation.
    """

    def __init__(self) -> None:
        self.problems: list[HealthProblem] = []

    @property
    def stopped(self) -> bool:
        return bool(self.problems)

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
        if getattr(args, "logging_nan_inf_filter", False):
            raise ValueError("HealthCallback needs TrainingArguments(logging_nan_inf_filter=False): with the "
                             "default True the Trainer hides NaN/Inf losses from every callback")
        return control

    def on_pre_optimizer_step(self, args: Any, state: Any, control: Any, model: Any = None,
                              **kwargs: Any) -> Any:
        if model is not None:
            norm = gradient_norm(model)
            if not math.isfinite(norm):
                self.problems.append(HealthProblem(step=state.global_step + 1, metric="grad_norm", value=str(norm)))
                control.should_training_stop = True
        return control

    def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None,
               **kwargs: Any) -> Any:
        self._check(logs or {}, state.global_step, control)
        return control

    def on_evaluate(self, args: Any, state: Any, control: Any, metrics: dict[str, Any] | None = None,
                    **kwargs: Any) -> Any:
        self._check(metrics or {}, state.global_step, control)
        return control

    def _check(self, values: dict[str, Any], step: int, control: Any) -> None:
        for metric in WATCHED:
            value = values.get(metric)
            if isinstance(value, (int, float)) and not math.isfinite(value):
                self.problems.append(HealthProblem(step=step, metric=metric, value=str(value)))
                control.should_training_stop = True


def gradient_norm(model: Any) -> float:
    """L2 norm of the gradients of the trainable parameters (0.0 when none has a gradient yet)."""
    import torch

    grads = [p.grad.detach().float().norm() for p in model.parameters() if p.requires_grad and p.grad is not None]
    return float(torch.stack(grads).norm()) if grads else 0.0

"""A Trainer callback that stops a run the moment its loss or gradient norm stops being finite.

    health = HealthCallback()
    trainer = Trainer(..., args=TrainingArguments(..., logging_nan_inf_filter=False, logging_steps=1),
                      callbacks=[health])
    trainer.train()
    if health.stopped: ...   # health.problems: which step, which metric, which value

The HF Trainer's default `logging_nan_inf_filter=True` replaces a NaN or Inf training loss with
the running average in its logs, so runs keep going for days on `loss 0.0, grad_norm nan`. This
callback refuses that setting and checks every logged loss, gradient norm and evaluation loss.
A run it stops saves no checkpoint of the diverged weights.

The full run (`tunegate.fullrun.trainer`) also turns on two options: `zero_grad_patience` stops a run whose
gradient norm is exactly 0 for that many steps in a row (a saturated network: nothing is learned
any more), and `skip_tolerance` accepts that many non-finite gradient norms in a row under fp16
loss scaling, where an overflowing step is skipped by the scaler (which halves its scale), not
applied; a scaler that keeps skipping has no scale left to lower, and the run is stopped.
"""
from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel
from transformers import TrainerCallback

WATCHED = ("loss", "grad_norm", "eval_loss")


class HealthProblem(BaseModel):
    """One unhealthy value seen during training: non-finite, or a gradient norm stuck at 0."""

    step: int
    metric: str
    value: str  # "nan", "inf" or "-inf" (JSON has no such numbers), or "0.0" for a dead gradient


class HealthCallback(TrainerCallback):
    """Stop training at the first non-finite loss, gradient norm or evaluation loss.

    The gradients are checked before every optimizer step (the step itself still runs; training
    stops right after it) (a pass over the trainable parameters'
    grads, cheap for LoRA); the loss when the Trainer logs, where a NaN anywhere in a logging
    window makes the window's mean NaN; the evaluation loss after every evaluation.
    """

    def __init__(self, *, zero_grad_patience: int | None = None, skip_tolerance: int = 0) -> None:
        """Args:
            zero_grad_patience: stop after this many steps in a row with a gradient norm of exactly 0
                (None: zero norms are not checked).
            skip_tolerance: non-finite gradient norms accepted in a row (fp16 loss scaling only).
        """
        self.problems: list[HealthProblem] = []
        self.zero_grad_patience = zero_grad_patience
        self.skip_tolerance = skip_tolerance
        self._zero_run = 0
        self._skip_run = 0

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
            self._check_gradient(gradient_norm(model), state.global_step + 1, control)
        return control

    def _check_gradient(self, norm: float, step: int, control: Any) -> None:
        self._skip_run = 0 if math.isfinite(norm) else self._skip_run + 1
        self._zero_run = self._zero_run + 1 if norm == 0.0 else 0
        if self._skip_run > self.skip_tolerance:
            self._stop(step, "grad_norm", str(norm), control)
        elif self.zero_grad_patience is not None and self._zero_run >= self.zero_grad_patience:
            self._stop(step, "grad_norm", str(norm), control)

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
        if self.stopped:  # the Trainer asks for a checkpoint at save_steps; not of diverged weights
            control.should_save = False
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
            if metric == "grad_norm" and self.skip_tolerance:  # skipped fp16 steps: judged per step above
                continue
            value = values.get(metric)
            if isinstance(value, (int, float)) and not math.isfinite(value):
                self._stop(step, metric, str(value), control)

    def _stop(self, step: int, metric: str, value: str, control: Any) -> None:
        self.problems.append(HealthProblem(step=step, metric=metric, value=value))
        control.should_training_stop = True
        control.should_save = False


def gradient_norm(model: Any) -> float:
    """L2 norm of the gradients of the trainable parameters (0.0 when none has a gradient yet)."""
    import torch

    grads = [p.grad.detach().float().norm() for p in model.parameters() if p.requires_grad and p.grad is not None]
    return float(torch.stack(grads).norm()) if grads else 0.0

"""A Trainer callback that keeps every logged step's loss, gradient norm and learning rate.

    recorder = StepRecorder(log=print, max_steps=100)
    trainer = Trainer(..., callbacks=[recorder]); trainer.train()
    recorder.steps    # [TrainStep(step=1, loss=6.64, grad_norm=0.2, learning_rate=1e-3), ...]
    recorder.evals    # [EvalPoint(step=500, val_loss=...), ...]

It also prints one short line per logged step on the main process (instead of the Trainer's
printed dicts), so a launched run's output, streamed by the launcher, shows progress.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from transformers import TrainerCallback

from tunegate.fullrun.result import EvalPoint, TrainStep


class StepRecorder(TrainerCallback):
    """Collect the Trainer's logs as `TrainStep`s and `EvalPoint`s."""

    def __init__(self, log: Callable[[str], None], max_steps: int) -> None:
        self.log = log
        self.max_steps = max_steps
        self.steps: list[TrainStep] = []
        self.evals: list[EvalPoint] = []

    def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None,
               **kwargs: Any) -> Any:
        logs = logs or {}
        if "loss" in logs:
            step = TrainStep(step=state.global_step, loss=_number(logs.get("loss")),
                             grad_norm=_number(logs.get("grad_norm")),
                             learning_rate=_number(logs.get("learning_rate")))
            self.steps.append(step)
            if state.is_world_process_zero:
                self.log(f"step {step.step}/{self.max_steps} loss {_show(step.loss)} "
                         f"grad_norm {_show(step.grad_norm)} lr {_show(step.learning_rate, '.3g')}")
        if "eval_loss" in logs:
            point = EvalPoint(step=state.global_step, val_loss=float(logs["eval_loss"]))
            self.evals.append(point)
            if state.is_world_process_zero:
                self.log(f"step {point.step}/{self.max_steps} validation loss {_show(point.val_loss)}")
        return control


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) else None


def _show(value: float | None, fmt: str = ".4f") -> str:
    if value is None:
        return "-"
    return format(value, fmt) if math.isfinite(value) else str(value)

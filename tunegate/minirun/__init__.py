"""Stage 4, the mini-run: real LoRA steps on a sample, exercising the full run's whole lifecycle.

    result, facts = run_mini_lora(spec, {"train": spec.data.train, "validation": spec.data.validation})

The steps are `session.py` (load, audit, train, evaluate, save and reload), `steps.py` (the
optimizer and evaluation steps with their health checks) and `adapter_check.py` (the reload).
"""
from __future__ import annotations

from tunegate.front_door import front_door

# Each name's module, imported on first use (tunegate.front_door).
_HOME = {"run_mini_lora": "tunegate.minirun.stage"}

__all__ = ["run_mini_lora"]
__getattr__ = front_door(__name__, _HOME)

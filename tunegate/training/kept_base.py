"""The base model a sweep candidate's mini-run loaded, kept in its process for the candidate's training.

    kept_base.allow()                 # a candidate's job (tunegate.fullrun.candidate_job), at its start
    kept_base.loaded()                # the mini-run, right after it loads the base
    kept_base.keep(key, trained)      # the mini-run, done with its model: LoRA taken off, the base kept
    base = kept_base.take(key)        # the trainer: that base, if it would load the same one; else None

A candidate's mini-run and its short training run in one process, and each loaded the base from
disk: on an H200 a 1.5B base took 16-29 s to load (issue 31), and issue 33 asks for one load per
candidate. Both hold the base's weights frozen (TG507), so the mini-run's model with its LoRA
layers taken off (PEFT's `unload`) is the base the trainer would load with the same
`from_pretrained` call (`tunegate.training.model.load_key`). Not kept: a base with anything still
trainable once LoRA is off, or one where a `lora.modules_to_save` module is not the module as
loaded (PEFT up to 0.21 unloads to the trained copy, 0.22 to the module as loaded). Only a process
that allows it keeps a base: a mini-run anywhere else (`tunegate check --mini-run`, preflight)
drops its model as before.

The random state: the trainer seeds, loads, then puts LoRA on, so a load that draws random numbers
(a weight the checkpoint lacks is initialised) moves the generator before the adapter's
initialisation. The mini-run loads right after the same seeding; its generator's state just after
the load is kept with the base and given back with it, so the trainer's adapter starts where a
fresh load would have left it: the same numbers either way.
"""
from __future__ import annotations

from typing import Any

_allowed = False
_after_load: Any = None  # the random state just after the mini-run's load, until `keep`
_kept: tuple[Any, Any, Any] | None = None  # (load key, base, random state after its load)


def allow() -> None:
    """This process is a candidate's job: its mini-run keeps the base for its training."""
    global _allowed
    _allowed = True


def loaded() -> None:
    """Called right after the mini-run's load: the random state the trainer continues from."""
    global _after_load
    if _allowed:
        _after_load = _random_state()


def keep(key: Any, trained: Any) -> None:
    """Keep the base under `trained` (a PEFT model) for `take(key)`; nothing unless allowed."""
    global _after_load, _kept
    state, _after_load = _after_load, None
    if not _allowed or state is None:
        return
    loaded_modules = _fully_trained_originals(trained)
    try:
        base = trained.unload()  # each LoRA layer replaced by the module it wrapped
    except Exception:  # noqa: BLE001  (a PEFT layer it cannot take off: the trainer loads its own)
        return
    if any(p.requires_grad for p in base.parameters()) or not loaded_modules <= {id(m) for m in base.modules()}:
        return
    _kept = (key, base, state)


def _fully_trained_originals(trained: Any) -> set[int]:
    """The modules as loaded under `lora.modules_to_save`'s wrappers: the base is kept only if
    `unload` puts each of them back (PEFT 0.22 does; up to 0.21 it put the trained copy there)."""
    from peft.utils import ModulesToSaveWrapper

    return {id(m.original_module) for m in trained.modules() if isinstance(m, ModulesToSaveWrapper)}


def take(key: Any) -> Any | None:
    """The kept base if it was loaded as `key` loads it (its random state restored), else None. Either
    way nothing stays kept: a base loaded another way would be a second copy in memory."""
    global _kept
    kept, _kept = _kept, None
    if kept is None or kept[0] != key:
        return None
    _restore(kept[2])
    return kept[1]


def _random_state() -> tuple[Any, Any]:
    import torch

    cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None
    return torch.random.get_rng_state(), cuda


def _restore(state: tuple[Any, Any]) -> None:
    import torch

    cpu, cuda = state
    torch.random.set_rng_state(cpu)
    if cuda is not None:
        torch.cuda.set_rng_state_all(cuda)

"""The gate's stages, one row each, in the order they run: the one place the stages are listed.

    from tunegate import stages
    stages.names()      # ['spec', 'dataset', 'overlap', 'estimate', 'mini-run', 'advisor']

The gate runs the rows in order, the report requires the `required` ones for an approval, the
Prefect static task and the sweep's candidate gate run the `static` ones, and the README's gate
table says what each `needs`. So a new stage is a folder with a front door
`tunegate/<folder>/stage.py` (`run_stage(ctx) -> StageResult`, see `tunegate.stage`) and one row.

A leaf of the kernel: it imports nothing (not even the gate's context, which it reads by duck
typing), so the report, the gate and the tasks can all read it without pulling in pydantic models.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

RUN_STAGE = "run_stage"  # a stage front door's entry point (tunegate.stage)


def always(ctx: Any) -> bool:
    """Applies to every run."""
    return True


def with_spec(ctx: Any) -> bool:
    """Applies when there is a valid spec (bare `check --train` data has no hyperparameters)."""
    return ctx.spec is not None


def when_mini_run_asked(ctx: Any) -> bool:
    """Applies when the caller asked for the mini-run (`--mini-run`): it needs torch and minutes."""
    return bool(ctx.mini_run)


def with_spec_when_advice_asked(ctx: Any) -> bool:
    """Applies when the caller asked for advice, on a spec to advise on."""
    return ctx.spec is not None and bool(ctx.advisor)


class StageRow(NamedTuple):
    """One stage of the gate."""

    name: str  # the stage's name in the report (StageResult.name, `check(only=...)`)
    folder: str  # its wing: tunegate/<folder>/
    required: bool  # must run and pass for `approved_for_full_run`
    static: bool  # runs in the static gate after the spec: no torch, cached on content by the flows
    needs: str  # what it needs installed or at hand, as the README's gate table says
    applies: Callable[[Any], bool] = always  # over the gate's context (tunegate.stage.GateContext)
    door: str = "stage"  # the front door's module inside the folder
    entry: str = RUN_STAGE  # the front door's function
    # reads the data files: where the data cannot be had here (an imported config's Hub dataset, a random
    # validation split), the gate skips it, and runs the stages that need no data
    reads_data: bool = False

    @property
    def front_door(self) -> str:
        """The front door's module, imported by the gate only when the stage will run."""
        return f"tunegate.{self.folder}.{self.door}"


# The spec is read before there is a context to run in, so its front door is check.parse_spec.
STAGES: tuple[StageRow, ...] = (
    StageRow("spec", "spec", required=True, static=False, needs="pydantic", door="check", entry="parse_spec"),
    StageRow("dataset", "dataset", required=True, static=True, needs="stdlib + orjson", reads_data=True),
    StageRow("overlap", "overlap", required=True, static=True, needs="hashing, MinHash", reads_data=True),
    StageRow("estimate", "estimate", required=True, static=True,
             needs="the model's config.json (or `model.params`, its size)", applies=with_spec),
    StageRow("mini-run", "minirun", required=True, static=False, needs="torch, transformers, peft",
             applies=when_mini_run_asked, reads_data=True),
    # The advisor never blocks nor approves: it suggests faster settings for the same hardware.
    StageRow("advisor", "advisor", required=False, static=False, needs="openai (optional)",
             applies=with_spec_when_advice_asked),
)


def names() -> list[str]:
    """Every stage's name, in the order the gate runs them and the report lists them."""
    return [s.name for s in STAGES]


def required() -> tuple[str, ...]:
    """The stages that must run and pass for a full run to be approved, in order."""
    return tuple(s.name for s in STAGES if s.required)


def static() -> frozenset[str]:
    """The stages the static gate runs after the spec (no torch): what a flow caches on content."""
    return frozenset(s.name for s in STAGES if s.static)


def row(name: str) -> StageRow:
    """The row of the stage called `name`; KeyError if there is none."""
    for s in STAGES:
        if s.name == name:
            return s
    raise KeyError(f"no gate stage is called {name!r}; the stages are {', '.join(names())}")


def front_door(name: str) -> str:
    """The module of the stage's front door, e.g. 'tunegate.minirun.stage'."""
    return row(name).front_door


def applicable(ctx: Any) -> list[str]:
    """The stages run in a context (all but the spec) that apply to this one, in order."""
    return [s.name for s in STAGES if s.entry == RUN_STAGE and s.applies(ctx)]

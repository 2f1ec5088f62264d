"""Can this spec be swept as asked? Answered before Prefect starts, in one line with the fix.

    check_sweep_plan(parse_spec("examples/quickstart.yaml"), None)
    # UsageError: examples/quickstart.yaml has no 'sweep:' section, so there is nothing to sweep; ...

Without this the flow starts (10-20 s of Prefect start-up), a task fails inside it, and the user
reads two tracebacks before the one line that matters.
"""
from __future__ import annotations

import importlib.util

from tunegate.errors import MissingDependency, UsageError
from tunegate.spec.check import ParsedSpec
from tunegate.sweep.candidates import propose

EXAMPLE = "sweep: {strategy: list, candidates: [{lora.r: 8}, {lora.r: 16}]}"


def check_sweep_plan(parsed: ParsedSpec, strategy: str | None) -> None:
    """Raise UsageError when the spec is invalid, has no sweep section, or its strategy has nothing to try."""
    spec = parsed.require()
    if "sweep" not in (parsed.raw or {}):
        raise UsageError(f"{parsed.path} has no 'sweep:' section, so there is nothing to sweep; add one, e.g. "
                         f"`{EXAMPLE}` (see examples/sweep.yaml and docs/nomad.md), or gate this one spec "
                         f"with `tunegate preflight {parsed.path}`")
    chosen = strategy or spec.sweep.strategy
    if chosen != "nomad":
        propose(spec, chosen)  # raises UsageError naming the missing sweep.candidates / sweep.grid
        return
    if importlib.util.find_spec("PyNomad") is None:
        raise MissingDependency("PyNomadBBO", "nomad")
    from tunegate.spec.nomad_points import start_from

    start_from(spec.sweep.space, spec)  # raises SpaceError when the space cannot start from this spec

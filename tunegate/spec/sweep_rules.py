"""Stage 0 for a sweep: every candidate the sweep lists passes the spec checks, reported at its key.

    sweep:
      strategy: grid
      grid:
        training.learnin_rate: [1e-4, 3e-4]                 # TG170 error: no spec has this key
        lora.r: [8, -4]                                     # TG176 warning: a candidate the gate will reject

A candidate of a list or grid sweep is known before anything runs, so what its own spec stage
would say is said here, in seconds, at the line of the candidate: a key no spec has (a typo), a
key no candidate may change (`sweep.*`, `tracking.*`: TG171) and an empty grid axis (TG172) are
errors of the sweep spec; a value the candidate's spec stage refuses (`lora.r: -4`, bf16 on a V100,
another validation set) is a warning that the sweep will reject that candidate (TG176), which it
still evaluates and logs with its reason. A NOMAD space that cannot start from this spec (TG175) is
found here too, and so are a pruning rule that can never stop a candidate (TG178) and a task runner
`candidates_on: deployment` leaves unused (TG179). A grid is counted, never expanded: past
MAX_GRID_POINTS combinations it is an error (TG177), whatever sweep.max_evals says, as nine axes of
ten values (10^9 points) once filled 12 GB expanding. Candidates are checked without the `sweep` section: a candidate is one spec, not a
sweep (its written file has none).
"""
from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from tunegate.errors import SpaceError, UsageError
from tunegate.report import Finding, FindingCollector, Severity
from tunegate.spec.model import Spec
from tunegate.spec.rules import KEY_IN_A_VALUE
from tunegate.spec.schema_errors import UNKNOWN_KEY
from tunegate.spec.yaml_loader import Located

# Candidates checked per spec: 0.35 ms each on the 2-core machine, so at most ~0.1 s; a list or
# grid longer than this is checked in its first MAX_CHECKED (the sweep gates every one anyway).
MAX_CHECKED = 256
# Points a grid may have (the product of its axes' lengths): 100x the most evaluations a sweep may
# run (sweep.max_evals <= 10,000), so a grid cut by max_evals is still a warning (TG173), and far
# below the 10^9 points whose expansion exhausted memory.
MAX_GRID_POINTS = 1_000_000
# Sections a candidate cannot change: the sweep's own settings and where its runs are logged are
# the base spec's (`tunegate.flows.sweep` reads them from it), so an override would be ignored.
FIXED_SECTIONS = ("sweep", "tracking")
# Codes the base spec already reports for every string in the file, candidates included.
_REPORTED_ON_THE_BASE = {KEY_IN_A_VALUE}
CheckMapping = Callable[[Located, str, Path, FindingCollector], "Spec | None"]


def sweep_findings(spec: Spec, located: Located, where: str, path: Path,
                   base_errors: set[tuple[str, str | None]], check: CheckMapping) -> list[Finding]:
    """Findings about the sweep section of a structurally valid spec (none without a sweep section).

    `check` is the spec stage itself (`tunegate.spec.check.check_mapping`), handed in by it, so each
    candidate is checked as its own spec would be without this module importing its caller.
    """
    data = located.data
    if not isinstance(data, dict) or not isinstance(data.get("sweep"), dict):
        return []
    base = {k: v for k, v in data.items() if k != "sweep"}
    found: dict[tuple[Any, ...], Finding] = {}
    for f in _all(spec, located, where, path, base, base_errors, check):
        found.setdefault((f.code, f.key, f.message), f)
    return list(found.values())


def _all(spec: Spec, loc: Located, where: str, path: Path, base: dict[str, Any],
         base_errors: set[tuple[str, str | None]], check: CheckMapping) -> Iterator[Finding]:
    sweep = spec.sweep
    yield from _grid_axes(sweep.grid, loc, where)
    proposals = list(_proposals(spec))
    seen: dict[str, str] = {}
    kept = []
    for label, overrides, places in proposals:
        same = json.dumps(overrides, sort_keys=True, default=str)
        if same in seen and label.startswith("sweep.candidates"):  # a grid's repeats: _grid_axes
            yield _at(loc, where, "TG174", "warning", label,
                      f"{label} repeats {seen[same]} ({_shown(overrides)}); it is evaluated once",
                      "Remove the repeated candidate: the sweep trains each distinct candidate once.")
        if same in seen:
            continue
        seen[same] = label
        kept.append((label, overrides, places))
    for label, overrides, places in kept[:MAX_CHECKED]:
        yield from _fixed_keys(spec, overrides, places, loc, where, path)
        yield from _candidate(overrides, places, label, loc, where, path, base, base_errors, check)
    planned = _planned(spec, kept)
    if planned > sweep.max_evals:
        key = "sweep.max_evals" if "sweep.max_evals" in loc.places else "sweep"
        yield _at(loc, where, "TG173", "warning", key,
                  f"the sweep lists {planned} candidates but sweep.max_evals is {sweep.max_evals}: only the "
                  f"first {sweep.max_evals} are evaluated",
                  f"Set sweep.max_evals: {planned} to evaluate every candidate, or list fewer.")
    if sweep.strategy == "nomad":
        yield from _nomad_space(spec, loc, where)
    yield from _budget(spec, loc, where)


def _budget(spec: Spec, loc: Located, where: str) -> Iterator[Finding]:
    """TG178: pruning that can never stop a candidate; TG179: a task runner candidates_on leaves unused."""
    sweep = spec.sweep
    if sweep.prune != "none" and sweep.eval_every is not None and sweep.eval_every >= sweep.train_steps:
        key = "sweep.eval_every" if "sweep.eval_every" in loc.places else "sweep"
        yield _at(loc, where, "TG178", "warning", key,
                  f"sweep.prune is {sweep.prune} but sweep.eval_every {sweep.eval_every} is not below "
                  f"sweep.train_steps {sweep.train_steps}: a candidate is evaluated only at the end of its budget, "
                  "so no candidate is ever stopped early",
                  f"Set sweep.eval_every below train_steps (e.g. {max(1, -(-sweep.train_steps // 4))}), or "
                  "leave it out: with pruning it defaults to a quarter of train_steps.")
    if sweep.candidates_on == "deployment" and sweep.task_runner != "threads":
        key = "sweep.task_runner" if "sweep.task_runner" in loc.places else "sweep"
        yield _at(loc, where, "TG179", "warning", key,
                  f"sweep.candidates_on is deployment, so sweep.task_runner {sweep.task_runner} is not used: each "
                  f"candidate runs as a flow run of {sweep.deployment} on its work pool's workers",
                  "Remove sweep.task_runner (and sweep.address), or set candidates_on: task_runner to run the "
                  f"candidates on {sweep.task_runner}.")


def _planned(spec: Spec, kept: list[tuple[str, dict[str, Any], dict[str, str]]]) -> int:
    """How many distinct candidates the spec's strategy proposes (a grid counted, not enumerated)."""
    if spec.sweep.strategy == "list":
        return sum(label.startswith("sweep.candidates") for label, _, _ in kept)
    if spec.sweep.strategy == "grid" and spec.sweep.grid:
        return math.prod(len({json.dumps(v, sort_keys=True, default=str) for v in values})
                         for values in spec.sweep.grid.values())
    return 0


def _proposals(spec: Spec) -> Iterator[tuple[str, dict[str, Any], dict[str, str]]]:
    """(label, overrides, override key -> its place key) of each listed candidate and grid point."""
    sweep = spec.sweep
    for i, overrides in enumerate(sweep.candidates):
        yield f"sweep.candidates.{i}", overrides, {k: f"sweep.candidates.{i}.{k}" for k in overrides}
    keys = list(sweep.grid)
    if keys and all(sweep.grid.values()):
        axes = [list(enumerate(sweep.grid[k])) for k in keys]
        for combo in itertools.islice(itertools.product(*axes), MAX_CHECKED):
            overrides = {k: value for k, (_, value) in zip(keys, combo)}
            places = {k: f"sweep.grid.{k}.{j}" for k, (j, _) in zip(keys, combo)}
            yield f"the grid point {_shown(overrides)}", overrides, places


def grid_points(grid: dict[str, list[Any]]) -> int:
    """How many points the grid has, counted from its axes' lengths (nothing is expanded)."""
    return math.prod(len(values) for values in grid.values()) if grid else 0


def _grid_axes(grid: dict[str, list[Any]], loc: Located, where: str) -> Iterator[Finding]:
    points = grid_points(grid)
    if points > MAX_GRID_POINTS:
        sizes = " x ".join(f"{len(v):,}" for v in grid.values())
        key = "sweep.grid" if "sweep.grid" in loc.places else "sweep"
        yield _at(loc, where, "TG177", "error", key,
                  f"sweep.grid has {points:,} points ({sizes}), over the {MAX_GRID_POINTS:,} a sweep may list",
                  "List fewer values per axis (a sweep evaluates at most sweep.max_evals of them), or use "
                  "strategy: nomad to search a large space.")
    for key, values in grid.items():
        if not values:
            yield _at(loc, where, "TG172", "error", f"sweep.grid.{key}",
                      f"sweep.grid.{key} has no values, so the grid has no candidate at all",
                      f"List the values to try (sweep.grid.{key}: [8, 16]) or remove the key to keep the "
                      "spec's own value.")
        seen: set[str] = set()
        for j, value in enumerate(values):
            same = json.dumps(value, sort_keys=True, default=str)
            if same in seen:
                yield _at(loc, where, "TG174", "warning", f"sweep.grid.{key}.{j}",
                          f"sweep.grid.{key} lists {value!r} twice; each grid point with it is evaluated once",
                          "Remove the repeated value.")
            seen.add(same)


def _fixed_keys(spec: Spec, overrides: dict[str, Any], places: dict[str, str], loc: Located, where: str,
                path: Path) -> Iterator[Finding]:
    for key, value in overrides.items():
        section = key.split(".", 1)[0]
        if section in FIXED_SECTIONS:
            yield _at(loc, where, "TG171", "error", places[key],
                      f"a sweep candidate cannot change {key}: the sweep runs and logs every candidate with the "
                      f"base spec's {section} section, so the override would be ignored",
                      f"Set {key} in the spec's own {section} section, or run a separate sweep for each value.")
        validation = _validation_of(key, value)
        if validation is not None and _resolved(path, validation) != _resolved(path, spec.data.validation):
            named = " + ".join(Path(str(v)).name for v in _listed(validation))
            yield _at(loc, where, "TG176", "warning", places[key],
                      f"a sweep candidate sets data.validation to {named}: the sweep will "
                      f"reject it (TG391), every candidate is scored on the frozen validation set "
                      f"({spec.data.names('validation')})",
                      "Do not override data.validation in a sweep: scores on other validation data cannot be "
                      "compared. To compare validation sets, run one sweep per set.")


def _validation_of(key: str, value: Any) -> Any:
    if key == "data.validation":
        return value
    if key == "data" and isinstance(value, dict):
        return value.get("validation")
    return None


def _resolved(spec_path: Path, value: Any) -> list[Path | None]:
    """The files a data.validation value names (one path, or a list), resolved against the spec's folder."""
    return [_resolved_one(spec_path, v) for v in _listed(value)]


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _resolved_one(spec_path: Path, value: Any) -> Path | None:
    try:
        p = Path(str(value))
        return (p if p.is_absolute() else spec_path.resolve().parent / p).resolve()
    except (OSError, RuntimeError, ValueError):
        return None


def _candidate(overrides: dict[str, Any], places: dict[str, str], label: str, loc: Located, where: str,
               path: Path, base: dict[str, Any], base_errors: set[tuple[str, str | None]],
               check: CheckMapping) -> Iterator[Finding]:
    """The candidate's own spec stage, its errors moved to the override that caused them: an unknown key
    is an error of the sweep spec (TG170); a refused value a warning that this candidate will be
    rejected (TG176; the sweep still evaluates and logs it, as it does a NOMAD point)."""
    from tunegate.spec.overrides import apply_overrides

    try:
        data = apply_overrides(base, overrides)
    except UsageError as exc:
        yield _at(loc, where, "TG170", "error", label if label in loc.places else "sweep", f"{label}: {exc}",
                  "Write the override as a dotted key of a setting (lora.r) or as a mapping of its section.")
        return
    out = FindingCollector("spec")
    check(Located(data=data), where, path, out)
    for f in out.kept:
        if f.severity != "error" or (f.code, f.key) in base_errors or f.code in _REPORTED_ON_THE_BASE:
            continue
        place = _cause(f.key, places) or (label if label in loc.places else "sweep")
        hint = f.hint
        if f.code == UNKNOWN_KEY and f.key and "." in f.key:  # the candidate writes the whole dotted key
            parent = f.key.rpartition(".")[0]
            hint = re.sub(r"Did you mean '([^']+)'\?", lambda m: f"Did you mean '{parent}.{m[1]}'?", hint)
        if f.code == UNKNOWN_KEY:  # no spec has this key: the sweep spec itself is wrong
            yield _at(loc, where, "TG170", "error", place, f"{label}: {f.message}",
                      f"{hint} A candidate's keys are the spec's own, written dotted (lora.r).")
        else:  # a value its spec stage refuses: the sweep evaluates it as a rejected candidate
            yield _at(loc, where, "TG176", "warning", place,
                      f"{label}: {f.message} ({f.code}); the sweep will reject this candidate",
                      f"{hint} Every candidate passes the same spec checks as the spec itself: fix the value "
                      "or drop it from the sweep.".strip())


def _cause(key: str | None, places: dict[str, str]) -> str | None:
    """The place of the override behind a finding at `key`; the only override when none matches."""
    for override, place in places.items():
        if key and (key == override or key.startswith(override + ".") or override.startswith(key + ".")):
            return place
    return next(iter(places.values())) if len(places) == 1 else None


def _nomad_space(spec: Spec, loc: Located, where: str) -> Iterator[Finding]:
    """TG175: the NOMAD search cannot start from this spec (run_nomad would raise after Prefect started)."""
    from tunegate.spec.nomad_points import checked_problem, start_from

    sweep = spec.sweep
    try:
        checked_problem(start_from(sweep.space, spec), max_evals=sweep.max_evals, seed=sweep.seed,
                        max_block_size=sweep.max_parallel)
    except SpaceError as exc:
        text = str(exc)
        setting = {"max_evals": "sweep.max_evals", "seed": "sweep.seed", "max_block_size": "sweep.max_parallel"}
        key = next((k for name, k in setting.items() if text.startswith(name + " ")), None)
        key = key or next((f"sweep.space.{n}" for n in sweep.space.names() if f"sweep.space.{n}" in text),
                          "sweep.space")
        yield _at(loc, where, "TG175", "error", key, f"the NOMAD search cannot start: {text}",
                  "Fix the space or setting named here; docs/nomad.md, 'The space', lists each variable's "
                  "domain and how its start is taken from the spec.")


def _shown(overrides: dict[str, Any]) -> str:
    return "{" + ", ".join(f"{k}: {_value(v)}" for k, v in overrides.items()) + "}"


def _value(v: Any) -> str:
    return f"{v:g}" if isinstance(v, float) and math.isfinite(v) else str(v)


def _at(loc: Located, where: str, code: str, severity: Severity, key: str, message: str, hint: str) -> Finding:
    line, col = loc.place(key) or (None, None)
    return Finding(code=code, severity=severity, stage="spec", message=message, hint=hint, file=where,
                   line=line, column=col, key=key)


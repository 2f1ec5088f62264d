"""A grid is counted, never expanded: 10^9 points is TG177 at once, and a sweep only ever makes the first
sweep.max_evals distinct points (the expansion once took 12 GB and 33 s before a MemoryError)."""
from __future__ import annotations

import time

import yaml

from tests.support.hostile import spec_with
from tunegate.spec.check import parse_spec
from tunegate.spec.sweep_rules import MAX_GRID_POINTS, grid_points
from tunegate.sweep.candidates import propose

NINE_AXES = {"lora.r": list(range(1, 11)), "lora.alpha": list(range(1, 11)),
             "lora.dropout": [i / 100 for i in range(10)], "training.learning_rate": [1e-4 * i for i in range(1, 11)],
             "training.micro_batch_size": list(range(1, 11)), "training.grad_accum_steps": list(range(1, 11)),
             "training.max_steps": list(range(1, 11)), "training.seed": list(range(10)),
             "training.warmup_steps": list(range(10))}


def grid_spec(tmp_path, grid: dict) -> str:
    path = spec_with(tmp_path, "lora.r", 8)
    data = yaml.safe_load(path.read_text())
    data["sweep"] = {"strategy": "grid", "grid": grid, "max_evals": 5}
    path.write_text(yaml.safe_dump(data))
    return str(path)


def test_a_grid_of_a_billion_points_is_tg177_without_being_expanded(tmp_path):
    start = time.monotonic()
    parsed = parse_spec(grid_spec(tmp_path, NINE_AXES))
    tg177 = [f for f in parsed.result.findings if f.code == "TG177"]
    assert [f.key for f in tg177] == ["sweep.grid"] and "1,000,000,000 points" in tg177[0].message
    assert not parsed.valid and time.monotonic() - start < 5


def test_the_sweep_command_refuses_it_before_prefect_starts(tmp_path, capsys):
    from tunegate.cli.main import main

    assert main(["sweep", grid_spec(tmp_path, NINE_AXES)]) == 2
    assert "TG177" in capsys.readouterr().err


def test_a_grid_within_the_bound_proposes_only_its_first_max_evals_points(tmp_path):
    grid = {k: NINE_AXES[k] for k in list(NINE_AXES)[:6]}  # 10^6 points: at the bound, still allowed
    assert grid_points(grid) == MAX_GRID_POINTS
    parsed = parse_spec(grid_spec(tmp_path, grid))
    assert "TG177" not in {f.code for f in parsed.result.findings}
    start = time.monotonic()
    assert len(propose(parsed.require())) == 5 and time.monotonic() - start < 1


def test_a_long_axis_of_repeats_is_checked_in_linear_time(tmp_path):
    start = time.monotonic()
    parsed = parse_spec(grid_spec(tmp_path, {"lora.r": [8] * 10_000}))  # 5*10^7 comparisons before
    assert "TG174" in {f.code for f in parsed.result.findings} and time.monotonic() - start < 5

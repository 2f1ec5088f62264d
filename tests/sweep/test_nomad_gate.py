"""NOMAD over the real gate: the estimate's memory verdict and the mini-run's loss as the black box."""
from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from tests.support.estimate_specs import BASE
from tests.support.paths import DATA as TEST_DATA
from tunegate.gate import check
from tunegate.spec import yaml_loader
from tunegate.spec.check import load_spec, parse_spec
from tunegate.spec.nomad_points import start_from
from tunegate.spec.search_space import NomadSpace
from tunegate.sweep.candidates import write_candidate_spec
from tunegate.sweep.nomad_outcome import Outcome, from_report
from tunegate.sweep.nomad_search import run_nomad

pytest.importorskip("PyNomad")
DATA = TEST_DATA / "nomad"


def gated(base: Path, stages: set[str], score: str):
    """The black box: write the candidate spec, run the gate's stages, score it by `score`."""
    parsed = parse_spec(base)

    def evaluate(overrides: dict) -> Outcome:
        report = check(write_candidate_spec(parsed, overrides), only=stages)
        if score == "hours":
            return from_report(report, (report.facts.estimate or {}).get("hours"))
        return from_report(report, (report.stage("mini-run").stats or {}).get("eval_loss"))
    return evaluate


def test_a_micro_batch_that_does_not_fit_the_gpu_is_infeasible_with_its_memory_excess(tmp_path):
    data = copy.deepcopy(BASE)
    data["hardware"]["gpu"] = "L4"  # 1B model, 2048 tokens: micro batch 4 and up does not fit 24 GB
    data["training"]["micro_batch_size"] = 1
    base = tmp_path / "l4.yaml"
    base.write_text(yaml.safe_dump(data))
    space = NomadSpace.model_validate({"micro_batch_size": {"lower": 1, "upper": 64, "start": 1}})
    result = run_nomad(space, gated(base, {"spec", "estimate"}, "hours"), max_evals=10, seed=0)
    too_big = [e for e in result.evaluations if e.outcome.codes == ["TG401"]]
    assert too_big and all(e.outcome.memory_excess_gib > 0 for e in too_big)
    assert "does not fit in GPU memory" in too_big[0].outcome.reason
    best = result.best
    assert best is not None and best.outcome.memory_excess_gib <= 0
    fitting = [e.overrides["training.micro_batch_size"] for e in result.evaluations if e.outcome.feasible]
    assert max(fitting) < min(e.overrides["training.micro_batch_size"] for e in too_big)


def _base_spec(tmp_path: Path) -> Path:
    """sweep_lr.yaml copied to tmp_path with its data paths made absolute."""
    raw = yaml_loader.load((DATA / "sweep_lr.yaml").read_text()).data
    for key in ("train", "validation"):
        raw["data"][key] = str((DATA / raw["data"][key]).resolve())
    path = tmp_path / "sweep_lr.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


def _sweep(base: Path):
    spec = load_spec(base)
    return run_nomad(start_from(spec.sweep.space, spec), gated(base, {"spec", "estimate", "mini-run"}, "loss"),
                     max_evals=spec.sweep.max_evals, seed=spec.sweep.seed)


@pytest.mark.slow
def test_a_nomad_sweep_on_the_tiny_model_skips_diverging_rates_and_is_reproducible(tiny_cache, tmp_path):
    base = _base_spec(tmp_path)
    result = _sweep(base)
    assert len(result.evaluations) == 5
    assert result.evaluations[0].overrides == {"training.learning_rate": 1e-3}  # the spec's own rate
    # the mini-run rejects an out-of-scale update (TG535) or a NaN loss (TG516), the spec stage lr >= 1 (TG125)
    diverged = [e for e in result.rejected if {"TG125", "TG516", "TG535"} & set(e.outcome.codes)]
    assert diverged, [e.outcome for e in result.evaluations]
    assert all(e.overrides["training.learning_rate"] >= 0.03 for e in diverged)
    assert any(s in diverged[0].outcome.reason for s in ("loss is nan", "times the weight it adapts", "no LoRA run"))
    best = result.best
    assert best is not None and best.outcome.feasible
    assert best.outcome.objective <= result.evaluations[0].outcome.objective
    again = _sweep(base)
    assert [e.overrides for e in again.evaluations] == [e.overrides for e in result.evaluations]
    assert [e.outcome.feasible for e in again.evaluations] == [e.outcome.feasible for e in result.evaluations]

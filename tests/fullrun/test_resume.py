"""`--resume`: a trainer killed mid-run (SIGKILL, as on a preempted node) continues from its last
checkpoint, to the planned step, and publishes the adapter only when the run completes."""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.paths import DATA, ROOT
from tunegate.fullrun.result import TrainResult

pytestmark = pytest.mark.slow
SPEC = DATA / "fullrun" / "resume.yaml"  # 40 steps, a checkpoint every 2
DEADLINE_S = 300


def _trainer(out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "tunegate.fullrun.trainer", "--spec", str(SPEC), "--output-dir", str(out),
            "--result", str(out / "result.json"), *extra]


def _kill_after_a_checkpoint(out: Path) -> None:
    proc = subprocess.Popen(_trainer(out), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    start = time.monotonic()
    try:  # trainer_state.json is written last into a checkpoint folder: the checkpoint is whole
        while not list((out / "checkpoints").glob("checkpoint-*/trainer_state.json")):
            assert proc.poll() is None, "the trainer ended before its first checkpoint"
            assert time.monotonic() - start < DEADLINE_S
            time.sleep(0.05)
    finally:
        proc.kill()
        proc.wait()


def _whole(checkpoint: Path) -> bool:
    try:
        return isinstance(json.loads((checkpoint / "trainer_state.json").read_text(encoding="utf-8")), dict)
    except (OSError, ValueError):
        return False


@pytest.fixture(scope="module")
def resumed(tiny_cache, tmp_path_factory) -> tuple[Path, TrainResult, list[str], bool]:
    """The run, its result, the whole checkpoints the kill left, and whether an adapter was published before."""
    out = tmp_path_factory.mktemp("resume") / "run"
    _kill_after_a_checkpoint(out)
    # the kill can land while a later checkpoint is half-written: --resume passes over that one
    before = sorted(p.name for p in (out / "checkpoints").glob("checkpoint-*") if _whole(p))
    published_before = (out / "adapter").exists()
    done = subprocess.run(_trainer(out, "--resume"), cwd=ROOT, capture_output=True, text=True, timeout=DEADLINE_S)
    assert done.returncode == 0, done.stdout[-3000:]
    return out, TrainResult.read(out / "result.json"), before, published_before


def test_the_killed_run_left_checkpoints_but_no_adapter(resumed):
    _, _, before, published_before = resumed
    assert before and not published_before


def test_the_resumed_run_continues_from_the_last_checkpoint_to_the_planned_step(resumed):
    _, result, before, _ = resumed
    last = max(before, key=lambda name: int(name.split("-")[1]))
    assert result.resumed_from == last
    assert result.status == "completed" and result.global_step == 40
    assert min(s.step for s in result.steps) > int(last.split("-")[1])  # no step trained twice


def test_the_adapter_is_published_once_the_resumed_run_completes(resumed):
    out, result, _, _ = resumed
    assert (out / "adapter" / "COMPLETE").is_file() and result.adapter_dir == str(out / "adapter")


@pytest.fixture(scope="module")
def resumed_past_a_half_written(tiny_cache, tmp_path_factory) -> tuple[TrainResult, str, str]:
    """Killed while saving: what CI once left, an empty checkpoint folder after the last whole one."""
    out = tmp_path_factory.mktemp("resume-half") / "run"
    _kill_after_a_checkpoint(out)
    whole = [p for p in (out / "checkpoints").glob("checkpoint-*") if (p / "trainer_state.json").is_file()]
    last = max(whole, key=lambda p: int(p.name.split("-")[1])).name
    half = f"checkpoint-{int(last.split('-')[1]) + 100}"
    (out / "checkpoints" / half).mkdir()
    done = subprocess.run(_trainer(out, "--resume"), cwd=ROOT, capture_output=True, text=True, timeout=DEADLINE_S)
    assert done.returncode == 0, done.stdout[-3000:]
    assert f"{half}: no trainer_state.json" in done.stdout  # said, not silently passed over
    return TrainResult.read(out / "result.json"), last, half


def test_a_checkpoint_half_written_when_the_run_was_killed_is_passed_over(resumed_past_a_half_written):
    result, last, _ = resumed_past_a_half_written
    assert result.resumed_from == last
    assert result.status == "completed" and result.global_step == 40
